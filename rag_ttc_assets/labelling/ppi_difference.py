"""Two arms from the same labels: the prediction-powered difference ARM - BASELINE (paired per question where the
arms answer the same questions, else from each arm's own estimate), how its interval's width falls as labels are
added, and the decision it supports (`rag-ttc accept`, `compare --labels`, the diagnosis). The single-arm estimators,
their formulas and sources are in labelling/ppi.py."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rag_ttc_assets.labelling.ppi import (STRATIFIED, TSD, completeness_estimates, difference_estimate, difference_of,
                                          estimate_of, human_bernoulli, human_stratified, human_uniform, ppi_bernoulli,
                                          ppi_stratified, ppi_uniform, quantile, satterthwaite, stratifiable)
from rag_ttc_assets.labelling.ppi_records import ArmDifference, DifferenceRecord, EstimateRecord, JudgeInterval

PAIRED = "paired"
INDEPENDENT = "independent"


def _var(values: ArrayLike) -> float:
    v = np.asarray(values, dtype=float)
    return float(v.var(ddof=1)) if v.size >= 2 else 0.0


def paired_difference(f_arm: Mapping[str, float], f_base: Mapping[str, float], y_arm: Mapping[str, float],
                      y_base: Mapping[str, float], p_arm: Mapping[str, float] | None = None,
                      p_base: Mapping[str, float] | None = None, alpha: float = 0.05,
                      s_arm: Mapping[str, str] | None = None, s_base: Mapping[str, str] | None = None
                      ) -> ArmDifference | None:
    """The prediction-powered difference ARM - BASELINE when both arms answered the same questions: the paper's
    mean estimator applied to the per-question differences (Angelopoulos et al. 2023, the mean-estimation example,
    with the prediction f_i := f_arm,i - f_base,i and the label Y_i := Y_arm,i - Y_base,i):

        d_i      = f_arm,i - f_base,i                     over the N questions both arms' judge scored
        r_j      = d_j - (Y_arm,j - Y_base,j)             over the n of them labelled in both arms
        theta_PP = mean_N(d) - mean_n(r),   se^2 = var_N(d) / N + var_n(r) / n

    Pairing cancels what the two arms share (a question hard for both), so var(d) and var(r) are usually far below
    the sums the independent form (`difference_estimate`) adds. When the labels carry inclusion probabilities: one
    shared sample (the same questions labelled in both arms, each with one probability) pi_i = p_i, stratified when
    every labelled question carries the same stratum in both arms (`s_arm`, `s_base`; the stratified form of the
    module docstring over d), else inverse-probability weighted (Zrnic and Candes 2024); two separate samples
    (`sample-labels` run per arm) pi_i = p_arm,i * p_base,i, inverse-probability weighted. The judge's own interval
    is mean_N(d) +- z sqrt(var_N(d)/N); the people's the mean of Y_arm - Y_base over the n questions (weighted
    likewise). None below two questions labelled in both arms.

    `variance` carries the terms of se^2 (`judge` = var_N(d), `rectifier` = var_n(r), `human` = var_n(Y), `fixed` =
    var_N(d)/N with its degrees of freedom `fixed_df` = N - 1) for `projected_width` and `labels_needed`."""
    rows = sorted(q for q in f_arm if q in f_base)
    both = [q for q in rows if q in y_arm and q in y_base]
    big_n, n = len(rows), len(both)
    if n < 2 or big_n < 2:
        return None
    z = float(quantile(alpha))
    d = np.array([f_arm[q] - f_base[q] for q in rows], dtype=float)
    yd = np.array([y_arm[q] - y_base[q] for q in both], dtype=float)
    dl = np.array([f_arm[q] - f_base[q] for q in both], dtype=float)
    rect = dl - yd
    judge_se = np.sqrt(_var(d) / big_n)
    pa: Mapping[str, float] = p_arm or {}
    pb: Mapping[str, float] = p_base or {}
    sa: Mapping[str, str] = s_arm or {}
    sb: Mapping[str, str] = s_base or {}
    h: TSD
    p: TSD
    weighted = all(pa.get(q) is not None and pb.get(q) is not None for q in both)
    if not weighted:
        h, p = human_uniform(yd), ppi_uniform(d, yd, dl)
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
        strata = {q: s for q in both if (s := sa.get(q)) is not None and s == sb.get(q)}
        if shared and stratifiable(strata, {q: pa[q] for q in both}, both):
            st = np.array([str(strata.get(q, "")) for q in rows])
            h, p = human_stratified(y, xi, st, pi), ppi_stratified(d, y, xi, st, pi)
            k = len(set(strata.values()))
            weighting = (f"{STRATIFIED}: one shared sample ({k} strat{'um' if k == 1 else 'a'}, pi = the recorded "
                         "probability; Fisch et al. 2024)")
        else:
            h, p = human_bernoulli(y, xi, pi), ppi_bernoulli(d, y, xi, pi)
            weighting = ("inverse-probability weighted: one shared sample, pi = the recorded probability" if shared
                         else "inverse-probability weighted: two separate samples, pi = p_arm * p_base")
    return {"estimator": PAIRED, "rows": big_n, "labelled": n, "weighting": weighting,
            "judge": {"mean": float(d.mean()), "low": float(d.mean() - z * judge_se),
                      "high": float(d.mean() + z * judge_se), "n": big_n},
            "human": estimate_of(h, n, alpha), "ppi": estimate_of(p, n, alpha),
            "variance": {"judge": _var(d), "rectifier": _var(rect), "human": _var(yd),
                         "fixed": _var(d) / big_n, "fixed_df": big_n - 1}}


def independent_difference(f_arm: Mapping[str, float], f_base: Mapping[str, float], y_arm: Mapping[str, float],
                           y_base: Mapping[str, float], p_arm: Mapping[str, float] | None = None,
                           p_base: Mapping[str, float] | None = None, alpha: float = 0.05,
                           s_arm: Mapping[str, str] | None = None, s_base: Mapping[str, str] | None = None
                           ) -> ArmDifference | None:
    """The difference ARM - BASELINE from each arm's own estimate (`completeness_estimates`, then
    `difference_estimate`: independent samples, the standard errors add in quadrature), for arms that do not answer
    the same questions or whose labelled questions do not overlap. `variance` projects n more labels in EACH arm:
    fixed = var(f_arm)/N_arm + var(f_base)/N_base, rectifier = var(r_arm) + var(r_base), human = var(Y_arm) +
    var(Y_base). None when either arm has fewer than two labelled rows."""
    ea = completeness_estimates(f_arm, {q: v for q, v in y_arm.items() if q in f_arm}, p_arm, alpha, s_arm)
    eb = completeness_estimates(f_base, {q: v for q, v in y_base.items() if q in f_base}, p_base, alpha, s_base)
    diff = difference_estimate(ea, eb, alpha)
    if diff is None:
        return None
    z = float(quantile(alpha))
    fa, fb = list(f_arm.values()), list(f_base.values())
    la = [q for q in y_arm if q in f_arm]
    lb = [q for q in y_base if q in f_base]
    fixed = _var(fa) / len(fa) + _var(fb) / len(fb)
    judge_mean = float(np.mean(fa) - np.mean(fb))
    n = min(len(la), len(lb))
    ha, hb = ea["human"], eb["human"]
    if ha is None or hb is None:  # both arms have two labelled rows (diff is not None): never taken
        return None
    human = difference_of(ha, hb, alpha)
    return {"estimator": INDEPENDENT, "rows": min(len(fa), len(fb)), "labelled": n,
            "weighting": f"{ea['weighting']} / {eb['weighting']}",
            "judge": {"mean": judge_mean, "low": judge_mean - z * float(np.sqrt(fixed)),
                      "high": judge_mean + z * float(np.sqrt(fixed)), "n": min(len(fa), len(fb))},
            "human": {**human, "n": n},
            "ppi": {**diff, "n": n},
            "variance": {"judge": _var(fa) + _var(fb),
                         "rectifier": _var([f_arm[q] - y_arm[q] for q in la]) + _var([f_base[q] - y_base[q]
                                                                                      for q in lb]),
                         "human": _var([y_arm[q] for q in la]) + _var([y_base[q] for q in lb]),
                         "fixed": fixed, "fixed_df": float(satterthwaite([(_var(fa) / len(fa), len(fa) - 1),
                                                                          (_var(fb) / len(fb), len(fb) - 1)]))}}


def projected_width(fixed_var: float, rect_var: float, n: ArrayLike, alpha: float = 0.05,
                    fixed_df: float = np.inf) -> float | NDArray[np.float64]:
    """The interval's width with n labelled rows, the measured variances held: 2 q sqrt(fixed_var + rect_var / n),
    where fixed_var is var_N(f) / N (the judge's whole-set term, which no label shrinks, estimated with `fixed_df`
    degrees of freedom) and rect_var the rectifier's variance (for the people alone: fixed_var 0, rect_var the
    labels' variance), q Student's t with the Satterthwaite degrees of freedom of the two terms (n - 1 for the
    rectifier), as the estimators draw it. Vectorised over n."""
    ns = np.asarray(n, dtype=float)
    b = rect_var / ns
    q = quantile(alpha, satterthwaite([(np.full_like(ns, fixed_var), fixed_df), (b, ns - 1)]))
    return 2 * q * np.sqrt(fixed_var + b)


def labels_needed(estimate: float, fixed_var: float, rect_var: float, alpha: float = 0.05,
                  fixed_df: float = np.inf) -> int | None:
    """The smallest n at which an interval of width `projected_width(n)` around `estimate` would exclude 0, i.e.
    q(n) sqrt(fixed_var + rect_var / n) < |estimate|; None when no n does (estimate 0, or the judge's whole-set term
    alone already spans 0: q(inf)^2 fixed_var >= estimate^2, q(inf) the quantile of fixed_df). At least 2 (an
    interval needs two labels)."""
    def half(k: int) -> float:
        return float(projected_width(fixed_var, rect_var, k, alpha, fixed_df)) / 2

    q_inf = float(quantile(alpha, fixed_df if fixed_var > 0 else None))
    room = (estimate / q_inf) ** 2 - fixed_var
    if estimate == 0 or room <= 0:
        return None
    if rect_var <= 0:
        return 2
    hi = max(2, int(np.floor(rect_var / room)) + 1)  # where the limiting quantile would decide
    while half(hi) >= abs(estimate):  # t at finite n needs more: double until one decides
        hi *= 2
        if hi > 10 ** 12:
            return None
    if half(2) < abs(estimate):
        return 2
    lo = 2  # half(lo) >= |estimate| > half(hi): bisect (half falls as n grows)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if half(mid) >= abs(estimate) else (lo, mid)
    return hi


def decision(interval: EstimateRecord | DifferenceRecord | JudgeInterval | None) -> str:
    """accept (the interval lies above 0), reject (below 0), or undecided (it spans 0, or there is none)."""
    if not interval:
        return "undecided"
    low, high = interval.get("low"), interval.get("high")
    if low is None:
        return "undecided"
    if low > 0:
        return "accept"
    if high is not None and high < 0:
        return "reject"
    return "undecided"
