"""What `arm_comparisons` writes: every compared pair's JSON, its plots and case report, the sweep curves and the
failure-flow bars of every arm, the summary rows its metadata shows, and the human labels file its pages read
(its sha256: an input of the pages)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_ttc_assets.adapters.store import ArtifactStore
from rag_ttc_assets.core.arms_file import Arms
from rag_ttc_assets.core.compare_records import PairReport
from rag_ttc_assets.core.measured import addressed_text, graded_text
from rag_ttc_assets.labelling import human_page
from rag_ttc_assets.report.files import pair_path, write_pair
from rag_ttc_assets.report.comparison_text import era_text, paired_text, significant_metrics
from rag_ttc_assets.stages.arm_comparisons import arm_title, compare_pairs
from rag_ttc_assets.diagnosis.flow_plots_stage import flow_bars, pair_plots, sweep_plots

if TYPE_CHECKING:
    from rag_ttc_assets.report.collect import ArmViews


@dataclass(frozen=True)
class Comparisons:
    """What `arm_comparisons` wrote (write_comparisons): the pair reports drawn, the pairs refused, one summary row
    per pair, the pages and sweep plots written, the failure-flow bars of every arm (None: none drawn) and the
    people's labels the reports show (None: none)."""

    reports: list[PairReport]
    skipped: list[str]
    summary: list[dict[str, Any]]
    pages: dict[str, Path]
    sweeps: dict[str, Any]
    flow_png: Path | None
    human_labels: dict[str, Any] | None


def write_comparisons(store: ArtifactStore, arms: Arms, out_dir: Path, views: ArmViews,
                      labels: human_page.HumanLabels | None) -> Comparisons:
    """What `arm_comparisons` writes into `out_dir`: every pair of the arms file `arms` compared from `store`, its
    comparison JSON and its case report (its arms read by `views`, report.collect.ArmViews, the people's `labels`
    beside the judges: the store's default labels file when it exists, labelling.human_page.read), the sweep curves of
    every family and the failure-flow bars of every arm; returns the reports, the pairs refused, one summary row per
    pair, the pages and plots written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    reports, skipped = compare_pairs(store, arms)
    summary, pages = [], {}
    drawn = []
    for rep in reports:
        rep = pair_plots(rep, out_dir)
        drawn.append(rep)
        written = rep.to_json()
        (out_dir / f"{rep.a}--{rep.b}.json").write_text(json.dumps(written, indent=1, default=str))
        # The clickable case report of the pair, made from the JSON just written.
        pages[f"{rep.a}--{rep.b}"] = write_pair(rep, pair_path(out_dir, rep.a, rep.b), views, labels)
        summary.append(summary_row(rep, {arm: arm_title(store, arm, arms[arm]) for arm in (rep.a, rep.b)}))
    sweeps = sweep_plots(store, arms, out_dir)
    return Comparisons(reports=drawn, skipped=skipped, summary=summary, pages=pages, sweeps=sweeps,
                       flow_png=flow_bars(store, {n: arms[n] for n in arms.names},
                                          out_dir / "failure-flow-all-arms.png"),
                       human_labels=labels.summary() if labels else None)


def summary_row(rep: PairReport, titles: Mapping[str, str]) -> dict:
    """One compared pair as the summary table shows it (`rag-ttc compare --all`, the asset's metadata): completeness
    read graded first, then the share addressed, each with its N of M and in the words of the run table and
    `rag-ttc compare A B` (docs/judges.md: graded agrees with people best); then valid and completeness. `titles`: each
    arm's name as tables show it (stages.arm_comparisons.arm_title)."""
    m, g = rep.metrics, rep.metrics["graded_completeness"]
    read = rep.completeness_measured
    valid, comp = m["valid"], m["completeness"]
    return {"a": titles[rep.a], "b": titles[rep.b], "n": rep.n,
            "graded_a": graded_text(read[rep.a]), "graded_b": graded_text(read[rep.b]),
            # No case graded in both arms (a judge that reports no coverage): said, never 0 or a blank.
            "graded_delta": "not measured" if g.mean_delta is None else g.mean_delta,
            "graded_paired": paired_text(g), "graded_p": g.p_value, "graded_p_adj": g.p_adjusted,
            "addressed_a": addressed_text(read[rep.a]), "addressed_b": addressed_text(read[rep.b]),
            "valid_delta": valid.mean_delta, "valid_p": valid.p_value, "valid_p_adj": valid.p_adjusted,
            "completeness_delta": comp.mean_delta, "completeness_paired": paired_text(comp),
            "completeness_p": comp.p_value, "completeness_p_adj": comp.p_adjusted,
            "significant": significant_metrics(rep), "catastrophic": len(rep.catastrophic),
            "representations": era_text(rep)}
