"""Adjusted p-values for a family of tests: a sweep compares many pairs, and at alpha 0.05 one true null in twenty
is rejected by chance, so a report marks a difference significant only on its adjusted p-value.

Over the m p-values of a family (None entries are passed through as None and are not counted in m), sorted
ascending p_(1) <= ... <= p_(m):

- Holm's step-down (Holm, "A Simple Sequentially Rejective Multiple Test Procedure", Scand. J. Statist. 6, 1979),
  controls the family-wise error rate under any dependence:
      adj_(i) = max_{j <= i} min(1, (m - j + 1) * p_(j))
- Benjamini-Hochberg step-up (Benjamini and Hochberg, "Controlling the False Discovery Rate", JRSS B 57, 1995),
  controls the false discovery rate (independent or positively dependent tests):
      adj_(i) = min_{j >= i} min(1, m / j * p_(j))

The running max (Holm) and min (BH) make the adjusted values monotone in p, so a smaller raw p never gets a
larger adjusted p; both are capped at 1.  A test is significant when adj <= alpha.  Ties get equal adjusted
values under both.  These are R's p.adjust(method = "holm" / "BH").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

PAdjust = Literal["holm", "bh"]
P_ADJUST_METHODS: tuple[str, ...] = ("holm", "bh")
METHOD_NAMES = {"holm": "Holm step-down (Holm 1979), family-wise error rate",
                "bh": "Benjamini-Hochberg step-up (Benjamini & Hochberg 1995), false discovery rate"}


def _checked(p_values: Sequence[float | None]) -> list[tuple[int, float]]:
    """(position, p) of the defined p-values, sorted by p then position."""
    out = []
    for i, p in enumerate(p_values):
        if p is None:
            continue
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p) or not 0 <= p <= 1:
            raise ValueError(f"p_values[{i}]: {p!r} is not a p-value in [0, 1] (use None for an undefined test)")
        out.append((i, float(p)))
    return sorted(out, key=lambda ip: (ip[1], ip[0]))


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values, in the input's order (see the module docstring)."""
    ranked = _checked(p_values)
    m = len(ranked)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for j, (i, p) in enumerate(ranked, start=1):
        running = max(running, min(1.0, (m - j + 1) * p))
        out[i] = running
    return out


def benjamini_hochberg(p_values: Sequence[float | None]) -> list[float | None]:
    """Benjamini-Hochberg-adjusted p-values, in the input's order (see the module docstring)."""
    ranked = _checked(p_values)
    m = len(ranked)
    out: list[float | None] = [None] * len(p_values)
    running = 1.0
    for j in range(m, 0, -1):
        i, p = ranked[j - 1]
        running = min(running, min(1.0, m / j * p))
        out[i] = running
    return out


def adjust(p_values: Sequence[float | None], method: str) -> list[float | None]:
    """Adjusted p-values by `method` ("holm" or "bh")."""
    if method == "holm":
        return holm(p_values)
    if method == "bh":
        return benjamini_hochberg(p_values)
    raise ValueError(f"p_adjust must be one of {', '.join(P_ADJUST_METHODS)}, got {method!r}")


def significant(p_adjusted: float | None, alpha: float) -> bool | None:
    """adj <= alpha; None for an undefined test."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    return None if p_adjusted is None else p_adjusted <= alpha
