"""No silent denominators: every mean the lab prints says over how many rows it was taken, of how many, and why the
others were not measured.

A mean over "the rows the judge happened to return" hides the rows it did not: an abstention, an invalid answer, a
judge fault and a budget stop are different reasons, and none of them is a low score.  `measured_mean` takes one
value per row (None where the row was not measured) and one reason per unmeasured row, and returns a MeasuredMean

    mean (of the measured values, or None), measured (N), of (M), not_measured ({reason: count})

with measured + sum(not_measured.values()) == of, always: a row without a value must have a reason. The text
functions read any record with those attributes (Counted), or a request completeness summary's (CompletenessTotals).

`reason_of(status)` is the one mapping from a row status (contract, provider, judge or request-judge status) to
its reason; None means the status is a measured one:

  judged, valid, ok                                     measured (None)
  parse_failure, contract_failure, escalated            invalid
  abstained                                             abstained
  no_statements                                         no_statements (the judge found no statement to verify)
  budget_exhausted, judge_budget_exhausted              budget (a generation or judge budget stopped the call)
  judge_<anything else> (judge_timeout, judge_parse_failure, ...)
                                                        judge_error
  no_answer_row, no_request_judgment                    missing_row
  no_trace, no_answer_span                              the same (an imported arm's question the system never
                                                        answered, or whose trace has no LLM span: unanswered, not
                                                        a fault and not invalid)
  no_support_judge                                      no_support_judge (the arm sets `judge: none`)
  no_gold_quotes                                        the same (a request outcome's case: its support is not
                                                        measured, so neither is its question's completeness)
  any other status (timeout, rate_limited, truncated, server_error, ...: the generator's provider faults)
                                                        fault
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

INVALID, ABSTAINED, NO_STATEMENTS, BUDGET = "invalid", "abstained", "no_statements", "budget"
JUDGE_ERROR, MISSING_ROW, FAULT = "judge_error", "missing_row", "fault"
# An imported arm's unanswered rows (core.contract.NO_ANSWER) and an arm without a support judge: their own reasons.
NO_TRACE, NO_ANSWER_SPAN, NO_SUPPORT_JUDGE = "no_trace", "no_answer_span", "no_support_judge"
# Not from a status: a question without gold passages, without retrieval targets, unanswerable (no requests to
# complete), a provider reply without token usage, or a request without gold quotes (whether an answer is supported
# by the request's evidence cannot be measured, so neither can completeness).
NO_GOLD, NO_TARGETS, UNANSWERABLE, NO_USAGE = "no_gold", "no_targets", "unanswerable", "no_usage"
NO_GOLD_QUOTES = "no_gold_quotes"
# A request the request judge measured without a coverage (an LLM judge reports none): its graded completeness is
# not measured, never 0.
NO_COVERAGE = "no_coverage"
REASONS = (INVALID, ABSTAINED, NO_STATEMENTS, JUDGE_ERROR, BUDGET, FAULT, MISSING_ROW, NO_GOLD, NO_TARGETS,
           UNANSWERABLE, NO_USAGE, NO_TRACE, NO_ANSWER_SPAN, NO_SUPPORT_JUDGE, NO_GOLD_QUOTES, NO_COVERAGE)

_MEASURED = frozenset({"judged", "valid", "ok"})
_BY_STATUS = {"parse_failure": INVALID, "contract_failure": INVALID, "escalated": INVALID, "abstained": ABSTAINED,
              "no_statements": NO_STATEMENTS, "budget_exhausted": BUDGET, "judge_budget_exhausted": BUDGET,
              "no_answer_row": MISSING_ROW, "no_request_judgment": MISSING_ROW, NO_TRACE: NO_TRACE,
              NO_ANSWER_SPAN: NO_ANSWER_SPAN, NO_SUPPORT_JUDGE: NO_SUPPORT_JUDGE, "no_gold_quotes": "no_gold_quotes"}


def reason_of(status: str) -> str | None:
    """The reason a row with this status was not measured; None for a measured status (see the module docstring)."""
    if not isinstance(status, str) or not status:
        raise ValueError(f"row status must be a non-empty string, got {status!r}")
    if status in _MEASURED:
        return None
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return JUDGE_ERROR if status.startswith("judge_") else FAULT


def gold_reason(status: str, judge_error: str | None) -> str | None:
    """Why a judge row has no gold verdicts: its status's reason; for a judged row, the gold judge's error
    (judge_error) or a question without gold passages (no_gold)."""
    reason = reason_of(status)
    if reason is not None or status != "judged":
        return reason
    return JUDGE_ERROR if judge_error else NO_GOLD


class Counted(Protocol):
    """N of M: `measured` rows of `of`, and the count of each reason the others were not (a MeasuredMean, Counts, or
    a stored summary with these fields)."""

    @property
    def measured(self) -> int: ...

    @property
    def of(self) -> int: ...

    @property
    def not_measured(self) -> Mapping[str, int]: ...


@dataclass(frozen=True)
class Counts:
    """Counted, from the numbers a summary stores under its own names."""

    measured: int
    of: int
    not_measured: dict[str, int]


@dataclass(frozen=True)
class MeasuredMean(Counts):
    """A mean over the measured rows (`measured_mean`): None when no row was; `measured` of `of` rows, and the
    count of each reason the others were not."""

    mean: float | None


class CompletenessTotals(Protocol):
    """What graded_text and addressed_text read of an arm's request completeness (its request_completeness.json, as
    core.judge_summaries.RequestCompleteness or core.compare_records.CompletenessRead reads it; None: a file written
    before the field existed)."""

    @property
    def requests_measured(self) -> int | None: ...

    @property
    def requests_total(self) -> int | None: ...

    @property
    def requests_graded(self) -> int | None: ...

    @property
    def graded_completeness(self) -> float | None: ...

    @property
    def requests_answered_share(self) -> float | None: ...


def measured_mean(values_by_row: Mapping[Any, float | None], reason_by_row: Mapping[Any, str | None]) -> MeasuredMean:
    """The mean of the measured values with its denominator and the count of each reason the others were not.

    values_by_row: row id -> value, None when the row was not measured.  reason_by_row: row id -> reason (rows
    with a value may be absent or map to None).  A row without a value and without a reason, a row with both, a
    reason for a row not in values_by_row, or a non-finite value is a ValueError naming the row.
    """
    measured: list[float] = []
    not_measured: dict[str, int] = {}
    for row, v in values_by_row.items():
        reason = reason_by_row.get(row)
        if v is None:
            if not reason:
                raise ValueError(f"row {row!r}: no value and no reason it was not measured")
            not_measured[reason] = not_measured.get(reason, 0) + 1
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"row {row!r}: value {v!r} is not a finite number; use None with a reason")
        if reason:
            raise ValueError(f"row {row!r}: has a value ({v!r}) and a reason it was not measured ({reason!r})")
        measured.append(float(v))
    extra = [r for r in reason_by_row if r not in values_by_row]
    if extra:
        raise ValueError(f"row {extra[0]!r}: a reason for a row that has no value entry")
    return MeasuredMean(mean=math.fsum(measured) / len(measured) if measured else None, measured=len(measured),
                        of=len(values_by_row), not_measured=dict(sorted(not_measured.items())))


def denominator_fields(name: str, m: Counted) -> dict[str, Any]:
    """{name_measured, name_of, name_not_measured} for a summary, beside its mean_<name> key."""
    return {f"{name}_measured": m.measured, f"{name}_of": m.of, f"{name}_not_measured": m.not_measured}


def reasons_text(not_measured: Mapping[str, int]) -> str:
    """"abstained 3, judge_error 1" (largest first), or "none"."""
    items = sorted(not_measured.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{k} {v}" for k, v in items if v) or "none"


def not_measured_text(not_measured: Mapping[str, int]) -> str:
    """"not measured: no gold quotes" (each reason in words, largest first): what a table shows in place of a mean
    no row measured, never 0."""
    # The arm's own reasons first (no support judge, no gold quotes: no row could be measured), then the rows'.
    items = sorted(((k, v) for k, v in not_measured.items() if v),
                   key=lambda kv: (kv[0] not in (NO_SUPPORT_JUDGE, NO_GOLD_QUOTES), -kv[1], kv[0]))
    return "not measured: " + (", ".join(k.replace("_", " ") for k, _ in items) or "no rows")


def measured_text(m: Counted) -> str:
    """"37 measured of 50 (not measured: abstained 10, invalid 3)"."""
    return (f"{m.measured} measured of {m.of}"
            + (f" (not measured: {reasons_text(m.not_measured)})" if any(m.not_measured.values()) else ""))


def graded_text(totals: CompletenessTotals) -> str:
    """The graded reading as a sentence shows it, with its N of M: "0.6123 (mean coverage, 40 of 42 measured requests
    graded)"; a judge that reports no coverage (an LLM's): "not measured (no coverage)", never 0."""
    measured, graded = totals.requests_measured or 0, totals.requests_graded or 0
    if totals.graded_completeness is None:
        return (("not measured (no coverage)" if measured else "not measured")
                + f" ({graded} of {measured} measured requests graded)")
    return f"{totals.graded_completeness:.4f} (mean coverage, {graded} of {measured} measured requests graded)"


def addressed_text(totals: CompletenessTotals) -> str:
    """The share of the measured requests addressed, with its N of M (measured of all requests)."""
    measured, total = totals.requests_measured or 0, totals.requests_total or 0
    share = totals.requests_answered_share
    return ("not measured" if share is None else f"{share:.4f}") + f" ({measured} of {total} requests measured)"
