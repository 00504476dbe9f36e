"""`rag-ttc hitrate`: the hit rates admitted_contexts wrote, with a CI gate."""

from __future__ import annotations

import json

from rag_ttc_assets.adapters.files import load_dataset
from rag_ttc_assets.adapters.store import ArmJson
from rag_ttc_assets.core.dataset import labels_line
from rag_ttc_assets.defs.graph import STAGES
from rag_ttc_assets.cli.common import lab_from_args, text_table
from rag_ttc_assets.cli.materialize import materialize_arms
from rag_ttc_assets.stages.reports import arm_report


def _lookup_line(label: str, lk: dict) -> str:
    rate = "n/a" if lk["hit_rate"] is None else f"{lk['hit_rate']:.4f}"
    return (f"{label}: {lk['correct_document']} of {lk['cases']} cases returned every governing document "
            f"(hit rate {rate}); wrong document {lk['wrong_document']}, empty {lk['empty_results']}")


def cmd_hitrate(args) -> int:
    lab = lab_from_args(args)
    dataset = lab.arms[args.arm].dataset
    materialize_arms([args.arm], "retrieval")
    # Labels `rag-ttc labels update` marked stale are out of these rates: said with them.
    labels = load_dataset(lab.dataset_dir(dataset), dataset).labels
    # What admitted_contexts wrote: the hit rates at each boundary (a tool arm's: its lookups' and the oracle's).
    admission = lab.store.read_arm_json(args.arm, ArmJson.ADMISSION_SUMMARY)
    report = {"arm": args.arm, **admission["hit_rates"],
              "retrieval": arm_report(lab, args.arm, STAGES["retrieval"])["retrieval"]}
    admitted = report["admitted"]["question_hit_rate"]
    if "lookup" in admission:
        report["lookup"], report["oracle_lookup"] = admission["lookup"], admission["oracle_lookup"]
        admitted = report["lookup"]["hit_rate"]
    failed = args.min_hit_rate is not None and (admitted is None or admitted < args.min_hit_rate)
    report["gate"] = None if args.min_hit_rate is None else {"min_hit_rate": args.min_hit_rate, "passed": not failed}
    report["labels"] = labels
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{args.arm}: {report['questions']} questions with gold evidence, {report['requests']} requests")
        if labels.get("excluded"):
            print(labels_line(labels))
        if "lookup" not in report:  # a tool arm admits nothing before it answers: no boundary table
            print(text_table(["boundary", "question_hits", "question_hit_rate", "request_hits", "request_hit_rate"],
                         [[b, report[b]["question_hits"], report[b]["question_hit_rate"], report[b]["request_hits"],
                           report[b]["request_hit_rate"]] for b in ("ranked", "selected", "admitted")]))
        if "lookup" in report:
            print(_lookup_line("lookups of the question text, split as the product sends them (no generation)",
                               report["lookup"]))
            print(_lookup_line("oracle: the annotator's request texts as queries, not something the product sends",
                               report["oracle_lookup"]))
        if report["gate"]:
            what = "lookup" if "lookup" in report else "admitted"
            print(f"gate: {what} hit rate {admitted:.4f} {'>=' if not failed else '<'} {args.min_hit_rate}")
    return 1 if failed else 0
