"""An estimate is declared once (labelling.estimate_records): the dicts the estimators build (labelling.ppi_records)
carry the same keys in the same order, and a stored estimate read through its model is written back unchanged."""

import json

import numpy as np
import pytest

from rag_ttc_assets.labelling import estimate_records as er
from rag_ttc_assets.labelling import ppi, ppi_difference, ppi_records


@pytest.mark.parametrize("written, model", [
    (ppi_records.EstimateRecord, er.Estimate),
    (ppi_records.JudgeMean, er.JudgeMean),
    (ppi_records.JudgeInterval, er.JudgeInterval),
    (ppi_records.DifferenceVariance, er.DifferenceVariance),
])
def test_the_estimators_dicts_have_the_models_keys_in_order(written, model):
    assert list(written.__annotations__) == list(model.model_fields)


def test_the_independent_difference_is_the_difference_record_then_n():
    assert list(er.EstimateNLast.model_fields) == [*ppi_records.DifferenceRecord.__annotations__, "n"]


def test_a_stored_estimate_reads_and_writes_back_key_for_key():
    rng = np.random.default_rng(3)
    f, y = rng.random(40), (rng.random(40) < 0.6).astype(float)
    est = ppi.estimate_of(ppi.ppi_uniform(f, y[:15], f[:15]), 15, 0.05)  # 15 of 40 rows labelled
    assert est["low"] < est["mean"] < est["high"]
    back = er.Estimate.model_validate(json.loads(json.dumps(est))).to_json()
    assert list(back.items()) == list(est.items())
    one = {**est, "low": None, "high": None, "se": None, "n": 1}  # a single labelled row: no interval
    assert er.Estimate.model_validate(one).to_json() == one
    with pytest.raises(ValueError, match="no standard error"):
        ppi.difference_of(one, est, 0.05)
    d = ppi.difference_of(est, est, 0.05)
    assert d["mean"] == 0.0 and d["low"] < 0 < d["high"]
    with pytest.raises(ValueError, match="extra"):
        er.Estimate.model_validate({**est, "width": 1.0})  # an undeclared field is refused, not carried


def test_the_paired_differences_variance_reads_through_its_model():
    f_arm = {f"q{i}": i % 3 / 2 for i in range(30)}
    f_base = {f"q{i}": (i + 1) % 3 / 2 for i in range(30)}
    y_arm = {q: float(v > 0.4) for q, v in list(f_arm.items())[:12]}
    y_base = {q: float(v > 0.4) for q, v in list(f_base.items())[:12]}
    est = ppi_difference.paired_difference(f_arm, f_base, y_arm, y_base)
    variance = er.DifferenceVariance.model_validate(est["variance"])
    assert variance.to_json() == est["variance"] and isinstance(variance.fixed_df, int)  # N - 1, kept an int
    for part in ("human", "ppi"):
        assert er.Estimate.model_validate(est[part]).to_json() == est[part]
    assert er.JudgeInterval.model_validate(est["judge"]).to_json() == est["judge"]
