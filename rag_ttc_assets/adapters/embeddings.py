"""Sentence embeddings, offline: the torch backend (`torch_embeddings`) or ONNX Runtime (`onnx_embeddings`), chosen
by the model's name."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rag_ttc_assets.adapters import onnx_embeddings, torch_embeddings
from rag_ttc_assets.core.text import content_word_spans

if TYPE_CHECKING:  # numpy is imported where it is used: importing the code location does not load it
    import numpy as np

DEFAULT_MODEL = torch_embeddings.DEFAULT_MODEL


def known_models() -> list[str]:
    return [DEFAULT_MODEL, *onnx_embeddings.MODELS]


def check_model(model: str) -> None:
    """Raise ValueError unless `model` is an embedding model this lab can load offline: a known name or a local
    sentence-transformers folder. Loads nothing (the ONNX models' optional packages are checked at first use)."""
    if model in known_models() or Path(model).expanduser().is_dir():
        return
    raise ValueError(f"unknown embedding model {model!r}; known: {', '.join(known_models())} "
                     "(or the path of a local sentence-transformers model folder)")


def _onnx(model: str):
    """The ONNX backend module when `model` is one of its models, else None."""
    return onnx_embeddings if onnx_embeddings.is_onnx_model(model) else None


def encode(texts: list[str], model: str = DEFAULT_MODEL, batch_size: int = 64, store=None,
           advance: Callable[[int], None] | None = None) -> np.ndarray:
    """Unit-normalised float32 embeddings, one row per text (ONNX Runtime for the `-onnx` models, exported into
    `store`: the caller's lab's store, required for them).

    `advance(n)` is called as each batch of n texts is done (a progress reporter's)."""
    import numpy as np
    if not texts:
        return np.zeros((0, dimension(model)), dtype=np.float32)
    if (backend := _onnx(model)) is not None:
        return backend.encode(list(texts), model, batch_size=batch_size, store=store, advance=advance)
    return torch_embeddings.encode(texts, model, batch_size=batch_size, advance=advance)


def dimension(model: str = DEFAULT_MODEL) -> int:
    if (backend := _onnx(model)) is not None:
        return backend.dimension(model)
    return torch_embeddings.dimension(model)


_memo: "OrderedDict[tuple[str, str], np.ndarray]" = OrderedDict()
_MEMO_MAX = 50_000
_memo_lock = threading.Lock()


def encode_memoized(texts: list[str], model: str = DEFAULT_MODEL) -> np.ndarray:
    """`encode`, remembering each text's vector in this process (the offline baselines re-embed the
    same evidence sentences for many questions and for each judge stage)."""
    import numpy as np
    if not texts:
        return np.zeros((0, dimension(model)), dtype=np.float32)
    # One lock over look-up, encode and eviction: worker threads asking for the same new sentences at once
    # (every answer of a preloaded arm at its start) encode them once, and never see an entry evicted mid-read.
    with _memo_lock:
        missing = list(dict.fromkeys(t for t in texts if (model, t) not in _memo))
        if missing:
            for t, v in zip(missing, encode(missing, model)):
                _memo[(model, t)] = v
        out = np.stack([_memo[(model, t)] for t in texts])
        while len(_memo) > _MEMO_MAX:
            _memo.popitem(last=False)
    return out


def unmemoized(texts: list[str], model: str = DEFAULT_MODEL) -> list[str]:
    """The distinct texts of `texts` whose vector this process does not remember (first-asked order)."""
    with _memo_lock:
        return list(dict.fromkeys(t for t in texts if (model, t) not in _memo))


def remember(vectors: dict[str, np.ndarray], model: str = DEFAULT_MODEL) -> None:
    """Hand `encode_memoized` vectors computed elsewhere (adapters.vector_cache: another process's, by `model`)."""
    with _memo_lock:
        for t, v in vectors.items():
            _memo[(model, t)] = v
        while len(_memo) > _MEMO_MAX:
            _memo.popitem(last=False)


_word_memo: "OrderedDict[str, tuple[list[str], np.ndarray]]" = OrderedDict()


def words_unmemoized(texts: list[str]) -> list[str]:
    """The distinct texts of `texts` whose content-word vectors this process does not remember."""
    with _memo_lock:
        return list(dict.fromkeys(t for t in texts if t not in _word_memo))


def remember_words(entries: dict[str, tuple[list[str], np.ndarray]]) -> None:
    """Hand `content_word_vectors` entries computed elsewhere (adapters.vector_cache)."""
    with _memo_lock:
        for t, e in entries.items():
            _word_memo[t] = e
        while len(_word_memo) > _MEMO_MAX:
            _word_memo.popitem(last=False)


def content_word_vectors(texts: list[str]) -> list[tuple[list[str], np.ndarray]]:
    """Per text, its content words' stems (core.text.content_word_spans) and their contextual vectors from the
    bundled MiniLM (torch_embeddings.word_vectors), remembered per text in this process like `encode_memoized`."""
    with _memo_lock:
        missing = list(dict.fromkeys(t for t in texts if t not in _word_memo))
        if missing:
            spans = [content_word_spans(t) for t in missing]
            vectors = torch_embeddings.word_vectors(missing, [[(a, e) for _, a, e in s] for s in spans])
            for t, s, v in zip(missing, spans, vectors, strict=True):
                _word_memo[t] = ([st for st, _, _ in s], v)
        out = [_word_memo[t] for t in texts]
        while len(_word_memo) > _MEMO_MAX:
            _word_memo.popitem(last=False)
    return out
