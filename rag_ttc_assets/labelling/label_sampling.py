"""Which rows to label: a stratified sample of an arm's rows whose human labels most reduce the uncertainty of the
arm's completeness (issue 44 item 2).

Strata are the failure-flow branch crossed with juror disagreement (a panel's jurors split on some request of the
row; a single judge: by flow branch only). The budget is shared by Neyman allocation (Neyman 1934; Cochran,
Sampling Techniques, 3rd ed., 1977, eq. 5.60): n_h proportional to N_h * S_h, with S_h the standard deviation of
the judge's completeness in stratum h, floored (S_FLOOR) so that a stratum the judge scores uniformly still gets
labels, and every stratum gets at least one row: every row has a positive inclusion probability, which
`labelling/ppi.py` needs to stay unbiased, and two rows per stratum where the budget allows, so that the stratified
estimate can read each stratum's variance. Each row's inclusion probability is n_h / N_h.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Sequence

S_FLOOR = 0.1


@dataclass(frozen=True)
class Row:
    question: str
    run_id: str
    branch: str  # the failure-flow branch
    completeness: float  # the judge's completeness of the row, 0..1
    disagreement: bool | None = None  # None: a single judge (no jurors to disagree)

    @property
    def stratum(self) -> str:
        if self.disagreement is None:
            return self.branch
        return f"{self.branch}|{'jurors split' if self.disagreement else 'jurors agree'}"


@dataclass(frozen=True)
class Pick:
    question: str
    run_id: str
    stratum: str
    probability: float


def _sd(values: Sequence[float]) -> float:
    if len(values) < 2:
        return 0.0
    m = sum(values) / len(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def allocate(sizes: dict[str, int], sds: dict[str, float], budget: int) -> dict[str, int]:
    """Neyman allocation with a floor of two rows per stratum (one where the budget cannot give every stratum two)
    and no stratum above its size; the budget is spent exactly (largest remainders), or every row when the budget
    covers them. Two rows is the least a stratum's variance can be read from (Cochran 1977, chapter 5A): a
    stratum with one labelled row drawn with probability below 1 leaves the stratified estimate without its
    variance (labelling/ppi.py falls back to the Bernoulli form)."""
    total = sum(sizes.values())
    if budget >= total:
        return dict(sizes)
    strata = sorted(sizes)
    alloc = {h: min(2, sizes[h]) for h in strata}
    if sum(alloc.values()) > budget:
        alloc = {h: min(1, sizes[h]) for h in strata}
        if sum(alloc.values()) >= budget:  # fewer labels than strata: the largest weighted strata get one each
            order = sorted(strata, key=lambda h: (-sizes[h] * max(sds[h], S_FLOOR), h))
            return {h: (1 if h in order[:budget] else 0) for h in strata}
    while sum(alloc.values()) < budget:
        left = budget - sum(alloc.values())
        open_ = [h for h in strata if alloc[h] < sizes[h]]
        weight = {h: sizes[h] * max(sds[h], S_FLOOR) for h in open_}
        wsum = sum(weight.values())
        share = {h: left * weight[h] / wsum for h in open_}
        add = {h: min(sizes[h] - alloc[h], int(share[h])) for h in open_}
        if sum(add.values()) == 0:  # hand out the remainder by largest fractional share
            for h in sorted(open_, key=lambda h: (-(share[h] - int(share[h])), h))[:left]:
                add[h] = 1
        for h, k in add.items():
            alloc[h] += k
    return alloc


def sample_rows(rows: Sequence[Row], budget: int, seed: int = 0) -> list[Pick]:
    """`budget` rows of one arm, stratified and Neyman-allocated, each with its inclusion probability. A budget
    at or above the number of rows takes every row with probability 1. Deterministic for a given seed."""
    if budget < 1:
        raise ValueError("the budget must be at least 1 row")
    by: dict[str, list[Row]] = {}
    for r in rows:
        by.setdefault(r.stratum, []).append(r)
    sizes = {h: len(v) for h, v in by.items()}
    sds = {h: _sd([r.completeness for r in v]) for h, v in by.items()}
    alloc = allocate(sizes, sds, budget)
    rng = random.Random(seed)
    picks: list[Pick] = []
    for h in sorted(by):
        members = sorted(by[h], key=lambda r: (r.question, r.run_id))
        k = alloc[h]
        if k == 0:
            continue
        chosen = rng.sample(members, k)
        prob = k / len(members)
        picks += [Pick(r.question, r.run_id, h, prob) for r in sorted(chosen, key=lambda r: r.question)]
    return picks
