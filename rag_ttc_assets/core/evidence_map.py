"""Project a request's verbatim evidence quotes onto an arm's chunks.

A chunk supports a quote when it contains the whole quote, or covers at least half of it
(a quote split by a chunk boundary is supported by the chunk holding most of it, or by both
halves when split evenly). DESIGN section 4: "the part of it that the chunk covers".
"""

from __future__ import annotations

from rag_ttc_assets.core.chunking import Chunk

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
