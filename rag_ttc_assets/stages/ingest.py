"""Digest binding, chunks and representations: the corpus side of an arm."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from rag_ttc_assets.adapters.store import ArtifactStore, Built
from rag_ttc_assets.adapters.table_types import schema_frame, schema_of
from rag_ttc_assets.core import artifacts
from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.chunking import CHUNKER_VERSION, Chunk, chunk_text
from rag_ttc_assets.adapters.input_files import load_dataset
from rag_ttc_assets.core.dataset import Dataset
from rag_ttc_assets.core.progress import NO_PROGRESS, Progress
from rag_ttc_assets.core.prompts import Prompt
from rag_ttc_assets.core.representations import BUILDERS, MODEL_BUILT
from rag_ttc_assets.core.tables import Table
from rag_ttc_assets.stages import representation_rows
from rag_ttc_assets.stages.calls import Caller

if TYPE_CHECKING:
    import polars as pl

# Rows built, held and read as Python objects at a time (chunks, representations): a slice, never the whole corpus.
BATCH_ROWS = 50_000


def bind_dataset(datasets_dir: Path, cfg: ArmConfig) -> Dataset:
    """Load the arm's dataset from the lab's datasets folder; raises before any chunking when the digest binding
    fails."""
    return load_dataset(datasets_dir / cfg.dataset, cfg.dataset)


def chunk_schema() -> dict:
    """chunks.parquet's columns (a Chunk's fields), typed as an imported arm's chunks are declared."""
    return schema_of(Table.IMPORTED_CHUNKS, *Chunk.model_fields)


def build_chunks(store: ArtifactStore, cfg: ArmConfig, ds: Dataset) -> Built:
    key = artifacts.CHUNKS.key(cfg, corpus_digest=ds.corpus_digest)

    def builder(tmp):
        import polars as pl

        # Chunked a slice of documents at a time into typed frames, so the corpus's chunks are never held as Python
        # objects all at once (a million chunks as models and dicts were several GB); the one frame written is the
        # frame a single pass would build, row for row.
        schema, frames, batch = chunk_schema(), [], []
        for doc_id, text in ds.corpus.id_texts():
            batch.extend(c.model_dump() for c in chunk_text(doc_id, text, cfg.chunk_runes, cfg.overlap_runes))
            if len(batch) >= BATCH_ROWS:
                frames.append(schema_frame("chunks", schema, batch, "stages/ingest.py, chunk_schema"))
                batch = []
        if batch or not frames:
            frames.append(schema_frame("chunks", schema, batch, "stages/ingest.py, chunk_schema"))
        df = pl.concat(frames, rechunk=True)
        del frames, batch
        df.write_parquet(tmp / "chunks.parquet")
        return {"chunks": df.height, "documents": len(ds.corpus), "chunker": CHUNKER_VERSION}

    return store.build_once(artifacts.CHUNKS.name, key, builder)


def chunk_batches(built: Built, rows: int = BATCH_ROWS) -> Iterator[list[Chunk]]:
    """The artifact's chunks in order, `rows` at a time: a whole corpus is never a list of models at once."""
    import polars as pl

    frame = pl.scan_parquet(built.path / "chunks.parquet")
    total = frame.select(pl.len()).collect().item()
    for start in range(0, total, rows):
        yield [Chunk(**row) for row in frame.slice(start, rows).collect().iter_rows(named=True)]


def read_chunks(built: Built, doc_ids: Collection[str] | None = None) -> list[Chunk]:
    """The artifact's chunks as models, in order; only those of the documents `doc_ids` when given (the chunks gold
    evidence can fall in: a corpus's other chunks are never made models for it)."""
    import polars as pl

    frame = pl.scan_parquet(built.path / "chunks.parquet")
    if doc_ids is not None:
        frame = frame.filter(pl.col("doc_id").is_in(sorted(doc_ids)))
    return [Chunk(**row) for row in frame.collect().iter_rows(named=True)]


def chunk_texts(built: Built, ids: Collection[str] | None = None) -> dict[str, str]:
    """chunk_id -> text from the artifact's two columns (no models); only the chunks `ids` when given."""
    import polars as pl

    frame = pl.scan_parquet(built.path / "chunks.parquet").select("chunk_id", "text")
    if ids is not None:
        frame = frame.filter(pl.col("chunk_id").is_in(sorted(ids)))
    df = frame.collect()
    return dict(zip(df["chunk_id"].to_list(), df["text"].to_list()))


def chunk_count(built: Built) -> int:
    return int(built.manifest["info"]["chunks"])


def build_representations(store: ArtifactStore, cfg: ArmConfig, ds: Dataset, chunks: Built,
                          prompt: Prompt | None = None, builder_caller: Callable[[], Caller] | None = None,
                          progress: Progress = NO_PROGRESS, retry_faults: bool = False) -> Built:
    """The arm's representations, built once per key (chunks, kind, builder, prompt digest, era). A model-built kind
    takes its builder's `prompt` (the arm's representation_prompt) and `builder_caller`, which makes the builder's
    Caller when rows are built (the asset's provider resource; a store hit calls nothing). With `retry_faults` (the
    representations asset itself), an artifact with rows the provider failed or the budget stopped is rebuilt: the
    provider cache serves every reply it has, and only those rows are called again."""
    model_built = cfg.representation in MODEL_BUILT
    if (prompt is not None) != model_built or (model_built and builder_caller is None):
        raise ValueError(f"representation {cfg.representation!r}: " + (
            "a model-built kind needs its builder's prompt and Caller" if model_built
            else "a template kind has no builder prompt"))
    key = artifacts.REPRESENTATIONS.key(cfg, chunks=chunks.content_digest, builder=BUILDERS[cfg.representation],
                                        prompt_digest=prompt.digest if prompt else None)

    def builder(tmp):
        if prompt is None:  # a template: row for row from the chunks, a slice at a time
            out = representation_rows.template_rows(cfg, ds, chunk_batches(chunks))
        else:
            out = representation_rows.build_rows(cfg, ds, read_chunks(chunks), prompt, builder_caller(), progress)
        out.write_parquet(tmp / "representations.parquet")
        return {**representation_rows.builder_identity(cfg, prompt), **representation_rows.summary(out)}

    def reuse(manifest: dict) -> bool:
        return not (retry_faults and manifest.get("info", {}).get("retryable"))

    return store.build_once(artifacts.REPRESENTATIONS.name, key, builder, reuse=reuse)


def read_representations(built: Built) -> pl.DataFrame:
    import polars as pl

    return pl.read_parquet(built.path / "representations.parquet")
