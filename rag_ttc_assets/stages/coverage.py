"""Which chunks support each annotated request (this arm's chunking), and whether the arm ranked, selected and
admitted one: the per-request coverage both retrieval-supplied and tool arms are scored by."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag_ttc_assets.adapters.table_types import table_frame
from rag_ttc_assets.core import admission, evidence_map
from rag_ttc_assets.core.chunking import Chunk
from rag_ttc_assets.core.dataset import Dataset
from rag_ttc_assets.core.records import Question
from rag_ttc_assets.core.tables import Table

if TYPE_CHECKING:
    import polars as pl

ROWS, CTX = Table.RETRIEVAL_ROWS.c, Table.ADMITTED_CONTEXTS.c  # the declared column names (core.tables)


def request_support(ds: Dataset, questions: list[Question], chunks: list[Chunk]) -> dict[str, list[str]]:
    """For every request with gold evidence: the chunk IDs (this arm's chunking) that support it."""
    return evidence_map.request_support(ds.documents_by_id, questions, chunks)


def request_coverage(questions: list[Question], support: dict[str, list[str]], retrieval_rows: pl.DataFrame,
                     contexts: pl.DataFrame, supply: str = "retrieval") -> pl.DataFrame:
    """Per request: is a supporting chunk ranked, selected, admitted (core.admission.coverage_rows). For preloaded
    and tool arms all three mean "in context" (the preloaded set; the lookups' results)."""
    ctx = {r[CTX.query_id]: r for r in contexts.iter_rows(named=True)}
    # Preloaded and tool arms are not supplied by the ranked list: what they had in context is what counts.
    ranked = ({r[ROWS.query_id]: set(r[ROWS.ranked_chunk_ids]) for r in retrieval_rows.iter_rows(named=True)}
              if supply == "retrieval" else {q: set(c[CTX.admitted_chunk_ids]) for q, c in ctx.items()})
    # An approximate index's counterfactual (core.ann): what the exact vector list would have ranked.
    exact = ({r[ROWS.query_id]: set(r[ROWS.exact_ranked_chunk_ids]) for r in retrieval_rows.iter_rows(named=True)
              if r.get(ROWS.exact_ranked_chunk_ids) is not None}
             if supply == "retrieval" and ROWS.exact_ranked_chunk_ids in retrieval_rows.columns else {})
    return table_frame(Table.REQUEST_COVERAGE, admission.coverage_rows(questions, support, ranked, ctx, exact or None))
