"""Where a case report is written, and writing one: a pair's beside its comparison JSON, one arm's under reports/."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rag_ttc_assets.adapters.atomic import atomic_write_bytes
from rag_ttc_assets.report.html import render

if TYPE_CHECKING:
    from rag_ttc_assets.adapters.store import ArtifactStore
    from rag_ttc_assets.core.arms import ArmConfig
    from rag_ttc_assets.core.compare_records import PairReport
    from rag_ttc_assets.labelling.human_page import HumanLabels
    from rag_ttc_assets.report.collect import ArmViews


def pair_path(comparisons_dir: Path, a: str, b: str) -> Path:
    """Where a pair's report lives: beside its comparison JSON, `<a>--<b>.html`."""
    return comparisons_dir / f"{a}--{b}.html"


def write_pair(report: PairReport, path: Path, views: ArmViews, labels: HumanLabels | None = None) -> Path:
    """Render the pair report `report` (compare_two's, as written to `<a>--<b>.json`) to `path`, its arms read by
    `views` (report.collect.ArmViews); `labels`: the human labels shown beside the judges (labelling.human_page.read:
    the file named, or the store's default file when it exists; None: none)."""
    from rag_ttc_assets.report.collect import pair_model  # late: polars, when it runs

    side_a, side_b = views(report.a, labels), views(report.b, labels)
    atomic_write_bytes(path, render(pair_model(report, side_a, side_b, labels)).encode("utf-8"), mode=0o644)
    return path


def write_arm(store: ArtifactStore, arm: str, cfg: ArmConfig, path: Path, views: ArmViews,
              labels: HumanLabels | None = None) -> Path:
    """Render the report of the arm `arm` (config `cfg`, read by `views`) to `path`, its failure-flow plot drawn from
    `store` and written beside it; `labels` as in write_pair."""
    from rag_ttc_assets.report.collect import single_model  # late: polars, when it runs
    from rag_ttc_assets.diagnosis.flow_plots_stage import flow_bars  # late: polars, as above

    png = flow_bars(store, {arm: cfg}, path.with_suffix(".flow.png"))
    side = views(arm, labels)
    atomic_write_bytes(path, render(single_model(side, png, labels)).encode("utf-8"), mode=0o644)
    return path
