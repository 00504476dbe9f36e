"""Approximate vector search as a boundary of its own: an index's parameters resolved against the corpus, and how
much of the exact list the approximate one kept.

An approximate index (IVF-FLAT, IVF-SQ, IVF-RQ, IVF-PQ, IVF-HNSW) searches a part of the vectors, most of them
compressed; its recall against an exact scan of the same vectors is below 1. For such an arm the retrieval rows hold
both lists, so a request whose evidence the exact search would have ranked and the approximate one lost is
`missed_by_ann`, not `not_retrieved` (diagnosis.flow).

    ann_recall_k = |ANN top k  ∩  exact top k| / |exact top k|       (k = retrieve_k; undefined for an empty exact list)

Unset build parameters take LanceDB's documented defaults (lancedb.index.IvfFlat, IvfSq, IvfRq, IvfPq, HnswSq,
HnswPq): num_partitions = sqrt(rows), num_sub_vectors = dimension / 16, else dimension / 8, else 1; HNSW m = 20,
ef_construction = 300. `num_bits` (bits per PQ code, LanceDB's default 8) is passed and recorded only when an arm
sets it, so the indexes built before it existed keep their keys. The lab resolves them itself, so a query parameter
can be checked against them before any build and the build records the values it used.
"""

from __future__ import annotations

import math
from typing import Any

from rag_ttc_assets.core.arms import VectorIndexConfig

HNSW_M, HNSW_EF_CONSTRUCTION = 20, 300
# Each vector search asks for this many candidates beyond its limit, so ties at the cut are broken by chunk ID
# (adapters.vectors).
OVERFETCH = 10


class IndexParamsError(ValueError):
    """An index parameter that cannot work for this corpus; the message names the field."""


def default_sub_vectors(dimension: int) -> int:
    return dimension // 16 if dimension % 16 == 0 else dimension // 8 if dimension % 8 == 0 else 1


def resolve_build(vi: VectorIndexConfig, vectors: int, dimension: int) -> dict[str, Any]:
    """The build parameters LanceDB is given for `vectors` rows of `dimension` (every default made explicit), or
    IndexParamsError naming the field that cannot work. A flat index has none."""
    if not vi.approximate:
        return {"type": "flat"}
    if vectors < 1:
        raise IndexParamsError(f"vector_index.type: {vi.type} needs vectors to train on; the corpus has none")
    partitions = vi.num_partitions if vi.num_partitions is not None else max(1, round(math.sqrt(vectors)))
    if partitions > vectors:
        raise IndexParamsError(f"vector_index.num_partitions: {partitions} partitions for {vectors} vectors; "
                               f"use at most {vectors} (LanceDB's default is sqrt(rows), {round(math.sqrt(vectors))})")
    if vi.nprobes is not None and vi.nprobes > partitions:
        raise IndexParamsError(f"vector_index.nprobes: {vi.nprobes} is above the index's {partitions} partitions"
                               + ("" if vi.num_partitions is not None else " (LanceDB's default sqrt(rows))"))
    out: dict[str, Any] = {"type": vi.type, "num_partitions": partitions}
    if vi.type in ("ivf_pq", "ivf_hnsw_pq"):
        sub = vi.num_sub_vectors if vi.num_sub_vectors is not None else default_sub_vectors(dimension)
        if dimension % sub:
            raise IndexParamsError(f"vector_index.num_sub_vectors: {sub} does not divide the embedding dimension "
                                   f"{dimension}; use a divisor such as {default_sub_vectors(dimension)}")
        out["num_sub_vectors"] = sub
        if vi.num_bits is not None:
            out["num_bits"] = vi.num_bits
    if vi.type in ("ivf_hnsw_sq", "ivf_hnsw_pq"):
        out["m"] = vi.m if vi.m is not None else HNSW_M
        out["ef_construction"] = vi.ef_construction if vi.ef_construction is not None else HNSW_EF_CONSTRUCTION
    return out


def check_query(vi: VectorIndexConfig, limit: int) -> None:
    """IndexParamsError unless the query parameters can serve a search for `limit` results: LanceDB's HNSW search
    needs `ef` at least the number of candidates it is asked for (limit + OVERFETCH, times refine_factor)."""
    if vi.ef is None:
        return
    k = (limit + OVERFETCH) * (vi.refine_factor or 1)
    if vi.ef < k:
        raise IndexParamsError(f"vector_index.ef: {vi.ef} is below the {k} candidates each search asks the index for "
                               f"({limit} ranked + {OVERFETCH} over-fetched"
                               + (f", times refine_factor {vi.refine_factor}" if vi.refine_factor else "")
                               + f"); use ef >= {k}")


def query_params(vi: VectorIndexConfig) -> dict[str, int]:
    """The query parameters the arm sets (the others are LanceDB's per-query defaults)."""
    return {f: getattr(vi, f) for f in ("nprobes", "refine_factor", "ef") if getattr(vi, f) is not None}


# The lab's own query defaults for the quantized IVF scans, chosen from the recall-latency curve of
# `rag-ttc bench --only ann_realistic` (docs/ann.md): a third of the partitions probed, and the candidates re-ranked
# by exact distance (refine_factor). An arm's own setting wins. The older types keep LanceDB's per-query defaults,
# so no arm built before these existed changes its retrieval rows.
PROBED_SHARE = {"ivf_sq": 3, "ivf_rq": 3}  # nprobes = ceil(partitions / this)
REFINE_FACTOR = {"ivf_sq": 5, "ivf_rq": 10}


def resolve_query(vi: VectorIndexConfig, build: dict[str, Any]) -> dict[str, int]:
    """The query parameters a search of the index `build` (resolve_build's output, as the index records it) uses:
    the arm's own, then the lab's defaults for its type (PROBED_SHARE, REFINE_FACTOR)."""
    out = query_params(vi)
    if vi.type in PROBED_SHARE and "nprobes" not in out:
        out["nprobes"] = max(1, math.ceil(int(build["num_partitions"]) / PROBED_SHARE[vi.type]))
    if vi.type in REFINE_FACTOR and "refine_factor" not in out:
        out["refine_factor"] = REFINE_FACTOR[vi.type]
    return out


def ann_recall(ann_ids: list[str], exact_ids: list[str]) -> float | None:
    """Share of the exact list the approximate list kept (both cut at the same k); None for an empty exact list."""
    if not exact_ids:
        return None
    kept = set(ann_ids)
    return sum(c in kept for c in exact_ids) / len(exact_ids)
