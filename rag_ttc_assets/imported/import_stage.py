"""Imported arms (imported.import_source, imported.import_mapping) in the lab's tables: the source file read and mapped once
(`imported_source`), then the retrieval rows, admitted contexts, answers and contract results every lab arm has, built
from it with no provider call."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.chunking import Chunk
from rag_ttc_assets.core.contract import FREE_TEXT, NO_ANSWER_SPAN, NO_TRACE, check_contract
from rag_ttc_assets.core.dataset import Dataset, sha256_digest
from rag_ttc_assets.imported.import_mapping import (NO_RETRIEVAL_SPAN, citations, imported_rows, map_documents,
                                                    map_traces, without_citations)
from rag_ttc_assets.imported.import_source import ImportSourceError, read_source, traces_of
from rag_ttc_assets.imported.phoenix_source import phoenix_digest, phoenix_spans
from rag_ttc_assets.core.records import Question
from rag_ttc_assets.stages.answer_table import GENERATOR_ROLE
from rag_ttc_assets.adapters import phoenix
from rag_ttc_assets.adapters.store import ArmJson, ArtifactStore, Table
from rag_ttc_assets.adapters.table_types import table_frame
from rag_ttc_assets.imported import phoenix_annotations

if TYPE_CHECKING:
    import polars as pl

IMPORTED_PROMPT = "imported"  # the answers' `prompt`: the system's own, not one of the lab's prompts
# the declared column names (core.tables)
IMP, ANS, ROWS = Table.IMPORTED_ROWS.c, Table.ANSWERS.c, Table.RETRIEVAL_ROWS.c
LISTED = 50  # unmatched traces, unanswered questions and external documents listed by name (all are counted)


def source_path(arms_file: Path, cfg: ArmConfig) -> Path:
    """The source file, relative to the arms file that names it."""
    p = Path(cfg.source.file)
    return p if p.is_absolute() else Path(arms_file).parent / p


@dataclass(frozen=True)
class ImportRead:
    """An imported arm's source read and mapped (read_import): its chunks and rows (polars frames of
    Table.IMPORTED_CHUNKS, IMPORTED_ROWS), import_mapping.json's mapping (checked by its model, imported.import_mapping.
    ImportMapping) and a Phoenix server's span records as read (None for a file)."""

    chunks: pl.DataFrame
    rows: pl.DataFrame
    mapping: dict[str, Any]
    records: list[dict[str, Any]] | None


def read_import(arms_file: Path, cfg: ArmConfig, ds: Dataset, questions: list[Question]) -> ImportRead:
    """Read, parse and map the arm's source (ImportRead). Raises imported.import_source.ImportSourceError naming the
    file (or the server and project), the trace or row, and the field; nothing is written."""
    src = cfg.source
    if src.server:  # a Phoenix project, read with Phoenix's own client; bound by its span IDs and their content
        label = f"{arms_file}: {src.label}"
        records = phoenix.read_spans(src.endpoint, src.project, label)
        traces = traces_of(phoenix_spans(records, label), label, src.question_id_attribute)
        origin = {"source_file": None, "endpoint": src.endpoint, "project": src.project,
                  "source_digest": phoenix_digest(records), "spans": len(records)}
    else:
        path = source_path(arms_file, cfg)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise ImportSourceError(f"{arms_file}: field 'source.file': no file {path}") from None
        label = str(path)
        traces = read_source(data, label, src.format, src.question_id_attribute)
        origin = {"source_file": label, "source_digest": sha256_digest(data)}
        records = None
    mapping = map_traces(traces, questions, label, src.pick)
    matches, index = map_documents(mapping.traces.values(), ds.documents_by_id)
    chunk_text = {m.chunk.chunk_id: m.chunk.text for m in matches}
    rows = imported_rows(questions, mapping, index, chunk_text)
    external = [m.chunk.chunk_id for m in matches if m.matched_by == "external"]
    statuses = {s: sum(r.status == s for r in rows) for s in ("ok", NO_ANSWER_SPAN, NO_TRACE)}
    summary = {
        **origin, "format": src.format,
        "answer_format": src.answer_format, "citation_style": src.citation_style, "pick": src.pick,
        "question_id_attribute": src.question_id_attribute,
        **mapping.counts(),
        "documents": len(matches),
        "documents_by_id": sum(m.matched_by == "id" for m in matches),
        "documents_by_content": sum(m.matched_by == "content" for m in matches),
        "external_documents": len(external),
        "no_answer_span": statuses[NO_ANSWER_SPAN],
        "no_retrieval_span": sum(r.retrieval_status == NO_RETRIEVAL_SPAN for r in rows),
        "unmatched_trace_ids": mapping.unmatched_traces[:LISTED],
        "superseded_trace_ids": mapping.superseded_traces[:LISTED],
        "unanswered_question_ids": mapping.unanswered_questions[:LISTED],
        "external_document_ids": external[:LISTED],
    }
    chunks = table_frame(Table.IMPORTED_CHUNKS, [{**m.chunk.model_dump(), "matched_by": m.matched_by} for m in matches])
    table = table_frame(Table.IMPORTED_ROWS, [r.__dict__ for r in rows])
    return ImportRead(chunks=chunks, rows=table, mapping=summary, records=records)



def chunk_list(chunks: pl.DataFrame) -> list[Chunk]:
    return [Chunk(**{k: v for k, v in r.items() if k != "matched_by"}) for r in chunks.iter_rows(named=True)]


def retrieval_rows(rows: pl.DataFrame, chunk_docs: dict[str, str]) -> pl.DataFrame:
    """The imported ranked lists in the retrieval_rows table's shape (no BM25 or vector ranks: the system's own
    retriever ranked them), with each row's trace and retrieval status."""
    out = []
    for r in rows.iter_rows(named=True):
        ids = r[IMP.ranked_chunk_ids]
        out.append({"query_id": r[IMP.query_id], "retrieval": "imported", "retrieve_k": len(ids),
                    "ranked_chunk_ids": ids, "ranked_doc_ids": [chunk_docs[c] for c in ids], "scores": r[IMP.scores],
                    "bm25_ranks": [None] * len(ids), "bm25_scores": [None] * len(ids),
                    "vector_ranks": [None] * len(ids), "vector_scores": [None] * len(ids),
                    "trace_id": r[IMP.trace_id], "retrieval_status": r[IMP.retrieval_status]})
    return table_frame(Table.RETRIEVAL_ROWS, out, ROWS.trace_id, ROWS.retrieval_status)


def contexts(cfg: ArmConfig, rows: pl.DataFrame, chunk_text: dict[str, str]) -> pl.DataFrame:
    """Selected = the RERANKER's output (else the ranked list); admitted = what the prompt held, in prompt order;
    omitted = selected but not in the prompt. No budget of the lab's applies: max_runes is what was used."""
    out = []
    for r in rows.iter_rows(named=True):
        admitted = r[IMP.admitted_chunk_ids]
        runes = [len(chunk_text[c]) for c in admitted]
        out.append({"query_id": r[IMP.query_id], "evidence_k": len(r[IMP.selected_chunk_ids]),
                    "evidence_order": "imported", "selected_chunk_ids": r[IMP.selected_chunk_ids],
                    "admitted_chunk_ids": admitted, "evidence_runes": runes, "evidence_offsets": [0] * len(admitted),
                    "omitted_chunk_ids": [c for c in r[IMP.selected_chunk_ids] if c not in set(admitted)],
                    "used_runes": sum(runes), "max_runes": sum(runes), "counterfactual": "none",
                    "withheld_chunk_ids": [], "planted": "[]", "supply": cfg.supply})
    return table_frame(Table.ADMITTED_CONTEXTS, out)


def answers(cfg: ArmConfig, rows: pl.DataFrame, source_digest: str) -> pl.DataFrame:
    """The system's own answers in the answers table's shape: no provider call (provider_turns 0), its model and
    token counts as its trace reported them (self-reported; model None when the source records none), status ok /
    no_answer_span / no_trace."""
    out = []
    for r in rows.iter_rows(named=True):
        out.append({"query_id": r[IMP.query_id], "prompt": IMPORTED_PROMPT, "prompt_digest": source_digest,
                    "model": r[IMP.model], "provider_role": GENERATOR_ROLE, "offline_baseline": False,
                    "supply": cfg.supply, "admitted_chunk_ids": r[IMP.admitted_chunk_ids], "lookups": "[]",
                    "lookup_calls": 0, "citation_check": "off", "status": r[IMP.status], "raw_text": r[IMP.answer],
                    "input_tokens": r[IMP.input_tokens], "output_tokens": r[IMP.output_tokens],
                    "latency_s": r[IMP.latency_s] or 0.0,
                    "cost_usd": None, "attempts": 0, "error": None if r[IMP.status] == "ok" else r[IMP.status],
                    "cache_hit": False, "provider_turns": 0, "messages_digests": [], "trace_id": r[IMP.trace_id]})
    return table_frame(Table.ANSWERS, out, ANS.trace_id)


def contract_row(cfg: ArmConfig, a: dict, chunk_text: dict[str, str]) -> dict:
    """One imported answer through the contract (`answer_format: contract`), or as free text: status `free_text`,
    the whole reply as the answer, citations read per `citation_style` (imported.import_mapping.citations)."""
    if a[ANS.status] != "ok":
        return {"query_id": a[ANS.query_id], "status": a[ANS.status], "reason": a[ANS.status], "parsed_from": None,
                "answer": None, "citation_chunk_ids": [], "abstained": None, "request_items": "[]", "answer_chars": 0}
    if cfg.source.answer_format == "contract":
        res = check_contract(a[ANS.raw_text], a[ANS.admitted_chunk_ids], "ok")
        ans = res.answer
        return {"query_id": a[ANS.query_id], "status": res.status, "reason": res.reason, "parsed_from": res.parsed_from,
                "answer": ans.answer if ans else None,
                "citation_chunk_ids": list(ans.citation_chunk_ids) if ans else [],
                "abstained": ans.abstained if ans else None,
                "request_items": json.dumps([r.model_dump() for r in ans.requests]) if ans else "[]",
                "answer_chars": len(ans.answer) if ans else 0}
    text = a[ANS.raw_text] or ""
    cited = citations(text, cfg.source.citation_style, a[ANS.admitted_chunk_ids], chunk_text)
    # The judges read the claims without the markers they cite by (the raw text keeps them: inspect shows it).
    answer = without_citations(text, cfg.source.citation_style, chunk_text)
    return {"query_id": a[ANS.query_id], "status": FREE_TEXT, "reason": f"citation_style: {cfg.source.citation_style}",
            "parsed_from": None, "answer": answer, "citation_chunk_ids": cited, "abstained": False,
            "request_items": "[]", "answer_chars": len(answer)}


def contract(cfg: ArmConfig, answers_df: pl.DataFrame, chunk_text: dict[str, str]) -> pl.DataFrame:
    rows = [contract_row(cfg, a, chunk_text) for a in answers_df.iter_rows(named=True)]
    return table_frame(Table.CONTRACT_RESULTS, rows)


def representations_record(store: ArtifactStore, arm: str, cfg: ArmConfig) -> dict:
    """What an arm's representations were (ArmJson.REPRESENTATIONS); an imported arm's are the system's own, read
    from its traces, not the lab's (its representations asset builds nothing)."""
    if cfg.supply != "imported":
        return store.read_arm_json(arm, ArmJson.REPRESENTATIONS)
    return {"representation": "imported", "builder": "the imported system", "builder_model": None,
            "prompt_digest": None, "era": f"imported:{cfg.source.file}", "offline_baseline": False}


def annotate_phoenix(store: ArtifactStore, arm: str, cfg: ArmConfig, declared: str) -> dict:
    """An arm imported from a Phoenix project: each request's flow branch and request verdict logged back to that
    project as an annotation on its trace's root span (imported.phoenix_annotations). Returns what was logged.
    `declared`: where the arm is declared (`<arms file>: arm '<name>'`), for error messages."""
    src = cfg.source
    where = f"{declared}: {src.label}"
    roots = phoenix_annotations.root_spans(phoenix_spans(store.read_arm_json(arm, ArmJson.IMPORTED_SPANS), where))
    trace_of = {r[IMP.query_id]: r[IMP.trace_id]
                for r in store.read_table(arm, Table.IMPORTED_ROWS).iter_rows(named=True)}
    records, skipped = phoenix_annotations.annotations(
        arm, store.read_table(arm, Table.FAILURE_FLOW).to_dicts(),
        store.read_table(arm, Table.REQUEST_JUDGMENTS).to_dicts(), trace_of, roots)
    logged = phoenix.annotate_spans(src.endpoint, src.project, records, where)
    return {"endpoint": src.endpoint, "project": src.project, "name": phoenix_annotations.NAME,
            "annotations": len(records), "logged": logged, "not_annotated": len(skipped),
            "not_annotated_requests": skipped[:LISTED], "records": records}
