"""Prediction-powered completeness (labelling/ppi.py) and which rows to label (labelling/label_sampling.py): coverage of the
95% interval on a judge biased by a known amount, 1,000 repeated samples, vectorised."""
import numpy as np
import pytest
from scipy.stats import t as student_t

from rag_ttc_assets.labelling import label_sampling as ls
from rag_ttc_assets.labelling import ppi, ppi_difference

REPS, N, SEED = 1000, 2000, 44


def t95(*terms):
    """Student's t quantile of a 95% interval with the Welch-Satterthwaite degrees of freedom of the variance terms
    (v, d), written out: (sum v)^2 / sum (v^2 / d)."""
    df = sum(v for v, _ in terms) ** 2 / sum(v ** 2 / d for v, d in terms)
    return float(student_t.ppf(0.975, df))


def _population(rng):
    """Human completeness y in [0, 1] per row, and a judge that reads y with noise and a known bias (+0.15 on
    average, worse on low rows): the judge's own mean misses the truth by a wide margin."""
    y = rng.beta(2, 2, size=N)
    f = np.clip(y + 0.15 + 0.1 * (y < 0.4) + rng.normal(0, 0.08, size=N), 0, 1)
    return y, f


def test_uniform_ppi_covers_the_truth_and_is_narrower_than_humans_alone():
    rng = np.random.default_rng(SEED)
    y, f = _population(rng)
    truth = y.mean()
    assert f.mean() - truth > 0.1  # the judge alone is biased
    n = 100
    idx = np.argsort(rng.random((REPS, N)), axis=1)[:, :n]  # 1,000 uniform samples of n rows
    mean, low, high = ppi.ppi_mean(f, y[idx], f[idx])
    hmean, hlow, hhigh = ppi.human_mean(y[idx])
    coverage = np.mean((low <= truth) & (truth <= high))
    assert coverage >= 0.94, coverage
    assert np.mean(high - low) < np.mean(hhigh - hlow)
    # the judge's own interval would never cover
    assert abs(mean.mean() - truth) < 0.005


def test_weighted_ppi_covers_the_truth_under_unequal_probabilities():
    rng = np.random.default_rng(SEED + 1)
    y, f = _population(rng)
    truth = y.mean()
    pi = np.where(f > 0.6, 0.03, 0.09)  # unequal, known inclusion probabilities
    xi = rng.random((REPS, N)) < pi  # Bernoulli sampling, one repetition per row
    mean, low, high = ppi.ppi_mean_weighted(f, np.broadcast_to(y, xi.shape), xi, pi)
    hmean, hlow, hhigh = ppi.human_mean_weighted(np.broadcast_to(y, xi.shape), xi, pi)
    assert np.mean((low <= truth) & (truth <= high)) >= 0.94
    assert np.mean((hlow <= truth) & (truth <= hhigh)) >= 0.93
    assert np.mean(high - low) < np.mean(hhigh - hlow)


def test_weighted_equals_uniform_when_probabilities_are_equal():
    rng = np.random.default_rng(3)
    y, f = _population(rng)
    idx = rng.choice(N, 200, replace=False)
    xi = np.zeros(N, bool)
    xi[idx] = True
    m1, _, _ = ppi.ppi_mean(f, y[idx], f[idx])
    m2, _, _ = ppi.ppi_mean_weighted(f, y, xi, 200 / N)
    assert m1 == pytest.approx(m2)


def test_completeness_estimates_says_how_it_weighted():
    judge = {f"q{i}": 1.0 for i in range(10)}
    human = {"q0": 0.0, "q1": 1.0, "q2": 0.5}
    out = ppi.completeness_estimates(judge, human)
    assert out["judge"]["mean"] == 1.0
    assert out["human"]["mean"] == pytest.approx(0.5)
    assert out["ppi"]["mean"] == pytest.approx(0.5)  # judge 1.0 minus its mean error 0.5
    assert out["weighting"].startswith("uniform (labels carry no")
    out = ppi.completeness_estimates(judge, human, {"q0": 0.3, "q1": 0.3, "q2": 0.3})
    assert out["weighting"].startswith("inverse-probability")
    assert ppi.completeness_estimates(judge, {"q0": 1.0})["ppi"] is None


def _rows():
    rows = []
    for i in range(60):
        rows.append(ls.Row(f"a{i}", "r1", "answered", 0.9 if i % 2 else 0.95, disagreement=False))
    for i in range(30):
        rows.append(ls.Row(f"b{i}", "r1", "answered", (i % 3) / 2, disagreement=True))
    for i in range(10):
        rows.append(ls.Row(f"c{i}", "r1", "refused", 0.0, disagreement=False))
    return rows


def test_sampling_gives_the_budget_to_the_uncertain_stratum_and_records_probabilities():
    picks = ls.sample_rows(_rows(), 20, seed=1)
    assert len(picks) == 20 and len({p.question for p in picks}) == 20
    by = {}
    for p in picks:
        by.setdefault(p.stratum, []).append(p)
    assert set(by) == {"answered|jurors agree", "answered|jurors split", "refused|jurors agree"}
    # Neyman: the split stratum (sd 0.41 over 30 rows) outweighs the agreeing one (sd 0.025 floored to 0.1, 60 rows)
    assert len(by["answered|jurors split"]) > len(by["answered|jurors agree"]) >= 1
    for h, ps in by.items():
        size = sum(1 for r in _rows() if r.stratum == h)
        assert all(p.probability == pytest.approx(len(ps) / size) for p in ps)
    assert ls.sample_rows(_rows(), 20, seed=1) == picks  # deterministic per seed
    assert ls.sample_rows(_rows(), 20, seed=2) != picks


def test_sampling_a_budget_above_the_rows_takes_every_row_once():
    picks = ls.sample_rows(_rows(), 500)
    assert len(picks) == 100 and all(p.probability == 1 for p in picks)
    single = [ls.Row(f"q{i}", "r", "answered", i / 10) for i in range(10)]
    assert {p.stratum for p in ls.sample_rows(single, 3)} == {"answered"}
    with pytest.raises(ValueError):
        ls.sample_rows(single, 0)


def test_paired_difference_by_hand():
    """Five questions, three labelled in both arms, no probabilities: the paired estimator computed by hand."""
    f_arm = {"q1": 1.0, "q2": 0.5, "q3": 1.0, "q4": 0.0, "q5": 1.0}
    f_base = {"q1": 0.5, "q2": 0.5, "q3": 0.0, "q4": 0.0, "q5": 0.5}
    y_arm = {"q1": 1.0, "q2": 0.0, "q3": 1.0}
    y_base = {"q1": 1.0, "q2": 0.0, "q3": 0.0, "q4": 0.0}  # q4 labelled in one arm only: not in the rectifier
    d = [0.5, 0.0, 1.0, 0.0, 0.5]  # f_arm - f_base
    r = [0.5 - 0.0, 0.0 - 0.0, 1.0 - 1.0]  # d_j - (y_arm,j - y_base,j) on q1..q3
    mean_d, mean_r = sum(d) / 5, sum(r) / 3
    var_d = sum((x - mean_d) ** 2 for x in d) / 4
    var_r = sum((x - mean_r) ** 2 for x in r) / 2
    theta = mean_d - mean_r  # 0.4 - 1/6
    se = (var_d / 5 + var_r / 3) ** 0.5
    q = t95((var_d / 5, 4), (var_r / 3, 2))
    got = ppi_difference.paired_difference(f_arm, f_base, y_arm, y_base)
    assert got["estimator"] == "paired" and (got["rows"], got["labelled"]) == (5, 3)
    assert got["ppi"]["mean"] == pytest.approx(theta) and theta == pytest.approx(0.4 - 1 / 6)
    assert got["ppi"]["low"] == pytest.approx(theta - q * se, abs=1e-9)
    assert got["ppi"]["high"] == pytest.approx(theta + q * se, abs=1e-9)
    assert (got["ppi"]["se"], got["ppi"]["df"]) == (pytest.approx(se), pytest.approx(
        (var_d / 5 + var_r / 3) ** 2 / ((var_d / 5) ** 2 / 4 + (var_r / 3) ** 2 / 2)))
    assert got["judge"]["mean"] == pytest.approx(0.4)
    assert got["human"]["mean"] == pytest.approx(1 / 3)  # y differences 0, 0, 1
    assert got["variance"]["judge"] == pytest.approx(var_d) and got["variance"]["rectifier"] == pytest.approx(var_r)
    assert got["weighting"].startswith("uniform")
    # the projected width at the current n is the interval's own width
    w = ppi_difference.projected_width(var_d / 5, var_r, 3, fixed_df=got["variance"]["fixed_df"])
    assert float(w) == pytest.approx(got["ppi"]["high"] - got["ppi"]["low"])
    # fewer than two questions labelled in both arms: no paired estimate
    assert ppi_difference.paired_difference(f_arm, f_base, {"q1": 1.0}, y_base) is None


def test_paired_difference_weighted_by_hand():
    """Two separate samples with recorded probabilities: pi = p_arm * p_base, psi_i = d_i + xi_i (Yd_i - d_i) / pi_i."""
    f_arm = {"q1": 1.0, "q2": 0.5, "q3": 1.0, "q4": 0.0}
    f_base = {"q1": 0.5, "q2": 0.5, "q3": 0.0, "q4": 0.0}
    y_arm = {"q1": 1.0, "q2": 0.0}
    y_base = {"q1": 1.0, "q2": 0.0, "q3": 0.0}
    p_arm = {"q1": 0.5, "q2": 0.5}
    p_base = {"q1": 0.5, "q2": 1.0, "q3": 0.5}
    d = [0.5, 0.0, 1.0, 0.0]
    psi = [0.5 + (0.0 - 0.5) / 0.25, 0.0 + (0.0 - 0.0) / 0.5, 1.0, 0.0]
    m = sum(psi) / 4
    se = (sum((x - m) ** 2 for x in psi) / 3 / 4) ** 0.5
    got = ppi_difference.paired_difference(f_arm, f_base, y_arm, y_base, p_arm, p_base)
    assert got["weighting"].endswith("p_arm * p_base")
    assert got["ppi"]["mean"] == pytest.approx(m) and m == pytest.approx(sum(d) / 4 - 0.5)
    assert got["ppi"]["high"] - got["ppi"]["low"] == pytest.approx(2 * 1.959964 * se, abs=1e-6)
    # one shared sample (the same questions, one probability each): pi = p
    shared = ppi_difference.paired_difference(f_arm, f_base, y_arm, {"q1": 1.0, "q2": 0.0}, p_arm, p_arm)
    assert shared["weighting"].startswith("inverse-probability weighted: one shared sample")
    assert shared["ppi"]["mean"] == pytest.approx((0.5 - 0.5 / 0.5 + 0.0 + 1.0 + 0.0) / 4)


def test_labels_needed_and_the_width_it_implies():
    # the smallest n with t sqrt(0.0001 + 0.09 / n) < 0.1, t of the degrees of freedom of the rectifier's term
    # (n - 1; the whole-set term's are infinite here), found by counting up
    want = next(n for n in range(2, 10 ** 5) if t95((0.0001, float("inf")), (0.09 / n, n - 1))
                * (0.0001 + 0.09 / n) ** 0.5 < 0.1)
    z = 1.959963984540054
    assert want > int(0.09 / ((0.1 / z) ** 2 - 0.0001)) + 1  # the normal quantile would promise fewer
    n = ppi_difference.labels_needed(0.1, 0.0001, 0.09)
    assert n == want
    assert ppi_difference.projected_width(0.0001, 0.09, n) / 2 < 0.1 <= ppi_difference.projected_width(0.0001, 0.09, n - 1) / 2
    assert ppi_difference.labels_needed(-0.1, 0.0001, 0.09) == want  # the sign does not matter
    # the judge's whole-set term alone spans 0: no number of labels decides
    assert ppi_difference.labels_needed(0.01, 0.0001, 0.09) is None and ppi_difference.labels_needed(0.0, 0.0, 0.09) is None
    assert ppi_difference.decision({"low": 0.01, "high": 0.2}) == "accept"
    assert ppi_difference.decision({"low": -0.3, "high": -0.01}) == "reject"
    assert ppi_difference.decision({"low": -0.1, "high": 0.2}) == "undecided" and ppi_difference.decision(None) == "undecided"


def test_paired_difference_covers_the_true_difference_and_is_narrower_than_independent():
    """Two arms on 400 shared questions, a judge that over-rates arm a by 0.1 more than arm b (its own difference
    misses the truth); 1,000 samples of 60 questions labelled in both arms: the paired interval covers the true
    difference in at least 94% of them, and is narrower than the independent one on the same labels."""
    rng = np.random.default_rng(SEED + 2)
    big_n, n = 400, 60
    hard = rng.beta(2, 2, size=big_n)  # what the two arms share: how hard the question is
    yb = np.clip(hard + rng.normal(0, 0.1, big_n), 0, 1)
    ya = np.clip(hard + 0.05 + rng.normal(0, 0.1, big_n), 0, 1)
    fa = np.clip(ya + 0.2 + rng.normal(0, 0.05, big_n), 0, 1)
    fb = np.clip(yb + 0.1 + rng.normal(0, 0.05, big_n), 0, 1)
    truth = float((ya - yb).mean())
    qs = [f"q{i}" for i in range(big_n)]
    f_a, f_b = dict(zip(qs, fa)), dict(zip(qs, fb))
    assert abs(float((fa - fb).mean()) - truth) > 0.05  # the judge alone is biased
    idx = np.argsort(rng.random((1000, big_n)), axis=1)[:, :n]  # 1,000 samples, vectorised
    d, yd = fa - fb, ya - yb
    mean, low, high = ppi.ppi_mean(d, yd[idx], d[idx])  # the paired estimator's uniform form
    _, la, ha = ppi.ppi_mean(fa, ya[idx], fa[idx])
    _, lb, hb = ppi.ppi_mean(fb, yb[idx], fb[idx])
    independent = 2 * np.hypot((ha - la) / 2, (hb - lb) / 2)  # each arm's half-width added in quadrature
    assert np.mean((low <= truth) & (truth <= high)) >= 0.94
    assert np.all(high - low < independent)
    _, se_a, df_a = ppi.ppi_uniform(fa, ya[idx], fa[idx])
    _, se_b, df_b = ppi.ppi_uniform(fb, yb[idx], fb[idx])
    for k in range(5):  # paired_difference and independent_difference are those, sample by sample
        y_a = {qs[i]: ya[i] for i in idx[k]}
        y_b = {qs[i]: yb[i] for i in idx[k]}
        got = ppi_difference.paired_difference(f_a, f_b, y_a, y_b)["ppi"]
        assert (got["mean"], got["low"], got["high"]) == pytest.approx((mean[k], low[k], high[k]))
        ind = ppi_difference.independent_difference(f_a, f_b, y_a, y_b)["ppi"]
        se = np.hypot(se_a[k], se_b[k])  # the standard errors in quadrature, the degrees of freedom by Satterthwaite
        assert ind["high"] - ind["low"] == pytest.approx(2 * t95((se_a[k] ** 2, df_a[k]), (se_b[k] ** 2, df_b[k])) * se)


# --- the stratified form (Fisch et al. 2024; Cochran 1977 for the labels alone) -----------------------------------

def _two_strata():
    """Ten rows: stratum a rows 0-5 (4 labelled, p = 4/6), stratum b rows 6-9 (2 labelled, p = 2/4)."""
    f = np.array([0.8, 0.6, 1.0, 0.4, 0.7, 0.9, 0.2, 0.0, 0.5, 0.3])
    y = np.array([1.0, 0.5, 1.0, 0.0, np.nan, np.nan, 0.0, 0.5, np.nan, np.nan])
    labelled = ~np.isnan(y)
    strata = np.array(["a"] * 6 + ["b"] * 4)
    p = np.where(strata == "a", 4 / 6, 2 / 4)
    return f, y, labelled, strata, p


def test_the_stratified_estimate_by_hand():
    f, y, labelled, strata, p = _two_strata()
    theta, lo, hi = ppi.ppi_mean_stratified(f, y, labelled, strata, p)
    # W_a = 6/10, W_b = 4/10 (N_h = sum of 1/p over the labelled rows: 4 * 1.5 = 6, 2 * 2 = 4).
    r_a = np.array([1.0 - 0.8, 0.5 - 0.6, 1.0 - 1.0, 0.0 - 0.4])
    r_b = np.array([0.0 - 0.2, 0.5 - 0.0])
    expect = f.mean() + 0.6 * r_a.mean() + 0.4 * r_b.mean()
    terms = [(f.var(ddof=1) / 10, 9), (0.6 ** 2 * r_a.var(ddof=1) / 4, 3), (0.4 ** 2 * r_b.var(ddof=1) / 2, 1)]
    se = np.sqrt(sum(v for v, _ in terms))
    q = t95(*terms)  # each term with its own degrees of freedom: N - 1, then n_h - 1 per stratum
    assert theta == pytest.approx(expect, abs=1e-12)
    assert (lo, hi) == (pytest.approx(expect - q * se, abs=1e-12), pytest.approx(expect + q * se, abs=1e-12))

    h, hlo, hhi = ppi.human_mean_stratified(y, labelled, strata, p)
    y_a, y_b = np.array([1.0, 0.5, 1.0, 0.0]), np.array([0.0, 0.5])
    h_expect = 0.6 * y_a.mean() + 0.4 * y_b.mean()
    h_terms = [(0.6 ** 2 * y_a.var(ddof=1) / 4, 3), (0.4 ** 2 * y_b.var(ddof=1) / 2, 1)]
    h_se = np.sqrt(sum(v for v, _ in h_terms))
    assert h == pytest.approx(h_expect, abs=1e-12) and hhi - hlo == pytest.approx(2 * t95(*h_terms) * h_se, abs=1e-12)


def test_one_stratum_is_the_uniform_estimator():
    rng = np.random.default_rng(7)
    f = rng.uniform(size=40)
    labelled = np.zeros(40, dtype=bool)
    labelled[rng.choice(40, 12, replace=False)] = True
    y = np.where(labelled, np.clip(f + rng.normal(0, 0.2, 40), 0, 1), np.nan)
    stratified = ppi.ppi_mean_stratified(f, y, labelled, np.zeros(40), 12 / 40)
    uniform = ppi.ppi_mean(f, y[labelled], f[labelled])
    assert np.allclose(stratified, uniform, atol=1e-12)
    assert np.allclose(ppi.human_mean_stratified(y, labelled, np.zeros(40), 12 / 40), ppi.human_mean(y[labelled]),
                       atol=1e-12)


def test_a_stratum_of_one_uncertain_label_has_no_variance_and_is_refused():
    f, y, labelled, strata, p = _two_strata()
    labelled[7] = False  # stratum b keeps one labelled row, drawn with p = 1/2
    with pytest.raises(ValueError, match="one labelled row"):
        ppi.ppi_mean_stratified(f, y, labelled, strata, p)
    rows = [i for i in range(10) if labelled[i]]
    assert not ppi.stratifiable(dict(enumerate(strata)), dict(enumerate(p)), rows)
    # Labelled whole (p = 1), a stratum of one row is certain and adds no variance.
    p2 = np.where(strata == "b", 1.0, p)
    assert ppi.stratifiable(dict(enumerate(strata)), dict(enumerate(p2)), rows)
    theta, _, _ = ppi.ppi_mean_stratified(f, y, labelled, strata, p2)
    assert np.isfinite(theta)
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        ppi.ppi_mean_stratified(f, y, labelled, strata, np.where(strata == "a", 0.0, p))


def test_completeness_estimates_stratifies_labels_that_record_their_strata():
    """The labels of `sample-labels` carry a probability and a stratum: the arm's estimate is the stratified one
    (the same figures as ppi_mean_stratified), says so, and falls back to the Bernoulli form, saying why, when a
    stratum keeps a single uncertain label or a label carries no stratum."""
    f, y, labelled, strata, p = _two_strata()
    qs = [f"q{i}" for i in range(10)]
    judge = dict(zip(qs, f))
    human = {qs[i]: y[i] for i in range(10) if labelled[i]}
    prob = {qs[i]: p[i] for i in range(10) if labelled[i]}
    st = {qs[i]: str(strata[i]) for i in range(10) if labelled[i]}
    out = ppi.completeness_estimates(judge, human, prob, strata=st)
    assert out["weighting"].startswith("stratified by the recorded strata (2 strata")
    theta, lo, hi = ppi.ppi_mean_stratified(f, y, labelled, strata, p)
    assert (out["ppi"]["mean"], out["ppi"]["low"], out["ppi"]["high"]) == pytest.approx((theta, lo, hi))
    h, hlo, hhi = ppi.human_mean_stratified(y, labelled, strata, p)
    assert (out["human"]["mean"], out["human"]["low"], out["human"]["high"]) == pytest.approx((h, hlo, hhi))
    assert out["ppi"]["df"] is not None and out["ppi"]["se"] > 0

    no_stratum = ppi.completeness_estimates(judge, human, prob, strata={k: v for k, v in st.items() if k != "q0"})
    assert no_stratum["weighting"].endswith("(not stratified: some labels carry no stratum)")
    t, _, _ = ppi.ppi_mean_weighted(f, y, labelled, np.where(labelled, p, 1.0))
    assert no_stratum["ppi"]["mean"] == pytest.approx(t) and no_stratum["ppi"]["df"] is None
    lone = dict(human)
    del lone["q7"]  # stratum b keeps q6 alone, drawn with p = 1/2
    single = ppi.completeness_estimates(judge, lone, prob, strata=st)
    assert "a stratum has a single labelled row" in single["weighting"]


def test_recorded_sampling_reads_probability_and_stratum_per_label():
    records = [{"kind": "request", "arm": "a", "question": "q1", "probability": 0.5, "stratum": "answered"},
               {"kind": "request", "arm": "a", "question": "q2", "probability": True, "stratum": ""},
               {"kind": "request", "arm": "b", "question": "q1", "probability": 1.5, "stratum": "refused"},
               {"kind": "pair", "arm": "a", "question": "q3", "probability": 0.2, "stratum": "x"}, "not a record"]
    got = ppi.recorded_sampling(records)
    assert got.probability == {("a", "q1"): 0.5}  # a bool and a probability above 1 are no probabilities
    assert got.stratum == {("a", "q1"): "answered", ("b", "q1"): "refused"}
    assert got.of("a") == ({"q1": 0.5}, {"q1": "answered"})


def test_paired_difference_stratified_on_one_shared_sample():
    """The same questions labelled in both arms, each with one probability and one stratum: the paired estimate
    is the stratified mean of the per-question differences."""
    f, y, labelled, strata, p = _two_strata()
    qs = [f"q{i}" for i in range(10)]
    f_base = dict(zip(qs, np.zeros(10)))
    y_base = {qs[i]: 0.0 for i in range(10) if labelled[i]}
    got = ppi_difference.paired_difference(dict(zip(qs, f)), f_base, {qs[i]: y[i] for i in range(10) if labelled[i]}, y_base,
                                {q: p[i] for i, q in enumerate(qs)}, {q: p[i] for i, q in enumerate(qs)},
                                s_arm=dict(zip(qs, strata)), s_base=dict(zip(qs, strata)))
    assert got["weighting"].startswith("stratified by the recorded strata: one shared sample (2 strata")
    assert (got["ppi"]["mean"], got["ppi"]["low"], got["ppi"]["high"]) == pytest.approx(
        ppi.ppi_mean_stratified(f, y, labelled, strata, p))
    # strata that differ between the arms: not one design, the Bernoulli form
    other = ppi_difference.paired_difference(dict(zip(qs, f)), f_base, {qs[i]: y[i] for i in range(10) if labelled[i]}, y_base,
                                  {q: p[i] for i, q in enumerate(qs)}, {q: p[i] for i, q in enumerate(qs)},
                                  s_arm=dict(zip(qs, strata)), s_base={q: "x" for q in qs})
    assert other["weighting"].startswith("inverse-probability weighted: one shared sample")


def test_allocation_gives_each_stratum_two_rows_where_the_budget_allows():
    """Two labels per stratum is the least its variance can be read from: a budget that can give every stratum two
    does, whatever Neyman's shares say; one that cannot gives each one, then Neyman."""
    sizes, sds = {"a": 100, "b": 10, "c": 10}, {"a": 0.5, "b": 0.0, "c": 0.0}
    assert ls.allocate(sizes, sds, 6) == {"a": 2, "b": 2, "c": 2}
    five = ls.allocate(sizes, sds, 5)
    assert sum(five.values()) == 5 and min(five.values()) == 1 and five["a"] == 3  # Neyman: a outweighs b and c
    assert ls.allocate({"a": 100, "b": 1}, {"a": 0.5, "b": 0.5}, 4) == {"a": 3, "b": 1}  # never above a size
    picks = ls.sample_rows(_rows(), 6, seed=3)
    assert all(sum(p.stratum == h for p in picks) == 2 for h in {p.stratum for p in picks})
