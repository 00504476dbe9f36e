"""The records the prediction-powered estimators return (labelling/ppi.py, labelling/ppi_difference.py) and the reports store
as JSON: typed dicts, so the stored shape stays the dict it always was while every key is checked. No logic."""
from __future__ import annotations

from typing import TypedDict


class EstimateRecord(TypedDict):
    """An estimate as the reports store it (`estimate_of`); low, high and se are None for a single labelled row."""
    mean: float
    low: float | None
    high: float | None
    n: int
    se: float | None
    df: float | None


class DifferenceRecord(TypedDict):
    """a - b of two estimates (`difference_of`)."""
    mean: float
    low: float
    high: float
    se: float
    df: float | None


class JudgeMean(TypedDict):
    mean: float | None
    n: int


class CompletenessEstimates(TypedDict):
    """One arm's completeness: the judge's over every row, the labels', the prediction-powered estimate
    (`completeness_estimates`)."""
    rows: int
    labelled: int
    unjudged_labels: list[str]
    judge: JudgeMean
    human: EstimateRecord | None
    ppi: EstimateRecord | None
    weighting: str | None


class ArmEstimate(CompletenessEstimates):
    """`completeness_estimates` of one arm and one judge (`arm_estimates`), keyed first by arm, rater and the rows
    the judge did not measure."""
    arm: str
    rater: str
    not_measured: int


class JudgeInterval(TypedDict):
    """The judge's own interval of a difference: every row, no label (normal quantile)."""
    mean: float
    low: float
    high: float
    n: int


class DifferenceVariance(TypedDict):
    """The terms of a difference's se^2 (`projected_width`, `labels_needed`): var_N(d), var_n(r), var_n(Y), and
    var_N(d)/N with its degrees of freedom."""
    judge: float
    rectifier: float
    human: float
    fixed: float
    fixed_df: float


class ArmDifference(TypedDict):
    """ARM - BASELINE from the same labels (labelling/ppi_difference.py): paired or independent."""
    estimator: str
    rows: int
    labelled: int
    weighting: str
    judge: JudgeInterval
    human: EstimateRecord
    ppi: EstimateRecord
    variance: DifferenceVariance
