"""Project a request's verbatim evidence quotes onto an arm's chunks.

A chunk supports a quote when it contains the whole quote, or covers at least half of it
(a quote split by a chunk boundary is supported by the chunk holding most of it, or by both
halves when split evenly). DESIGN section 4: "the part of it that the chunk covers".
"""

from __future__ import annotations

from collections.abc import Sequence

from rag_ttc_assets.core.chunking import Chunk
from rag_ttc_assets.core.records import Question

MIN_COVERED_SHARE = 0.5


def quote_spans(doc_text: str, quote: str) -> list[tuple[int, int]]:
    spans, i = [], doc_text.find(quote)
    while i >= 0:
        spans.append((i, i + len(quote)))
        i = doc_text.find(quote, i + 1)
    return spans


def supporting_chunk_ids(doc_text: str, quote: str, doc_chunks: list[Chunk]) -> list[str]:
    """IDs of the chunks of one document that support `quote`, in chunk order."""
    out: list[str] = []
    for qs, qe in quote_spans(doc_text, quote):
        need = MIN_COVERED_SHARE * (qe - qs)
        for c in doc_chunks:
            covered = min(qe, c.end) - max(qs, c.start)
            if covered > 0 and (covered >= need or (c.start <= qs and qe <= c.end)) and c.chunk_id not in out:
                out.append(c.chunk_id)
    return out


def request_support(documents: dict[str, str], questions: Sequence[Question],
                    chunks: list[Chunk]) -> dict[str, list[str]]:
    """For every request with gold evidence: the chunk IDs (this chunking) that support it, in the order found.
    `documents` maps doc_id to its text. Evaluation side: never handed to the generator or its retrieval."""
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    out: dict[str, list[str]] = {}
    for q in questions:
        for req in q.requests:
            ids: list[str] = []
            for ev in req.evidence:
                for cid in supporting_chunk_ids(documents[ev.doc_id], ev.quote, by_doc.get(ev.doc_id, [])):
                    if cid not in ids:
                        ids.append(cid)
            out[req.id] = ids
    return out
