"""The records of `rag-ttc accept` and `rag-ttc compare --labels` (labelling/accept_stage.py): the corrected difference
ARM - BASELINE in completeness (the judge's, the people's, the prediction-powered one), its projection of how many
labels would decide, and the acceptance report that joins them. Their JSON is the dict the estimators of
labelling/ppi_difference.py always gave: each model's fields in the order the file has them.

The two estimators order an estimate's keys differently (the paired one as labelling.ppi.estimate_of: mean, low, high,
n, se, df; the independent one as labelling.ppi.difference_of and then n: mean, low, high, se, df, n), and the paired
estimator's `variance.fixed_df` is an int (N - 1) where the independent one's is a float (Satterthwaite): one model
per estimator keeps the JSON as it was (labelling.estimate_records declares them, and every report's estimate). No
logic."""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from rag_ttc_assets.labelling.estimate_records import DifferenceVariance, Estimate, EstimateNLast, JudgeInterval


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def to_json(self) -> dict[str, Any]:
        """The JSON object as written: every field in declaration order, values as the estimators gave them."""
        return self.model_dump()


class _Difference(_Record):
    """ARM - BASELINE corrected by the labels (labelling.accept_stage.corrected_difference), with the decisions each reading
    supports."""

    arm: str
    baseline: str
    labels_file: str
    alpha: float
    measure: str
    judge_rater: dict[str, str]  # arm -> the request judge's rater name
    instruments: dict[str, dict[str, Any]]  # arm -> its request_completeness.json `request_judge`, as stored
    estimator_why: str
    labelled_per_arm: dict[str, int]
    rows_not_measured_whole: dict[str, int]
    labels_on_rows_not_measured: dict[str, list[str]]
    estimator: str
    rows: int
    labelled: int
    weighting: str
    judge: JudgeInterval
    human: Estimate | EstimateNLast
    ppi: Estimate | EstimateNLast
    variance: DifferenceVariance
    decision: str
    judge_decision: str
    human_decision: str


class PairedDifference(_Difference):
    """Both arms answer the same questions, at least two labelled in both: per-question differences."""

    estimator: Literal["paired"]
    human: Estimate
    ppi: Estimate


class IndependentDifference(_Difference):
    """Each arm's own estimate, the standard errors in quadrature."""

    estimator: Literal["independent"]
    human: EstimateNLast
    ppi: EstimateNLast


CorrectedDifference = Annotated[PairedDifference | IndependentDifference, Field(discriminator="estimator")]
CORRECTED_DIFFERENCE: TypeAdapter[PairedDifference | IndependentDifference] = TypeAdapter(CorrectedDifference)


class ProjectedVariances(_Record):
    """The variances the projection draws its widths from (se_now^2 = fixed + rectifier / n_now)."""

    fixed: float
    fixed_df: int | float
    rectifier: float
    human: float


class WidthCurve(_Record):
    """The projected interval width at each n, corrected and people alone."""

    n: list[int]
    ppi: list[float]
    human: list[float]


class Projection(_Record):
    """How many labelled rows would make the decision (labelling.accept_stage.projection)."""

    labels_needed: int | None
    more_labels: int | None
    reachable: bool
    why_none: str | None
    human_labels_needed: int | None
    width_now: float
    width_that_decides: float
    formula: str
    variances: ProjectedVariances
    curve: WidthCurve


class AcceptReport(_Record):
    """`rag-ttc accept`'s report: the corrected difference, its projection, the plot and the JSON file written. Its
    JSON is the difference's fields followed by `projection`, `plot` and `report`."""

    difference: CorrectedDifference
    projection: Projection
    plot: str
    report: str

    def to_json(self) -> dict[str, Any]:
        return {**self.difference.to_json(), "projection": self.projection.to_json(), "plot": self.plot,
                "report": self.report}
