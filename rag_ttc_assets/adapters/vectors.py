"""Vector index over chunk embeddings with LanceDB: cosine distance; exact (brute-force) search, or an approximate
index (IVF-FLAT, IVF-SQ, IVF-RQ, IVF-PQ, IVF-HNSW-SQ, IVF-HNSW-PQ) built on the same table, with the exact scan
still at hand (`bypass_vector_index`)."""

from __future__ import annotations

import sys
from pathlib import Path
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rag_ttc_assets.core.ann import OVERFETCH

if TYPE_CHECKING:  # numpy is imported where it is used: importing the code location does not load it
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


BATCH_ROWS = 50_000  # rows per Arrow batch handed to LanceDB: one batch of vectors in Arrow at a time


def build_table(path: Path, chunk_ids: list[str], vectors: np.ndarray) -> int:
    """Write a fresh table of (chunk_id, vector) into `path`; return the LanceDB table version. The rows reach
    LanceDB in batches of BATCH_ROWS (`build_table_batches`): one write, the same table as a single Arrow table."""
    dim = int(vectors.shape[1]) if vectors.ndim == 2 else 0
    return build_table_batches(path, ((chunk_ids[s:s + BATCH_ROWS], vectors[s:s + BATCH_ROWS])
                                      for s in range(0, max(len(chunk_ids), 1), BATCH_ROWS)), dim)


def build_table_batches(path: Path, batches: Iterable[tuple[list[str], np.ndarray]], dim: int) -> int:
    """`build_table` from (chunk_ids, vectors) batches, streamed: one LanceDB write of version 1 whose rows are the
    batches in order, without the whole corpus in memory at once (a million 384-d vectors are 1.5 GB)."""
    import numpy as np
    import pyarrow as pa

    lancedb = _lancedb()

    path.mkdir(parents=True, exist_ok=True)
    db = lancedb.connect(str(path))
    schema = pa.schema([("chunk_id", pa.string()), ("vector", pa.list_(pa.float32(), dim))])

    def record_batches():
        for ids, vecs in batches:
            flat = np.asarray(vecs, dtype=np.float32).reshape(-1)
            yield pa.record_batch([pa.array(ids, pa.string()),
                                   pa.FixedSizeListArray.from_arrays(pa.array(flat, pa.float32()), dim)],
                                  schema=schema)

    table = db.create_table(TABLE, data=pa.RecordBatchReader.from_batches(schema, record_batches()), mode="overwrite")
    return int(table.version)


def index_config(params: dict):
    """LanceDB's index configuration for resolved build parameters (core.ann.resolve_build), cosine distance."""
    from lancedb.index import HnswPq, HnswSq, IvfFlat, IvfPq, IvfRq, IvfSq

    _lancedb()
    kind = params["type"]
    if kind == "ivf_flat":
        return IvfFlat(distance_type="cosine", num_partitions=params["num_partitions"])
    if kind == "ivf_sq":
        return IvfSq(distance_type="cosine", num_partitions=params["num_partitions"])
    if kind == "ivf_rq":
        return IvfRq(distance_type="cosine", num_partitions=params["num_partitions"])
    if kind == "ivf_pq":
        return IvfPq(distance_type="cosine", num_partitions=params["num_partitions"],
                     num_sub_vectors=params["num_sub_vectors"], num_bits=params.get("num_bits", 8))
    if kind == "ivf_hnsw_sq":
        return HnswSq(distance_type="cosine", num_partitions=params["num_partitions"], m=params["m"],
                      ef_construction=params["ef_construction"])
    if kind == "ivf_hnsw_pq":
        return HnswPq(distance_type="cosine", num_partitions=params["num_partitions"],
                      num_sub_vectors=params["num_sub_vectors"], num_bits=params.get("num_bits", 8), m=params["m"],
                      ef_construction=params["ef_construction"])
    raise ValueError(f"unknown vector index type {kind!r}")


def build_index(path: Path, params: dict) -> dict:
    """Build the approximate index `params` describes on the table in `path` (a folder the caller publishes only
    once this returns: an interrupted build leaves nothing a reader opens). Returns what LanceDB reports of it."""
    lancedb = _lancedb()
    table = lancedb.connect(str(path)).open_table(TABLE)
    table.create_index("vector", config=index_config(params), replace=True, name=INDEX)
    stats = table.index_stats(INDEX)
    return {"index_name": INDEX, "index_type": stats.index_type, "distance_type": stats.distance_type,
            "indexed_rows": int(stats.num_indexed_rows), "unindexed_rows": int(stats.num_unindexed_rows),
            "lancedb_version": int(table.version)}


INDEX = "vector_idx"


class VectorIndex:
    def __init__(self, path: Path | str, query: dict | None = None):
        """`path`: the table's folder, or its `s3://` URI (LanceDB reads the object store itself, configured by the
        AWS_* variables). `query`: the approximate index's query parameters (nprobes, refine_factor, ef), set on
        every search that uses the index."""
        lancedb = _lancedb()
        self.db = lancedb.connect(str(path))
        self.table = self.db.open_table(TABLE)
        self.version = int(self.table.version)
        self.query = dict(query or {})
        self.indexed = any(i.name == INDEX for i in self.table.list_indices())

    def search(self, vector: np.ndarray, limit: int) -> list[tuple[str, float]]:
        """Top `limit` (chunk_id, cosine similarity), ties broken by chunk_id."""
        import numpy as np
        return self.search_many(np.asarray(vector, dtype=np.float32)[None, :], limit)[0]

    def search_many(self, vectors: np.ndarray, limit: int, batch: int = 256,
                    exact: bool = False) -> list[list[tuple[str, float]]]:
        """`search` for each row of `vectors`, in one LanceDB query per `batch` rows.

        The same cosine search, over-fetch and tie-break as one query per vector: LanceDB runs
        each row as its own query and tags its hits with `query_index`. Only the IDs and distances
        are fetched, never the stored vectors. A table with an approximate index is searched through it
        (with the query parameters), unless `exact`: a flat scan of every row (`bypass_vector_index`).
        """
        import numpy as np
        m = np.asarray(vectors, dtype=np.float32)
        if m.ndim != 2:
            raise ValueError(f"vectors must be a 2-D array (one row per query), got shape {m.shape}")
        out: list[list[tuple[str, float]]] = []
        for start in range(0, m.shape[0], batch):
            part = m[start:start + batch]
            query = self.table.search(part if part.shape[0] > 1 else part[0]).distance_type("cosine")
            if exact:
                query = query.bypass_vector_index()
            elif self.indexed:
                for name, value in self.query.items():
                    query = getattr(query, name)(value)
            res = query.limit(limit + OVERFETCH).select(["chunk_id", "_distance"]).to_arrow()
            hits: list[list[tuple[str, float]]] = [[] for _ in range(part.shape[0])]
            # A single-row query carries no query_index column: every hit is that row's.
            qidx = res.column("query_index").to_pylist() if "query_index" in res.column_names else [0] * res.num_rows
            for q, cid, d in zip(qidx, res.column("chunk_id").to_pylist(), res.column("_distance").to_pylist()):
                hits[q].append((cid, 1.0 - float(d)))
            for h in hits:
                h.sort(key=lambda x: (-x[1], x[0]))
                out.append(h[:limit])
        return out

    def count(self) -> int:
        return int(self.table.count_rows())
