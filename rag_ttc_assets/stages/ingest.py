"""Digest binding, chunks and representations: the corpus side of an arm."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag_ttc_assets.adapters.store import Built
from rag_ttc_assets.adapters.table_types import schema_frame, schema_of
from rag_ttc_assets.core import artifacts
from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.chunking import CHUNKER_VERSION, Chunk, chunk_corpus
from rag_ttc_assets.adapters.files import load_dataset
from rag_ttc_assets.core.dataset import Dataset
from rag_ttc_assets.core.progress import NO_PROGRESS, Progress
from rag_ttc_assets.core.representations import BUILDERS
from rag_ttc_assets.core.tables import Table
from rag_ttc_assets.lab import Lab
from rag_ttc_assets.stages import representations
from rag_ttc_assets.stages.calls import CallerFor, role_caller

if TYPE_CHECKING:
    import polars as pl


def bind_dataset(lab: Lab, cfg: ArmConfig) -> Dataset:
    """Load the arm's dataset; raises before any chunking when the digest binding fails."""
    return load_dataset(lab.dataset_dir(cfg.dataset), cfg.dataset)


def chunk_schema() -> dict:
    """chunks.parquet's columns (a Chunk's fields), typed as an imported arm's chunks are declared."""
    return schema_of(Table.IMPORTED_CHUNKS, *Chunk.model_fields)


def build_chunks(lab: Lab, cfg: ArmConfig, ds: Dataset) -> Built:
    key = artifacts.CHUNKS.key(cfg, corpus_digest=ds.corpus_digest)

    def builder(tmp):
        chunks = chunk_corpus([(d.id, d.text) for d in ds.corpus.documents], cfg.chunk_runes, cfg.overlap_runes)
        schema_frame("chunks", chunk_schema(), [c.model_dump() for c in chunks],
                     "stages/ingest.py, chunk_schema").write_parquet(tmp / "chunks.parquet")
        return {"chunks": len(chunks), "documents": len(ds.corpus.documents), "chunker": CHUNKER_VERSION}

    return lab.store.build_once(artifacts.CHUNKS.name, key, builder)


def read_chunks(built: Built) -> list[Chunk]:
    import polars as pl

    return [Chunk(**row) for row in pl.read_parquet(built.path / "chunks.parquet").iter_rows(named=True)]


def build_representations(lab: Lab, cfg: ArmConfig, ds: Dataset, chunks: Built, progress: Progress = NO_PROGRESS,
                          retry_faults: bool = False, caller_for: CallerFor = role_caller) -> Built:
    """The arm's representations, built once per key (chunks, kind, builder, prompt digest, era). With
    `retry_faults` (the representations asset itself), an artifact with rows the provider failed or the budget
    stopped is rebuilt: the provider cache serves every reply it has, and only those rows are called again."""
    prompt = representations.builder_prompt(lab, cfg)
    key = artifacts.REPRESENTATIONS.key(cfg, chunks=chunks.content_digest, builder=BUILDERS[cfg.representation],
                                        prompt_digest=prompt.digest if prompt else None)

    def builder(tmp):
        out = representations.build_rows(lab, cfg, ds, read_chunks(chunks), progress, caller_for)
        out.write_parquet(tmp / "representations.parquet")
        return {**representations.builder_identity(cfg, prompt), **representations.summary(out)}

    def reuse(manifest: dict) -> bool:
        return not (retry_faults and manifest.get("info", {}).get("retryable"))

    return lab.store.build_once(artifacts.REPRESENTATIONS.name, key, builder, reuse=reuse)


def read_representations(built: Built) -> pl.DataFrame:
    import polars as pl

    return pl.read_parquet(built.path / "representations.parquet")
