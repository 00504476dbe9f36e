"""An arm's two diagnostics, computed: request-level completeness (with abstention and counterfactual outcomes) and
the failure flow. `read_inputs` reads what they read from the store into a `DiagnosticInputs` record; `completeness`
and `failure_flow` compute from it by the pure functions of diagnosis.completeness and diagnosis.flow, and the assets in
defs/diagnostics.py write what they return.
Comparisons between arms are in stages/arm_comparisons.py, the plots in diagnosis/flow_plots_stage.py."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rag_ttc_assets.adapters.store import ArtifactStore, Table
from rag_ttc_assets.adapters.table_types import table_frame
from rag_ttc_assets.diagnosis.completeness import (abstention_outcome, completeness_totals, question_completeness,
                                                   request_outcomes)
from rag_ttc_assets.judging import panel
from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.counterfactual import Planted, repeats
from rag_ttc_assets.diagnosis.flow import flow_rows, flow_table, hit_rate
from rag_ttc_assets.core.records import Question
from rag_ttc_assets.core.supply import LookupCall, lookup_cases, lookup_flow
from rag_ttc_assets.core.tables import QUERY_ID
from rag_ttc_assets.stages import arm_supply

if TYPE_CHECKING:
    import polars as pl



@dataclass(frozen=True)
class DiagnosticInputs:
    """What an arm's two diagnostics read (`read_inputs`): its config and questions, its tables' rows by question
    (per-request coverage, contract results, judge verdicts, request judgments), and the rows only some arms read:
    a counterfactual arm's admitted contexts, an imported arm's retrieval status, a tool arm's lookups (else empty)."""

    cfg: ArmConfig
    questions: list[Question]
    coverage: dict[str, list[dict]]
    contracts: dict[str, dict]
    judged: dict[str, dict]
    judgments: dict[str, list[dict]]
    contexts: dict[str, dict]
    retrieval_status: dict[str, str]
    lookups: dict[str, list[LookupCall]]


@dataclass(frozen=True)
class CompletenessResult:
    """What `completeness` hands the `request_completeness` asset: per request, per question and per abstention
    (polars frames of Table.REQUEST_OUTCOMES, QUESTION_COMPLETENESS, ABSTENTION_OUTCOMES) and the totals of
    request_completeness.json (checked by its model when written)."""

    requests: pl.DataFrame
    questions: pl.DataFrame
    abstentions: pl.DataFrame
    completeness: dict[str, Any]


@dataclass(frozen=True)
class FlowResult:
    """What `failure_flow` hands the `failure_flow` asset: the flow rows and a tool arm's lookup cases (polars frames
    of Table.FAILURE_FLOW, LOOKUP_CASES) and failure_flow.json's summary (checked by its model when written)."""

    flow: pl.DataFrame
    lookup_cases: pl.DataFrame
    flow_summary: dict[str, Any]


# the declared column names (core.tables)
ROWS, CTX, COV = Table.RETRIEVAL_ROWS.c, Table.ADMITTED_CONTEXTS.c, Table.REQUEST_COVERAGE.c
CON, JV, RJ = Table.CONTRACT_RESULTS.c, Table.JUDGE_VERDICTS.c, Table.REQUEST_JUDGMENTS.c


def rows_by_query(df: pl.DataFrame) -> dict[str, dict]:
    """A per-question table's rows by question id (every such table declares QUERY_ID)."""
    return {r[QUERY_ID.name]: r for r in df.iter_rows(named=True)}


def read_inputs(store: ArtifactStore, arm: str, cfg: ArmConfig, questions: list[Question],
                coverage: pl.DataFrame) -> DiagnosticInputs:
    """The arm `arm`'s diagnostic inputs from the store; `coverage` is its per-request coverage
    (stages.arm_supply.arm_coverage: a tool arm's is computed from its lookups)."""
    cov_by_q: dict[str, list[dict]] = {}
    for r in coverage.iter_rows(named=True):
        cov_by_q.setdefault(r[COV.query_id], []).append(r)
    judgments: dict[str, list[dict]] = {}
    for r in store.read_table(arm, Table.REQUEST_JUDGMENTS).iter_rows(named=True):
        judgments.setdefault(r[RJ.query_id], []).append(r)
    contexts = ({r[CTX.query_id]: r for r in store.read_table(arm, Table.ADMITTED_CONTEXTS).iter_rows(named=True)}
                if cfg.counterfactual != "none" else {})
    retrieval_status = ({r[ROWS.query_id]: r[ROWS.retrieval_status] for r in store.read_table(
        arm, Table.RETRIEVAL_ROWS).select(ROWS.query_id, ROWS.retrieval_status).iter_rows(named=True)}
        if cfg.supply == "imported" else {})
    lookups = arm_supply.read_lookups(store.read_table(arm, Table.ANSWERS)) if cfg.supply == "tool" else {}
    return DiagnosticInputs(cfg, questions, cov_by_q, rows_by_query(store.read_table(arm, Table.CONTRACT_RESULTS)),
                            rows_by_query(store.read_table(arm, Table.JUDGE_VERDICTS)), judgments, contexts,
                            retrieval_status, lookups)


def completeness(inputs: DiagnosticInputs, request_judge: dict) -> CompletenessResult:
    """Request and question completeness (from the request judge), abstention outcomes and totals for one arm;
    `request_judge` is the instrument that judged its requests (judging.request_judge_stage.instrument)."""
    cfg, questions, cov_by_q, contracts, judged, judgments = (inputs.cfg, inputs.questions, inputs.coverage,
                                                              inputs.contracts, inputs.judged, inputs.judgments)
    outcomes, abstentions = [], []
    for q in questions:
        if q.answerable:
            outcomes += request_outcomes(q, cov_by_q.get(q.id, []), contracts.get(q.id), judgments.get(q.id, []))
        else:
            abstentions.append(abstention_outcome(q, contracts.get(q.id)))
    totals = {**completeness_totals(outcomes, abstentions), "request_judge": request_judge,
              "label_use": cfg.label_use}
    if cfg.counterfactual != "none":
        totals["counterfactual"] = counterfactual_summary(cfg.counterfactual, outcomes, inputs.contexts, contracts,
                                                          cov_by_q, judged)
    return CompletenessResult(
        requests=table_frame(Table.REQUEST_OUTCOMES, [o.model_dump() for o in outcomes]),
        questions=table_frame(Table.QUESTION_COMPLETENESS, [q.model_dump() for q in question_completeness(outcomes)]),
        abstentions=table_frame(Table.ABSTENTION_OUTCOMES, [a.model_dump() for a in abstentions]),
        completeness=totals)


def failure_flow(inputs: DiagnosticInputs) -> FlowResult:
    """Flow rows (one per request of an answerable question), their totals, and a tool arm's lookup flow."""
    cfg, questions, cov_by_q, contracts, judged, judgments = (inputs.cfg, inputs.questions, inputs.coverage,
                                                              inputs.contracts, inputs.judged, inputs.judgments)
    imported, retrieval_status = cfg.supply == "imported", inputs.retrieval_status
    flows = [f for q in questions if q.answerable
             for f in flow_rows(q, cov_by_q.get(q.id, []), contracts.get(q.id), judged.get(q.id),
                                judgments.get(q.id, []), imported, retrieval_status.get(q.id, "ok"))]
    no_quotes = {(q.id, r.id) for q in questions if q.answerable for r in q.requests if not r.evidence}
    summary = {**flow_table(flows), "hit_rate": hit_rate(flows, no_quotes), "supply": cfg.supply}
    if cfg.request_judges:  # a panel: which requests' branch depends on the juror (judging.panel.judge_sensitive)
        summary["judge_sensitive"] = _judge_sensitive(cfg, questions, cov_by_q, contracts, judged, judgments, flows)
    cases = []
    if cfg.supply == "tool":
        qualities: dict[str, list[str]] = {}
        for f in flows:
            qualities.setdefault(f.query_id, []).append(f.quality)
        cases = lookup_cases(questions, inputs.lookups, qualities)
        summary["lookup_flow"] = lookup_flow(cases).model_dump()
    return FlowResult(flow=table_frame(Table.FAILURE_FLOW, [f.model_dump() for f in flows]),
                      lookup_cases=table_frame(Table.LOOKUP_CASES, [c.model_dump() for c in cases]),
                      flow_summary=summary)


def _judge_sensitive(cfg, questions, cov_by_q, contracts, judged, judgments, flows) -> dict:
    branches, measured = [], []
    for j in range(len(cfg.request_judges)):
        view = {q: panel.juror_view([{**r, "jurors": json.loads(r[RJ.jurors])} for r in rows], j)
                for q, rows in judgments.items()}
        rows = [f for q in questions if q.answerable
                for f in flow_rows(q, cov_by_q.get(q.id, []), contracts.get(q.id), judged.get(q.id), view.get(q.id, []))]
        branches.append({f.request_id: f.branch for f in rows})
        measured.append({r.request_id: r.status == "judged" for rs in view.values() for r in rs})
    return panel.judge_sensitive(branches, measured, [f.request_id for f in flows])


def counterfactual_summary(kind: str, outcomes, contexts: dict, contracts: dict, coverage: dict,
                           judged: dict) -> dict:
    """Withheld-relevant: did the answer abstain for the requests whose support was withheld?
    Planted-falsehood: did the answer repeat the planted claim, and did the gold judge see a contradiction?"""
    by_request = {o.request_id: o for o in outcomes}
    if kind == "withheld-relevant":
        affected = [r[COV.request_id] for q, rows in coverage.items() for r in rows
                    if set(r[COV.supporting_chunk_ids]) & set(contexts.get(q, {}).get(CTX.withheld_chunk_ids) or [])
                    and not r[COV.admitted]]
        # Only measured requests count: an unmeasured one (answered None) is neither a correct abstention nor not.
        correct = sum(1 for rid in affected if rid in by_request and by_request[rid].answered is False)
        return {"kind": kind, "withheld_requests": len(affected), "correct_abstentions": correct,
                "correct_abstention_rate": correct / len(affected) if affected else None}
    planted, repeated = 0, 0
    for qid, ctx in contexts.items():
        answer = (contracts.get(qid) or {}).get(CON.answer)
        for p in json.loads(ctx.get(CTX.planted) or "[]"):
            planted += 1
            repeated += repeats(answer, Planted(**p))
    contradicting = sum(1 for r in judged.values() if r.get(JV.contradicts_gold))
    return {"kind": kind, "planted_claims": planted, "repeated": repeated,
            "falsehood_repetition_rate": repeated / planted if planted else None,
            "answers_contradicting_gold": contradicting}
