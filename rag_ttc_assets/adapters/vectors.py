"""Vector index over chunk embeddings with LanceDB: cosine distance, exact (brute-force) search."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

TABLE = "chunks"


def _lancedb():
    """Import lancedb, first forgetting a `datasets` namespace package left by a failed optional import.

    The project's own `datasets/` folder is a valid namespace package whenever the project root is
    on sys.path; sentence-transformers probes `import datasets` (Hugging Face's) and leaves that
    stand-in in sys.modules, which lancedb then mistakes for Hugging Face datasets and crashes on.
    """
    mod = sys.modules.get("datasets")
    if mod is not None and getattr(mod, "__file__", None) is None:
        del sys.modules["datasets"]
    import lancedb

    return lancedb


def build_table(path: Path, chunk_ids: list[str], vectors: np.ndarray) -> int:
    """Write a fresh table of (chunk_id, vector) into `path`; return the LanceDB table version."""
    import pyarrow as pa

    lancedb = _lancedb()

    path.mkdir(parents=True, exist_ok=True)
    db = lancedb.connect(str(path))
    dim = int(vectors.shape[1]) if vectors.ndim == 2 else 0
    schema = pa.schema([("chunk_id", pa.string()), ("vector", pa.list_(pa.float32(), dim))])
    data = pa.table(
        {
            "chunk_id": pa.array(chunk_ids, pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(vectors.astype(np.float32).reshape(-1), pa.float32()), dim
            ),
        },
        schema=schema,
    )
    table = db.create_table(TABLE, data=data, mode="overwrite")
    return int(table.version)


class VectorIndex:
    def __init__(self, path: Path):
        lancedb = _lancedb()
        self.db = lancedb.connect(str(path))
        self.table = self.db.open_table(TABLE)
        self.version = int(self.table.version)

    def search(self, vector: np.ndarray, limit: int) -> list[tuple[str, float]]:
        """Top `limit` (chunk_id, cosine similarity), ties broken by chunk_id."""
        res = (
            self.table.search(np.asarray(vector, dtype=np.float32))
            .distance_type("cosine")
            .limit(limit + 10)
            .to_arrow()
        )
        ids = res.column("chunk_id").to_pylist()
        dist = res.column("_distance").to_pylist()
        out = [(cid, 1.0 - float(d)) for cid, d in zip(ids, dist)]
        out.sort(key=lambda x: (-x[1], x[0]))
        return out[:limit]

    def count(self) -> int:
        return int(self.table.count_rows())
