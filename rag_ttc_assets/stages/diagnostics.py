"""An arm's two diagnostics, computed: request-level completeness (with abstention and counterfactual outcomes) and
the failure flow. Reads the arm's tables through its resolver (stages.resolve.ArmInputs) and calls the pure
functions of core.completeness and core.flow; the assets in defs/diagnostics.py write what they return.
Comparisons between arms are in stages/comparisons.py, the plots in stages/diagnostics_files.py."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rag_ttc_assets.adapters.store import Table
from rag_ttc_assets.adapters.table_types import table_frame
from rag_ttc_assets.core.completeness import (abstention_outcome, completeness_totals, question_completeness,
                                              request_outcomes)
from rag_ttc_assets.core import panel
from rag_ttc_assets.core.counterfactual import Planted, repeats
from rag_ttc_assets.core.flow import flow_rows, flow_table, hit_rate
from rag_ttc_assets.core.supply import lookup_cases, lookup_flow
from rag_ttc_assets.core.tables import QUERY_ID
from rag_ttc_assets.lab import Lab
from rag_ttc_assets.stages import supply
from rag_ttc_assets.stages.request_judge import instrument
from rag_ttc_assets.stages.resolve import ArmInputs

if TYPE_CHECKING:
    import polars as pl



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


def _inputs(arm: ArmInputs):
    """What both diagnostics read: the arm, its questions, per-request coverage, contract and judge rows."""
    coverage = supply.arm_coverage(arm)
    cov_by_q: dict[str, list[dict]] = {}
    for r in coverage.iter_rows(named=True):
        cov_by_q.setdefault(r[COV.query_id], []).append(r)
    judgments: dict[str, list[dict]] = {}
    for r in arm.table(Table.REQUEST_JUDGMENTS).iter_rows(named=True):
        judgments.setdefault(r[RJ.query_id], []).append(r)
    return (arm.cfg, arm.questions, cov_by_q, rows_by_query(arm.table(Table.CONTRACT_RESULTS)),
            rows_by_query(arm.table(Table.JUDGE_VERDICTS)), judgments)


def request_instrument(lab: Lab, cfg, questions=None) -> dict:
    """The request judge that measured an arm's completeness: its model and prompt digest, and how its requests were
    derived (None: hand-written)."""
    entailed = lab.prompt(cfg.judge_entailment_prompt, "judge_entailment") if cfg.entailment_jurors else None
    return instrument(cfg, lab.prompt(cfg.judge_requests_prompt, "judge_requests"), questions, entailed)


def completeness(arm: ArmInputs) -> CompletenessResult:
    """Request and question completeness (from the request judge), abstention outcomes and totals for one arm
    (`arm`: the asset's resolver)."""
    cfg, questions, cov_by_q, contracts, judged, judgments = _inputs(arm)
    outcomes, abstentions = [], []
    for q in questions:
        if q.answerable:
            outcomes += request_outcomes(q, cov_by_q.get(q.id, []), contracts.get(q.id), judgments.get(q.id, []))
        else:
            abstentions.append(abstention_outcome(q, contracts.get(q.id)))
    totals = {**completeness_totals(outcomes, abstentions), "request_judge": request_instrument(arm.lab, cfg, questions),
              "label_use": cfg.label_use}
    if cfg.counterfactual != "none":
        contexts = {r[CTX.query_id]: r for r in arm.table(Table.ADMITTED_CONTEXTS).iter_rows(named=True)}
        totals["counterfactual"] = counterfactual_summary(cfg.counterfactual, outcomes, contexts, contracts,
                                                          cov_by_q, judged)
    return CompletenessResult(
        requests=table_frame(Table.REQUEST_OUTCOMES, [o.model_dump() for o in outcomes]),
        questions=table_frame(Table.QUESTION_COMPLETENESS, [q.model_dump() for q in question_completeness(outcomes)]),
        abstentions=table_frame(Table.ABSTENTION_OUTCOMES, [a.model_dump() for a in abstentions]),
        completeness=totals)


def failure_flow(arm: ArmInputs) -> FlowResult:
    """Flow rows (one per request of an answerable question), their totals, and a tool arm's lookup flow
    (`arm`: the asset's resolver)."""
    cfg, questions, cov_by_q, contracts, judged, judgments = _inputs(arm)
    imported = cfg.supply == "imported"
    retrieval_status = ({r[ROWS.query_id]: r[ROWS.retrieval_status] for r in arm.table(
        Table.RETRIEVAL_ROWS).select(ROWS.query_id, ROWS.retrieval_status).iter_rows(named=True)} if imported else {})
    flows = [f for q in questions if q.answerable
             for f in flow_rows(q, cov_by_q.get(q.id, []), contracts.get(q.id), judged.get(q.id),
                                judgments.get(q.id, []), imported, retrieval_status.get(q.id, "ok"))]
    no_quotes = {(q.id, r.id) for q in questions if q.answerable for r in q.requests if not r.evidence}
    summary = {**flow_table(flows), "hit_rate": hit_rate(flows, no_quotes), "supply": cfg.supply}
    if cfg.request_judges:  # a panel: which requests' branch depends on the juror (core.panel.judge_sensitive)
        summary["judge_sensitive"] = _judge_sensitive(cfg, questions, cov_by_q, contracts, judged, judgments, flows)
    cases = []
    if cfg.supply == "tool":
        qualities: dict[str, list[str]] = {}
        for f in flows:
            qualities.setdefault(f.query_id, []).append(f.quality)
        cases = lookup_cases(questions, supply.read_lookups(arm.table(Table.ANSWERS)), qualities)
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
