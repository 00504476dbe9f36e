"""`rag-ttc bench --targets [--chunks N]`: issue 46's figures beside their targets, in one run.

Three measurements, each the one its own command runs, and one table of their figures:

- `offline_answers` and `offline_judging` (bench/offline_baselines.py): the offline baselines' answers and judging
  stages against one batched encode of exactly the texts they send the model; target ratio <= 1.3.
- approximate search on realistic vectors (bench/ann_realistic.py, the WiCE vectors grown to N; the types ivf_sq,
  ivf_rq and ivf_pq, whose builds take a minute or two at a million: `--only ann_realistic` sweeps them all): per
  index type, the cheapest setting of the sweep with recall@10 >= 0.95 of exact at p95 <= 20 ms, else its best
  recall; the target is met when one type meets it. Without RAG_TTC_HUMAN_LABELS the realistic vectors are
  skipped and the row says so.
- growth to N chunks (bench/growth.py, sizes N/20 and N by default): the child's peak resident memory at N
  (target 4,096 MB) and each step's growth exponent (admission <= 1.05, the others as linear as before).

N is a million by default, as the targets are set; a smaller N runs the same code (the growth table then also
prints its straight-line extrapolation of the peak to a million). Every figure is measured, never asserted: a
verdict is printed beside it.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from rag_ttc_assets.bench import ann_realistic, growth
from rag_ttc_assets.bench.ann_realistic import AnnReport
from rag_ttc_assets.bench.growth import GrowthReport
from rag_ttc_assets.bench.harness import log
from rag_ttc_assets.bench.labs import LabSpec, bundled_spec
from rag_ttc_assets.bench.bench_records import Record
from rag_ttc_assets.bench.bench_registry import measurements

OFFLINE = ("offline_answers", "offline_judging")
DEFAULT_CHUNKS = 1_000_000


class TargetRow(Record):
    """A row of the targets table: the figure, what was measured and its target (text), the verdict (meets, NOT met
    or skipped for a target; reaches or short for an index type's row), a detail."""

    figure: str
    measured: str
    target: str
    verdict: str
    detail: str


class TargetsReport(Record):
    """`rag-ttc bench --targets`'s report (run_targets): the offline baselines' bench items (harness.item), the
    approximate-search and growth reports, and the table's rows."""

    chunks: int
    offline: dict[str, Any]
    ann_realistic: AnnReport
    growth: GrowthReport
    rows: list[TargetRow]


def growth_sizes(chunks: int) -> list[int]:
    """The growth bench's sizes for `chunks`: a twentieth of it and itself (the exponents span a factor 20)."""
    return sorted({max(20, chunks // 20), chunks})


def run_targets(chunks: int = DEFAULT_CHUNKS, home: str | Path | None = None, repeat: int = 1,
                spec: LabSpec | None = None, ann_source: str = "wice",
                ann_types: tuple[str, ...] = ("ivf_sq", "ivf_rq", "ivf_pq"), sizes: list[int] | None = None,
                embed_max: int = growth.DEFAULT_EMBED_MAX) -> TargetsReport:
    """The three measurements' reports and the rows of the targets table (`rows`)."""
    owned = home is None
    base = Path(tempfile.mkdtemp(prefix="rag-ttc-targets-")) if owned else Path(home).expanduser().resolve()
    base.mkdir(parents=True, exist_ok=True)
    try:
        log("targets: the offline baselines")
        known, lab = measurements(), spec or bundled_spec()
        offline = {"dataset": lab.dataset, "items": {n: known[n](lab, base / "offline", repeat) for n in OFFLINE}}
        log(f"targets: approximate search on realistic vectors, {chunks} rows")
        ann = ann_realistic.run_ann_realistic(chunks, home=base / "ann", source=ann_source, types=ann_types,
                                              floor=False)
        sizes = sizes or growth_sizes(chunks)
        log(f"targets: growth, sizes {sizes}")
        grown = growth.run_growth(sizes, embed_max=embed_max, home=base / "growth", repeat=repeat)
        return TargetsReport(chunks=chunks, offline=offline, ann_realistic=ann, growth=grown,
                             rows=rows(offline, ann, grown))
    finally:
        if owned:
            shutil.rmtree(base, ignore_errors=True)


def rows(offline: dict[str, Any], ann: AnnReport, grown: GrowthReport) -> list[TargetRow]:
    """One row per figure: name, measured (text), target (text), verdict, detail. A target's verdict is meets, NOT
    met or skipped; an index type's row (the approximate-search target is met when one type meets it) reads reaches
    or short, and is not counted as a target."""
    out = []
    for name in OFFLINE:
        i = offline["items"][name]  # a bench item (harness.item)
        out.append(TargetRow(figure=f"{name} ratio", measured=f"{i['ratio']:.3f}", target=i["target"],
                             verdict="meets" if i["verdict"] == "meets" else "NOT met",
                             detail=f"cpu ratio {i['cpu_ratio']:.3f}; {i.get('detail', '')}"))
    goal = f"recall@{ann.k} >= {ann.target_recall} at p95 <= {ann.target_p95_ms:.0f} ms"
    realistic = ann.sets.get("realistic")
    if realistic is None:
        out.append(TargetRow(figure=f"realistic approximate search, {ann.chunks:,} rows", measured="-",
                             target=goal, verdict="skipped", detail="; ".join(ann.notes)))
    else:
        met_any = False
        for t, r in realistic.types.items():
            b = ann_realistic.best(r.points)
            if b is None:
                continue
            met_any |= b.met
            setting = ", ".join(f"{k} {v}" for k, v in b.query.items()) or "the lab's defaults"
            out.append(TargetRow(figure=f"{t} at {ann.chunks:,} realistic rows ({setting})",
                                 measured=f"recall {b.recall_10:.3f} at p95 {b.p95_ms:.1f} ms", target=goal,
                                 verdict="reaches" if b.met else "short",  # one type meeting it meets the target
                                 detail=f"build {r.build_s:.1f} s"))
        out.append(TargetRow(figure="at least one index type", measured="yes" if met_any else "no", target=goal,
                             verdict="meets" if met_any else "NOT met", detail=ann.source or ""))
    for t in growth.targets(grown):
        out.append(TargetRow(figure=t.name, measured=t.measured, target=f"<= {t.target:g}", verdict=t.verdict,
                             detail=t.detail or ("" if t.wall is None else f"wall {t.wall:.2f}")))
    return out


def format_targets(report: TargetsReport) -> str:
    cells = [["figure", "measured", "target", "verdict", "detail"]]
    cells += [[r.figure, r.measured, r.target, r.verdict, r.detail] for r in report.rows]
    widths = [max(len(r[c]) for r in cells) for c in range(len(cells[0]))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    met = sum(r.verdict == "meets" for r in report.rows)
    counted = sum(r.verdict in ("meets", "NOT met", "skipped") for r in report.rows)
    return "\n".join([f"issue 46 targets at {report.chunks:,} chunks: {met} of {counted} met (growth exponents in "
                      "CPU seconds, the offline ratios in wall seconds; an index type's row reads reaches or short, "
                      "and the approximate-search target is met when one type reaches it)", *lines])


def cmd_targets(args) -> int:
    import json

    chunks = DEFAULT_CHUNKS if args.chunks is None else args.chunks
    if chunks < 2 * ann_realistic.K:
        raise SystemExit(f"rag-ttc bench: --chunks must be at least {2 * ann_realistic.K}, got {chunks}")
    report = run_targets(chunks, home=args.home, repeat=args.repeat or 1, embed_max=args.growth_embed_max)
    print(json.dumps(report.to_json(), indent=2, default=str) if args.json else format_targets(report))
    return 0
