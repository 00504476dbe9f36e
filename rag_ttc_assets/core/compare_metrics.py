"""The metrics two arms are compared on (core.case_comparison): each one's per-case value for an arm (`case_values`, with
the reason a value is undefined, core.measured's), its kind (`KINDS`: binary or continuous, which picks the paired
test) and its direction (`DIRECTIONS`: whether a rise is a gain or a loss, read by the diagnosis' `outcome`,
diagnosis.diagnosis_sentences).

Pure: rows in (each table's rows read by its declared column names, core.tables), dicts out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from rag_ttc_assets.core.answer_rows import Row
from rag_ttc_assets.diagnosis.completeness import QuestionCompleteness, completeness_value, judge_grades
from rag_ttc_assets.core.measured import MISSING_ROW, NO_COVERAGE, NO_TARGETS, NO_USAGE, UNANSWERABLE, reason_of
from rag_ttc_assets.core.tables import Table

CON, ANS, JV, RO = Table.CONTRACT_RESULTS.c, Table.ANSWERS.c, Table.JUDGE_VERDICTS.c, Table.REQUEST_OUTCOMES.c


# --- each compared metric's per-case value and kind (a new metric: its value here, its kind in KINDS) ----------

KINDS = {"valid": "binary", "completeness": "continuous", "graded_completeness": "continuous", "faithfulness": "continuous", "recip_rank": "continuous",
         "recall_10": "continuous", "ndcg_cut_10": "continuous", "input_tokens": "continuous",
         "latency_s": "continuous"}

# Which way is better, declared once per compared metric: quality and retrieval measures are gains when they rise;
# costs (input tokens, latency, provider calls) are losses when they rise. The case report colours deltas by it and
# the diagnosis states a cost's rise as the price of a gain (diagnosis.diagnosis_findings).
Direction = Literal["higher_is_better", "lower_is_better"]
DIRECTIONS: dict[str, Direction] = {
    "valid": "higher_is_better", "completeness": "higher_is_better", "graded_completeness": "higher_is_better",
    "faithfulness": "higher_is_better", "recip_rank": "higher_is_better", "recall_10": "higher_is_better", "ndcg_cut_10": "higher_is_better",
    "input_tokens": "lower_is_better", "latency_s": "lower_is_better", "provider_calls": "lower_is_better"}
COSTS = tuple(m for m, d in DIRECTIONS.items() if d == "lower_is_better")


def case_values(contract: Mapping[str, Row], answers: Mapping[str, Row], judge: Mapping[str, Row],
                questions: Mapping[str, Row], unmeasured: Mapping[str, str],
                retrieval: Mapping[str, Mapping[str, float | None] | None],
                outcomes: Sequence[Row] | None = None
                ) -> tuple[dict[str, dict[str, float | None]], dict[str, dict[str, str | None]]]:
    """Per case (a question ID of the contract rows): each metric's value, None when undefined; and per metric,
    case -> why it is undefined (core.measured's reasons). Inputs are one arm's rows by question: contract results,
    answers, judge verdicts, question completeness; `unmeasured` the judge status of a question's first request the
    request judge did not measure; `retrieval` the retrieval summary's per-query measures; `outcomes` its
    request_outcomes rows (graded completeness: query_id, measured, judge_status and coverage)."""
    cases = list(contract)
    graded, graded_why = question_graded(outcomes or [])
    values: dict[str, dict[str, float | None]] = {
        "valid": {c: float(contract[c][CON.status] == "valid") for c in cases},
        # Undefined (not paired) when the request judge did not measure every request of the case.
        "completeness": {c: completeness_value(QuestionCompleteness(**questions[c])) if c in questions else None
                         for c in cases},
        "faithfulness": {c: judge[c][JV.faithfulness] if c in judge else None for c in cases},
        "input_tokens": {c: float(answers[c][ANS.input_tokens]) if answers[c][ANS.input_tokens] is not None else None
                         for c in cases},
        "latency_s": {c: float(answers[c][ANS.latency_s]) for c in cases},
        **{m: {c: (retrieval.get(c) or {}).get(m) for c in cases} for m in ("recip_rank", "recall_10", "ndcg_cut_10")},
        # Completeness read graded, per question: the mean coverage of its requests (question_graded).
        "graded_completeness": {c: graded.get(c) for c in cases},
    }
    why: dict[str, Callable[[str], str | None]] = {
        "graded_completeness": lambda c: graded_why.get(c) or (UNANSWERABLE if c not in questions else MISSING_ROW),
        "completeness": lambda c: reason_of(unmeasured[c]) if c in unmeasured else (
            UNANSWERABLE if c not in questions else MISSING_ROW),
        "faithfulness": lambda c: reason_of(judge[c][JV.status]) if c in judge else MISSING_ROW,
        "input_tokens": lambda c: reason_of(answers[c][ANS.status]) or NO_USAGE,
    }
    reasons = {m: {c: why.get(m, _no_targets)(c) for c, v in vals.items() if v is None}
               for m, vals in values.items()}
    return values, reasons


def _no_targets(_: str) -> str | None:
    return NO_TARGETS


def question_graded(outcomes: Sequence[Row]) -> tuple[dict[str, float], dict[str, str]]:
    """Graded completeness per question, from request_outcomes rows: the mean coverage of its requests, defined (as
    completeness) only when the request judge measured every request of the question and graded each (a coverage);
    else why not: the first unmeasured request's reason, or no_coverage (a judge that reports none, an LLM's)."""
    by_q: dict[str, list[Row]] = {}
    for r in outcomes:
        by_q.setdefault(r[RO.query_id], []).append(r)
    grades = judge_grades(outcomes)  # a judge that reports no coverage grades no question, never 0
    values: dict[str, float] = {}
    why: dict[str, str] = {}
    for q, rows in by_q.items():
        unmeasured = next((r for r in rows if not r[RO.measured]), None)
        if unmeasured is not None:
            why[q] = reason_of(unmeasured[RO.judge_status]) or MISSING_ROW
        elif not grades or any(r[RO.coverage] is None for r in rows):
            why[q] = NO_COVERAGE
        else:
            values[q] = sum(float(r[RO.coverage]) for r in rows) / len(rows)
    return values, why
