"""A panel of request judges: aggregation, a juror's fault as its own not-measured, agreement by hand."""

import pytest

from rag_ttc_assets.judging import panel

J = ["local/lexical", "local/coverage", "openai/x"]


def _row(status="judged", addressed=True, verdict=None, reason="r"):
    verdict = verdict or ("consistent" if addressed else "not_addressed")
    return {"status": status, "addressed": addressed if status == "judged" else None,
            "verdict": verdict if status == "judged" else None, "reason": reason, "excerpt": "e" if addressed else "",
            "cited_chunk_ids": ["c1"] if addressed else [], "judge_error": None if status == "judged" else "boom"}


@pytest.mark.parametrize("votes, majority, all_, any_", [
    ([True, True, False], True, False, True),
    ([True, False], False, False, True),   # a tie is not a majority
    ([False, False, False], False, False, False),
    ([True], True, True, True),
])
def test_aggregations(votes, majority, all_, any_):
    assert [panel.aggregate(votes, a) for a in ("majority", "all", "any")] == [majority, all_, any_]


def test_a_jurors_fault_is_its_own_not_measured_never_a_vote():
    rows = [_row(addressed=False), _row("judge_server_error"), _row(addressed=True, verdict="contradicts")]
    out = panel.combine(J, rows, "majority")
    # Two jurors measured it, one yes one no: no majority; they disagree; the faulted juror is kept as it was.
    assert out.status == "judged" and out.addressed is False and out.verdict == "not_addressed"
    assert out.jurors_measured == 2 and out.jurors_disagree is True
    assert [j.status for j in out.jurors] == ["judged", "judge_server_error", "judged"]
    anyof = panel.combine(J, rows, "any")
    assert anyof.addressed is True and anyof.verdict == "contradicts" and anyof.cited_chunk_ids == ["c1"]
    assert "any of 2 juror(s) (local/lexical no, openai/x yes)" in anyof.reason
    # Nobody measured it: the panel did not either.
    none = panel.combine(J[:2], [_row("judge_timeout"), _row("judge_parse_failure")], "all")
    assert none.status == "judge_timeout" and none.addressed is None and none.jurors_disagree is False


def test_the_verdict_is_the_one_most_yes_jurors_gave():
    rows = [_row(verdict="contradicts"), _row(verdict="consistent"), _row(verdict="consistent")]
    assert panel.combine(J, rows, "majority").verdict == "consistent"
    assert panel.combine(J[:2], rows[:2], "majority").verdict == "contradicts"  # a tie: the earlier juror


def test_fleiss_kappa_and_krippendorff_alpha_against_hand_computed_values():
    T, F = True, False
    votes = [[T, T], [T, T], [T, F], [F, F], [F, F], [T, F], [T, None]]
    got = panel.agreement(J[:2], votes)
    assert got["requests"] == 7 and got["all_measured"] == 6 and got["jurors_disagree"] == 2
    # Fleiss over the 6 complete rows, 2 raters: P_i is 1 for agreeing rows, 0 for the 2 split ones: P_bar = 4/6.
    # Yes votes 2+2+1+0+0+1 = 6 of 12: p = .5, P_e = .5^2 + .5^2 = .5.  kappa = (4/6 - .5) / .5 = 1/3.
    assert got["fleiss_kappa"] == pytest.approx((4 / 6 - 0.5) / 0.5)
    # Krippendorff (nominal, 2 coders, the 6 rows both coded): n = 12 values, 6 yes and 6 no, D = 2 split units:
    # alpha = 1 - D (n - 1) / (n_yes n_no) = 1 - 2 * 11 / 36.
    assert got["krippendorff_alpha"] == pytest.approx(1 - 2 * 11 / 36)


def test_judge_sensitive_counts_the_requests_whose_branch_depends_on_the_juror():
    branches = [{"r1": "ok", "r2": "not_addressed", "r3": "not_retrieved"},
                {"r1": "ok", "r2": "ok", "r3": "not_retrieved"}]
    measured = [{"r1": True, "r2": True, "r3": True}, {"r1": True, "r2": True, "r3": False}]
    got = panel.judge_sensitive(branches, measured, ["r1", "r2", "r3"])
    assert got["request_ids"] == ["r2"] and got["line"] == "judge-sensitive: 1 of 3"


def test_the_panels_coverage_is_its_measured_jurors_mean_and_none_when_one_reports_none():
    rows = [{**_row(addressed=False), "coverage": 0.4}, _row("judge_timeout"), {**_row(), "coverage": 0.8}]
    out = panel.combine(J, rows, "majority", [0.5, 0.5, 0.5])  # at a threshold of 0.5 calibrated is the coverage
    assert out.coverage == pytest.approx(0.6)  # the faulted juror is no vote and no coverage
    assert [j.coverage for j in out.jurors] == [0.4, None, 0.8]
    llm = [{**_row(), "coverage": 0.8}, _row()]  # an LLM juror reports none: the panel has no coverage
    assert panel.combine(J[:2], llm, "majority", [0.5, None]).coverage is None
    assert panel.combine(J[:2], [_row("judge_timeout"), _row("judge_timeout")], "all").coverage is None


def test_calibrate_puts_each_jurors_own_threshold_at_one_half_monotone_and_by_hand():
    # Piecewise linear through (0, 0), (t, 0.5), (1, 1): the BERTScore juror's 0.65 and the word-reading jurors' 0.5.
    assert panel.calibrate(0.65, 0.65) == 0.5 and panel.calibrate(0.5, 0.5) == 0.5
    assert panel.calibrate(0.6, 0.65) == pytest.approx(round(0.6 * 0.5 / 0.65, 4))  # 0.4615: not addressed, < 0.5
    assert panel.calibrate(0.8, 0.65) == pytest.approx(round(0.5 + 0.15 * 0.5 / 0.35, 4))  # 0.7143
    assert panel.calibrate(0.0, 0.65) == 0.0 and panel.calibrate(1.0, 0.65) == 1.0
    assert panel.calibrate(0.55, 0.6) == pytest.approx(round(0.55 * 0.5 / 0.6, 4))
    grid = [i / 100 for i in range(101)]
    for t in (0.5, 0.6, 0.65):
        got = [panel.calibrate(c, t) for c in grid]
        assert got == sorted(got) and all((g >= 0.5) == (c >= t) for c, g in zip(grid, got, strict=True))
    # A verdict of addressed below the threshold (a contradiction) is at 0.5: calibrated >= 0.5 iff addressed.
    assert panel.calibrate(0.3, 0.5, addressed=True) == 0.5 and panel.calibrate(0.3, 0.5, addressed=False) == 0.3
    # No coverage or no threshold (an LLM juror): none.
    assert panel.calibrate(None, 0.5) is None and panel.calibrate(0.7, None) is None


def test_address_thresholds_are_the_jurors_own_rules_and_none_for_any_other_juror():
    from rag_ttc_assets.judging import request_judge as rj

    assert panel.address_threshold("local/bertscore", True) == rj.SOFT_ADDRESS_RECALL == 0.65
    assert panel.address_threshold("local/lexical", True) == panel.address_threshold("local/coverage", True) == 0.5
    assert panel.address_threshold("local/lexical", False) == rj.REQUEST_TERM_RECALL
    assert panel.address_threshold("openai/gpt-4o-mini", True) is None


def test_the_panels_coverage_is_the_calibrated_mean_and_mean_aggregates_it():
    # lexical 0.45 (t 0.5: 0.45), coverage 0.55 (t 0.5: 0.55), bertscore 0.70 (t 0.65: 0.5 + 0.05 * 0.5 / 0.35).
    jurors = ["local/lexical", "local/coverage", "local/bertscore"]
    rows = [{**_row(addressed=False), "coverage": 0.45}, {**_row(), "coverage": 0.55}, {**_row(), "coverage": 0.70}]
    cal = [0.45, 0.55, round(0.5 + 0.05 * 0.5 / 0.35, 4)]
    out = panel.combine(jurors, rows, "mean", [0.5, 0.5, 0.65])
    assert [j.calibrated_coverage for j in out.jurors] == pytest.approx(cal)
    assert [j.coverage for j in out.jurors] == [0.45, 0.55, 0.70]  # the raw coverage kept beside
    assert out.coverage == pytest.approx(round(sum(cal) / 3, 4))  # not the raw mean, 0.5667
    assert out.addressed is True and "calibrated mean 0.52 >= 0.50" in out.reason
    # The raw mean would call this not addressed: bertscore's 0.60 is below its own threshold.
    low = [{**_row(addressed=False), "coverage": 0.45}, {**_row(), "coverage": 0.55},
           {**_row(addressed=False), "coverage": 0.60}]
    got = panel.combine(jurors, low, "mean", [0.5, 0.5, 0.65])
    assert got.addressed is False and got.verdict == "not_addressed"
    assert got.coverage == pytest.approx(round((0.45 + 0.55 + round(0.6 * 0.5 / 0.65, 4)) / 3, 4))
    # An LLM juror (no threshold): no calibrated coverage, its vote counts 1 or 0 in `mean`, the panel has no coverage.
    llm = panel.combine(["local/lexical", "openai/x"], [{**_row(addressed=False), "coverage": 0.4}, _row()], "mean",
                        [0.5, None])
    assert llm.jurors[1].calibrated_coverage is None and llm.coverage is None
    assert llm.addressed is True  # (0.4 + 1) / 2 = 0.7
    # Without thresholds (as before): no calibrated coverage.
    assert panel.combine(jurors[:2], rows[:2], "majority").coverage is None


@pytest.mark.parametrize("cal, want", [([0.4, 0.6], True), ([0.3, 0.6], False), ([0.5], True), ([0.49], False)])
def test_mean_aggregation_thresholds_the_calibrated_mean_at_one_half(cal, want):
    assert panel.aggregate([c >= 0.5 for c in cal], "mean", cal) is want
