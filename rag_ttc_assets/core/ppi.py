"""Prediction-powered completeness: the judge's completeness over every row, corrected by a few human labels.

Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, "Prediction-powered inference", Science 382 (2023),
doi:10.1126/science.adi6000. For a mean, with judge scores f_i on all N rows and human values Y_j on n labelled
rows drawn uniformly at random (the paper's Algorithm 1 / Example "mean estimation"):

    theta_PP = mean_{i<=N} f_i  -  mean_{j<=n} (f_j - Y_j)                       (the rectifier is the second mean)
    se^2     = var_N(f) / N  +  var_n(f - Y) / n
    interval = theta_PP +- z_{1-alpha/2} * se

When the labelled rows were chosen with known, unequal inclusion probabilities pi_i (stratified sampling,
`core/label_sampling.py`), the estimate is the inverse-probability-weighted form of the same estimator (Zrnic and
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

Pure functions, numpy only; vectorised over repeated samples where the caller passes 2-D arrays (one row per
repetition), so a coverage study of 1,000 samples runs in well under a second.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm


@dataclass(frozen=True)
class Estimate:
    mean: float
    low: float
    high: float
    n: int  # rows the estimate read labels of (human, PPI) or scores of (judge)

    @property
    def width(self) -> float:
        return self.high - self.low

    def as_dict(self) -> dict:
        return {"mean": self.mean, "low": self.low, "high": self.high, "n": self.n}


def _z(alpha: float) -> float:
    return float(norm.ppf(1 - alpha / 2))


def ppi_mean(f_all, y_labelled, f_labelled, alpha: float = 0.05):
    """The paper's uniform-sampling estimator. Arrays may be 1-D (one sample) or 2-D (one repetition per row,
    labelled arrays of shape (reps, n), f_all of shape (reps, N) or (N,)). Returns (mean, low, high) arrays."""
    f_all = np.asarray(f_all, dtype=float)
    y = np.asarray(y_labelled, dtype=float)
    fl = np.asarray(f_labelled, dtype=float)
    n, big_n = y.shape[-1], f_all.shape[-1]
    if n < 2:
        raise ValueError("prediction-powered inference needs at least two labelled rows")
    rect = fl - y
    theta = f_all.mean(axis=-1) - rect.mean(axis=-1)
    se = np.sqrt(f_all.var(axis=-1, ddof=1) / big_n + rect.var(axis=-1, ddof=1) / n)
    z = _z(alpha)
    return theta, theta - z * se, theta + z * se


def ppi_mean_weighted(f, y, labelled, probability, alpha: float = 0.05):
    """The inverse-probability-weighted estimator over all N rows. `f` judge scores, `y` human values (read only
    where `labelled`), `labelled` booleans, `probability` each row's inclusion probability (> 0). Arrays of shape
    (N,) or (reps, N). Returns (mean, low, high)."""
    f = np.asarray(f, dtype=float)
    xi = np.asarray(labelled, dtype=bool)
    pi = np.broadcast_to(np.asarray(probability, dtype=float), xi.shape)
    if np.any(pi <= 0) or np.any(pi > 1):
        raise ValueError("every inclusion probability must lie in (0, 1]")
    y = np.where(xi, np.nan_to_num(np.asarray(y, dtype=float)), 0.0)
    psi = f + np.where(xi, (y - f) / pi, 0.0)
    big_n = psi.shape[-1]
    theta = psi.mean(axis=-1)
    se = np.sqrt(psi.var(axis=-1, ddof=1) / big_n)
    z = _z(alpha)
    return theta, theta - z * se, theta + z * se


def _stratified_mean(v, xi, strata, pi):
    """(mean, variance, single) of the stratified mean of v over the labelled rows: per stratum the mean of the
    labelled rows' v weighted by W_h, the variance sum_h W_h^2 s_h^2 / n_h; `single` marks repetitions with a
    stratum of one labelled row whose probability is below 1 (no s_h to read)."""
    keys = np.unique(strata[xi])
    shape = xi.shape[:-1]
    sizes, means, variances = [], [], []
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
    w = np.array(sizes) / np.sum(sizes, axis=0)
    return (w * np.array(means)).sum(axis=0), (w ** 2 * np.array(variances)).sum(axis=0), single


def _strata_arrays(labelled, strata, probability):
    xi = np.asarray(labelled, dtype=bool)
    pi = np.broadcast_to(np.asarray(probability, dtype=float), xi.shape)
    st = np.broadcast_to(np.asarray(strata), xi.shape)
    if np.any(pi[xi] <= 0) or np.any(pi[xi] > 1):
        raise ValueError("every inclusion probability must lie in (0, 1]")
    return xi, st, pi


def ppi_mean_stratified(f, y, labelled, strata, probability, alpha: float = 0.05):
    """The stratified prediction-powered mean (module docstring; Fisch et al. 2024) for labels drawn as a fixed
    number per stratum. `f` judge scores of all N rows, `y` human values (read only where `labelled`), `strata`
    each row's stratum, `probability` each labelled row's inclusion probability. Arrays of shape (N,) or
    (reps, N). Returns (mean, low, high); ValueError when a stratum has one labelled row of probability below 1."""
    f = np.asarray(f, dtype=float)
    xi, st, pi = _strata_arrays(labelled, strata, probability)
    r = np.where(xi, np.nan_to_num(np.asarray(y, dtype=float)), 0.0) - np.broadcast_to(f, xi.shape)
    rect, rect_var, single = _stratified_mean(r, xi, st, pi)
    if np.any(single):
        raise ValueError("a stratum has one labelled row: its variance is unknown (use ppi_mean_weighted)")
    theta = f.mean(axis=-1) + rect
    se = np.sqrt(f.var(axis=-1, ddof=1) / f.shape[-1] + rect_var)
    z = _z(alpha)
    return theta, theta - z * se, theta + z * se


def human_mean_stratified(y, labelled, strata, probability, alpha: float = 0.05):
    """Cochran's stratified mean of the labels alone: sum_h W_h mean_h(Y), se^2 = sum_h W_h^2 s_h^2(Y) / n_h."""
    xi, st, pi = _strata_arrays(labelled, strata, probability)
    v = np.where(xi, np.nan_to_num(np.asarray(y, dtype=float)), 0.0)
    theta, var, single = _stratified_mean(v, xi, st, pi)
    if np.any(single):
        raise ValueError("a stratum has one labelled row: its variance is unknown (use human_mean_weighted)")
    se = np.sqrt(var)
    z = _z(alpha)
    return theta, theta - z * se, theta + z * se


def stratifiable(strata: dict, probability: dict, rows) -> bool:
    """Whether the stratified form applies to these labelled rows: each carries a stratum and a probability, and
    no stratum has a single labelled row drawn with probability below 1."""
    if not rows or any(strata.get(r) is None or probability.get(r) is None for r in rows):
        return False
    by: dict = {}
    for r in rows:
        by.setdefault(strata[r], []).append(probability[r])
    return all(len(ps) > 1 or ps[0] >= 1 for ps in by.values())


def human_mean(y_labelled, alpha: float = 0.05):
    """The classical interval from the labels alone (uniform sampling)."""
    y = np.asarray(y_labelled, dtype=float)
    n = y.shape[-1]
    theta = y.mean(axis=-1)
    se = np.sqrt(y.var(axis=-1, ddof=1) / n)
    z = _z(alpha)
    return theta, theta - z * se, theta + z * se


def human_mean_weighted(y, labelled, probability, alpha: float = 0.05):
    """The Horvitz-Thompson interval from the labels alone, weighted by the inclusion probabilities."""
    xi = np.asarray(labelled, dtype=bool)
    pi = np.broadcast_to(np.asarray(probability, dtype=float), xi.shape)
    v = np.where(xi, np.nan_to_num(np.asarray(y, dtype=float)) / pi, 0.0)
    big_n = v.shape[-1]
    theta = v.mean(axis=-1)
    se = np.sqrt(v.var(axis=-1, ddof=1) / big_n)
    z = _z(alpha)
    return theta, theta - z * se, theta + z * se


def completeness_estimates(judge: dict, human: dict, probability: dict | None = None,
                           alpha: float = 0.05) -> dict:
    """One arm: `judge` maps every row to the judge's completeness (0..1), `human` the labelled rows to the human
    completeness, `probability` the labelled rows' inclusion probabilities (None or missing rows: uniform, n/N, and
    the result says so). Returns the judge's mean over all rows, the human mean over the labelled rows, and the
    prediction-powered estimate with its interval; `ppi` is None below two labelled rows."""
    rows = sorted(judge)
    labelled_rows = [r for r in rows if r in human]
    unknown = sorted(set(human) - set(judge))
    big_n, n = len(rows), len(labelled_rows)
    f = np.array([judge[r] for r in rows], dtype=float)
    out = {"rows": big_n, "labelled": n, "unjudged_labels": unknown,
           "judge": {"mean": float(f.mean()) if big_n else None, "n": big_n},
           "human": None, "ppi": None, "weighting": None}
    if n == 0:
        return out
    y_lab = np.array([human[r] for r in labelled_rows], dtype=float)
    probs = probability or {}
    given = [r for r in labelled_rows if probs.get(r) is not None]
    uniform = len(given) < n
    out["weighting"] = ("uniform (labels carry no sampling probability)" if not given else
                        "uniform (some labels carry no sampling probability)" if uniform else
                        "inverse-probability weighted by the recorded sampling probabilities")
    if n < 2:
        out["human"] = {"mean": float(y_lab.mean()), "low": None, "high": None, "n": n}
        return out
    if uniform:
        h = human_mean(y_lab, alpha)
        p = ppi_mean(f, y_lab, np.array([judge[r] for r in labelled_rows]), alpha)
    else:
        xi = np.array([r in human for r in rows])
        pi = np.array([probs.get(r, 1.0) if r in human else 1.0 for r in rows], dtype=float)
        y = np.array([human.get(r, 0.0) for r in rows], dtype=float)
        h = human_mean_weighted(y, xi, pi, alpha)
        p = ppi_mean_weighted(f, y, xi, pi, alpha)
    out["human"] = Estimate(float(h[0]), float(h[1]), float(h[2]), n).as_dict()
    out["ppi"] = Estimate(float(p[0]), float(p[1]), float(p[2]), n).as_dict()
    return out


def difference_estimate(a: dict, b: dict, alpha: float = 0.05) -> dict | None:
    """The corrected difference a - b of two arms' prediction-powered estimates (independent samples: the
    standard errors add in quadrature). None when either arm has no estimate."""
    if not a.get("ppi") or not b.get("ppi"):
        return None
    z = _z(alpha)
    se = np.hypot((a["ppi"]["high"] - a["ppi"]["low"]) / (2 * z), (b["ppi"]["high"] - b["ppi"]["low"]) / (2 * z))
    d = a["ppi"]["mean"] - b["ppi"]["mean"]
    return {"mean": float(d), "low": float(d - z * se), "high": float(d + z * se)}


def human_row_completeness(labels) -> dict[str, dict[str, float]]:
    """arm -> question -> the people's completeness of that answer: per labelled request the share of its labels
    `addressed` (several annotators: their mean), per row the mean over its labelled requests."""
    by: dict[tuple, list[bool]] = {}
    for lab in labels:
        by.setdefault((lab.arm, lab.question, lab.request), []).append(bool(lab.addressed))
    rows: dict[tuple, list[float]] = {}
    for (arm, q, _), vals in by.items():
        rows.setdefault((arm, q), []).append(sum(vals) / len(vals))
    out: dict[str, dict[str, float]] = {}
    for (arm, q), shares in rows.items():
        out.setdefault(arm, {})[q] = sum(shares) / len(shares)
    return out


def recorded_probabilities(records) -> dict[tuple[str, str], float]:
    """(arm, question) -> the sampling probability a per-request label carries (`probability`, as `rag-ttc
    sample-labels` writes it and the annotation page copies it); labels without one are left out."""
    out = {}
    for rec in records:
        if isinstance(rec, dict) and rec.get("kind") == "request":
            p = rec.get("probability")
            if isinstance(p, (int, float)) and not isinstance(p, bool) and 0 < p <= 1:
                out[(rec.get("arm"), rec.get("question"))] = float(p)
    return out


def arm_estimates(labels, judges: dict[str, dict[tuple, float | None]], probabilities: dict[tuple, float],
                  alpha: float = 0.05) -> list[dict]:
    """Per arm with per-request labels and per judge that scored the arm's rows: completeness_estimates, the
    rows the judge did not measure whole left out (counted)."""
    human = human_row_completeness(labels)
    out = []
    for arm in sorted(human):
        for name in sorted(judges):
            scored = {q: s for (a, q), s in judges[name].items() if a == arm}
            if not scored:
                continue
            measured = {q: s for q, s in scored.items() if s is not None}
            if not measured:
                continue
            est = completeness_estimates(measured, {q: v for q, v in human[arm].items() if q in measured},
                                         {q: p for (a, q), p in probabilities.items() if a == arm}, alpha)
            out.append({"arm": arm, "rater": name, "not_measured": len(scored) - len(measured), **est})
    return out


# --------------------------------------------------------------------------- two arms: the paired difference

PAIRED = "paired"
INDEPENDENT = "independent"


def _var(values) -> float:
    v = np.asarray(values, dtype=float)
    return float(v.var(ddof=1)) if v.size >= 2 else 0.0


def paired_difference(f_arm: dict, f_base: dict, y_arm: dict, y_base: dict,
                      p_arm: dict | None = None, p_base: dict | None = None, alpha: float = 0.05) -> dict | None:
    """The prediction-powered difference ARM - BASELINE when both arms answered the same questions: the paper's
    mean estimator applied to the per-question differences (Angelopoulos et al. 2023, the mean-estimation example,
    with the prediction f_i := f_arm,i - f_base,i and the label Y_i := Y_arm,i - Y_base,i):

        d_i      = f_arm,i - f_base,i                     over the N questions both arms' judge scored
        r_j      = d_j - (Y_arm,j - Y_base,j)             over the n of them labelled in both arms
        theta_PP = mean_N(d) - mean_n(r),   se^2 = var_N(d) / N + var_n(r) / n

    Pairing cancels what the two arms share (a question hard for both), so var(d) and var(r) are usually far below
    the sums the independent form (`difference_estimate`) adds. When the labels carry inclusion probabilities, the
    inverse-probability-weighted form (module docstring, Zrnic and Candes 2024) with pi_i the probability that
    question i is labelled in both arms: one shared sample (the same questions labelled in both arms, each with
    one probability) pi_i = p_i; two separate samples (`sample-labels` run per arm) pi_i = p_arm,i * p_base,i.
    The judge's own interval is mean_N(d) +- z sqrt(var_N(d)/N); the people's the mean of Y_arm - Y_base over the
    n questions (weighted likewise). None below two questions labelled in both arms.

    `variance` carries the two terms of se^2 (`judge` = var_N(d), `rectifier` = var_n(r), `human` = var_n(Y)) for
    `projected_width` and `labels_needed`."""
    rows = sorted(q for q in f_arm if q in f_base)
    both = [q for q in rows if q in y_arm and q in y_base]
    big_n, n = len(rows), len(both)
    if n < 2 or big_n < 2:
        return None
    z = _z(alpha)
    d = np.array([f_arm[q] - f_base[q] for q in rows], dtype=float)
    yd = np.array([y_arm[q] - y_base[q] for q in both], dtype=float)
    dl = np.array([f_arm[q] - f_base[q] for q in both], dtype=float)
    rect = dl - yd
    judge_se = np.sqrt(_var(d) / big_n)
    pa, pb = p_arm or {}, p_base or {}
    weighted = all(pa.get(q) is not None and pb.get(q) is not None for q in both)
    if not weighted:
        h = human_mean(yd, alpha)
        p = ppi_mean(d, yd, dl, alpha)
        weighting = ("uniform (labels carry no sampling probability)" if not any(
            pa.get(q) is not None or pb.get(q) is not None for q in both)
            else "uniform (some labels carry no sampling probability)")
    else:
        shared = ({q for q in y_arm if q in f_base} == {q for q in y_base if q in f_arm}
                  and all(pa[q] == pb[q] for q in both))
        pi = np.array([(pa.get(q, 1.0) if shared else pa.get(q, 1.0) * pb.get(q, 1.0)) if q in both else 1.0
                       for q in rows], dtype=float)
        xi = np.array([q in both for q in rows])
        y = np.array([y_arm[q] - y_base[q] if q in both else 0.0 for q in rows], dtype=float)
        h = human_mean_weighted(y, xi, pi, alpha)
        p = ppi_mean_weighted(d, y, xi, pi, alpha)
        weighting = ("inverse-probability weighted: one shared sample, pi = the recorded probability" if shared else
                     "inverse-probability weighted: two separate samples, pi = p_arm * p_base")
    return {"estimator": PAIRED, "rows": big_n, "labelled": n, "weighting": weighting,
            "judge": {"mean": float(d.mean()), "low": float(d.mean() - z * judge_se),
                      "high": float(d.mean() + z * judge_se), "n": big_n},
            "human": Estimate(float(h[0]), float(h[1]), float(h[2]), n).as_dict(),
            "ppi": Estimate(float(p[0]), float(p[1]), float(p[2]), n).as_dict(),
            "variance": {"judge": _var(d), "rectifier": _var(rect), "human": _var(yd),
                         "fixed": _var(d) / big_n}}


def independent_difference(f_arm: dict, f_base: dict, y_arm: dict, y_base: dict,
                           p_arm: dict | None = None, p_base: dict | None = None, alpha: float = 0.05) -> dict | None:
    """The difference ARM - BASELINE from each arm's own estimate (`completeness_estimates`, then
    `difference_estimate`: independent samples, the standard errors add in quadrature), for arms that do not answer
    the same questions or whose labelled questions do not overlap. `variance` projects n more labels in EACH arm:
    fixed = var(f_arm)/N_arm + var(f_base)/N_base, rectifier = var(r_arm) + var(r_base), human = var(Y_arm) +
    var(Y_base). None when either arm has fewer than two labelled rows."""
    ea = completeness_estimates(f_arm, {q: v for q, v in y_arm.items() if q in f_arm}, p_arm, alpha)
    eb = completeness_estimates(f_base, {q: v for q, v in y_base.items() if q in f_base}, p_base, alpha)
    diff = difference_estimate(ea, eb, alpha)
    if diff is None:
        return None
    z = _z(alpha)
    fa, fb = list(f_arm.values()), list(f_base.values())
    la = [q for q in y_arm if q in f_arm]
    lb = [q for q in y_base if q in f_base]
    fixed = _var(fa) / len(fa) + _var(fb) / len(fb)
    judge_mean = float(np.mean(fa) - np.mean(fb))
    hse = np.hypot((ea["human"]["high"] - ea["human"]["low"]) / (2 * z),
                   (eb["human"]["high"] - eb["human"]["low"]) / (2 * z))
    hmean = ea["human"]["mean"] - eb["human"]["mean"]
    n = min(len(la), len(lb))
    return {"estimator": INDEPENDENT, "rows": min(len(fa), len(fb)), "labelled": n,
            "weighting": f"{ea['weighting']} / {eb['weighting']}",
            "judge": {"mean": judge_mean, "low": judge_mean - z * float(np.sqrt(fixed)),
                      "high": judge_mean + z * float(np.sqrt(fixed)), "n": min(len(fa), len(fb))},
            "human": {"mean": float(hmean), "low": float(hmean - z * hse), "high": float(hmean + z * hse), "n": n},
            "ppi": {**diff, "n": n},
            "variance": {"judge": _var(fa) + _var(fb),
                         "rectifier": _var([f_arm[q] - y_arm[q] for q in la]) + _var([f_base[q] - y_base[q]
                                                                                      for q in lb]),
                         "human": _var([y_arm[q] for q in la]) + _var([y_base[q] for q in lb]),
                         "fixed": fixed}}


def projected_width(fixed_var: float, rect_var: float, n, alpha: float = 0.05):
    """The interval's width with n labelled rows, the measured variances held: 2 z sqrt(fixed_var + rect_var / n),
    where fixed_var is var_N(f) / N (the judge's whole-set term, which no label shrinks) and rect_var the
    rectifier's variance (for the people alone: fixed_var 0, rect_var the labels' variance). Vectorised over n."""
    n = np.asarray(n, dtype=float)
    return 2 * _z(alpha) * np.sqrt(fixed_var + rect_var / n)


def labels_needed(estimate: float, fixed_var: float, rect_var: float, alpha: float = 0.05) -> int | None:
    """The smallest n at which an interval of width `projected_width(n)` around `estimate` would exclude 0, i.e.
    z sqrt(fixed_var + rect_var / n) < |estimate|; None when no n does (estimate 0, or the judge's whole-set term
    alone already spans 0: z^2 fixed_var >= estimate^2). At least 2 (an interval needs two labels)."""
    z = _z(alpha)
    room = (estimate / z) ** 2 - fixed_var
    if estimate == 0 or room <= 0:
        return None
    if rect_var <= 0:
        return 2
    n = max(2, int(np.floor(rect_var / room)) + 1)
    while z * np.sqrt(fixed_var + rect_var / n) >= abs(estimate):  # floating point at the boundary
        n += 1
    while n > 2 and z * np.sqrt(fixed_var + rect_var / (n - 1)) < abs(estimate):
        n -= 1
    return n


def decision(interval: dict | None) -> str:
    """accept (the interval lies above 0), reject (below 0), or undecided (it spans 0, or there is none)."""
    if not interval or interval.get("low") is None:
        return "undecided"
    if interval["low"] > 0:
        return "accept"
    if interval["high"] < 0:
        return "reject"
    return "undecided"
