"""The judge-agreement report as records: what `judge-agreement` writes to the store's judge_agreement folder
(`<labels file stem>.json`), what its tables and the command read back, and the rows of its parts, as
judging.judge_agreement, judging.claim_agreement and labelling.ppi compute them.

  AgreementReport        the whole report (judging.judge_agreement_stage.agreement)
  RequestLabels          per-request `addressed` labels: a RequestRow per judge and annotator pair, and Majority
  RequestCompleteness    completeness per answer and per arm: CorrelationRows per level
  PairAspect             one aspect of the pairwise preferences: CorrelationRows
  ClaimLabels            per-claim support labels: ClaimRows, Majority, and ClaimAnswers (faithfulness per answer)
  PanelAggregation       a panel's candidate aggregations (AggregationRow), judging.judge_agreement.aggregation_choice
  CompletenessEstimate   one arm's and judge's completeness corrected by the labels (labelling.ppi.arm_estimates)

Every record is frozen and declares every field; `to_json()` is the JSON object written, key for key and in the
order of the dicts the core modules build (the fields a record lists in OMIT_WHEN_NONE are absent, never null, when
not set); `read_report` reads a written report back, naming the file and the field of a bad one.

Pure: pydantic only, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, ValidationError, model_serializer, \
    model_validator

from rag_ttc_assets.judging.judge_agreement import AGGREGATION, AGGREGATION_MEASURES
from rag_ttc_assets.core.records import invalid_fields
from rag_ttc_assets.labelling.estimate_records import Estimate, JudgeMean

# The confusion matrix of two raters: the first's label -> the second's label -> count, labels as strings
# ("True"/"False"; a verdict's or a support label's own names).
Confusion = dict[str, dict[str, int]]


class Record(BaseModel):
    """A record of the agreement report: no undeclared field, never changed once built."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    OMIT_WHEN_NONE: ClassVar[tuple[str, ...]] = ()  # fields absent from the JSON when None, never null

    @model_serializer(mode="wrap")
    def _omit_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        for key in self.OMIT_WHEN_NONE:
            if key in out and out[key] is None:
                del out[key]
        return out

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (writing it is I/O and belongs to the caller)."""
        return self.model_dump()


# -- the statistics (judging.judge_agreement.categorical_agreement, correlation) ----------------------------------------

class Categorical(Record):
    """Cohen's kappa, accuracy and the confusion matrix of two raters' labels (None when n is 0)."""

    n: int
    kappa: float | None
    accuracy: float | None
    confusion: Confusion | None


class Correlation(Record):
    """Pearson's or Spearman's r with its percentile bootstrap interval; undefined (None, and `why`) with fewer than
    three pairs or a constant side, else with the resamples whose correlation was undefined counted."""

    OMIT_WHEN_NONE = ("why", "degenerate_resamples")
    r: float | None
    ci_low: float | None
    ci_high: float | None
    why: str | None = None
    degenerate_resamples: int | None = None


class CorrelationRow(Record):
    """A rater's correlation with the people: a judge, a reference scorer or the ceiling (`kind`), against what
    (`against`; absent in the pairwise tables: the human label itself)."""

    OMIT_WHEN_NONE = ("against",)
    rater: str
    kind: str
    against: str | None = None
    n: int
    pearson: Correlation
    spearman: Correlation
    not_measured: int


class MajorityRow(Record):
    """A rater's `addressed` (or supported) against a majority label, ties skipped and counted."""

    rater: str
    kind: str
    against: str
    n: int
    kappa: float | None
    accuracy: float | None
    confusion: Confusion | None
    not_measured: int
    ties_skipped: int


class Majority(Record):
    """Against the majority of people, on the items two or more annotators labelled."""

    items: int
    items_with_two_or_more_labels: int
    rows: list[MajorityRow]


# -- per-request labels ------------------------------------------------------------------------------------------------

class RequestDisagreement(Record):
    """A request a judge and a person disagree on."""

    arm: str
    question: str
    request: str
    annotator: str
    human: bool
    judge: bool
    judge_reason: str | None
    line: int


class RaterDisagreement(RequestDisagreement):
    """A disagreement with the rater that made it (judging.judge_agreement_stage.disagreements): `rater` first."""

    rater: str

    @model_serializer(mode="wrap")
    def _rater_first(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        return {"rater": out.pop("rater"), **out}


class RequestRow(Record):
    """A judge's (or two annotators') `addressed` against the human labels; `disagreements` listed, or counted for a
    panel's candidate aggregation; `verdict` likewise where the labels give one."""

    rater: str
    kind: str
    n: int
    kappa: float | None
    accuracy: float | None
    confusion: Confusion | None
    not_measured: int
    disagreements: list[RequestDisagreement] | int
    verdict: Categorical | None

    def disagreement_count(self) -> int:
        return self.disagreements if isinstance(self.disagreements, int) else len(self.disagreements)


class RequestLabels(Record):
    labels: int
    annotators: list[str]
    rows: list[RequestRow]
    annotator_pairs_sharing_no_item: int
    majority: Majority


class CompletenessLevels(Record):
    """Completeness per answer row and per arm (the mean over its rows)."""

    answer: list[CorrelationRow]
    arm: list[CorrelationRow]

    def items(self) -> list[tuple[str, list[CorrelationRow]]]:
        return [("answer", self.answer), ("arm", self.arm)]


class RequestCompleteness(Record):
    rows: int
    arms: int
    levels: CompletenessLevels


# -- pairwise preferences ----------------------------------------------------------------------------------------------

class PairAspect(Record):
    """One aspect of the pairwise preferences; `judged`: some lab judge scores it (else the ceiling only)."""

    labels: int
    annotators: list[str]
    rows: list[CorrelationRow]
    annotator_pairs_sharing_no_item: int
    judged: bool


# -- per-claim support labels ------------------------------------------------------------------------------------------

class ClaimDisagreement(Record):
    arm: str
    question: str
    claim: int
    text: str
    annotator: str
    human: str  # the support label as given
    judge: bool
    judge_reason: str | None
    line: int


class ClaimRow(Record):
    """A support judge's (or two annotators') verdicts on the claims against the labels read as supported or not;
    two annotators' labels as given beside (`three_way`)."""

    OMIT_WHEN_NONE = ("three_way",)
    rater: str
    kind: str
    n: int
    kappa: float | None
    accuracy: float | None
    confusion: Confusion | None
    three_way: Categorical | None = None
    not_measured: int
    disagreements: list[ClaimDisagreement]


class ClaimAnswers(Record):
    answers: int
    rows: list[CorrelationRow]


class ClaimLabels(Record):
    labels: int
    annotators: list[str]
    rows: list[ClaimRow]
    annotator_pairs_sharing_no_item: int
    support_shares: dict[str, float]
    majority: Majority
    answers: ClaimAnswers


# -- a panel's candidate aggregations ----------------------------------------------------------------------------------

class AggregationRow(Record):
    """One candidate aggregation: its value on each measure of the panel (AGGREGATION_MEASURES, written as keys of
    their own between `aggregation` and `best_on`) and how many measures it is best on."""

    aggregation: str
    measures: dict[str, float | None]
    best_on: int

    @model_validator(mode="before")
    @classmethod
    def _gather_measures(cls, data: Any) -> Any:
        if isinstance(data, dict) and "measures" not in data:
            data = dict(data)
            data["measures"] = {m: data.pop(m) for m in AGGREGATION_MEASURES if m in data}
        return data

    @model_serializer(mode="plain")
    def _spread_measures(self) -> dict[str, Any]:
        return {"aggregation": self.aggregation, **self.measures, "best_on": self.best_on}


class PanelAggregation(Record):
    panel: str
    measures: list[str]
    rows: list[AggregationRow]
    graded: dict[str, float | None]
    best_by_measure: dict[str, str]
    best: str | None


# -- completeness corrected by the labels (labelling.ppi) -------------------------------------------------------------------

class CompletenessEstimate(Record):
    """One arm's completeness by one judge: the judge's over every row, the labels', the prediction-powered
    estimate (labelling.ppi.arm_estimates)."""

    arm: str
    rater: str
    not_measured: int
    rows: int
    labelled: int
    unjudged_labels: list[str]
    judge: JudgeMean
    human: Estimate | None
    ppi: Estimate | None
    weighting: str | None


# -- the report --------------------------------------------------------------------------------------------------------

class Bootstrap(Record):
    resamples: int
    confidence: float
    method: str


class RequestEdits(Record):
    """The annotation page's request edits, and the labels of edited requests: counted, never compared."""

    edits: int
    labels_not_compared: int


class AgreementReport(Record):
    """Every judge that scored the labelled rows against the human labels (None: the labels have none of that kind)."""

    labels_file: str
    arms: list[str]
    seed: int
    bootstrap: Bootstrap
    request_labels: RequestLabels | None
    request_completeness: RequestCompleteness | None
    pair_labels: dict[str, PairAspect] | None
    claim_labels: ClaimLabels | None
    requests_derived: dict[str, dict[str, Any] | None]  # per arm, as its request judge recorded it (stages.reports)
    request_edits: RequestEdits
    panel_aggregations: list[PanelAggregation]
    completeness_estimates: list[CompletenessEstimate]

    def disagreements(self) -> list[RaterDisagreement]:
        """Every listed disagreement of the per-request labels, with its rater (a candidate aggregation's are
        counted, not listed)."""
        return [RaterDisagreement(rater=r.rater, **d.model_dump())
                for r in (self.request_labels.rows if self.request_labels else [])
                if isinstance(r.disagreements, list) for d in r.disagreements]


def counted_aggregations(rows: list[RequestRow]) -> list[RequestRow]:
    """The rows with a candidate aggregation's disagreements counted, not listed: the panel's own (and its jurors')
    are listed."""
    return [r.model_copy(update={"disagreements": r.disagreement_count()}) if r.rater.startswith(AGGREGATION) else r
            for r in rows]


R = TypeVar("R", bound=Record)


def validated(model: type[R], data: Mapping[str, Any] | None) -> R | None:
    """A part of the report, as a core module computed it, as its record (None: the labels have none of its kind)."""
    return None if data is None else model.model_validate(data)


class AgreementReportError(ValueError):
    """A stored agreement report that is not one: names the file and the field."""


def read_report(text: str, source: str) -> AgreementReport:
    """An agreement report from its JSON text (`source`: the file it was read from, named in the error)."""
    try:
        return AgreementReport.model_validate(json.loads(text))
    except ValidationError as e:
        where = invalid_fields(e)
        raise AgreementReportError(f"{source}: not a judge-agreement report: {where}") from None
