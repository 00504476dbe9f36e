"""Digest binding, chunks and representations: the corpus side of an arm."""

from __future__ import annotations

import polars as pl

from rag_ttc_assets.adapters.store import Built
from rag_ttc_assets.core import artifacts
from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.chunking import CHUNKER_VERSION, Chunk, chunk_corpus
from rag_ttc_assets.adapters.files import load_dataset
from rag_ttc_assets.core.dataset import Dataset
from rag_ttc_assets.core.representations import BUILDERS, represent
from rag_ttc_assets.lab import Lab


def bind_dataset(lab: Lab, cfg: ArmConfig) -> Dataset:
    """Load the arm's dataset; raises before any chunking when the digest binding fails."""
    return load_dataset(lab.dataset_dir(cfg.dataset), cfg.dataset)


def build_chunks(lab: Lab, cfg: ArmConfig, ds: Dataset) -> Built:
    key = artifacts.CHUNKS.key(cfg, corpus_digest=ds.corpus_digest)

    def builder(tmp):
        chunks = chunk_corpus([(d.id, d.text) for d in ds.corpus.documents], cfg.chunk_runes, cfg.overlap_runes)
        pl.DataFrame([c.model_dump() for c in chunks]).write_parquet(tmp / "chunks.parquet")
        return {"chunks": len(chunks), "documents": len(ds.corpus.documents), "chunker": CHUNKER_VERSION}

    return lab.store.build_once(artifacts.CHUNKS.name, key, builder)


def read_chunks(built: Built) -> list[Chunk]:
    return [Chunk(**row) for row in pl.read_parquet(built.path / "chunks.parquet").iter_rows(named=True)]


def build_representations(lab: Lab, cfg: ArmConfig, ds: Dataset, chunks: Built) -> Built:
    key = artifacts.REPRESENTATIONS.key(cfg, chunks=chunks.content_digest, builder=BUILDERS[cfg.representation])

    def builder(tmp):
        titles = {d.id: d.title for d in ds.corpus.documents}
        df = pl.read_parquet(chunks.path / "chunks.parquet").select("chunk_id", "doc_id", "text")
        texts = [represent(Chunk(chunk_id=r["chunk_id"], doc_id=r["doc_id"], ordinal=0, text=r["text"],
                                 runes=len(r["text"]), start=0, end=0), titles[r["doc_id"]], cfg.representation)
                 for r in df.iter_rows(named=True)]
        out = df.select("chunk_id", "doc_id").with_columns(pl.Series("text", texts, dtype=pl.String))
        out.write_parquet(tmp / "representations.parquet")
        return {"representations": out.height, "builder": BUILDERS[cfg.representation]}

    return lab.store.build_once(artifacts.REPRESENTATIONS.name, key, builder)


def read_representations(built: Built) -> pl.DataFrame:
    return pl.read_parquet(built.path / "representations.parquet")
