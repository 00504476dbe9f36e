"""The diagnostics' plots, written: an arm's (or every arm's) failure-flow bars, a compared pair's delta
histogram and bucket plot, a sweep family's curves (drawn by adapters/plots.py from what stages/arm_comparisons.py and
the arms' failure_flow.json hold)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rag_ttc_assets.adapters.store import ArmJson, ArtifactStore
from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.arms_file import Arms
from rag_ttc_assets.core.compare_records import PairReport
from rag_ttc_assets.diagnosis.flow import FLOW_BRANCHES
from rag_ttc_assets.stages.arm_comparisons import arm_title, sweep_rows

SWEEP_SERIES = ["valid", "recall_10", "requests_supported", "graded_completeness", "omitted_chunks"]


def flow_bars(store: ArtifactStore, arms: Mapping[str, ArmConfig], path: Path) -> Path | None:
    """The failure-flow bars of `arms` (name -> configuration, in order; those with a failure flow in `store`)
    written to `path`; None when none has one."""
    from rag_ttc_assets.adapters import plots  # late: matplotlib, only when a plot is drawn

    flows = {}
    for arm, cfg in arms.items():
        try:
            s = store.read_arm_json(arm, ArmJson.FAILURE_FLOW)
        except FileNotFoundError:
            continue
        flows[arm_title(store, arm, cfg)] = {b: s[b] for b in FLOW_BRANCHES}
    return plots.failure_flow_bars(path, flows, list(FLOW_BRANCHES)) if flows else None


def pair_plots(report: PairReport, plots_dir: Path) -> PairReport:
    """Draw a comparison's (stages.arm_comparisons.compare_two) headline deltas and its buckets into `plots_dir`; returns
    the report with their paths in its `plots`."""
    from rag_ttc_assets.adapters import plots  # late: matplotlib, only when a plot is drawn

    a, b, headline = report.a, report.b, report.headline
    # The paired cases (both arms defined), in case order: core.case_comparison.paired's deltas.
    deltas = [float(v.b) - float(v.a) for v in report.per_case.values() if v.a is not None and v.b is not None]
    drawn = {
        "delta_histogram": str(plots.delta_histogram(plots_dir / f"{a}--{b}-deltas.png", deltas, headline, a, b)),
        "buckets": str(plots.bucket_table_plot(plots_dir / f"{a}--{b}-buckets.png",
                                               [x.model_dump(mode="json") for x in report.buckets])),
    }
    # Completeness read graded beside the headline: its per-case deltas, drawn where a case was graded in both arms
    # (a judge that reports no coverage grades none: no plot, never a histogram of zeros).
    graded = [float(v.b) - float(v.a) for v in report.per_case_graded.values() if v.a is not None and v.b is not None]
    if graded and headline != "graded_completeness":
        drawn["graded_delta_histogram"] = str(plots.delta_histogram(
            plots_dir / f"{a}--{b}-graded-deltas.png", graded, "graded_completeness", a, b))
    return report.model_copy(update={"plots": drawn})


def sweep_plots(store: ArtifactStore, arms: Arms, out_dir: Path) -> dict[str, str]:
    """Each sweep family's curves (of the arms file's `arms`; its members materialized in `store`) as
    `sweep-<family>.png`: family -> path."""
    from rag_ttc_assets.adapters import plots  # late: matplotlib, only when a plot is drawn

    sweeps = {}
    for family in arms.families:
        parameter, rows = sweep_rows(store, arms, family)
        if rows:
            sweeps[family] = str(plots.sweep_curves(out_dir / f"sweep-{family}.png", parameter, rows, SWEEP_SERIES,
                                                    f"sweep {family}: {parameter}"))
    return sweeps
