"""Prediction-powered completeness: the judge's completeness over every row, corrected by a few human labels.

Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, "Prediction-powered inference", Science 382 (2023),
doi:10.1126/science.adi6000. For a mean, with judge scores f_i on all N rows and human values Y_j on n labelled
rows drawn uniformly at random (the paper's Algorithm 1 / Example "mean estimation"):

    theta_PP = mean_{i<=N} f_i  -  mean_{j<=n} (f_j - Y_j)                       (the rectifier is the second mean)
    se^2     = var_N(f) / N  +  var_n(f - Y) / n
    interval = theta_PP +- z_{1-alpha/2} * se

When the labelled rows were chosen with known, unequal inclusion probabilities pi_i (stratified sampling,
`labelling/label_sampling.py`), the estimate is the inverse-probability-weighted form of the same estimator (Zrnic and
Candes, "Active statistical inference", ICML 2024, eq. (2) and Theorem 1, for Bernoulli sampling xi_i ~ Bern(pi_i)):

    psi_i    = f_i + (xi_i / pi_i) * (Y_i - f_i)          (for every row; Y_i is only read where xi_i = 1)
    theta_PP = mean_{i<=N} psi_i,   se^2 = var_N(psi) / N

which equals the uniform form when pi_i = n/N. The human-only estimate (the classical interval) is the mean of the
labels with se^2 = var_n(Y) / n (inverse-probability weighted when the probabilities differ: the Horvitz-Thompson
mean of xi_i Y_i / pi_i, se^2 = var_N(xi Y / pi) / N).

When the labels were drawn as a fixed number n_h per stratum h (`rag-ttc sample-labels`, Neyman allocation), the
Bernoulli variance above does not match the draw (it counts the random number of labels per stratum that a fixed
allocation does not have, and is conservative). The stratified estimator (Fisch, Maynez, Hofer, Dhingra, Globerson
and Cohen, "Stratified Prediction-Powered Inference for Hybrid Language Model Evaluation", NeurIPS 2024, the
stratified PPI mean with one weight per stratum; for the labels alone Cochran, Sampling Techniques, 3rd ed., 1977,
the stratified mean, eqs. 5.1 and 5.6 without the finite-population correction):

    N_h      = sum over the stratum's labelled rows of 1 / p_i   (= the stratum's size when p_i = n_h / N_h)
    W_h      = N_h / sum_h N_h
    theta_PP = mean_N(f) + sum_h W_h * mean_{labelled in h}(Y - f)
    se^2     = var_N(f) / N + sum_h W_h^2 * s_h^2(Y - f) / n_h
    human:     sum_h W_h * mean_h(Y),   se^2 = sum_h W_h^2 * s_h^2(Y) / n_h

which equals the uniform form with one stratum. A stratum with one labelled row has no s_h: when its row was
certain to be labelled (p = 1, the stratum is labelled whole) it adds no variance; otherwise the stratified form
is not used and the estimate falls back to the Bernoulli (inverse-probability-weighted) form, and says so.

The interval's quantile (every interval drawn from labels). With 20 labels the normal quantile under-covers: the
rectifier's variance is itself estimated from n rows. Each interval above therefore takes Student's t with the
Welch-Satterthwaite effective degrees of freedom of its variance terms (Satterthwaite, "An approximate distribution
of estimates of variance components", Biometrics Bulletin 2 (1946); for a stratified mean Cochran 1977, eq. 5.16):
for se^2 = sum_k v_k, each term v_k estimated with d_k degrees of freedom,

    df = (sum_k v_k)^2 / sum_k (v_k^2 / d_k)          interval = theta +- t_{1-alpha/2, df} * se

with the terms var_N(f)/N (d = N - 1) and var_n(r)/n (d = n - 1) in the uniform form, W_h^2 s_h^2 / n_h
(d = n_h - 1) per stratum in the stratified one, and n - 1 for the labels alone. As n grows df grows and t meets the
normal quantile, which the paper's intervals use. The Bernoulli (inverse-probability-weighted) form keeps the normal
quantile (its variance is one term over all N rows). The judge's own interval over every row keeps the normal
quantile too: no label enters it.

Pure functions, numpy and scipy only; vectorised over repeated samples where the caller passes 2-D arrays (one row per
repetition), so a coverage study of 1,000 samples runs in well under a second.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray
# scipy ships no type stubs (scipy-stubs is not a dependency): its functions are untyped here.
from scipy.stats import norm  # type: ignore[import-untyped]
from scipy.stats import t as student_t

from rag_ttc_assets.labelling.estimate_records import Estimate
from rag_ttc_assets.labelling.ppi_records import (ArmEstimate, CompletenessEstimates, DifferenceRecord, EstimateRecord,
                                                  JudgeMean)

if TYPE_CHECKING:
    from rag_ttc_assets.labelling.human_labels import RequestLabel

# One value per repetition: a float for one sample (1-D input), an array for repeated samples (2-D input).
Stat = Union[float, NDArray[np.float64]]
# An estimator's (theta, se, df): df None where the normal quantile applies.
TSD = tuple[Stat, Stat, Union[Stat, None]]
# An interval's (mean, low, high).
Interval = tuple[Stat, Stat, Stat]


def _z(alpha: float) -> float:
    return float(norm.ppf(1 - alpha / 2))


def quantile(alpha: float, df: ArrayLike | None = None) -> Stat:
    """The two-sided 1 - alpha quantile: Student's t with `df` degrees of freedom, the normal one where df is None,
    infinite or not positive. Vectorised over df."""
    if df is None:
        return _z(alpha)
    d = np.asarray(df, dtype=float)
    ok = np.isfinite(d) & (d > 0)
    q: NDArray[np.float64] = np.where(ok, student_t.ppf(1 - alpha / 2, np.where(ok, d, 1.0)), _z(alpha))
    return float(q) if q.ndim == 0 else q


def satterthwaite(terms: Iterable[tuple[ArrayLike, ArrayLike]]) -> Stat:
    """The Welch-Satterthwaite effective degrees of freedom of a variance sum_k v_k whose terms were estimated with
    d_k degrees of freedom: (sum v_k)^2 / sum (v_k^2 / d_k); infinite where no term carries a finite d_k (or every
    term is 0). `terms` is a list of (v_k, d_k), arrays broadcast."""
    terms = list(terms)
    num = sum(np.asarray(v, dtype=float) for v, _ in terms) ** 2
    den = sum(np.where(np.isfinite(np.asarray(d, dtype=float)) & (np.asarray(d, dtype=float) > 0),
                       np.asarray(v, dtype=float) ** 2 / np.maximum(np.asarray(d, dtype=float), 1e-300), 0.0)
              for v, d in terms)
    with np.errstate(divide="ignore", invalid="ignore"):
        df: NDArray[np.float64] = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.inf)
    return float(df) if np.ndim(df) == 0 else df


def _finite(df: float | None) -> float | None:
    return float(df) if df is not None and np.isfinite(df) else None


def _interval(theta: Stat, se: Stat, df: Stat | None, alpha: float) -> Interval:
    q = quantile(alpha, df)
    return theta, theta - q * se, theta + q * se


def ppi_uniform(f_all: ArrayLike, y_labelled: ArrayLike, f_labelled: ArrayLike) -> TSD:
    """(theta, se, df) of the paper's uniform-sampling estimator; df the Satterthwaite degrees of freedom of its
    two terms var_N(f)/N (N - 1) and var_n(f - Y)/n (n - 1)."""
    fa = np.asarray(f_all, dtype=float)
    y = np.asarray(y_labelled, dtype=float)
    fl = np.asarray(f_labelled, dtype=float)
    n, big_n = y.shape[-1], fa.shape[-1]
    if n < 2:
        raise ValueError("prediction-powered inference needs at least two labelled rows")
    rect = fl - y
    theta = fa.mean(axis=-1) - rect.mean(axis=-1)
    a, b = fa.var(axis=-1, ddof=1) / big_n, rect.var(axis=-1, ddof=1) / n
    return theta, np.sqrt(a + b), satterthwaite([(a, big_n - 1), (b, n - 1)])


def ppi_mean(f_all: ArrayLike, y_labelled: ArrayLike, f_labelled: ArrayLike, alpha: float = 0.05) -> Interval:
    """The paper's uniform-sampling estimator. Arrays may be 1-D (one sample) or 2-D (one repetition per row,
    labelled arrays of shape (reps, n), f_all of shape (reps, N) or (N,)). Returns (mean, low, high) arrays, the
    interval Student's t with the Satterthwaite degrees of freedom (module docstring)."""
    return _interval(*ppi_uniform(f_all, y_labelled, f_labelled), alpha)


def ppi_bernoulli(f: ArrayLike, y: ArrayLike, labelled: ArrayLike, probability: ArrayLike) -> TSD:
    """(theta, se, None) of the inverse-probability-weighted estimator over all N rows (normal quantile)."""
    fa = np.asarray(f, dtype=float)
    xi = np.asarray(labelled, dtype=bool)
    pi = np.broadcast_to(np.asarray(probability, dtype=float), xi.shape)
    if np.any(pi <= 0) or np.any(pi > 1):
        raise ValueError("every inclusion probability must lie in (0, 1]")
    ya = np.where(xi, np.nan_to_num(np.asarray(y, dtype=float)), 0.0)
    psi = fa + np.where(xi, (ya - fa) / pi, 0.0)
    big_n = psi.shape[-1]
    return psi.mean(axis=-1), np.sqrt(psi.var(axis=-1, ddof=1) / big_n), None


def ppi_mean_weighted(f: ArrayLike, y: ArrayLike, labelled: ArrayLike, probability: ArrayLike,
                      alpha: float = 0.05) -> Interval:
    """The inverse-probability-weighted estimator over all N rows. `f` judge scores, `y` human values (read only
    where `labelled`), `labelled` booleans, `probability` each row's inclusion probability (> 0). Arrays of shape
    (N,) or (reps, N). Returns (mean, low, high)."""
    return _interval(*ppi_bernoulli(f, y, labelled, probability), alpha)


def _stratified_mean(v: NDArray[np.float64], xi: NDArray[np.bool_], strata: NDArray[np.generic],
                     pi: NDArray[np.float64]) -> tuple[Stat, Stat, NDArray[np.bool_], NDArray[np.float64]]:
    """(mean, variance, single, df_den) of the stratified mean of v over the labelled rows: per stratum the mean of
    the labelled rows' v weighted by W_h, the variance sum_h W_h^2 s_h^2 / n_h; `single` marks repetitions with a
    stratum of one labelled row whose probability is below 1 (no s_h to read); `df_den` the Satterthwaite
    denominator sum_h (W_h^2 s_h^2 / n_h)^2 / (n_h - 1)."""
    keys = np.unique(strata[xi])
    shape = xi.shape[:-1]
    sizes: list[NDArray[np.float64]] = []
    means: list[NDArray[np.float64]] = []
    variances: list[NDArray[np.float64]] = []
    dfs: list[NDArray[np.int_]] = []
    single = np.zeros(shape, dtype=bool)
    for h in keys:
        m = xi & (strata == h)
        n_h = m.sum(axis=-1)
        big = np.where(m, 1.0 / pi, 0.0).sum(axis=-1)
        mean_h = np.where(m, v, 0.0).sum(axis=-1) / np.maximum(n_h, 1)
        ss = np.where(m, (v - mean_h[..., None]) ** 2, 0.0).sum(axis=-1)
        s2 = np.where(n_h > 1, ss / np.maximum(n_h - 1, 1), 0.0)
        single |= (n_h == 1) & (big > 1 + 1e-9)
        sizes.append(big)
        means.append(mean_h)
        variances.append(s2 / np.maximum(n_h, 1))
        dfs.append(np.maximum(n_h - 1, 0))
    w = np.array(sizes) / np.sum(sizes, axis=0)
    terms = w ** 2 * np.array(variances)
    d = np.array(dfs, dtype=float)
    df_den = np.where(d > 0, terms ** 2 / np.maximum(d, 1), 0.0).sum(axis=0)
    return (w * np.array(means)).sum(axis=0), terms.sum(axis=0), single, df_den


def _strata_arrays(labelled: ArrayLike, strata: ArrayLike, probability: ArrayLike
                   ) -> tuple[NDArray[np.bool_], NDArray[np.generic], NDArray[np.float64]]:
    xi = np.asarray(labelled, dtype=bool)
    pi = np.broadcast_to(np.asarray(probability, dtype=float), xi.shape)
    st = np.broadcast_to(np.asarray(strata), xi.shape)
    if np.any(pi[xi] <= 0) or np.any(pi[xi] > 1):
        raise ValueError("every inclusion probability must lie in (0, 1]")
    return xi, st, pi


def _df(num_var: Stat, df_den: NDArray[np.float64]) -> Stat:
    with np.errstate(divide="ignore", invalid="ignore"):
        df: NDArray[np.float64] = np.where(df_den > 0, num_var ** 2 / np.where(df_den > 0, df_den, 1.0), np.inf)
    return float(df) if np.ndim(df) == 0 else df


def ppi_stratified(f: ArrayLike, y: ArrayLike, labelled: ArrayLike, strata: ArrayLike, probability: ArrayLike) -> TSD:
    """(theta, se, df) of the stratified prediction-powered mean (module docstring); ValueError when a stratum has
    one labelled row of probability below 1."""
    fa = np.asarray(f, dtype=float)
    xi, st, pi = _strata_arrays(labelled, strata, probability)
    r = np.where(xi, np.nan_to_num(np.asarray(y, dtype=float)), 0.0) - np.broadcast_to(fa, xi.shape)
    rect, rect_var, single, df_den = _stratified_mean(r, xi, st, pi)
    if np.any(single):
        raise ValueError("a stratum has one labelled row: its variance is unknown (use ppi_mean_weighted)")
    big_n = fa.shape[-1]
    a = fa.var(axis=-1, ddof=1) / big_n
    var = a + rect_var
    return fa.mean(axis=-1) + rect, np.sqrt(var), _df(var, a ** 2 / (big_n - 1) + df_den)


def ppi_mean_stratified(f: ArrayLike, y: ArrayLike, labelled: ArrayLike, strata: ArrayLike, probability: ArrayLike,
                        alpha: float = 0.05) -> Interval:
    """The stratified prediction-powered mean (module docstring; Fisch et al. 2024) for labels drawn as a fixed
    number per stratum. `f` judge scores of all N rows, `y` human values (read only where `labelled`), `strata`
    each row's stratum, `probability` each labelled row's inclusion probability. Arrays of shape (N,) or
    (reps, N). Returns (mean, low, high); ValueError when a stratum has one labelled row of probability below 1."""
    return _interval(*ppi_stratified(f, y, labelled, strata, probability), alpha)


def human_stratified(y: ArrayLike, labelled: ArrayLike, strata: ArrayLike, probability: ArrayLike) -> TSD:
    """(theta, se, df) of Cochran's stratified mean of the labels alone."""
    xi, st, pi = _strata_arrays(labelled, strata, probability)
    v = np.where(xi, np.nan_to_num(np.asarray(y, dtype=float)), 0.0)
    theta, var, single, df_den = _stratified_mean(v, xi, st, pi)
    if np.any(single):
        raise ValueError("a stratum has one labelled row: its variance is unknown (use human_mean_weighted)")
    return theta, np.sqrt(var), _df(var, df_den)


def human_mean_stratified(y: ArrayLike, labelled: ArrayLike, strata: ArrayLike, probability: ArrayLike,
                          alpha: float = 0.05) -> Interval:
    """Cochran's stratified mean of the labels alone: sum_h W_h mean_h(Y), se^2 = sum_h W_h^2 s_h^2(Y) / n_h."""
    return _interval(*human_stratified(y, labelled, strata, probability), alpha)


def stratifiable(strata: Mapping[str, str | None], probability: Mapping[str, float | None], rows: list[str]) -> bool:
    """Whether the stratified form applies to these labelled rows: each carries a stratum and a probability, and
    no stratum has a single labelled row drawn with probability below 1."""
    if not rows or any(strata.get(r) is None or probability.get(r) is None for r in rows):
        return False
    by: dict[str | None, list[float | None]] = {}
    for r in rows:
        by.setdefault(strata[r], []).append(probability[r])
    return all(len(ps) > 1 or (p := ps[0]) is not None and p >= 1 for ps in by.values())


def human_uniform(y_labelled: ArrayLike) -> TSD:
    """(theta, se, df = n - 1) of the labels' mean (uniform sampling)."""
    y = np.asarray(y_labelled, dtype=float)
    n = y.shape[-1]
    return y.mean(axis=-1), np.sqrt(y.var(axis=-1, ddof=1) / n), float(n - 1)


def human_mean(y_labelled: ArrayLike, alpha: float = 0.05) -> Interval:
    """The classical interval from the labels alone (uniform sampling), Student's t with n - 1 degrees of freedom."""
    return _interval(*human_uniform(y_labelled), alpha)


def human_bernoulli(y: ArrayLike, labelled: ArrayLike, probability: ArrayLike) -> TSD:
    """(theta, se, None) of the Horvitz-Thompson mean of the labels (normal quantile)."""
    xi = np.asarray(labelled, dtype=bool)
    pi = np.broadcast_to(np.asarray(probability, dtype=float), xi.shape)
    v = np.where(xi, np.nan_to_num(np.asarray(y, dtype=float)) / pi, 0.0)
    big_n = v.shape[-1]
    return v.mean(axis=-1), np.sqrt(v.var(axis=-1, ddof=1) / big_n), None


def human_mean_weighted(y: ArrayLike, labelled: ArrayLike, probability: ArrayLike, alpha: float = 0.05) -> Interval:
    """The Horvitz-Thompson interval from the labels alone, weighted by the inclusion probabilities."""
    return _interval(*human_bernoulli(y, labelled, probability), alpha)


def estimate_of(tsd: TSD, n: int, alpha: float) -> EstimateRecord:
    """The estimate (theta, se, df) of n labelled rows (one sample: scalars) as a record: mean, interval, n, se, df
    (None: normal)."""
    theta, se, df = float(tsd[0]), float(tsd[1]), None if tsd[2] is None else float(tsd[2])
    q = float(quantile(alpha, df))
    return {"mean": theta, "low": theta - q * se, "high": theta + q * se, "n": n, "se": se, "df": _finite(df)}


STRATIFIED = "stratified by the recorded strata"


def _weighting(labelled_rows: list[str], probs: Mapping[str, float], strata: Mapping[str, str]) -> str:
    given = [r for r in labelled_rows if probs.get(r) is not None]
    if not given:
        return "uniform (labels carry no sampling probability)"
    if len(given) < len(labelled_rows):
        return "uniform (some labels carry no sampling probability)"
    if stratifiable(strata, probs, labelled_rows):
        k = len({strata[r] for r in labelled_rows})
        return (f"{STRATIFIED} ({k} strat{'um' if k == 1 else 'a'}, each weighted by its recorded sampling "
                "probabilities; Fisch et al. 2024)")
    why = ("some labels carry no stratum" if any(strata.get(r) is None for r in labelled_rows) else
           "a stratum has a single labelled row drawn with probability below 1")
    return f"inverse-probability weighted by the recorded sampling probabilities (not stratified: {why})"


def completeness_estimates(judge: Mapping[str, float], human: Mapping[str, float],
                           probability: Mapping[str, float] | None = None, alpha: float = 0.05,
                           strata: Mapping[str, str] | None = None) -> CompletenessEstimates:
    """One arm: `judge` maps every row to the judge's completeness (0..1), `human` the labelled rows to the human
    completeness, `probability` the labelled rows' inclusion probabilities and `strata` their strata (as
    `rag-ttc sample-labels` records them). Every labelled row with a probability and a stratum, no stratum of one
    uncertain row: the stratified form; probabilities without strata: the inverse-probability-weighted form; None
    or missing probabilities: uniform, n/N. `weighting` says which. Returns the judge's mean over all rows, the
    human mean over the labelled rows, and the prediction-powered estimate with its interval (each with `se` and
    `df`); `ppi` is None below two labelled rows."""
    rows = sorted(judge)
    labelled_rows = [r for r in rows if r in human]
    unknown = sorted(set(human) - set(judge))
    big_n, n = len(rows), len(labelled_rows)
    f = np.array([judge[r] for r in rows], dtype=float)
    judge_mean: JudgeMean = {"mean": float(f.mean()) if big_n else None, "n": big_n}

    def estimates(human: EstimateRecord | None = None, ppi: EstimateRecord | None = None,
                  weighting: str | None = None) -> CompletenessEstimates:
        return {"rows": big_n, "labelled": n, "unjudged_labels": unknown, "judge": judge_mean, "human": human,
                "ppi": ppi, "weighting": weighting}

    if n == 0:
        return estimates()
    y_lab = np.array([human[r] for r in labelled_rows], dtype=float)
    probs: Mapping[str, float] = probability or {}
    st: Mapping[str, str] = strata or {}
    weighting = _weighting(labelled_rows, probs, st)
    if n < 2:
        return estimates({"mean": float(y_lab.mean()), "low": None, "high": None, "n": n, "se": None, "df": None},
                         None, weighting)
    if weighting.startswith("uniform"):
        h = human_uniform(y_lab)
        p = ppi_uniform(f, y_lab, np.array([judge[r] for r in labelled_rows]))
    else:
        xi = np.array([r in human for r in rows])
        pi = np.array([probs.get(r, 1.0) if r in human else 1.0 for r in rows], dtype=float)
        y = np.array([human.get(r, 0.0) for r in rows], dtype=float)
        if weighting.startswith(STRATIFIED):
            s = np.array([str(st.get(r, "")) for r in rows])
            h, p = human_stratified(y, xi, s, pi), ppi_stratified(f, y, xi, s, pi)
        else:
            h, p = human_bernoulli(y, xi, pi), ppi_bernoulli(f, y, xi, pi)
    return estimates(estimate_of(h, n, alpha), estimate_of(p, n, alpha), weighting)


def difference_estimate(a: CompletenessEstimates, b: CompletenessEstimates,
                        alpha: float = 0.05) -> DifferenceRecord | None:
    """The corrected difference a - b of two arms' prediction-powered estimates (independent samples: the
    standard errors add in quadrature, the degrees of freedom by Satterthwaite). None when either arm has no
    estimate."""
    pa, pb = a.get("ppi"), b.get("ppi")
    if not pa or not pb:
        return None
    return difference_of(pa, pb, alpha)


def difference_of(ea: EstimateRecord, eb: EstimateRecord, alpha: float) -> DifferenceRecord:
    """a - b of two independent estimates (estimate_of records): se in quadrature, df by Satterthwaite. ValueError
    when either has no standard error (a single labelled row)."""
    a, b = Estimate.model_validate(ea), Estimate.model_validate(eb)
    if a.se is None or b.se is None:
        raise ValueError("an estimate of one labelled row has no standard error: no difference to draw")
    va, vb = a.se ** 2, b.se ** 2
    df = satterthwaite([(va, np.inf if a.df is None else a.df), (vb, np.inf if b.df is None else b.df)])
    se = float(np.sqrt(va + vb))
    d = a.mean - b.mean
    q = float(quantile(alpha, df))
    return {"mean": float(d), "low": float(d - q * se), "high": float(d + q * se), "se": se,
            "df": _finite(float(df))}


def human_row_completeness(labels: Iterable[RequestLabel]) -> dict[str, dict[str, float]]:
    """arm -> question -> the people's completeness of that answer: per labelled request the share of its labels
    `addressed` (several annotators: their mean), per row the mean over its labelled requests."""
    by: dict[tuple[str, str, str], list[bool]] = {}
    for lab in labels:
        by.setdefault((lab.arm, lab.question, lab.request), []).append(bool(lab.addressed))
    rows: dict[tuple[str, str], list[float]] = {}
    for (arm, q, _), vals in by.items():
        rows.setdefault((arm, q), []).append(sum(vals) / len(vals))
    out: dict[str, dict[str, float]] = {}
    for (arm, q), shares in rows.items():
        out.setdefault(arm, {})[q] = sum(shares) / len(shares)
    return out


@dataclass(frozen=True)
class Sampling:
    """How the labelled rows were drawn, as the labels record it: (arm, question) -> the sampling probability and
    the stratum (`rag-ttc sample-labels` writes both; the annotation page copies them onto each label)."""
    probability: dict[tuple[str, str], float]
    stratum: dict[tuple[str, str], str]

    def of(self, arm: str) -> tuple[dict[str, float], dict[str, str]]:
        """question -> probability, question -> stratum, of one arm."""
        return ({q: v for (a, q), v in self.probability.items() if a == arm},
                {q: v for (a, q), v in self.stratum.items() if a == arm})


def recorded_sampling(records: Iterable[object]) -> Sampling:
    """The sampling probability and stratum each per-request label carries (labels without a valid probability
    are left out of `probability`, without a stratum out of `stratum`)."""
    prob: dict[tuple[str, str], float] = {}
    strata: dict[tuple[str, str], str] = {}
    for rec in records:
        if isinstance(rec, dict) and rec.get("kind") == "request":
            arm, question = rec.get("arm"), rec.get("question")
            if not isinstance(arm, str) or not isinstance(question, str):
                continue  # no arm's rows carry such a key: Sampling.of would never read it
            key = (arm, question)
            p = rec.get("probability")
            if isinstance(p, (int, float)) and not isinstance(p, bool) and 0 < p <= 1:
                prob[key] = float(p)
            s = rec.get("stratum")
            if isinstance(s, str) and s:
                strata[key] = s
    return Sampling(prob, strata)


def arm_estimates(labels: Iterable[RequestLabel], judges: Mapping[str, Mapping[tuple[str, str], float | None]],
                  sampling: Sampling | Mapping[tuple[str, str], float], alpha: float = 0.05) -> list[ArmEstimate]:
    """Per arm with per-request labels and per judge that scored the arm's rows: completeness_estimates, the
    rows the judge did not measure whole left out (counted). `sampling` the labels' recorded_sampling (or a bare
    (arm, question) -> probability map: no strata)."""
    if not isinstance(sampling, Sampling):
        sampling = Sampling(dict(sampling), {})
    human = human_row_completeness(labels)
    out: list[ArmEstimate] = []
    for arm in sorted(human):
        probs, strata = sampling.of(arm)
        for name in sorted(judges):
            scored = {q: s for (a, q), s in judges[name].items() if a == arm}
            if not scored:
                continue
            measured = {q: s for q, s in scored.items() if s is not None}
            if not measured:
                continue
            est = completeness_estimates(measured, {q: v for q, v in human[arm].items() if q in measured},
                                         probs, alpha, strata)
            out.append({"arm": arm, "rater": name, "not_measured": len(scored) - len(measured), **est})
    return out
