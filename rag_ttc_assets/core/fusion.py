"""Reciprocal rank fusion of several best-first chunk rankings.

    score(c) = sum over sources s that ranked c of 1 / (k + rank_s(c)),  rank 1-based, k = 60

Cormack, Clarke and Buettcher, "Reciprocal Rank Fusion outperforms Condorcet and individual Rank
Learning Methods", SIGIR 2009.  A source that did not rank a chunk contributes nothing.
Fused order: score descending, ties by chunk_id ascending: sorted(..., key=(-score, chunk_id)).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict


class FusedHit(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    chunk_id: str
    score: float
    ranks: dict[str, int | None]  # every source, None where the source did not rank the chunk


def rrf(rankings: dict[str, list[str]], k: int = 60, limit: int | None = None) -> list[FusedHit]:
    """Fuse source -> best-first chunk IDs; keep the first `limit` hits (all when None)."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")
    sources = sorted(rankings)
    ranks_by_chunk: dict[str, dict[str, int | None]] = {}
    for source in sources:
        seen: set[str] = set()
        for rank, chunk_id in enumerate(rankings[source], start=1):
            if chunk_id in seen:
                raise ValueError(f"ranking {source!r}: chunk {chunk_id!r} appears twice (again at rank {rank})")
            seen.add(chunk_id)
            ranks_by_chunk.setdefault(chunk_id, dict.fromkeys(sources))[source] = rank
    hits = [
        FusedHit(
            chunk_id=chunk_id,
            # fsum is correctly rounded, so chunks with the same ranks in a different source
            # order get bit-identical scores and meet the chunk_id tie-break as true ties.
            score=math.fsum(1.0 / (k + r) for r in ranks.values() if r is not None),
            ranks=ranks,
        )
        for chunk_id, ranks in ranks_by_chunk.items()
    ]
    hits.sort(key=lambda h: (-h.score, h.chunk_id))
    return hits if limit is None else hits[:limit]
