"""Representations: the text each chunk is indexed and embedded as (seed section 2.3)."""

from __future__ import annotations

from rag_ttc_assets.core.chunking import Chunk

BUILDERS = {"plain": "plain/1", "titled": "titled/1"}


def represent(chunk: Chunk, title: str, representation: str) -> str:
    if representation == "plain":
        return chunk.text
    if representation == "titled":
        # The title carries the section's subject, which a mid-section chunk often never names.
        return f"{title}\n\n{chunk.text}" if title else chunk.text
    raise ValueError(f"unknown representation {representation!r}; known: {', '.join(BUILDERS)}")
