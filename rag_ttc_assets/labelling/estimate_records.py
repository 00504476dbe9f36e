"""An estimate as the reports store it, declared once: the acceptance report (labelling.accept_records), the
judge-agreement report's corrected completeness (judging.agreement_records) and the difference of two stored estimates
(labelling.ppi.difference_of) read it through these models.

  Estimate             mean, low, high, n, se, df (labelling.ppi.estimate_of's order); low, high and se None for a
                       single labelled row, df None where the normal quantile applies
  EstimateNLast        the same fields with n last: the independent difference (labelling.ppi.difference_of, then the
                       labelled rows n)
  JudgeMean            a judge's mean over the rows it measured (None: none)
  JudgeInterval        the judge's own interval of a difference: every row, no label
  DifferenceVariance   the terms of a difference's se^2

The estimators build these as dicts (labelling.ppi_records, typed dicts with the same keys in the same order: a test
holds the two together), so the JSON stays what it always was. Pure: pydantic only, no logic."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class _Stored(BaseModel):
    """A stored estimate's part: no undeclared field, never changed once read; `to_json` the object as written."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def to_json(self) -> dict[str, Any]:
        """The JSON object as written: every field in declaration order, values as the estimators gave them."""
        return self.model_dump()


class Estimate(_Stored):
    """An estimate with its interval (labelling.ppi.estimate_of): the labels' mean, or the prediction-powered one."""

    mean: float
    low: float | None
    high: float | None
    n: int  # rows the estimate read labels of
    se: float | None  # the standard error the interval was drawn from
    df: float | None  # its effective degrees of freedom (None: the normal quantile)


class EstimateNLast(_Stored):
    """The independent estimator's difference (labelling.ppi.difference_of, then the labelled rows n)."""

    mean: float
    low: float | None
    high: float | None
    se: float | None
    df: float | None
    n: int


class JudgeMean(_Stored):
    """The judge's mean over the `n` rows it measured (None where it measured none)."""

    mean: float | None
    n: int


class JudgeInterval(_Stored):
    """The judge's own interval of a difference: every row, no label (normal quantile)."""

    mean: float
    low: float
    high: float
    n: int


class DifferenceVariance(_Stored):
    """The terms of a difference's se^2: var_N(d), var_n(r), var_n(Y), var_N(d)/N and its degrees of freedom (an int
    N - 1 when paired, a float by Satterthwaite when independent)."""

    judge: float
    rectifier: float
    human: float
    fixed: float
    fixed_df: int | float
