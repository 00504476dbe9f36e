"""A mean with its denominator and the reasons the other rows were not measured."""

import pytest

from rag_ttc_assets.core.measured import MeasuredMean, gold_reason, measured_mean, measured_text, reason_of


@pytest.mark.parametrize(("status", "reason"), [
    ("judged", None), ("valid", None), ("ok", None),
    ("parse_failure", "invalid"), ("contract_failure", "invalid"), ("escalated", "invalid"),
    ("abstained", "abstained"), ("no_statements", "no_statements"),
    ("budget_exhausted", "budget"), ("judge_budget_exhausted", "budget"),
    ("judge_rate_limited", "judge_error"), ("judge_parse_failure", "judge_error"), ("judge_timeout", "judge_error"),
    ("timeout", "fault"), ("rate_limited", "fault"), ("truncated", "fault"), ("server_error", "fault"),
    ("no_answer_row", "missing_row"), ("no_request_judgment", "missing_row"),
])
def test_one_mapping_from_status_to_reason(status, reason) -> None:
    assert reason_of(status) == reason


def test_gold_reason() -> None:
    assert gold_reason("judged", None) == "no_gold"
    assert gold_reason("judged", "gold judge: timeout") == "judge_error"
    assert gold_reason("abstained", None) == "abstained"


def test_mean_denominator_and_reasons() -> None:
    values = {"a": 1.0, "b": 0.5, "c": None, "d": None, "e": 0.0, "f": None}
    reasons = {"c": "abstained", "d": "abstained", "f": "judge_error"}
    # (1.0 + 0.5 + 0.0) / 3 = 0.5, over 3 of 6.
    assert measured_mean(values, reasons) == MeasuredMean(mean=0.5, measured=3, of=6,
                                                          not_measured={"abstained": 2, "judge_error": 1})
    assert measured_text(measured_mean(values, reasons)) == \
        "3 measured of 6 (not measured: abstained 2, judge_error 1)"


def test_nothing_measured_has_no_mean() -> None:
    assert measured_mean({"a": None}, {"a": "fault"}) == MeasuredMean(mean=None, measured=0, of=1,
                                                                      not_measured={"fault": 1})
    assert measured_mean({}, {}) == MeasuredMean(mean=None, measured=0, of=0, not_measured={})
    assert measured_text(measured_mean({"a": 1.0}, {})) == "1 measured of 1"


def test_no_silent_rows() -> None:
    with pytest.raises(ValueError, match="row 'c': no value and no reason"):
        measured_mean({"a": 1.0, "c": None}, {})
    with pytest.raises(ValueError, match=r"row 'a': has a value \(1.0\) and a reason"):
        measured_mean({"a": 1.0}, {"a": "invalid"})
    with pytest.raises(ValueError, match="row 'z': a reason for a row that has no value entry"):
        measured_mean({"a": 1.0}, {"z": "invalid"})
    with pytest.raises(ValueError, match="row 'a': value nan is not a finite number"):
        measured_mean({"a": float("nan")}, {})
