"""`rag-ttc bench` (and `python -m rag_ttc_assets.bench`): run the selected measurements, print their table."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import rag_ttc_assets.bench as bench
from rag_ttc_assets.bench import growth, scale, targets
from rag_ttc_assets.bench.bench_report import BenchReport
from rag_ttc_assets.bench.harness import fmt, log
from rag_ttc_assets.bench.labs import bundled_spec, scaled_spec
from rag_ttc_assets.bench.bench_registry import measurements, names


def run_bench(only: list[str] | None = None, repeat: int = 3, home: str | Path | None = None,
              scale: int | None = None) -> BenchReport:
    """Run the selected measurements (all by default, in the documented order); return the report."""
    known = measurements()
    selected = list(dict.fromkeys(only)) if only else list(known)
    unknown = [n for n in selected if n not in known]
    if unknown:
        raise ValueError(f"unknown measurement(s) {', '.join(unknown)}; known: {', '.join(known)}")
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    selected = [n for n in known if n in selected]
    owned = home is None
    base = Path(tempfile.mkdtemp(prefix="rag-ttc-bench-")) if owned else Path(home).expanduser().resolve()
    base.mkdir(parents=True, exist_ok=True)
    try:
        spec = scaled_spec(base / "scaled", scale) if scale else bundled_spec()
        items = {}
        for name in selected:
            log(f"{name}: start")
            items[name] = known[name](spec, base, repeat)
        return BenchReport(dataset=spec.dataset, scale=scale, repeat=repeat, home=None if owned else str(base),
                           python=sys.version.split()[0], cpus=os.cpu_count(), items=items)
    finally:
        if owned:
            shutil.rmtree(base, ignore_errors=True)


def format_table(report: BenchReport) -> str:
    cols = ["name", "product_s", "reference_s", "ratio", "kind", "target", "verdict", "cpu_ratio", "detail"]
    measured = report.measured()
    rows = [[i.name, i.product_s, i.reference_s, i.ratio, i.ratio_kind, i.target, i.verdict, i.cpu_ratio, i.detail]
            for i in measured]
    cells = [cols] + [[fmt(v) for v in r] for r in rows]
    widths = [max(len(r[c]) for r in cells) for c in range(len(cols))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    head = (f"dataset {report.dataset}" + (f" (synthetic, {report.scale} documents)" if report.scale else "")
            + f"; repeat {report.repeat} (medians); {report.cpus} CPUs")
    notes = [f"{i.name}: {n}" for i in measured for n in i.notes]
    return "\n".join([head, *lines, *(["", *notes] if notes else []),
                      "", "cost ratio = product / reference seconds; throughput ratio = reference / product seconds;",
                      "the verdict is on wall time; cpu_ratio is the same ratio of this process's CPU seconds, "
                      "which other processes on a shared machine disturb less"])


def cmd_bench(args) -> int:
    if getattr(args, "targets", False):  # issue 46's figures in one run: bench/targets.py
        if args.only or args.growth:
            raise SystemExit("rag-ttc bench: --targets runs its own measurements; drop --only and --growth")
        return targets.cmd_targets(args)
    args.chunks = 100_000 if args.chunks is None else args.chunks
    args.repeat = 3 if args.repeat is None else args.repeat
    if getattr(args, "growth", None):
        return growth.cmd_growth(args)
    if "scale" in (args.only or []):  # its own generated corpus and table: bench/scale.py
        return scale.cmd_scale(args)
    if "ann_realistic" in (args.only or []):  # its own vectors and sweep: bench/ann_realistic.py
        from rag_ttc_assets.bench import ann_realistic  # late: only this measurement needs it

        return ann_realistic.cmd_ann_realistic(args)
    report = run_bench(only=args.only, repeat=args.repeat, home=args.home, scale=args.scale)
    print(json.dumps(report.to_json(), indent=2, default=str) if args.json else format_table(report))
    return 0


def _positive(text: str) -> int:
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return v


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `bench` subcommand to an argparse subparsers object (as `rag-ttc bench`)."""
    items = names()
    s = subparsers.add_parser("bench", help="measure product paths against plain references (ratios)",
                              description="Run product code paths beside plain references in one process, "
                                          "alternating and repeating, and report median times, their ratio, "
                                          "the target and a verdict. Measurements: " + ", ".join(items) + ".")
    s.add_argument("--json", action="store_true")
    s.add_argument("--only", action="append", choices=[*items, "scale", "ann_realistic"], metavar="NAME",
                   help="run only this measurement (repeatable): " + ", ".join(items)
                   + "; or scale alone, with --chunks N (bench/scale.py); or ann_realistic alone, with --chunks N "
                   "and --plot PNG (bench/ann_realistic.py)")
    s.add_argument("--scale", type=_positive, metavar="N",
                   help="use a synthetic corpus of N documents recombined from the bundled paragraphs")
    s.add_argument("--repeat", type=_positive, default=None, metavar="R",
                   help="rounds per measurement (default 3; 1 with --targets)")
    s.add_argument("--home", help="store folder for the bench (default: a temporary folder, removed afterwards)")
    s.add_argument("--growth", nargs="?", const="1000,5000,10000,25000,50000", metavar="CHUNKS",
                   help="instead of the ratios, time each retrieval-side step at these chunk counts (comma-separated, "
                        "default 1000,5000,10000,25000,50000) and print the growth exponents (see bench/growth.py)")
    s.add_argument("--growth-embed-max", type=int, default=10_000, metavar="N",
                   help="with --growth: embed only sizes up to N chunks (default 10000; larger sizes index "
                        "seeded random vectors and report no embedding time)")
    s.add_argument("--chunks", type=int, default=None, metavar="N",
                   help="with --only scale or ann_realistic: the chunk (vector) count (default 100000); with "
                        "--targets: the size the targets are read at (default 1000000)")
    s.add_argument("--targets", action="store_true",
                   help="issue 46's figures beside their targets in one run: the offline baselines' ratios, "
                        "approximate search on realistic vectors and growth to --chunks (see bench/targets.py)")
    s.add_argument("--plot", metavar="PNG",
                   help="with --only ann_realistic: draw the recall-latency curve into this PNG file")
    s.set_defaults(fn=cmd_bench)
    return s


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="rag-ttc", description=bench.__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    add_parser(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(argv if argv[:1] == ["bench"] else ["bench", *argv])
    return args.fn(args)
