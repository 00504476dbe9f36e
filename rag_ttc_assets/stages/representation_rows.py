"""Representation rows for one arm's chunks: template kinds (plain, titled) in process, model-built kinds (contextual)
through litellm, cached, budgeted and fault-tolerant like the answers and the judges.

Every chunk gets exactly one row, whatever its builder did: `built`, `parse_failure` (the reply was not a usable
context, kept verbatim in `raw_text`), or the provider status of the call (`rate_limited`, `budget_exhausted`...).
A row whose context was not built is indexed as its chunk text alone, and its status says so. Provider faults and
budget stops are `retryable`: the next materialization of `representations` calls the builder for them again. A
parse failure is the builder's reply, as an unparseable answer is the generator's: the cache replays it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rag_ttc_assets.adapters.table_types import schema_frame
from rag_ttc_assets.core import contextual
from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.chunking import Chunk
from rag_ttc_assets.core.dataset import Dataset
from rag_ttc_assets.core.progress import NO_PROGRESS, Progress
from rag_ttc_assets.core.prompts import Prompt
from rag_ttc_assets.core.representations import BUILT, PARSE_FAILURE, identity, represent
from rag_ttc_assets.core.roles import REPRESENTATION_BUILDER
from rag_ttc_assets.core.summaries import is_offline_baseline
from rag_ttc_assets.stages.calls import Caller, pooled

if TYPE_CHECKING:
    import polars as pl

BUILDER_ROLE = REPRESENTATION_BUILDER.name


def schema() -> dict:
    """The representations table's columns and dtypes."""
    import polars as pl

    return {"chunk_id": pl.String, "doc_id": pl.String, "text": pl.String, "context": pl.String, "status": pl.String,
            "error": pl.String, "raw_text": pl.String, "representation": pl.String, "builder": pl.String,
            "builder_model": pl.String, "builder_prompt": pl.String, "prompt_digest": pl.String, "era": pl.String,
            "offline_baseline": pl.Boolean, "provider_calls": pl.Int64, "cache_hit": pl.Boolean,
            "input_tokens": pl.Int64, "output_tokens": pl.Int64, "cost_usd": pl.Float64, "attempts": pl.Int64,
            "messages_digest": pl.String}


def builder_identity(cfg: ArmConfig, prompt: Prompt | None) -> dict:
    """The arm's representation builder: kind, builder version, model, prompt and digest, era, baseline or not."""
    model = cfg.representation_builder.model
    return identity(cfg.representation, model, prompt.name if prompt else None, prompt.digest if prompt else None,
                    cfg.representation_era_label, is_offline_baseline(model))


def representation_messages(prompt: Prompt, title: str, document: str, chunk: Chunk, count: int) -> list[dict]:
    """What the builder is sent for one chunk: its document (a window of a long one) and the chunk; no labels."""
    window = contextual.document_window(document, chunk.start, chunk.end)
    values = contextual.prompt_values(title, window, chunk.chunk_id, chunk.text,
                                      contextual.position_text(chunk.ordinal, count))
    return [{"role": "user", "content": prompt.render(**values)}]


def _row(chunk: Chunk, ident: dict, **fields) -> dict:
    base = {"chunk_id": chunk.chunk_id, "doc_id": chunk.doc_id, "text": chunk.text, "context": None, "status": BUILT,
            "error": None, "raw_text": None, **ident, "provider_calls": 0, "cache_hit": False, "input_tokens": None,
            "output_tokens": None, "cost_usd": None, "attempts": 0, "messages_digest": None}
    return {**base, **fields}


def build_rows(cfg: ArmConfig, ds: Dataset, chunks: list[Chunk], prompt: Prompt, caller: Caller,
               progress: Progress = NO_PROGRESS) -> pl.DataFrame:
    """A model-built kind's rows: one per chunk, in chunk order, each from its builder's reply to `prompt` through
    `caller` (the builder's, from the asset's provider resource; its cache namespace is per era, core.roles).
    A template kind's rows are made by template_rows."""
    ident = builder_identity(cfg, prompt)
    titles, texts = ds.corpus.values("title", (c.doc_id for c in chunks)), ds.corpus.texts
    counts = Counter(c.doc_id for c in chunks)

    def one(c: Chunk) -> dict:
        call = caller.call(representation_messages(prompt, titles[c.doc_id], texts[c.doc_id], c, counts[c.doc_id]))
        fields = {"provider_calls": int(call.counts_as_provider_call),
                  "cache_hit": call.cache_hit, "input_tokens": call.input_tokens, "output_tokens": call.output_tokens,
                  "cost_usd": call.cost_usd, "attempts": call.attempts, "messages_digest": call.messages_digest,
                  "raw_text": call.raw_text}
        if call.status != "ok":
            row = _row(c, ident, status=call.status, error=call.error, **fields)
        else:
            try:
                context = contextual.parse_context(call.raw_text)
                row = _row(c, ident, text=contextual.compose(context, c.text), context=context, **fields)
            except contextual.ContextParseError as e:
                row = _row(c, ident, status=PARSE_FAILURE, error=str(e), **fields)
        return row

    rows = pooled(one, chunks, REPRESENTATION_BUILDER.workers(cfg), progress, "representing", "represented", "chunks")
    return _frame(rows)


def template_rows(cfg: ArmConfig, ds: Dataset, batches: Iterable[list[Chunk]]) -> pl.DataFrame:
    """A template kind's rows (no builder call), from the chunks a batch at a time: each batch becomes a typed frame
    before the next is read, and the frames are one table, the rows a single pass over the chunks would make."""
    import polars as pl

    ident = builder_identity(cfg, None)
    frames = []
    for batch in batches:
        titles = ds.corpus.values("title", (c.doc_id for c in batch))
        frames.append(_frame([_row(c, ident, text=represent(c, titles[c.doc_id], cfg.representation)) for c in batch]))
    return pl.concat(frames, rechunk=True) if frames else _frame([])


def _frame(rows: list[dict]) -> pl.DataFrame:
    return schema_frame("representations", schema(), rows, "stages/representation_rows.py, schema")


def summary(df: pl.DataFrame) -> dict:
    """Counts a representations artifact records: rows, statuses, rows not built (indexed as chunk text alone) and
    of those the retryable ones (provider faults, budget stops), provider calls and cache hits, tokens."""
    statuses = dict(sorted(Counter(df["status"].to_list()).items()))
    return {"representations": df.height, "statuses": statuses,
            "not_built": df.height - statuses.get(BUILT, 0),
            "retryable": df.height - statuses.get(BUILT, 0) - statuses.get(PARSE_FAILURE, 0),
            "provider_calls": int(df["provider_calls"].sum()), "cache_hits": int(df["cache_hit"].sum()),
            "input_tokens": int(df["input_tokens"].fill_null(0).sum()),
            "output_tokens": int(df["output_tokens"].fill_null(0).sum())}
