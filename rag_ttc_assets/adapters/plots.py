"""Thin wrapper over matplotlib: plain data in, a PNG written atomically, its path out.

No domain decisions live here: callers pick the rows, the series, the branches and the buckets;
these functions only draw them. Every figure has the same small size, is written to a temporary
file in the destination folder and renamed into place (a half-written PNG never looks complete),
and is closed after saving. Empty input draws a figure that says "no data" instead of failing.
"""

from __future__ import annotations

import io
import math
import os
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display here; must precede the pyplot import

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from rag_ttc_assets.adapters.atomic import atomic_write_bytes  # noqa: E402

FIGSIZE = (7.0, 4.0)
DPI = 100
GAIN, LOSS, NEUTRAL = "#2e7d32", "#c62828", "#9e9e9e"


def _new_figure(nrows: int = 1, ncols: int = 1, **kw: Any):
    return plt.subplots(nrows, ncols, figsize=FIGSIZE, dpi=DPI, squeeze=False, **kw)


def _no_data(ax, message: str = "no data") -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=12, color="dimgray", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def _save(fig, path: str | os.PathLike) -> Path:
    """Tight layout, render to PNG bytes, write them atomically (the store's temp-file-and-rename), close."""
    path = Path(path) if isinstance(path, str) else path  # a Path, or an object store's UPath
    try:
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=DPI)
        atomic_write_bytes(path, buffer.getvalue(), mode=0o644)  # a figure is for reading
    finally:
        plt.close(fig)
    return path


def _finite(value: Any) -> float | None:
    """float(value), or None when the value is missing or not finite."""
    if value is None:
        return None
    f = float(value)
    return f if math.isfinite(f) else None


# --------------------------------------------------------------------------- sweep curves


def _sweep_points(rows: list[dict], parameter: str, name: str) -> tuple[list[float], list[float], list[str]]:
    """(x, y, arm) for one series, sorted by x, rows with a missing x or y left out."""
    points = []
    for row in rows:
        x, y = _finite(row.get(parameter)), _finite(row.get(name))
        if x is not None and y is not None:
            points.append((x, y, str(row.get("arm", ""))))
    points.sort(key=lambda p: p[0])
    return [p[0] for p in points], [p[1] for p in points], [p[2] for p in points]


def _shared_prefix(names: list[str]) -> str:
    """The prefix every name shares, cut back to its last separator ("-_./: "), or "" when a name would
    be left empty. Lets crowded point labels show only the part that varies."""
    if len(names) < 2:
        return ""
    common = os.path.commonprefix(names)
    cut = max(common.rfind(sep) for sep in "-_./: ") + 1
    prefix = common[:cut]
    return prefix if prefix and all(len(n) > len(prefix) for n in names) else ""


def sweep_curves(path: str | os.PathLike, parameter: str, rows: list[dict], series: list[str], title: str) -> Path:
    """One small subplot per series: y = row[series] against x = row[parameter], points labelled by arm."""
    if not rows or not series:
        fig, axes = _new_figure()
        _no_data(axes[0][0])
        axes[0][0].set_title(title)
        return _save(fig, path)

    prefix = _shared_prefix([str(row.get("arm", "")) for row in rows])
    ncols = 1 if len(series) == 1 else 2
    nrows = math.ceil(len(series) / ncols)
    fig, axes = _new_figure(nrows, ncols)
    flat = [ax for row in axes for ax in row]
    for ax, name in zip(flat, series):
        ax.set_title(name, fontsize=9)
        ax.tick_params(labelsize=7)
        xs, ys, arms = _sweep_points(rows, parameter, name)
        if not xs:
            _no_data(ax)
            continue
        ax.plot(xs, ys, marker="o", markersize=3, linewidth=1)
        if min(xs) > 0 and max(xs) / min(xs) >= 10:
            ax.set_xscale("log")
        distinct = sorted(set(xs))
        if len(distinct) <= 8:  # tick the values actually swept, written plainly (not 10^0, 10^1)
            ax.set_xticks(distinct, [f"{x:g}" for x in distinct])
            ax.minorticks_off()
        crowded = len(xs) > 8
        for i, (x, y, arm) in enumerate(zip(xs, ys, arms)):
            label = arm[len(prefix):]
            if crowded:  # many points: slanted labels, all above
                ax.annotate(label, (x, y), textcoords="offset points", xytext=(2, 4), rotation=45,
                            ha="left", va="bottom", fontsize=6, color="dimgray")
            else:  # alternate above/below so neighbouring labels do not sit on each other
                ax.annotate(label, (x, y), textcoords="offset points", xytext=(0, 5 if i % 2 == 0 else -9),
                            ha="center", fontsize=6, color="dimgray")
        ax.margins(x=0.08, y=0.25)
        ax.grid(True, alpha=0.3)
    for ax in flat[len(series):]:
        ax.set_visible(False)
    for ax in flat[: len(series)]:
        ax.set_xlabel(parameter, fontsize=7)
    fig.suptitle(f"{title}\n(points labelled by arm, after the shared prefix \"{prefix}\")" if prefix else title,
                 fontsize=10)
    return _save(fig, path)


def recall_latency_curves(path: str | os.PathLike, curves: dict[str, list[tuple[float, float]]],
                          target_recall: float, target_ms: float, title: str, dashed: tuple[str, ...] = ()) -> Path:
    """One series of points per named curve (a sweep's settings): y = recall against x = latency (ms, log scale
    when it spans a decade), the series whose name starts with one of `dashed` (a floor) drawn as crosses; the
    target region (recall >= target_recall at latency <= target_ms) shaded."""
    points = {name: sorted((x, y) for x, y in pts if _finite(x) is not None and _finite(y) is not None)
              for name, pts in curves.items()}
    fig, axes = _new_figure()
    ax = axes[0][0]
    ax.set_title(title, fontsize=10)
    if not any(points.values()):
        _no_data(ax)
        return _save(fig, path)
    xs = [x for pts in points.values() for x, _ in pts]
    ax.fill_between([min(min(xs), target_ms) * 0.5, target_ms], target_recall, 1.0, color=GAIN, alpha=0.08)
    ax.axhline(target_recall, color=GAIN, linewidth=0.8, linestyle="--")
    ax.axvline(target_ms, color=GAIN, linewidth=0.8, linestyle="--")
    for name, pts in points.items():
        if pts:
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker="x" if name.startswith(dashed) else "o",
                    markersize=4, linestyle="none", label=name)
    if min(xs) > 0 and max(xs) / min(xs) >= 10:
        ax.set_xscale("log")
    ax.set_xlabel("p95 latency of one query (ms)", fontsize=8)
    ax.set_ylabel("recall@10 of the exact top 10", fontsize=8)
    ax.set_ylim(0, 1.02)
    ax.tick_params(labelsize=7)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6, loc="lower right")
    return _save(fig, path)


# --------------------------------------------------------------------------- paired deltas


def _bins_centred_on_zero(values: np.ndarray, max_bins: int = 40) -> np.ndarray:
    """Equal-width bin edges (width from numpy's "auto" rule) with one bin centred on 0, so ties never
    share a bar with small gains or losses."""
    spread = float(values.max() - values.min())
    if spread > 0:
        auto = np.histogram_bin_edges(values, bins="auto")
        width = max(float(auto[1] - auto[0]), spread / (max_bins - 1))
    else:  # every delta the same: one narrow bin on it (and the tie bin, if that is elsewhere)
        width = abs(float(values[0])) or 0.1
    lo = min(math.floor(values.min() / width + 0.5), 0)  # bin k covers [(k - 1/2) w, (k + 1/2) w)
    hi = max(math.floor(values.max() / width + 0.5), 0)
    return (np.arange(lo, hi + 2) - 0.5) * width


def delta_histogram(path: str | os.PathLike, deltas: list[float], metric: str, a: str, b: str) -> Path:
    """Histogram of per-case deltas (b - a), with lines at 0 and at the mean, and gain/loss/tie counts."""
    fig, axes = _new_figure()
    ax = axes[0][0]
    ax.set_title(f"{metric}: {b} vs {a}, per case", fontsize=10)
    values = np.array([v for v in (_finite(d) for d in deltas) if v is not None], dtype=float)
    if values.size == 0:
        _no_data(ax)
        return _save(fig, path)

    edges = _bins_centred_on_zero(values)
    _, _, patches = ax.hist(values, bins=edges, color=NEUTRAL, edgecolor="white")
    for patch in patches:  # bars coloured by the side of 0 they sit on; the tie bin stays grey
        centre = patch.get_x() + patch.get_width() / 2
        patch.set_facecolor(GAIN if centre > 1e-12 else LOSS if centre < -1e-12 else NEUTRAL)
    mean = float(values.mean())
    if edges.size == 2:  # a single bar: widen the view so it reads as a spike, not a block
        ax.set_xlim(-5 * (edges[1] - edges[0]), 5 * (edges[1] - edges[0]))
    ax.axvline(0.0, color="black", linestyle="--", linewidth=1, label="0")
    ax.axvline(mean, color=LOSS if mean < 0 else GAIN if mean > 0 else "dimgray", linewidth=1.5, label=f"mean {mean:+.3g}")
    gains, losses = int((values > 0).sum()), int((values < 0).sum())
    ties = int(values.size - gains - losses)
    ax.text(0.02, 0.97, f"n = {values.size}\ngains ({b} > {a}): {gains}\nlosses: {losses}\nties: {ties}\n"
            f"mean: {mean:+.3g}", transform=ax.transAxes, va="top", ha="left", fontsize=8,
            bbox={"boxstyle": "round", "facecolor": "white", "alpha": 0.85, "edgecolor": "lightgray"})
    ax.set_xlabel(f"{metric}({b}) - {metric}({a})", fontsize=8)
    ax.set_ylabel("cases", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7, loc="upper right")
    return _save(fig, path)


# --------------------------------------------------------------------------- failure flow


def failure_flow_bars(path: str | os.PathLike, flows: dict[str, dict[str, int]], branches: list[str]) -> Path:
    """One horizontal stacked bar per arm, segments in `branches` order, counts inside wide segments."""
    fig, axes = _new_figure()
    ax = axes[0][0]
    ax.set_title("Failure flow: first boundary where support disappeared", fontsize=10)
    arms = list(flows)
    totals = [sum(int(flows[arm].get(br, 0) or 0) for br in branches) for arm in arms]
    if not arms or not branches or max(totals) <= 0:
        _no_data(ax)
        return _save(fig, path)

    widest = max(totals)
    ypos = np.arange(len(arms))
    left = np.zeros(len(arms))
    colors = plt.get_cmap("tab10" if len(branches) <= 10 else "tab20")
    for j, branch in enumerate(branches):
        counts = np.array([int(flows[arm].get(branch, 0) or 0) for arm in arms], dtype=float)
        bars = ax.barh(ypos, counts, left=left, color=colors(j % colors.N), label=branch, height=0.7,
                       edgecolor="white", linewidth=0.5)
        for bar, count in zip(bars, counts):
            if count > 0 and count >= 0.045 * widest:  # only where the digits fit
                ax.text(bar.get_x() + bar.get_width() / 2, bar.get_y() + bar.get_height() / 2, f"{int(count)}",
                        ha="center", va="center", fontsize=7, color="white", fontweight="bold")
        left += counts
    ax.set_yticks(ypos, arms, fontsize=7 if len(arms) <= 12 else 5)
    ax.invert_yaxis()  # first arm on top
    ax.set_xlabel("requests", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_xlim(0, widest * 1.02)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=min(len(branches), 3), frameon=False)
    return _save(fig, path)


# --------------------------------------------------------------------------- bucket sums


def bucket_table_plot(path: str | os.PathLike, buckets: list[dict]) -> Path:
    """Bars of each bucket's sum (gains green, losses red) with its count, and the mean they add up to."""
    fig, axes = _new_figure()
    ax = axes[0][0]
    ax.set_title("How the mean is made: sum per bucket", fontsize=10)
    if not buckets:
        _no_data(ax)
        return _save(fig, path)

    labels = [str(bk.get("label", "")) for bk in buckets]
    sums = [_finite(bk.get("sum")) or 0.0 for bk in buckets]
    counts = [int(bk.get("count", 0) or 0) for bk in buckets]
    colors = [GAIN if s > 0 else LOSS if s < 0 else NEUTRAL for s in sums]
    xpos = np.arange(len(buckets))
    bars = ax.bar(xpos, sums, color=colors, width=0.7)
    ax.axhline(0.0, color="black", linewidth=0.8)
    for bar, s, n in zip(bars, sums, counts):
        ax.annotate(f"{s:+.3g}\nn={n}", (bar.get_x() + bar.get_width() / 2, s), textcoords="offset points",
                    xytext=(0, 3 if s >= 0 else -3), ha="center", va="bottom" if s >= 0 else "top", fontsize=7)
    total, n_total = sum(sums), sum(counts)
    mean = f"{total / n_total:+.3g}" if n_total else "n/a"
    ax.text(0.99, 0.97, f"total {total:+.3g} over {n_total} cases\nmean = {mean}", transform=ax.transAxes,
            ha="right", va="top", fontsize=8,
            bbox={"boxstyle": "round", "facecolor": "white", "alpha": 0.85, "edgecolor": "lightgray"})
    rotate = len(buckets) > 4 or max(len(lb) for lb in labels) > 12
    ax.set_xticks(xpos, labels, fontsize=7, rotation=30 if rotate else 0, ha="right" if rotate else "center")
    ax.set_ylabel("sum", fontsize=8)
    ax.tick_params(axis="y", labelsize=7)
    ax.margins(y=0.2)
    return _save(fig, path)


# --------------------------------------------------------------------------- interval width against labels


def interval_widths(path: str | os.PathLike, ns: list[int], series: dict[str, list[float]], current_n: int | None,
                    needed_width: float | None, title: str) -> Path:
    """One line per series (name -> the interval's width at each n of `ns`), the current n marked by a vertical
    line, and the width below which the interval would exclude 0 as a horizontal line (none: not drawn)."""
    fig, axes = _new_figure()
    ax = axes[0][0]
    ax.set_title(title, fontsize=10)
    if not ns or not series:
        _no_data(ax)
        return _save(fig, path)
    colours = [GAIN, "#1565c0", "#6a1b9a", NEUTRAL]
    for (name, widths), colour in zip(series.items(), colours):
        ax.plot(ns, widths, color=colour, linewidth=1.5, label=name)
    if current_n:
        ax.axvline(current_n, color="black", linestyle="--", linewidth=1, label=f"labelled now: n = {current_n}")
    if needed_width is not None and needed_width > 0:
        ax.axhline(needed_width, color=LOSS, linestyle=":", linewidth=1.2,
                   label=f"width that excludes 0 around the corrected estimate: {needed_width:.3g}")
    ax.set_xlabel("labelled rows n", fontsize=8)
    ax.set_ylabel("95% interval width", fontsize=8)
    ax.set_ylim(bottom=0)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7, loc="upper right")
    return _save(fig, path)
