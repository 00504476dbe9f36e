"""Prediction-powered completeness (core/ppi.py) and which rows to label (core/label_sampling.py): coverage of the
95% interval on a judge biased by a known amount, 1,000 repeated samples, vectorised."""
import numpy as np
import pytest

from rag_ttc_assets.core import label_sampling as ls
from rag_ttc_assets.core import ppi

REPS, N, SEED = 1000, 2000, 44


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
