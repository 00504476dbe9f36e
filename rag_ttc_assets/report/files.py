"""Where a case report is written, and writing one: a pair's beside its comparison JSON, one arm's under reports/."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rag_ttc_assets.adapters.atomic import atomic_write_bytes
from rag_ttc_assets.report.html import render

if TYPE_CHECKING:
    from rag_ttc_assets.core.compare_records import PairReport


def pair_path(comparisons_dir: Path, a: str, b: str) -> Path:
    """Where a pair's report lives: beside its comparison JSON, `<a>--<b>.html`."""
    return comparisons_dir / f"{a}--{b}.html"


def write_pair(lab, report: PairReport, path: Path, labels=None) -> Path:
    """Render the pair report `report` (compare_two's, as written to `<a>--<b>.json`) to `path`;
    `labels`: the human labels shown beside the judges (labelling.human_page: a HumanLabels, a file, or None for the
    store's default file when it exists)."""
    from rag_ttc_assets.report.collect import arm_views, human_labels, pair_model  # late: polars, when it runs

    hl = human_labels(lab, labels)
    side_a, side_b = arm_views(lab, report.a, hl), arm_views(lab, report.b, hl)
    atomic_write_bytes(path, render(pair_model(report, side_a, side_b, hl)).encode("utf-8"), mode=0o644)
    return path


def write_arm(lab, arm: str, path: Path, labels=None) -> Path:
    """Render one arm's report (its failure-flow plot written beside it) to `path`; `labels` as in write_pair."""
    from rag_ttc_assets.report.collect import arm_views, human_labels, single_model  # late: polars, when it runs
    from rag_ttc_assets.diagnosis.flow_plots_stage import flow_bars  # late: polars, as above

    png = flow_bars(lab.store, {arm: lab.arms[arm]}, path.with_suffix(".flow.png"))
    hl = human_labels(lab, labels)
    side = arm_views(lab, arm, hl)
    atomic_write_bytes(path, render(single_model(side, png, hl)).encode("utf-8"), mode=0o644)
    return path
