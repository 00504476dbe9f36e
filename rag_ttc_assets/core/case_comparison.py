"""Compare two arms on the same evaluation case by case, not only by the mean.

A flat mean hides a few catastrophic cases: 198 small gains of +0.25 (+49.5) and 47 losses
(32 x -0.50 = -16, 15 x -2.20 = -33; -49.0 in all) move the mean of 300 cases by 0.5/300, about
two thousandths (second seed note, "report the cases, not only the mean").  So we report:

- paired per-case deltas, delta_i = b_i - a_i, over the cases defined in both arms;
- gains (delta > eps), losses (delta < -eps) and ties, counted and summed, overall and by |delta|
  size bucket (``buckets``), so the rows show how the mean is made;
- the catastrophic cases, delta <= -threshold (``catastrophic``);
- a 95% CI of the mean delta and a paired significance test (``compare_metric``):

  * CI: paired bootstrap percentile interval (Efron and Tibshirani, "An Introduction to the
    Bootstrap", 1993, ch. 13): n_boot times resample the n cases with replacement, take the mean
    delta; the interval is the 2.5th and 97.5th percentile of those means (numpy's default
    linear interpolation, Hyndman-Fan type 7).
  * continuous: paired randomization (sign-flip) test, two-sided, statistic T = |sum delta_i|.
    Under H0 (the arms are exchangeable within a case) each delta's sign is a fair coin.
    Exact when 2**n <= n_perm: all 2**n sign patterns are enumerated and
    p = #{patterns with T* >= T} / 2**n (the identity pattern is among them).  Otherwise Monte
    Carlo with the +1 correction, p = (#{T* >= T} + 1) / (n_perm + 1) (Phipson and Smyth,
    "Permutation P-values Should Never Be Zero", SAGMB 2010).
  * binary (0/1): exact McNemar test (McNemar 1947; the exact form is a binomial test on the
    discordant pairs), b01 = #(a=0, b=1), b10 = #(a=1, b=0),
    p = min(1, 2 * BinomCDF(min(b01, b10); b01 + b10, 1/2)), p = 1 when b01 + b10 = 0.
    The CDF is summed in integers (math.comb) and divided once, so p is exact to the last bit.

Each metric says over how many cases it was paired, of how many (the cases of either arm), and why the others
were dropped: undefined (absent or None) in a only, in b only, or in both (``undefined_a``, ``undefined_b``,
``undefined_both``; they add to ``undefined``).

A report tests several metrics, and a sweep several pairs: each p-value is reported raw and adjusted over the
family (``compare_arms``: the metrics of one report; ``adjust_reports``: every pair and metric of a sweep) by
Holm's step-down or Benjamini-Hochberg (core.multiple_testing), and ``significant`` is read on the adjusted value.

What is compared (each metric's per-case value, kind and direction) is core.compare_metrics'; the guards
against comparing across label versions or instruments, and which parameters changed, core.compare_guards'.

Pure and deterministic: the bootstrap and the permutations draw from numpy Generators seeded
from SeedSequence(seed).spawn(2), so the CI and the p-value depend on seed alone and neither
stream shifts when the other's size changes.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar, cast

from rag_ttc_assets.core import multiple_testing
from rag_ttc_assets.core.compare_records import (Bucket, Catastrophic, CatastrophicCase, ComparisonReport,
                                                 MetricComparison, NotMeasured, PAdjustment, PairMetric, PairReport)

if TYPE_CHECKING:  # numpy is imported where it is used: importing the code location does not load it
    import numpy as np

Kind = Literal["continuous", "binary"]
CaseId = str

DEFAULT_EDGES: tuple[float, ...] = (0.0, 0.1, 0.5, 1.0)

# Resample / sign matrices are drawn in row blocks of about this many cells, so memory stays
# bounded for large evaluations; the block size depends on n alone, so results stay deterministic.
_BLOCK_CELLS = 1 << 20
# T* and T are sums of the same |delta_i| in different orders; rounding can split a true tie by
# about n * 1.1e-16 * sum|delta|.  This relative slack counts such ties as ties (T* >= T).
_REL_TIE = 1e-9


# -- pairing -----------------------------------------------------------------------------------

def _check_value(arm: str, case_id: str, v: float | None) -> None:
    if v is not None and not math.isfinite(v):
        # NaN would silently poison every sum; an undefined value must be None, explicitly.
        raise ValueError(f"arm {arm}: case {case_id!r}: value is {v!r}; use None for an undefined value")


def paired(a: Mapping[CaseId, float | None], b: Mapping[CaseId, float | None]) -> list[tuple[CaseId, float, float]]:
    """(case_id, a, b) for the cases present in both arms with non-None values, sorted by case id.

    n = len(result); count_undefined(a, b) is how many cases were dropped.
    """
    for arm, values in (("a", a), ("b", b)):
        for case_id, v in values.items():
            _check_value(arm, case_id, v)
    # cast: the condition has just seen a[c] and b[c] not None (mypy does not narrow a Mapping's lookups)
    return [(c, float(cast(float, a[c])), float(cast(float, b[c]))) for c in sorted(a.keys() & b.keys())
            if a[c] is not None and b[c] is not None]


def count_undefined(a: Mapping[CaseId, float | None], b: Mapping[CaseId, float | None]) -> int:
    """Cases of either arm that paired() drops: absent from one arm, or None in either.

    A case missing from an arm is undefined there, the same as None: neither can be compared.
    """
    return sum(dropped(a, b))


class Dropped(NamedTuple):
    """The cases paired() drops, by where they are undefined (MetricComparison's fields of the same names)."""
    undefined_a: int  # in a only
    undefined_b: int  # in b only
    undefined_both: int  # in both


def dropped(a: Mapping[CaseId, float | None], b: Mapping[CaseId, float | None]) -> Dropped:
    """The cases paired() drops, by where they are undefined: {"undefined_a": in a only, "undefined_b": in b only,
    "undefined_both": in both}."""
    union = a.keys() | b.keys()
    in_a = {c for c in union if a.get(c) is None}
    in_b = {c for c in union if b.get(c) is None}
    return Dropped(undefined_a=len(in_a - in_b), undefined_b=len(in_b - in_a), undefined_both=len(in_a & in_b))


# -- significance ------------------------------------------------------------------------------

def _bootstrap_ci(deltas: np.ndarray, n_boot: int, rng: np.random.Generator) -> tuple[float, float]:
    import numpy as np
    n = len(deltas)
    rows = max(1, _BLOCK_CELLS // n)
    means = np.empty(n_boot)
    for start in range(0, n_boot, rows):
        stop = min(n_boot, start + rows)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = deltas[idx].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def sign_flip_p(deltas: Sequence[float], n_perm: int, rng: np.random.Generator) -> tuple[float, str]:
    """Two-sided paired sign-flip p-value of T = |sum delta|, and the test's name.

    Exact (all 2**n sign patterns, p = count / 2**n) when 2**n <= n_perm; else Monte Carlo with
    n_perm random patterns, p = (count + 1) / (n_perm + 1).
    """
    import numpy as np
    d = np.asarray(deltas, dtype=float)
    n = len(d)
    observed = abs(math.fsum(d))
    slack = _REL_TIE * math.fsum(np.abs(d))
    if n < n_perm.bit_length():  # exactly when 2**n <= n_perm
        sums = np.zeros(1)
        for x in d:  # doubling: the sums of every +-x pattern over the deltas seen so far
            sums = np.concatenate([sums + x, sums - x])
        count = int(np.count_nonzero(np.abs(sums) >= observed - slack))
        return count / 2 ** n, "sign_flip_exact"
    rows = max(1, _BLOCK_CELLS // n)
    count = 0
    for start in range(0, n_perm, rows):
        stop = min(n_perm, start + rows)
        signs = rng.integers(0, 2, size=(stop - start, n), dtype=np.int8) * 2 - 1
        count += int(np.count_nonzero(np.abs(signs @ d) >= observed - slack))
    return (count + 1) / (n_perm + 1), "sign_flip_monte_carlo"


def mcnemar_exact_p(b01: int, b10: int) -> float:
    """p = min(1, 2 * BinomCDF(min(b01, b10); b01 + b10, 1/2)); 1.0 with no discordant pairs."""
    m = b01 + b10
    if m == 0:
        return 1.0
    k = min(b01, b10)
    # Integer numerator over 2**m: Python's int / int is correctly rounded, however large m is.
    p: float = min(1.0, 2 * sum(math.comb(m, i) for i in range(k + 1)) / 2 ** m)  # int ** int is Any to mypy
    return p


def _check_binary(pairs: list[tuple[CaseId, float, float]]) -> None:
    for case_id, x, y in pairs:
        for arm, v in (("a", x), ("b", y)):
            if v not in (0.0, 1.0):
                raise ValueError(f"binary metric: arm {arm}: case {case_id!r}: value {v!r} is not 0 or 1")


def compare_metric(
    a: Mapping[CaseId, float | None],
    b: Mapping[CaseId, float | None],
    *,
    kind: Kind,
    seed: int = 0,
    n_boot: int = 2000,
    n_perm: int = 5000,
    tie_eps: float = 1e-12,
) -> MetricComparison:
    """Paired comparison of one metric, delta = b - a per case (see the module docstring)."""
    import numpy as np
    if kind not in ("continuous", "binary"):
        raise ValueError(f"kind must be 'continuous' or 'binary', got {kind!r}")
    if n_boot < 1 or n_perm < 1:
        raise ValueError(f"n_boot and n_perm must be >= 1, got {n_boot} and {n_perm}")
    if not tie_eps >= 0:
        raise ValueError(f"tie_eps must be >= 0, got {tie_eps}")
    pairs = paired(a, b)
    drops = dropped(a, b)
    undefined = sum(drops)
    n = len(pairs)
    if kind == "binary":
        _check_binary(pairs)
    if n == 0:
        zero = 0 if kind == "binary" else None
        return MetricComparison(n=0, mean_a=None, mean_b=None, mean_delta=None, ci_low=None, ci_high=None,
                                p_value=None, test=None, gains=0, losses=0, ties=0, sum_gains=0.0, sum_losses=0.0,
                                undefined=undefined, b01=zero, b10=zero, of=undefined, **drops._asdict())
    deltas = [y - x for _, x, y in pairs]
    gains = [d for d in deltas if d > tie_eps]
    losses = [d for d in deltas if d < -tie_eps]
    boot_ss, perm_ss = np.random.SeedSequence(seed).spawn(2)
    ci_low, ci_high = _bootstrap_ci(np.asarray(deltas), n_boot, np.random.default_rng(boot_ss))
    b01 = b10 = None
    if kind == "binary":
        b01 = sum(1 for _, x, y in pairs if x == 0.0 and y == 1.0)
        b10 = sum(1 for _, x, y in pairs if x == 1.0 and y == 0.0)
        p_value, test = mcnemar_exact_p(b01, b10), "mcnemar_exact"
    else:
        p_value, test = sign_flip_p(deltas, n_perm, np.random.default_rng(perm_ss))
    return MetricComparison(
        n=n,
        mean_a=math.fsum(x for _, x, _ in pairs) / n,
        mean_b=math.fsum(y for _, _, y in pairs) / n,
        mean_delta=math.fsum(deltas) / n,
        ci_low=ci_low,
        ci_high=ci_high,
        p_value=p_value,
        test=test,
        gains=len(gains),
        losses=len(losses),
        ties=n - len(gains) - len(losses),
        sum_gains=math.fsum(gains),
        sum_losses=math.fsum(losses),
        undefined=undefined,
        b01=b01,
        b10=b10,
        of=n + undefined,
        **drops._asdict(),
    )


# -- the cases behind the mean -----------------------------------------------------------------

def _edge(x: float) -> str:
    # The seed note's spelling: "(0, 0.1]" but "(0.5, 1.0]" and "> 1.0".
    return "0" if x == 0 else repr(float(x))


def buckets(deltas: Sequence[float], edges: Sequence[float] = DEFAULT_EDGES, *, tie_eps: float = 1e-12) -> list[Bucket]:
    """How a flat mean is made: gains and losses by |delta| bucket, plus a tie row.

    Rows run along the number line, worst first: "loss > e_last", "loss (e_{k-1}, e_k]", ...,
    "loss (e0, e1]", "tie", "gain (e0, e1]", ..., "gain > e_last".  A delta is a tie when
    |delta| <= tie_eps (as in compare_metric), else it goes to the bucket with
    e_{k-1} < |delta| <= e_k.  Empty buckets are kept, so every table has the same rows.
    The counts add to len(deltas) and the sums to sum(deltas).
    """
    edges = [float(e) for e in edges]
    if not edges or edges[0] != 0.0 or any(b <= a for a, b in zip(edges, edges[1:])):
        raise ValueError(f"edges must start at 0 and increase strictly, got {edges!r}")
    if not tie_eps >= 0:
        raise ValueError(f"tie_eps must be >= 0, got {tie_eps}")
    k = len(edges)
    by_side: dict[str, list[list[float]]] = {"gain": [[] for _ in range(k)], "loss": [[] for _ in range(k)]}
    ties: list[float] = []
    for d in deltas:
        if not math.isfinite(d):
            raise ValueError(f"delta {d!r} is not finite")
        if abs(d) <= tie_eps:
            ties.append(d)
            continue
        # bisect_left finds the first edge >= |d|, so |d| == e_k lands in (e_{k-1}, e_k].
        i = bisect_left(edges, abs(d))
        by_side["gain" if d > 0 else "loss"][max(i, 1) - 1].append(d)

    def row(side: Literal["gain", "loss"], j: int) -> Bucket:
        low, high = edges[j], (edges[j + 1] if j + 1 < k else None)
        label = f"{side} ({_edge(low)}, {_edge(high)}]" if high is not None else f"{side} > {_edge(low)}"
        vals = by_side[side][j]
        return Bucket(label=label, side=side, low=low, high=high, count=len(vals), sum=math.fsum(vals))

    return ([row("loss", j) for j in reversed(range(k))]
            + [Bucket(label="tie", side="tie", low=None, high=None, count=len(ties), sum=math.fsum(ties))]
            + [row("gain", j) for j in range(k)])


def default_catastrophic_threshold(kind: Kind) -> float:
    """1.0 for binary (a valid answer became invalid); 0.5 for a continuous metric in [0, 1]."""
    if kind == "binary":
        return 1.0
    if kind == "continuous":
        return 0.5
    raise ValueError(f"kind must be 'continuous' or 'binary', got {kind!r}")


def catastrophic(deltas_by_case: Mapping[CaseId, float], threshold: float) -> list[CaseId]:
    """Cases with delta <= -threshold, worst first: sorted by (delta, case id)."""
    if not threshold > 0:
        raise ValueError(f"threshold must be > 0, got {threshold}")
    return [c for c, d in sorted(deltas_by_case.items(), key=lambda cd: (cd[1], cd[0])) if d <= -threshold]


# -- the report --------------------------------------------------------------------------------

def compare_arms(
    a: str,
    b: str,
    values_a: Mapping[str, Mapping[CaseId, float | None]],
    values_b: Mapping[str, Mapping[CaseId, float | None]],
    kinds: Mapping[str, Kind],
    headline: str,
    *,
    threshold: float | None = None,
    edges: Sequence[float] = DEFAULT_EDGES,
    seed: int = 0,
    n_boot: int = 2000,
    n_perm: int = 5000,
    tie_eps: float = 1e-12,
    p_adjust: str = "holm",
    alpha: float = 0.05,
) -> ComparisonReport:
    """A ComparisonReport over metric -> case -> value for each arm.

    Every metric is compared with the same seed.  n, the buckets and the catastrophic cases are
    the headline metric's; threshold defaults to default_catastrophic_threshold(its kind).  The
    p-values are adjusted (p_adjust) over the report's metrics and significant is read at alpha.
    """
    names = set(kinds)
    if set(values_a) != names or set(values_b) != names:
        raise ValueError(f"metrics differ: kinds {sorted(names)}, arm a {sorted(values_a)}, arm b {sorted(values_b)}")
    if headline not in names:
        raise ValueError(f"headline metric {headline!r} is not among {sorted(names)}")
    metrics = {m: compare_metric(values_a[m], values_b[m], kind=kinds[m], seed=seed, n_boot=n_boot,
                                 n_perm=n_perm, tie_eps=tie_eps) for m in sorted(names)}
    pairs = paired(values_a[headline], values_b[headline])
    deltas = {c: y - x for c, x, y in pairs}
    by_case = {c: (x, y) for c, x, y in pairs}
    cut = default_catastrophic_threshold(kinds[headline]) if threshold is None else threshold
    rows = [Catastrophic(case_id=c, a=by_case[c][0], b=by_case[c][1], delta=deltas[c])
            for c in catastrophic(deltas, cut)]
    names_in_order = sorted(metrics)
    adjusted = multiple_testing.adjust([metrics[m].p_value for m in names_in_order], p_adjust)
    metrics = {m: metrics[m].model_copy(update={"p_adjusted": adj,
                                                "significant": multiple_testing.significant(adj, alpha)})
               for m, adj in zip(names_in_order, adjusted)}
    adjustment = PAdjustment(method=p_adjust, method_name=multiple_testing.METHOD_NAMES[p_adjust], alpha=alpha,
                             m=sum(v is not None for v in adjusted), family="the metrics of this comparison")
    return ComparisonReport(a=a, b=b, n=len(pairs), metrics=metrics,
                            buckets=buckets(list(deltas.values()), edges, tie_eps=tie_eps), catastrophic=rows,
                            p_adjust=adjustment)


def pair_report(report: ComparisonReport, not_measured: Mapping[str, NotMeasured],
                branches: Mapping[CaseId, tuple[list[str], list[str]]], **context: Any) -> PairReport:
    """The pair report of `report`: each metric with why its dropped cases were not measured (`not_measured`, by
    metric), each catastrophic case with its requests' branches in a and in b (`branches`, by case), and the
    context (core.compare_records.PairReport's other fields: transitions, per-case values, supply, ...)."""
    return PairReport(
        a=report.a, b=report.b, n=report.n,
        metrics={m: PairMetric(**v.model_dump(), not_measured=not_measured[m]) for m, v in report.metrics.items()},
        buckets=report.buckets,
        catastrophic=[CatastrophicCase(**c.model_dump(), branches_a=branches[c.case_id][0],
                                       branches_b=branches[c.case_id][1]) for c in report.catastrophic],
        p_adjust=report.p_adjust, **context)


Report = TypeVar("Report", ComparisonReport, PairReport)


def adjust_reports(reports: Sequence[Report], p_adjust: str, alpha: float,
                   family: str = "every pair and metric of arm_comparisons") -> list[Report]:
    """Copies of the reports whose p-values are adjusted together: over every (report, metric) of the sweep, not
    per report, so a sweep of many pairs is held to the family's error rate. Each metric's p_adjusted and
    significant are replaced and each report's p_adjust names the method, alpha, m and the family."""
    slots = [(i, m) for i, r in enumerate(reports) for m in sorted(r.metrics)]
    adjusted = multiple_testing.adjust([reports[i].metrics[m].p_value for i, m in slots], p_adjust)
    updates: list[dict[str, Any]] = [{} for _ in reports]
    for (i, m), adj in zip(slots, adjusted):
        updates[i][m] = reports[i].metrics[m].model_copy(
            update={"p_adjusted": adj, "significant": multiple_testing.significant(adj, alpha)})
    block = PAdjustment(method=p_adjust, method_name=multiple_testing.METHOD_NAMES[p_adjust], alpha=alpha,
                        m=sum(v is not None for v in adjusted), family=family)
    return [r.model_copy(update={"metrics": {m: updates[i].get(m, v) for m, v in r.metrics.items()},
                                 "p_adjust": block}) for i, r in enumerate(reports)]
