"""labelling/ppi.py's uniform estimator against the maintained implementation, `ppi_python` (import `ppi_py`, in the
`test` extra; Angelopoulos et al.'s own package): on seeded synthetic sets the point estimates agree to 1e-9, and the
intervals agree to 1e-9 once the one difference of convention is accounted for. ppi_py estimates each variance with
1/n (numpy's default, ddof=0), labelling/ppi.py with 1/(n-1) (ddof=1): so core's squared half-width is ppi_py's imputed
part times N/(N-1) plus its rectifier part times n/(n-1). The two parts are read from ppi_py itself: its interval with
the labels equal to the judge's scores (no rectifier) is the imputed part alone; its classical interval of f - Y is the
rectifier part. The second difference: ppi_py draws every interval with the normal quantile z, labelling/ppi.py with
Student's t of the Welch-Satterthwaite degrees of freedom of those two parts (N - 1 and n - 1; module docstring of
labelling/ppi.py): core's half-width is t * se where ppi_py's is z * se."""

import numpy as np
import pytest
from scipy.stats import norm
from scipy.stats import t as student_t

from rag_ttc_assets.labelling.ppi import human_mean, ppi_mean

ppi_py = pytest.importorskip("ppi_py", reason="ppi_python is in the test extra: pip install -c constraints.txt -e '.[test]'")

SETS = [(0, 2000, 20), (1, 500, 50), (2, 3000, 100), (3, 40, 7)]


def _set(seed, big_n, n):
    rng = np.random.default_rng(seed)
    y_all = rng.binomial(1, rng.beta(2, 2, big_n))
    f_all = np.clip(y_all + 0.15 + rng.normal(0, 0.2, big_n), 0, 1)
    idx = rng.choice(big_n, n, replace=False)
    return f_all, y_all[idx].astype(float), f_all[idx]


def _half(interval):
    lo, hi = (float(np.ravel(v)[0]) for v in interval)
    return (hi - lo) / 2, (hi + lo) / 2


@pytest.mark.parametrize("seed,big_n,n", SETS)
def test_uniform_estimator_matches_ppi_py(seed, big_n, n):
    f_all, y, f_lab = _set(seed, big_n, n)
    mean, low, high = (float(v) for v in ppi_mean(f_all, y, f_lab))
    lib_half, lib_mid = _half(ppi_py.ppi_mean_ci(y, f_lab, f_all, alpha=0.05, lam=1))
    assert mean == pytest.approx(float(np.ravel(ppi_py.ppi_mean_pointestimate(y, f_lab, f_all, lam=1))[0]),
                                 abs=1e-9)
    assert lib_mid == pytest.approx(mean, abs=1e-9)
    imputed, _ = _half(ppi_py.ppi_mean_ci(f_lab, f_lab, f_all, alpha=0.05, lam=1))
    rectifier, _ = _half(ppi_py.classical_mean_ci(f_lab - y, alpha=0.05))
    assert lib_half ** 2 == pytest.approx(imputed ** 2 + rectifier ** 2, abs=1e-9)
    z = norm.ppf(0.975)
    a, b = (imputed / z) ** 2 * big_n / (big_n - 1), (rectifier / z) ** 2 * n / (n - 1)  # core's two terms of se^2
    df = (a + b) ** 2 / (a ** 2 / (big_n - 1) + b ** 2 / (n - 1))
    expected = student_t.ppf(0.975, df) * np.sqrt(a + b)
    assert (high - low) / 2 == pytest.approx(expected, abs=1e-9)
    assert (high - low) / 2 > lib_half  # core's 1/(n-1) is the wider, by a factor near sqrt(n/(n-1))


@pytest.mark.parametrize("seed,big_n,n", SETS)
def test_human_only_interval_matches_classical_mean_ci(seed, big_n, n):
    _, y, _ = _set(seed, big_n, n)
    mean, low, high = (float(v) for v in human_mean(y))
    lib_half, lib_mid = _half(ppi_py.classical_mean_ci(y, alpha=0.05))
    assert mean == pytest.approx(lib_mid, abs=1e-9)
    t_over_z = student_t.ppf(0.975, n - 1) / norm.ppf(0.975)
    assert (high - low) / 2 == pytest.approx(lib_half * np.sqrt(n / (n - 1)) * t_over_z, abs=1e-9)
