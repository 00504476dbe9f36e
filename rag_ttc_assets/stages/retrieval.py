"""Retrieval rows, admitted contexts and retrieval metrics for one arm.

The seed's central distinction is kept exact: `ranked_chunk_ids` (retrieve_k), then
`selected_chunk_ids` (evidence_k prefix), then the admitted `evidence` and `omitted_chunk_ids`
under the rune budget. Retrieval metrics read only the ranked list, so evidence_k cannot move them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from rag_ttc_assets.adapters import trec_eval
from rag_ttc_assets.adapters.bm25 import BM25Index
from rag_ttc_assets.adapters.store import ArtifactStore, Built, Table
from rag_ttc_assets.adapters.table_types import table_frame
from rag_ttc_assets.core import admission, ann, artifacts, metrics, usage
from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.chunking import Chunk
from rag_ttc_assets.core.artifacts import SOURCE_DEPTH
from rag_ttc_assets.core.counterfactual import Planted
from rag_ttc_assets.core.dataset import Dataset
from rag_ttc_assets.core.fusion import rrf
from rag_ttc_assets.core.measured import NO_TARGETS, measured_mean
from rag_ttc_assets.core.records import Question
from rag_ttc_assets.stages import arm_supply
from rag_ttc_assets.imported import import_stage
from rag_ttc_assets.stages.coverage import request_coverage
from rag_ttc_assets.stages.indexes import open_vector_index, read_question_embeddings

if TYPE_CHECKING:
    import polars as pl

# the declared column names (core.tables)
ROWS, CTX, COV = Table.RETRIEVAL_ROWS.c, Table.ADMITTED_CONTEXTS.c, Table.REQUEST_COVERAGE.c
IMP = Table.IMPORTED_ROWS.c


def arm_questions(cfg: ArmConfig, ds: Dataset) -> list[Question]:
    qs = ds.evaluation.questions
    if cfg.question_set == "pilot":
        pilot = set(ds.evaluation.pilot)
        return [q for q in qs if q.id in pilot]
    return list(qs)


def retrieve(cfg: ArmConfig, ds: Dataset, bm25_built: Built | None, vec_built: Built | None, qemb: Built | None,
             chunk_docs: dict[str, str]) -> pl.DataFrame:
    """One row per question: the fused ranked list with each source's rank and score. Only the sources the arm's
    retrieval mode searches are opened (core.usage); the others may be None.

    With an approximate vector index (core.ann), the row also holds the exact search of the same table (a flat
    scan): `vector_chunk_ids` (the approximate list's top retrieve_k), `exact_vector_chunk_ids` (the exact one's),
    `ann_recall_k`, and `exact_ranked_chunk_ids`, the ranked list the arm would have had with the exact vector
    list in its place (what `missed_by_ann` in diagnosis.flow reads). They are null for an exact (flat) arm."""
    import numpy as np
    read = usage.SOURCES[cfg.retrieval]
    bm = BM25Index(bm25_built.path / "tantivy") if usage.BM25_INDEX in read else None
    vi = open_vector_index(cfg, vec_built) if usage.VECTOR_INDEX in read else None
    approximate = vi is not None and cfg.vector_index.approximate
    qvecs = read_question_embeddings(qemb) if vi is not None else {}
    depth = max(SOURCE_DEPTH, cfg.retrieve_k)
    questions = arm_questions(cfg, ds)
    # All questions' vector searches in batched LanceDB queries: the same hits as one query each,
    # without a round trip through LanceDB's event loop per question.
    vector_hits: dict[str, list[tuple[str, float]]] = {}
    exact_hits: dict[str, list[tuple[str, float]]] = {}
    if vi is not None and questions:
        matrix = np.stack([qvecs[q.id] for q in questions])
        vector_hits = {q.id: h for q, h in zip(questions, vi.search_many(matrix, depth))}
        if approximate:
            exact_hits = {q.id: h for q, h in zip(questions, vi.search_many(matrix, depth, exact=True))}
    rows = []
    for q in questions:
        bm25_hits = bm.search(q.text, depth) if bm is not None else None
        vector = vector_hits[q.id] if vi is not None else None
        lists = {s: hits for s, hits in (("bm25", bm25_hits), ("vector", vector)) if hits is not None}
        ranked = _ranked(cfg, lists)
        ids = [c for c, _ in ranked]
        bm25_ranks, bm25_scores = _positions(ids, bm25_hits)
        vector_ranks, vector_scores = _positions(ids, vector)
        row = RetrievalRow(query_id=q.id, retrieval=cfg.retrieval, retrieve_k=cfg.retrieve_k, ranked_chunk_ids=ids,
                           ranked_doc_ids=[chunk_docs[c] for c in ids], scores=[float(s) for _, s in ranked],
                           bm25_ranks=bm25_ranks, bm25_scores=bm25_scores, vector_ranks=vector_ranks,
                           vector_scores=vector_scores)
        if approximate and vector is not None:
            exact = exact_hits[q.id]
            approx_ids = [c for c, _ in vector[: cfg.retrieve_k]]
            exact_ids = [c for c, _ in exact[: cfg.retrieve_k]]
            row = replace(row, vector_chunk_ids=approx_ids, exact_vector_chunk_ids=exact_ids,
                          exact_ranked_chunk_ids=[c for c, _ in _ranked(cfg, {**lists, "vector": exact})],
                          ann_recall_k=ann.ann_recall(approx_ids, exact_ids))
        rows.append(vars(row))
    return table_frame(Table.RETRIEVAL_ROWS, rows, *ANN_COLUMNS)


@dataclass(frozen=True)
class RetrievalRow:
    """One retrieval_rows row as `retrieve` builds it: the ranked list, each source's rank and score of every
    ranked chunk (None: that source did not return it), and an approximate index's lists (None for an exact arm)."""

    query_id: str
    retrieval: str
    retrieve_k: int
    ranked_chunk_ids: list[str]
    ranked_doc_ids: list[str]
    scores: list[float]
    bm25_ranks: list[int | None]
    bm25_scores: list[float | None]
    vector_ranks: list[int | None]
    vector_scores: list[float | None]
    vector_chunk_ids: list[str] | None = None
    exact_vector_chunk_ids: list[str] | None = None
    exact_ranked_chunk_ids: list[str] | None = None
    ann_recall_k: float | None = None


def _positions(ids: list[str], hits: list[tuple[str, float]] | None) -> tuple[list[int | None], list[float | None]]:
    """Each ranked chunk's rank (1-based) and score in one source's list; None where the source did not return it
    (or the arm does not search that source)."""
    pos = {c: (i + 1, s) for i, (c, s) in enumerate(hits or [])}
    return [pos[c][0] if c in pos else None for c in ids], [float(pos[c][1]) if c in pos else None for c in ids]


# The approximate index's columns of the retrieval rows (null for an exact arm).
ANN_COLUMNS = ("vector_chunk_ids", "exact_vector_chunk_ids", "exact_ranked_chunk_ids", "ann_recall_k")


def _ranked(cfg: ArmConfig, lists: dict[str, list[tuple[str, float]]]) -> list[tuple[str, float]]:
    """The arm's ranked list (retrieve_k) from its sources' lists: RRF over them, or the one source it searches."""
    if cfg.retrieval == "rrf":
        fused = rrf({s: [c for c, _ in hits] for s, hits in lists.items()}, k=cfg.rrf_k, limit=cfg.retrieve_k)
        return [(h.chunk_id, h.score) for h in fused]
    return lists[cfg.retrieval][: cfg.retrieve_k]


def retrieve_once(store: ArtifactStore, cfg: ArmConfig, ds: Dataset, chunks: Built, bm25_built: Built | None,
                  vec_built: Built | None, qemb: Built | None) -> pl.DataFrame:
    """`retrieve`, as a shared artifact of the store: keyed by everything the ranked lists depend on (the
    questions, the chunks, the indexes the arm searches, the question embeddings and the retrieval fields), so
    arms that differ only downstream (evidence_k, context_runes, order, prompt...) share one retrieval. An index
    the arm does not read (None) is None in the key."""
    import polars as pl

    key = artifacts.RETRIEVAL_ROWS.key(
        cfg, evaluation_digest=ds.evaluation_digest, source_depth=SOURCE_DEPTH, chunks=chunks.content_digest,
        bm25_index=_digest(bm25_built), vector_index=_digest(vec_built), question_embeddings=_digest(qemb))

    def builder(tmp):
        chunk_docs = dict(pl.read_parquet(chunks.path / "chunks.parquet", columns=["chunk_id", "doc_id"]).iter_rows())
        df = retrieve(cfg, ds, bm25_built, vec_built, qemb, chunk_docs)
        df.write_parquet(tmp / "retrieval_rows.parquet")
        return {"questions": df.height}

    built = store.build_once(artifacts.RETRIEVAL_ROWS.name, key, builder)
    return pl.read_parquet(built.path / "retrieval_rows.parquet")


def _digest(built: Built | None) -> str | None:
    return None if built is None else built.content_digest


def admitted_contexts(cfg: ArmConfig, questions: list[Question], retrieval_rows: pl.DataFrame,
                      support: dict[str, list[str]], chunk_text_of: Callable[[Collection[str]], dict[str, str]], *,
                      preloaded: list[Chunk] | None, imported_rows: pl.DataFrame | None,
                      lookup: arm_supply.Lookup | None) -> tuple[pl.DataFrame, pl.DataFrame, dict]:
    """An arm's admitted contexts (retrieval, preloaded or tool supply), its per-request coverage and the
    admission summary. `support`: each request's supporting chunks; `chunk_text_of(ids)`: the texts of those chunks
    (only the ranked lists' chunks are read). What one supply mode alone reads is None for the others: `preloaded`
    (arm_supply.preloaded_chunks), an imported arm's `imported_rows`, a tool arm's `lookup`."""
    import polars as pl

    if cfg.supply == "preloaded":
        if preloaded is None:
            raise ValueError("a preloaded arm needs its preloaded chunks")
        contexts = arm_supply.preloaded_contexts(cfg, questions, preloaded)
    elif cfg.supply == "tool":
        contexts = arm_supply.tool_contexts(cfg, questions)
    elif cfg.supply == "imported":
        if imported_rows is None:
            raise ValueError("an imported arm needs its imported rows")
        admitted = {c for ids in imported_rows[IMP.admitted_chunk_ids].to_list() for c in ids}
        contexts = import_stage.contexts(cfg, imported_rows, chunk_text_of(admitted))
    else:
        ranked = {c for ids in retrieval_rows[ROWS.ranked_chunk_ids].to_list() for c in ids}
        contexts = admit(cfg, retrieval_rows, chunk_text_of(ranked), questions, support)
    coverage = request_coverage(questions, support, retrieval_rows, contexts,
                                "retrieval" if cfg.supply == "imported" else cfg.supply)
    if cfg.supply == "imported":
        # An imported arm's chunks are only the documents its traces hold: a request whose gold evidence no trace
        # retrieved has no supporting chunk, yet it has evidence (and counts in every coverage denominator).
        labelled = {r.id: bool(r.evidence) for q in questions for r in q.requests}
        coverage = coverage.with_columns(pl.Series("has_evidence", [labelled[r] for r in coverage[COV.request_id]],
                                                   dtype=pl.Boolean))
    summary = admission_summary(coverage, contexts, cfg.supply)
    summary["hit_rates"] = admission.hit_rates(coverage.to_dicts())
    if cfg.supply == "tool":
        # Nothing is admitted before a tool arm answers: its boundary is the lookup hit rate of the queries the
        # product sends (the question's own split). The annotated request texts as queries are an oracle figure,
        # reported beside it, never gated on.
        if lookup is None:
            raise ValueError("a tool arm needs its lookup tool (arm_supply.Lookup)")
        summary["lookup"] = arm_supply.question_lookups(questions, lookup)
        summary["oracle_lookup"] = arm_supply.oracle_request_lookups(questions, lookup)
    return contexts, coverage, summary


def admit(cfg: ArmConfig, retrieval_rows: pl.DataFrame, chunk_text: dict[str, str],
          questions: list[Question] | None = None, support: dict[str, list[str]] | None = None) -> pl.DataFrame:
    """Every question's admitted context (core.admission.context_row) as the admitted_contexts table."""
    by_q = {q.id: q for q in questions or []}
    rows = [admission.context_row(cfg, r[ROWS.query_id], r[ROWS.ranked_chunk_ids], chunk_text,
                                  by_q.get(r[ROWS.query_id]), support) for r in retrieval_rows.iter_rows(named=True)]
    return table_frame(Table.ADMITTED_CONTEXTS, rows)


def evidence_pairs(context_row: dict, chunk_text: dict[str, str]) -> list[tuple[str, str]]:
    """(chunk_id, text) of the admitted evidence, in prompt order, planted chunks included; a preloaded document's
    chunks drop the runes they share with the previous chunk (evidence_offsets), so it is pasted once, whole."""
    planted = {p.chunk_id: p.planted
               for p in map(Planted.model_validate, json.loads(context_row.get(CTX.planted) or "[]"))}
    ids = context_row[CTX.admitted_chunk_ids]
    offsets = context_row.get(CTX.evidence_offsets) or [0] * len(ids)
    return [(c, planted[c] if c in planted else chunk_text[c][o:]) for c, o in zip(ids, offsets)]


# The lab's default set plus map and P at 5 and 10: the summary keys downstream readers use stay as they were.
RETRIEVAL_MEASURES = (*metrics.DEFAULT_MEASURES, "map", "P.5,10")


def retrieval_metrics(questions: list[Question], retrieval_rows: pl.DataFrame,
                      measures: tuple[str, ...] = RETRIEVAL_MEASURES) -> dict:
    """Document-level trec_eval measures from the ranked list; questions without targets are undefined, and so are
    an imported arm's questions whose trace has no RETRIEVER span (retrieval not measured, never a miss)."""
    ranked = {r[ROWS.query_id]: metrics.doc_ranking(r[ROWS.ranked_doc_ids])
              for r in retrieval_rows.iter_rows(named=True)}
    unmeasured = ({r[ROWS.query_id]: r[ROWS.retrieval_status] for r in retrieval_rows.iter_rows(named=True)
                   if r[ROWS.retrieval_status] == "no_retrieval_span"}
                  if ROWS.retrieval_status in retrieval_rows.columns else {})
    qrels = {q.id: {t.doc_id: t.relevance for t in q.targets} for q in questions
             if q.targets and q.id not in unmeasured}
    result = trec_eval.evaluate_ranked(qrels, {q.id: ranked.get(q.id, []) for q in questions}, measures,
                                       complete=True)
    undefined_ids = set(result.undefined_query_ids)
    undefined = [q.id for q in questions if q.id in undefined_ids]
    per_query = {q.id: result.per_query.get(q.id) for q in questions}
    summary = {k: float(v) for k, v in result.measures.items() if k != "num_q"}
    summary.update({"evaluated": result.evaluated, "undefined": len(undefined), "questions": len(questions),
                    "undefined_query_ids": undefined, "metric_definitions": trec_eval.DEFINITIONS})
    # The means are over the evaluated questions: N measured of M, the others without targets.
    m = measured_mean({q.id: None if q.id in undefined_ids else (per_query[q.id] or {}).get("recip_rank")
                       for q in questions}, {q: unmeasured.get(q, NO_TARGETS) for q in undefined})
    summary.update({"measured": m.measured, "of": m.of, "not_measured": m.not_measured})
    summary.update(ann_summary(questions, retrieval_rows))
    return {"summary": summary, "per_query": per_query}


def ann_summary(questions: list[Question], retrieval_rows: pl.DataFrame) -> dict:
    """An approximate index's retrieval measure (core.ann): `ann_recall_k`, the mean share of the exact vector
    list (top retrieve_k) the approximate list kept, over the questions whose exact list is not empty (its N:
    `ann_recall_measured` of `ann_recall_of`). Nothing for an exact arm."""
    if (ROWS.ann_recall_k not in retrieval_rows.columns
            or retrieval_rows[ROWS.ann_recall_k].null_count() == retrieval_rows.height):
        return {}
    by_q = dict(zip(retrieval_rows[ROWS.query_id].to_list(), retrieval_rows[ROWS.ann_recall_k].to_list()))
    m = measured_mean({q.id: by_q.get(q.id) for q in questions},
                      {q.id: "no exact vector list" for q in questions if by_q.get(q.id) is None})
    return {"ann_recall_k": m.mean, "ann_recall_measured": m.measured, "ann_recall_of": m.of,
            "ann_recall_not_measured": m.not_measured}


def admission_summary(coverage: pl.DataFrame, contexts: pl.DataFrame, supply: str = "retrieval") -> dict:
    return admission.admission_summary(coverage.to_dicts(), contexts.to_dicts(), supply)
