"""`rag-ttc report A [B]`: the clickable case report of one arm, or of a pair of arms, as one HTML file."""

from __future__ import annotations

import json
from pathlib import Path

from rag_ttc_assets.cli.common import CliError, case_views, lab_from_args, read_labels
from rag_ttc_assets.core.compare_guards import InstrumentDriftError, LabelDriftError
from rag_ttc_assets.report.files import pair_path, write_arm, write_pair


def _shown(path: Path) -> str:
    """The path as typed from here: relative to the current folder when it is inside it (a URI in an object store)."""
    if not isinstance(path, Path):
        return str(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def cmd_report(args) -> int:
    from rag_ttc_assets.report.collect import ReportError  # late: polars loads only when this runs
    from rag_ttc_assets.stages.arm_comparisons import compare_two, read_pair  # late: polars loads only when this runs
    from rag_ttc_assets.diagnosis.flow_plots_stage import pair_plots  # late: polars loads only when this runs

    lab = lab_from_args(args)
    for arm in filter(None, (args.a, args.b)):
        lab.arms[arm]
    # The people's labels beside the judges: --labels, else the store's default labels file when it exists.
    labels = read_labels(lab, args.labels)
    views = case_views(lab)
    try:
        if args.b is None:
            path = Path(args.out) if args.out else lab.store.root / "reports" / f"{args.a}.html"
            write_arm(lab.store, args.a, lab.arms[args.a], path, views, labels)
        else:
            out_dir = lab.store.comparisons_dir
            out_dir.mkdir(parents=True, exist_ok=True)
            rep = pair_plots(compare_two(read_pair(lab.store, lab.arms, args.a, args.b), args.allow_label_drift,
                                         headline=args.headline,
                                         allow_instrument_drift=args.allow_instrument_drift), out_dir)
            # The JSON the page was made from, beside it: the page's numbers can be checked against it.
            json_path = out_dir / f"{args.a}--{args.b}.json"
            written = rep.to_json()
            json_path.write_text(json.dumps(written, indent=1, default=str))
            path = write_pair(rep, Path(args.out) if args.out else pair_path(out_dir, args.a, args.b), views, labels)
            print(f"comparison: {_shown(json_path)}")
    except (LabelDriftError, InstrumentDriftError, ReportError) as e:
        raise CliError(str(e)) from None
    if labels is not None:
        h = labels.summary()
        print(f"human labels: {_shown(labels.path)} ({h['sha256']}; {h['request_labels']} per-request labels by "
              f"{', '.join(h['annotators']) or 'no annotator'})"
              + (f"; not read, the report shows no labels: {h['not_read']}" if h.get("not_read") else ""))
    print(f"report: {_shown(path)} ({path.stat().st_size / 1e6:.1f} MB; open it in a browser, it needs no network)")
    return 0


def add_parser(subparsers, common) -> None:
    s = subparsers.add_parser("report", parents=[common], help="a clickable HTML case report of one arm or two",
                              description="Write one self-contained HTML file: for two arms, the configuration "
                                          "differences, paired metrics, the transition matrix of the failure flow "
                                          "and every case side by side; for one arm, its failure flow, hit rate and "
                                          "cases by branch.")
    s.add_argument("a")
    s.add_argument("b", nargs="?")
    s.add_argument("--out", help="the HTML file to write (default: the store's comparisons/<a>--<b>.html, or "
                                 "reports/<a>.html for one arm)")
    s.add_argument("--labels", help="a human labels file (docs/judges.md#human-labels-in) whose per-request labels "
                                    "the report shows beside each judge (default: the store's "
                                    "annotations/labels.jsonl, where `rag-ttc annotate` writes, when it exists)")
    s.add_argument("--headline", default="completeness",
                   choices=["completeness", "valid", "faithfulness", "recip_rank", "recall_10", "ndcg_cut_10"])
    s.add_argument("--allow-instrument-drift", action="store_true")
    s.add_argument("--allow-label-drift", action="store_true")
    s.set_defaults(fn=cmd_report)
