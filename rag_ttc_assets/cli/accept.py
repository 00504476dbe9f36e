"""`rag-ttc accept ARM --against BASELINE`: can a few human labels replace the judge for an acceptance decision?
The judge's completeness difference, the people's, the prediction-powered one with its interval, the decision, and
how many more labels would make it (labelling/accept_stage.py, labelling/ppi.py)."""

from __future__ import annotations

import json
from pathlib import Path

from rag_ttc_assets.cli.common import CliError, lab_from_args, text_table
from rag_ttc_assets.labelling.estimate_records import Estimate, EstimateNLast, JudgeInterval
from rag_ttc_assets.core.compare_guards import InstrumentDriftError, LabelDriftError

DECIDED = {"accept": "ACCEPT: the {c}% interval lies above 0 ({arm} is more complete than {base})",
           "reject": "REJECT: the {c}% interval lies below 0 ({arm} is less complete than {base})",
           "undecided": "UNDECIDED: the {c}% interval spans 0"}


def labels_path(lab, given: str | None) -> Path:
    """--labels FILE, or the store's annotations/labels.jsonl (where `rag-ttc annotate` writes)."""
    from rag_ttc_assets.labelling.accept_stage import default_labels  # late: polars loads only when this runs

    return Path(given).expanduser().resolve() if given else default_labels(lab.store)


def _iv(e: Estimate | EstimateNLast | JudgeInterval) -> str:
    if e.low is None:
        return "-"
    return f"{e.mean:+.3f} [{e.low:+.3f}, {e.high:+.3f}]"


def cmd_accept(args) -> int:
    from rag_ttc_assets.labelling.accept_stage import accept, read_correction  # late: polars, numpy, matplotlib: only here

    lab = lab_from_args(args)
    if not 0 < args.alpha < 1:
        raise CliError(f"--alpha must be in (0, 1), got {args.alpha}")
    if args.arm == args.against:
        raise CliError(f"accept {args.arm} --against {args.against}: name two different arms")
    for arm in (args.arm, args.against):
        lab.arms[arm]
    path = labels_path(lab, args.labels)
    try:
        inputs = read_correction(lab.store, lab.arms_file, lab.datasets_dir, lab.arms, args.arm, args.against, path)
        report = accept(inputs, lab.store.comparisons_dir, args.alpha, args.allow_instrument_drift)
    except (InstrumentDriftError, LabelDriftError) as e:
        raise CliError(str(e)) from None
    if args.json:
        print(json.dumps(report.to_json(), indent=2, default=str))
        return 0
    conf = round(100 * (1 - args.alpha))
    arm, base = args.arm, args.against
    rep, pr = report.difference, report.projection
    print(f"accept {arm} against {base}: {rep.measure}, {arm} - {base}; "
          f"{rep.judge_rater[arm]}" + ("" if rep.judge_rater[arm] == rep.judge_rater[base] else
                                          f" / {rep.judge_rater[base]}"))
    print(f"labels: {rep.labels_file} ({rep.labelled_per_arm[arm]} rows of {arm}, "
          f"{rep.labelled_per_arm[base]} of {base} labelled; {rep.weighting})")
    print(f"estimator: {rep.estimator_why}")
    left = {a: k for a, k in rep.rows_not_measured_whole.items() if k}
    if left:
        print("rows the judge did not measure (a request's judgment failed), left out: "
              + ", ".join(f"{a} {k}" for a, k in left.items()))
    print(text_table(["reading", "rows", f"difference [{conf}% CI]", "decision"], [
        ["judge alone (all rows)", rep.judge.n, _iv(rep.judge), rep.judge_decision],
        ["people alone (labelled rows)", rep.human.n, _iv(rep.human), rep.human_decision],
        ["prediction-powered (judge corrected by the labels)", rep.ppi.n, _iv(rep.ppi), rep.decision]]))
    print(DECIDED[rep.decision].format(c=conf, arm=arm, base=base))
    print(f"interval width now {pr.width_now:.3f} with n = {rep.labelled}; it decides below "
          f"{pr.width_that_decides:.3f} (twice |estimate|); {pr.formula}")
    if pr.labels_needed is None:
        print(pr.why_none)
    elif rep.decision != "undecided":
        print(f"decided with {rep.labelled} labelled rows (the projection's threshold: {pr.labels_needed})")
    else:
        print(f"labels that would decide: n = {pr.labels_needed} labelled rows"
              + (" (in both arms)" if rep.estimator == "paired" else " (in each arm)")
              + f", {pr.more_labels} more than now, if the estimate and the variances hold"
              + ("" if pr.reachable else f"; more than the {rep.rows} rows there are: not reachable on this set"))
    hn = pr.human_labels_needed
    print("people alone would need: " + (f"n = {hn}" + ("" if hn <= rep.rows else
                                                        f" (more than the {rep.rows} rows there are)")
                                         if hn else "no number of labels (their estimate is 0)"))
    unmeasured = {a: q for a, q in rep.labels_on_rows_not_measured.items() if q}
    if unmeasured:
        print("labels on rows the judge did not measure whole (left out): "
              + "; ".join(f"{a}: {', '.join(q)}" for a, q in unmeasured.items()))
    print(f"plot: {report.plot}")
    print(f"written: {report.report}")
    return 0


def add_parser(sub, common) -> None:
    s = sub.add_parser("accept", parents=[common], help="accept or reject an arm against a baseline with a few human "
                                                        "labels (prediction-powered completeness difference)",
                       description="The judge's completeness difference ARM - BASELINE over every row, the people's "
                                   "over the labelled rows, and the prediction-powered difference (Angelopoulos et "
                                   "al., Science 2023; paired per question where the arms answer the same questions) "
                                   "with its interval; the decision (accept: above 0, reject: below 0, else "
                                   "undecided), and how many labelled rows would decide, with a plot of the "
                                   "interval's width against n. Reads only: labels never reach a generator.")
    s.add_argument("arm")
    s.add_argument("--against", required=True, metavar="BASELINE", help="the arm to accept ARM against")
    s.add_argument("--labels", help="the labels file (default: <store>/annotations/labels.jsonl, where "
                                    "`rag-ttc annotate` writes)")
    s.add_argument("--alpha", type=float, default=0.05, help="1 - the interval's confidence (default 0.05: 95%%)")
    s.add_argument("--allow-instrument-drift", action="store_true",
                   help="accept across arms whose request judge or its prompt differ (the report says so)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_accept)
