"""Rune-based chunking with overlap; chunk IDs `<doc_id>#chunk-<n>` are stable for a given config.

A rune is a Unicode code point (a Python `str` index), so no chunk ever splits one. A window
ends at the last whitespace in its final fifth when there is one, so words stay whole; it never
exceeds `chunk_runes`. The next window starts `overlap_runes` before the previous end.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

CHUNKER_VERSION = "runes-whitespace-snap/1"


class Chunk(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    chunk_id: str
    doc_id: str
    ordinal: int
    text: str
    runes: int
    start: int  # offset in the document text, in runes
    end: int


def _snap_end(text: str, start: int, end: int, size: int) -> int:
    if end >= len(text):
        return len(text)
    floor = start + (4 * size) // 5
    cut = max(text.rfind(" ", floor, end), text.rfind("\n", floor, end))
    return cut + 1 if cut > start else end


def chunk_text(doc_id: str, text: str, chunk_runes: int, overlap_runes: int) -> list[Chunk]:
    if chunk_runes <= 0:
        raise ValueError(f"chunk_runes must be positive, got {chunk_runes}")
    if not 0 <= overlap_runes < chunk_runes:
        raise ValueError(f"overlap_runes ({overlap_runes}) must be >= 0 and smaller than chunk_runes ({chunk_runes})")
    chunks: list[Chunk] = []
    start = 0
    n = len(text)
    while start < n:
        end = _snap_end(text, start, min(start + chunk_runes, n), chunk_runes)
        piece = text[start:end]
        chunks.append(Chunk(chunk_id=f"{doc_id}#chunk-{len(chunks)}", doc_id=doc_id, ordinal=len(chunks),
                            text=piece, runes=len(piece), start=start, end=end))
        if end >= n:
            break
        start = max(end - overlap_runes, start + 1)
    return chunks


def chunk_corpus(documents: list[tuple[str, str]], chunk_runes: int, overlap_runes: int) -> list[Chunk]:
    """Chunk (doc_id, text) pairs in corpus order."""
    out: list[Chunk] = []
    for doc_id, text in documents:
        out.extend(chunk_text(doc_id, text, chunk_runes, overlap_runes))
    return out
