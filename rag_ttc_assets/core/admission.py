"""Evidence selection, ordering and the rune budget (the seed's AdmitCompleteChunks).

    select_evidence:  the first evidence_k ranked chunk IDs.
    order_evidence:   "ranked" keeps the order, "reversed" puts the best chunk last (nearest the
                      question), "shuffled" permutes with random.Random(seed).shuffle.
    admit_complete_chunks: walk chunks in order; admit chunk i whole iff
                      used_runes + runes(i) <= max_runes, else record it as omitted and go on, so a
                      later, smaller chunk may still fit.  A chunk is never split.

A rune is a Unicode code point (Go's rune), so runes(text) = len(text) in Python.
"""

from __future__ import annotations

import random
from typing import Literal

from pydantic import BaseModel, ConfigDict

EvidenceOrder = Literal["ranked", "reversed", "shuffled"]


class EvidenceItem(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    chunk_id: str
    text: str
    runes: int


class AdmittedContext(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    evidence: list[EvidenceItem]
    omitted_chunk_ids: list[str]
    used_runes: int
    max_runes: int


def select_evidence(ranked_chunk_ids: list[str], evidence_k: int) -> list[str]:
    if evidence_k < 0:
        raise ValueError(f"evidence_k must be >= 0, got {evidence_k}")
    return list(ranked_chunk_ids[:evidence_k])


def order_evidence(selected_ids: list[str], order: EvidenceOrder, seed: int = 0) -> list[str]:
    if order == "ranked":
        return list(selected_ids)
    if order == "reversed":
        return list(reversed(selected_ids))
    if order == "shuffled":
        shuffled = list(selected_ids)
        # A private generator: the permutation depends on seed alone, never on global random state.
        random.Random(seed).shuffle(shuffled)
        return shuffled
    raise ValueError(f"order must be 'ranked', 'reversed' or 'shuffled', got {order!r}")


def admit_complete_chunks(chunks: list[tuple[str, str]], max_runes: int) -> AdmittedContext:
    """Admit (chunk_id, text) pairs whole, in the given order, within max_runes code points."""
    if isinstance(max_runes, bool) or not isinstance(max_runes, int) or max_runes <= 0:
        raise ValueError(f"max_runes must be a positive integer, got {max_runes!r}")
    evidence: list[EvidenceItem] = []
    omitted: list[str] = []
    seen: set[str] = set()
    used = 0
    for position, (chunk_id, text) in enumerate(chunks):
        if chunk_id in seen:
            raise ValueError(f"chunks[{position}]: duplicate chunk_id {chunk_id!r}")
        seen.add(chunk_id)
        runes = len(text)
        if used + runes <= max_runes:
            evidence.append(EvidenceItem(chunk_id=chunk_id, text=text, runes=runes))
            used += runes
        else:
            omitted.append(chunk_id)
    return AdmittedContext(evidence=evidence, omitted_chunk_ids=omitted, used_runes=used, max_runes=max_runes)
