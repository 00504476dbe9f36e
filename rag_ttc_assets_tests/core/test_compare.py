from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

from rag_ttc_assets.core.case_comparison import (
    Bucket,
    ComparisonReport,
    adjust_reports,
    buckets,
    catastrophic,
    compare_arms,
    compare_metric,
    count_undefined,
    default_catastrophic_threshold,
    mcnemar_exact_p,
    paired,
    sign_flip_p,
)
from rag_ttc_assets.core.compare_records import MetricComparison, PAdjustment
from rag_ttc_assets.core.compare_guards import (
    ABSENT,
    InstrumentDriftError,
    LabelDriftError,
    attribute_changes,
    instrument_drift,
    label_drift,
)


@pytest.fixture()
def second_seed() -> dict[str, float]:
    """The second seed note's 300 cases: 198 x +0.25, 32 x -0.50, 15 x -2.20, 55 ties."""
    deltas = [0.25] * 198 + [-0.50] * 32 + [-2.20] * 15 + [0.0] * 55
    # Shuffled ids, so nothing depends on the input order.
    ids = [f"q{i:03d}" for i in range(300)]
    random.Random(7).shuffle(ids)
    return dict(zip(ids, deltas))


# -- pairing -----------------------------------------------------------------------------------

def test_paired_keeps_cases_defined_in_both_sorted_by_id() -> None:
    a = {"q3": 0.5, "q1": 1.0, "q2": None, "q4": 0.0, "only-a": 1.0}
    b = {"q1": 0.0, "q2": 1.0, "q3": None, "q4": 0.25, "only-b": 0.0}
    assert paired(a, b) == [("q1", 1.0, 0.0), ("q4", 0.0, 0.25)]
    # Dropped: q2 (None in a), q3 (None in b), only-a and only-b (absent from the other arm).
    assert count_undefined(a, b) == 4


def test_paired_refuses_nan() -> None:
    with pytest.raises(ValueError, match=r"arm b: case 'q1'.*use None"):
        paired({"q1": 1.0}, {"q1": math.nan})


# -- the second seed's arithmetic --------------------------------------------------------------

def test_second_seed_sums_and_mean(second_seed: dict[str, float]) -> None:
    a = dict.fromkeys(second_seed, 0.0)  # a = 0, so b - a is each delta exactly
    r = compare_metric(a, second_seed, kind="continuous")
    assert (r.n, r.undefined, r.gains, r.losses, r.ties) == (300, 0, 198, 47, 55)
    assert r.sum_gains == 49.5
    assert r.sum_losses == -49.0
    assert r.mean_delta == pytest.approx(0.5 / 300, abs=1e-12)
    assert (r.mean_a, r.mean_b) == (0.0, pytest.approx(0.5 / 300, abs=1e-12))
    assert r.test == "sign_flip_monte_carlo"  # 2**300 > 5000
    assert r.ci_low <= r.mean_delta <= r.ci_high
    assert r.p_value > 0.5  # two thousandths on this spread is nothing: the mean alone says "no change"
    assert (r.b01, r.b10) == (None, None)


def test_second_seed_buckets(second_seed: dict[str, float]) -> None:
    rows = buckets(list(second_seed.values()))
    table = {row.label: (row.count, row.sum) for row in rows}
    assert [row.label for row in rows] == [
        "loss > 1.0", "loss (0.5, 1.0]", "loss (0.1, 0.5]", "loss (0, 0.1]", "tie",
        "gain (0, 0.1]", "gain (0.1, 0.5]", "gain (0.5, 1.0]", "gain > 1.0",
    ]
    assert table == {
        "loss > 1.0": (15, -33.0), "loss (0.5, 1.0]": (0, 0.0), "loss (0.1, 0.5]": (32, -16.0),
        "loss (0, 0.1]": (0, 0.0), "tie": (55, 0.0), "gain (0, 0.1]": (0, 0.0),
        "gain (0.1, 0.5]": (198, 49.5), "gain (0.5, 1.0]": (0, 0.0), "gain > 1.0": (0, 0.0),
    }
    assert sum(row.count for row in rows) == 300
    assert math.fsum(row.sum for row in rows) == pytest.approx(math.fsum(second_seed.values()), abs=1e-12)
    assert rows[0] == Bucket(label="loss > 1.0", side="loss", low=1.0, high=None, count=15, sum=-33.0)


def test_second_seed_catastrophic(second_seed: dict[str, float]) -> None:
    worst = catastrophic(second_seed, 1.0)
    assert worst == sorted(c for c, d in second_seed.items() if d == -2.20)
    assert len(worst) == 15
    # At the continuous default (0.5) the 32 losses of exactly -0.50 are in too, after the -2.20s.
    at_half = catastrophic(second_seed, default_catastrophic_threshold("continuous"))
    assert len(at_half) == 47 and at_half[:15] == worst


# -- buckets -----------------------------------------------------------------------------------

def test_bucket_edges_are_upper_inclusive_and_ties_use_tie_eps() -> None:
    rows = {r.label: r.count for r in buckets([0.1, 0.5, 1.0, 1.0000001, -0.1000001, 1e-13, -1e-13, 0.0])}
    assert rows["gain (0, 0.1]"] == 1
    assert rows["gain (0.1, 0.5]"] == 1
    assert rows["gain (0.5, 1.0]"] == 1
    assert rows["gain > 1.0"] == 1
    assert rows["loss (0.1, 0.5]"] == 1
    assert rows["tie"] == 3  # |delta| <= 1e-12, as compare_metric counts ties
    strict = {r.label: r.count for r in buckets([1e-13, -1e-13, 0.0], tie_eps=0.0)}
    assert (strict["gain (0, 0.1]"], strict["loss (0, 0.1]"], strict["tie"]) == (1, 1, 1)


def test_bucket_rows_add_up_on_random_deltas() -> None:
    rng = np.random.default_rng(3)
    deltas = list(rng.normal(0, 0.8, size=500)) + [0.0] * 20
    rows = buckets(deltas, edges=(0.0, 0.05, 0.2, 0.7, 1.5))
    assert len(rows) == 2 * 5 + 1
    assert sum(r.count for r in rows) == len(deltas)
    assert math.fsum(r.sum for r in rows) == pytest.approx(math.fsum(deltas), abs=1e-9)
    assert all(r.sum <= 0 for r in rows if r.side == "loss")
    assert all(r.sum > 0 for r in rows if r.side == "gain" and r.count)


@pytest.mark.parametrize("edges", [(), (0.1, 0.5), (0.0, 0.5, 0.5), (0.0, 1.0, 0.5)])
def test_bucket_edges_are_checked(edges: tuple[float, ...]) -> None:
    with pytest.raises(ValueError, match="edges"):
        buckets([0.1], edges=edges)


# -- catastrophic ------------------------------------------------------------------------------

def test_catastrophic_sorted_by_delta_then_id_and_inclusive() -> None:
    deltas = {"c": -1.0, "a": -1.0, "b": -2.0, "d": -0.99, "e": 0.5}
    assert catastrophic(deltas, 1.0) == ["b", "a", "c"]
    with pytest.raises(ValueError, match="threshold"):
        catastrophic(deltas, 0.0)


def test_default_thresholds() -> None:
    assert default_catastrophic_threshold("binary") == 1.0
    assert default_catastrophic_threshold("continuous") == 0.5
    with pytest.raises(ValueError):
        default_catastrophic_threshold("ordinal")  # type: ignore[arg-type]


# -- McNemar -----------------------------------------------------------------------------------

def _binary_arms(b01: int, b10: int, b11: int, b00: int) -> tuple[dict[str, float], dict[str, float]]:
    cells = [(0, 1)] * b01 + [(1, 0)] * b10 + [(1, 1)] * b11 + [(0, 0)] * b00
    a = {f"q{i}": float(x) for i, (x, _) in enumerate(cells)}
    b = {f"q{i}": float(y) for i, (_, y) in enumerate(cells)}
    return a, b


def test_mcnemar_hand_example() -> None:
    a, b = _binary_arms(b01=1, b10=6, b11=3, b00=2)
    r = compare_metric(a, b, kind="binary")
    assert (r.b01, r.b10, r.n) == (1, 6, 12)
    # 2 * P(X <= 1), X ~ Bin(7, 1/2) = 2 * (1 + 7) / 128
    assert r.p_value == 0.125
    assert r.test == "mcnemar_exact"
    assert (r.gains, r.losses, r.ties, r.sum_gains, r.sum_losses) == (1, 6, 5, 1.0, -6.0)
    assert (r.mean_a, r.mean_b, r.mean_delta) == (pytest.approx(9 / 12), pytest.approx(4 / 12), pytest.approx(-5 / 12))


@pytest.mark.parametrize(("b01", "b10", "p"), [
    (0, 0, 1.0),  # no discordant pairs
    (2, 2, 1.0),  # 2 * (1 + 4 + 6) / 16 > 1, capped
    (0, 5, 2 / 32),
    (5, 0, 2 / 32),
    (3, 10, 2 * (1 + 13 + 78 + 286) / 8192),
])
def test_mcnemar_values(b01: int, b10: int, p: float) -> None:
    assert mcnemar_exact_p(b01, b10) == p


def test_mcnemar_matches_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    for b01, b10 in [(1, 6), (3, 10), (40, 61), (250, 199)]:
        assert mcnemar_exact_p(b01, b10) == pytest.approx(
            min(1.0, 2 * stats.binom.cdf(min(b01, b10), b01 + b10, 0.5)), rel=1e-12)


def test_binary_refuses_non_binary_values() -> None:
    with pytest.raises(ValueError, match=r"arm b: case 'q1': value 0.5 is not 0 or 1"):
        compare_metric({"q1": 1.0}, {"q1": 0.5}, kind="binary")


# -- the randomization test --------------------------------------------------------------------

def test_sign_flip_all_positive_n10_is_exact() -> None:
    deltas = [0.1 * (i + 1) for i in range(10)]
    a = {f"q{i}": 0.0 for i in range(10)}
    b = {f"q{i}": d for i, d in enumerate(deltas)}
    r = compare_metric(a, b, kind="continuous")
    assert r.test == "sign_flip_exact"  # 2**10 = 1024 <= n_perm = 5000
    assert r.p_value == 2 / 1024  # only all-plus and all-minus reach |sum| = sum


@pytest.mark.parametrize(("deltas", "p"), [
    ([1.0, 2.0, 3.0], 2 / 8),   # |+-1+-2+-3| = 6,4,2,0,0,2,4,6; observed 6
    ([1.0, -2.0, 3.0], 6 / 8),  # observed 2: all but the two zeros
    ([0.0, 0.0], 1.0),
])
def test_sign_flip_exact_hand_computed(deltas: list[float], p: float) -> None:
    assert sign_flip_p(deltas, 5000, np.random.default_rng(0)) == (p, "sign_flip_exact")


def test_sign_flip_exact_threshold_is_two_to_the_n() -> None:
    deltas = [1.0] * 10
    assert sign_flip_p(deltas, 1024, np.random.default_rng(0))[1] == "sign_flip_exact"
    assert sign_flip_p(deltas, 1023, np.random.default_rng(0))[1] == "sign_flip_monte_carlo"


def test_sign_flip_monte_carlo_all_positive_n10() -> None:
    deltas = [0.1 * (i + 1) for i in range(10)]
    p, test = sign_flip_p(deltas, 1000, np.random.default_rng(11))
    assert test == "sign_flip_monte_carlo"
    # (count + 1) / 1001 with count ~ Bin(1000, 2/1024), mean ~2: never 0, and small.
    assert 1 / 1001 <= p <= 10 / 1001
    assert p == sign_flip_p(deltas, 1000, np.random.default_rng(11))[0]


def test_sign_flip_monte_carlo_agrees_with_exact() -> None:
    deltas = list(np.random.default_rng(5).normal(0.3, 1.0, size=12))
    exact, t_exact = sign_flip_p(deltas, 4096, np.random.default_rng(0))
    mc, t_mc = sign_flip_p(deltas, 4000, np.random.default_rng(0))
    assert (t_exact, t_mc) == ("sign_flip_exact", "sign_flip_monte_carlo")
    assert 0.0 < exact < 1.0
    assert mc == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / 4000) + 1 / 4001)


# -- bootstrap and determinism -----------------------------------------------------------------

def _continuous_arms(seed: int, n: int) -> tuple[dict[str, float | None], dict[str, float | None]]:
    rng = np.random.default_rng(seed)
    a = {f"q{i}": float(x) for i, x in enumerate(rng.uniform(0, 1, size=n))}
    b = {c: min(1.0, max(0.0, x + float(rng.normal(0.05, 0.2)))) for c, x in a.items()}
    return a, b


def test_bootstrap_ci_contains_the_mean_and_is_reproducible() -> None:
    a, b = _continuous_arms(1, 80)
    r1 = compare_metric(a, b, kind="continuous", seed=42)
    r2 = compare_metric(a, b, kind="continuous", seed=42)
    assert r1 == r2
    assert r1.ci_low < r1.mean_delta < r1.ci_high
    other = compare_metric(a, b, kind="continuous", seed=43)
    assert (other.ci_low, other.ci_high) != (r1.ci_low, r1.ci_high)
    assert other.mean_delta == r1.mean_delta


def test_bootstrap_degenerate_cases() -> None:
    one = compare_metric({"q": 0.25}, {"q": 0.75}, kind="continuous")
    assert (one.ci_low, one.ci_high, one.mean_delta) == (0.5, 0.5, 0.5)
    flat = compare_metric(dict.fromkeys("abcd", 0.0), dict.fromkeys("abcd", 0.5), kind="continuous")
    assert (flat.ci_low, flat.ci_high) == (0.5, 0.5)


def test_the_ci_does_not_shift_with_n_perm() -> None:
    # Separate streams: more permutations must not move the bootstrap.
    a, b = _continuous_arms(2, 50)
    r1 = compare_metric(a, b, kind="continuous", n_perm=500)
    r2 = compare_metric(a, b, kind="continuous", n_perm=900)
    assert (r1.ci_low, r1.ci_high) == (r2.ci_low, r2.ci_high)


def test_empty_comparison() -> None:
    r = compare_metric({"q1": None}, {"q1": 1.0, "q2": 0.0}, kind="continuous")
    assert r.n == 0 and r.undefined == 2
    assert (r.mean_a, r.mean_b, r.mean_delta, r.ci_low, r.ci_high, r.p_value, r.test) == (None,) * 7
    assert (r.gains, r.losses, r.ties, r.sum_gains, r.sum_losses) == (0, 0, 0, 0.0, 0.0)
    rb = compare_metric({}, {}, kind="binary")
    assert (rb.n, rb.p_value, rb.b01, rb.b10) == (0, None, 0, 0)


def test_undefined_cases_are_dropped_and_counted() -> None:
    a = {"q1": 1.0, "q2": None, "q3": 0.0, "q4": 1.0}
    b = {"q1": 1.0, "q2": 1.0, "q3": 1.0}
    r = compare_metric(a, b, kind="binary")
    assert (r.n, r.undefined, r.b01, r.b10) == (2, 2, 1, 0)
    # q2: None in a only; q4: absent from b only. 2 paired of 4.
    assert (r.of, r.undefined_a, r.undefined_b, r.undefined_both) == (4, 1, 1, 0)
    a5, b5 = {**a, "q5": None}, {**b, "q6": None}
    r = compare_metric(a5, b5, kind="binary")
    # q5: None in a, absent from b; q6: absent from a, None in b: both undefined in both arms.
    assert (r.n, r.of, r.undefined, r.undefined_a, r.undefined_b, r.undefined_both) == (2, 6, 4, 1, 1, 2)


@pytest.mark.parametrize("kwargs", [{"kind": "ordinal"}, {"kind": "continuous", "n_boot": 0},
                                    {"kind": "continuous", "n_perm": 0}, {"kind": "continuous", "tie_eps": -1.0}])
def test_arguments_are_checked(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        compare_metric({"q": 0.0}, {"q": 1.0}, **kwargs)


# -- label drift -------------------------------------------------------------------------------

def test_label_drift_refused_naming_both_digests() -> None:
    with pytest.raises(LabelDriftError) as err:
        label_drift("sha256:aaa", "sha256:bbb", allow=False)
    assert isinstance(err.value, ValueError)
    msg = str(err.value)
    assert "sha256:aaa" in msg and "sha256:bbb" in msg and "--allow-label-drift" in msg


def test_label_drift_allowed_or_absent() -> None:
    assert label_drift("sha256:aaa", "sha256:bbb", allow=True) is True
    assert label_drift("sha256:aaa", "sha256:aaa", allow=False) is False


# -- attribution -------------------------------------------------------------------------------

def test_attribute_changes_flat_dotted_keys() -> None:
    a = {"evidence_k": 5, "context_runes": 12000, "model": "m1",
         "retrieval": {"kind": "rrf", "k": 60, "sources": ["bm25", "vector"]}, "shuffle": True, "old": 1}
    b = {"evidence_k": 8, "context_runes": 40000, "model": "m1",
         "retrieval": {"kind": "rrf", "k": 60, "sources": ["bm25"]}, "shuffle": 1, "new": None}
    assert attribute_changes(a, b) == {
        "context_runes": (12000, 40000),
        "evidence_k": (5, 8),
        "new": (ABSENT, None),
        "old": (1, ABSENT),
        "retrieval.sources": (["bm25", "vector"], ["bm25"]),
        "shuffle": (True, 1),  # a flag is not a count, though True == 1
    }
    assert list(attribute_changes(a, b)) == sorted(attribute_changes(a, b))
    assert attribute_changes(a, a) == {}
    # A mapping on one side only is one change of the whole value (an imported arm's source against None).
    source = {"file": "traces/app.json", "format": "otlp_json"}
    assert attribute_changes({"source": None, "k": 1}, {"source": source, "k": 1}) == {"source": (None, source)}
    assert attribute_changes({"source": source}, {}) == {"source": (source, ABSENT)}


# -- the report --------------------------------------------------------------------------------

def test_report_json_shape(second_seed: dict[str, float]) -> None:
    ids = sorted(second_seed)
    values_a = {"score": dict.fromkeys(ids, 0.0), "valid": dict.fromkeys(ids, 1.0)}
    values_b = {"score": dict(second_seed),
                # the 15 catastrophic cases also became invalid
                "valid": {c: (0.0 if second_seed[c] == -2.20 else 1.0) for c in ids}}
    report = compare_arms("base", "wide", values_a, values_b, {"score": "continuous", "valid": "binary"},
                          headline="score", threshold=1.0, n_boot=200, n_perm=500)
    assert isinstance(report, ComparisonReport)
    out = report.to_json()
    json.dumps(out)  # JSON-able throughout
    assert (out["a"], out["b"], out["n"]) == ("base", "wide", 300)
    assert set(out) == {"a", "b", "n", "metrics", "buckets", "catastrophic", "p_adjust"}
    assert set(out["metrics"]) == {"score", "valid"}
    # Holm over the report's two metrics: valid (2 / 2**15) is the smaller, x2; score's x1, raised to it if lower.
    p_valid, p_score = out["metrics"]["valid"]["p_value"], out["metrics"]["score"]["p_value"]
    assert p_valid < p_score
    assert out["metrics"]["valid"]["p_adjusted"] == 2 * p_valid and out["metrics"]["valid"]["significant"] is True
    assert out["metrics"]["score"]["p_adjusted"] == max(2 * p_valid, p_score)
    assert out["p_adjust"]["method"] == "holm" and out["p_adjust"]["m"] == 2 and out["p_adjust"]["alpha"] == 0.05
    assert out["metrics"]["score"]["of"] == 300 and out["metrics"]["score"]["undefined"] == 0
    for m in out["metrics"].values():
        assert {"mean_a", "mean_b", "mean_delta", "ci_low", "ci_high", "p_value", "gains", "losses", "ties"} <= set(m)
    assert out["metrics"]["score"]["sum_losses"] == -49.0
    assert (out["metrics"]["valid"]["b01"], out["metrics"]["valid"]["b10"]) == (0, 15)
    assert out["metrics"]["valid"]["p_value"] == 2 / 2 ** 15
    assert out["buckets"][0] == {"label": "loss > 1.0", "side": "loss", "low": 1.0, "high": None,
                                 "count": 15, "sum": -33.0}
    assert len(out["catastrophic"]) == 15
    assert out["catastrophic"][0] == {"case_id": sorted(c for c in ids if second_seed[c] == -2.20)[0],
                                      "a": 0.0, "b": -2.2, "delta": -2.2}


def test_report_refuses_mismatched_metrics() -> None:
    with pytest.raises(ValueError, match="metrics differ"):
        compare_arms("a", "b", {"x": {}}, {"y": {}}, {"x": "binary"}, headline="x")
    with pytest.raises(ValueError, match="headline"):
        compare_arms("a", "b", {"x": {}}, {"x": {}}, {"x": "binary"}, headline="y")


def _report(**p_values: float | None) -> ComparisonReport:
    def metric(p: float | None) -> MetricComparison:
        return MetricComparison(n=1, mean_a=0.0, mean_b=0.0, mean_delta=0.0, ci_low=0.0, ci_high=0.0, p_value=p,
                                test=None, gains=0, losses=0, ties=1, sum_gains=0.0, sum_losses=0.0, undefined=0)

    return ComparisonReport(a="x", b="y", n=1, metrics={m: metric(p) for m, p in p_values.items()}, buckets=[],
                            catastrophic=[], p_adjust=PAdjustment(method="holm", method_name="", alpha=0.05, m=0,
                                                                  family="the metrics of this comparison"))


def test_adjust_reports_over_every_pair_and_metric() -> None:
    # p = [0.01, 0.04, 0.03, 0.005] over two pairs of two metrics (metrics in name order): m = 4.
    # Holm: [0.03, 0.06, 0.06, 0.02]; BH: [0.02, 0.04, 0.04, 0.02] (see test_multiple_testing).
    reports = [_report(completeness=0.01, valid=0.04), _report(completeness=0.03, valid=0.005, latency_s=None)]
    holm = adjust_reports(reports, "holm", 0.05)
    got = [(r.metrics[m].p_adjusted, r.metrics[m].significant) for r in holm for m in ("completeness", "valid")]
    assert [g[0] for g in got] == pytest.approx([0.03, 0.06, 0.06, 0.02], abs=1e-15)
    assert [g[1] for g in got] == [True, False, False, True]
    latency = holm[1].metrics["latency_s"]
    assert (latency.p_value, latency.p_adjusted, latency.significant) == (None, None, None)
    assert holm[0].p_adjust.model_dump() == holm[1].p_adjust.model_dump() == {
        "method": "holm", "method_name": "Holm step-down (Holm 1979), family-wise error rate", "alpha": 0.05, "m": 4,
        "family": "every pair and metric of arm_comparisons"}
    # The metrics keep their order and their other fields; the report's other fields are kept.
    assert list(holm[1].metrics) == ["completeness", "valid", "latency_s"] and holm[1].metrics["valid"].ties == 1
    bh = adjust_reports(reports, "bh", 0.01)
    assert [bh[i].metrics[m].p_adjusted for i in (0, 1) for m in ("completeness", "valid")] == \
        pytest.approx([0.02, 0.04, 0.04, 0.02], abs=1e-15)
    assert not any(bh[i].metrics[m].significant for i in (0, 1) for m in ("completeness", "valid"))
    assert reports[0].metrics["valid"].p_adjusted is None  # copies: the inputs are not changed


def test_a_single_comparison_adjusts_over_its_metrics_by_bh() -> None:
    # valid: b01 = 6, b10 = 0 -> McNemar p = 2 / 2**6 = 1/32; same: every delta 0 -> sign-flip exact p = 1.
    ids = [f"q{i}" for i in range(6)]
    a = {"valid": dict.fromkeys(ids, 0.0), "same": dict.fromkeys(ids, 0.5)}
    b = {"valid": dict.fromkeys(ids, 1.0), "same": dict.fromkeys(ids, 0.5)}
    out = compare_arms("a", "b", a, b, {"valid": "binary", "same": "continuous"}, headline="valid",
                       p_adjust="bh", n_boot=10).to_json()
    # BH, m = 2: 1/32 x 2/1 = 1/16; 1 x 2/2 = 1.
    assert out["metrics"]["valid"]["p_value"] == 1 / 32 and out["metrics"]["valid"]["p_adjusted"] == 1 / 16
    assert out["metrics"]["same"]["p_adjusted"] == 1.0 and out["metrics"]["same"]["significant"] is False
    assert out["metrics"]["valid"]["significant"] is False  # 1/32 < 0.05 raw, 1/16 > 0.05 adjusted
    assert out["p_adjust"]["method"] == "bh" and out["p_adjust"]["family"] == "the metrics of this comparison"


def test_case_values_give_each_metric_per_case_and_why_it_is_undefined():
    from rag_ttc_assets.core.compare_metrics import KINDS, case_values
    from rag_ttc_assets.core.measured import MISSING_ROW, NO_TARGETS, UNANSWERABLE

    contract = {"q1": {"status": "valid"}, "q2": {"status": "parse_failure"}, "q3": {"status": "valid"}}
    answers = {q: {"input_tokens": 10, "latency_s": 0.5, "status": "ok"} for q in contract}
    judge = {"q1": {"faithfulness": 1.0, "status": "judged"}, "q2": {"faithfulness": None, "status": "parse_failure"}}
    questions = {"q1": {"query_id": "q1", "requests": 2, "measured": 2, "answered": 2, "supported": 1,
                        "complete": False}}
    values, reasons = case_values(contract, answers, judge, questions, {}, {"q1": {"recip_rank": 0.5}, "q2": None})
    assert set(values) == set(KINDS)
    assert values["valid"] == {"q1": 1.0, "q2": 0.0, "q3": 1.0}
    assert values["recip_rank"] == {"q1": 0.5, "q2": None, "q3": None}
    assert reasons["recip_rank"] == {"q2": NO_TARGETS, "q3": NO_TARGETS}
    assert reasons["faithfulness"]["q3"] == MISSING_ROW
    assert reasons["completeness"] == {"q2": UNANSWERABLE, "q3": UNANSWERABLE}


def test_instrument_drift_names_the_request_judges_call_parameters() -> None:
    a = {"model": "openai/judge", "prompt_digest": "sha256:1"}
    same = {"model": "openai/judge", "prompt_digest": "sha256:1"}
    hot = {"model": "openai/judge", "prompt_digest": "sha256:1", "params": {"temperature": 1}}
    assert instrument_drift("a", a, "b", same, allow=False) == []
    with pytest.raises(InstrumentDriftError, match=r"params: a None, b \{'temperature': 1\}"):
        instrument_drift("a", a, "b", hot, allow=False)
    assert instrument_drift("a", a, "b", hot, allow=True) == ["params"]
    assert instrument_drift("a", {**hot, "model": "x"}, "b", hot, allow=True) == ["model"]


def test_instrument_drift_names_the_offline_judges_rules_version() -> None:
    old = {"model": "local/lexical", "prompt_digest": "sha256:1", "rules": "request-judge-rules/1"}
    new = {**old, "rules": "request-judge-rules/2"}
    with pytest.raises(InstrumentDriftError, match=r"rules: a 'request-judge-rules/1', b 'request-judge-rules/2'"):
        instrument_drift("a", old, "b", new, allow=False)
    assert instrument_drift("a", old, "b", new, allow=True) == ["rules"]
