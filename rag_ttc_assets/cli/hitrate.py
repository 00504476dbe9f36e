"""`rag-ttc hitrate`: the hit rates admitted_contexts wrote, with a CI gate."""

from __future__ import annotations

import json

from rag_ttc_assets.adapters.input_files import load_dataset
from rag_ttc_assets.adapters.store import ArmJson
from rag_ttc_assets.core.arm_summaries import LookupCounts
from rag_ttc_assets.core.dataset import labels_line
from rag_ttc_assets.defs.graph import STAGES
from rag_ttc_assets.cli.common import lab_from_args, text_table
from rag_ttc_assets.cli.materialize import materialize_arms
from rag_ttc_assets.stages.reports import arm_report


def _lookup_line(label: str, lk: LookupCounts) -> str:
    rate = "n/a" if lk.hit_rate is None else f"{lk.hit_rate:.4f}"
    return (f"{label}: {lk.correct_document} of {lk.cases} cases returned every governing document "
            f"(hit rate {rate}); wrong document {lk.wrong_document}, empty {lk.empty_results}")


def cmd_hitrate(args) -> int:
    lab = lab_from_args(args)
    dataset = lab.arms[args.arm].dataset
    materialize_arms([args.arm], "retrieval")
    # Labels `rag-ttc labels update` marked stale are out of these rates: said with them.
    labels = load_dataset(lab.dataset_dir(dataset), dataset).labels
    # What admitted_contexts wrote: the hit rates at each boundary (a tool arm's: its lookups' and the oracle's).
    admission = lab.store.read_summary(args.arm, ArmJson.ADMISSION_SUMMARY)
    rates, lookup = admission.hit_rates, admission.lookup  # a tool arm's lookups (with the oracle's), or None
    admitted = lookup.hit_rate if lookup is not None else rates.admitted.question_hit_rate
    failed = args.min_hit_rate is not None and (admitted is None or admitted < args.min_hit_rate)
    gate = None if args.min_hit_rate is None else {"min_hit_rate": args.min_hit_rate, "passed": not failed}
    if args.json:
        report = {"arm": args.arm, **rates.model_dump(mode="json"),
                  "retrieval": arm_report(lab.store, args.arm, lab.arms[args.arm], STAGES["retrieval"]).retrieval}
        if lookup is not None:
            report |= admission.model_dump(mode="json", include={"lookup", "oracle_lookup"})
        print(json.dumps({**report, "gate": gate, "labels": labels}, indent=2))
        return 1 if failed else 0
    print(f"{args.arm}: {rates.questions} questions with gold evidence, {rates.requests} requests")
    if labels.get("excluded"):
        print(labels_line(labels))
    if lookup is None:  # a tool arm admits nothing before it answers: no boundary table
        print(text_table(["boundary", "question_hits", "question_hit_rate", "request_hits", "request_hit_rate"],
                         [[b, h.question_hits, h.question_hit_rate, h.request_hits, h.request_hit_rate]
                          for b, h in (("ranked", rates.ranked), ("selected", rates.selected),
                                       ("admitted", rates.admitted))]))
    else:
        print(_lookup_line("lookups of the question text, split as the product sends them (no generation)", lookup))
        print(_lookup_line("oracle: the annotator's request texts as queries, not something the product sends",
                           admission.oracle_lookup))
    if gate:
        what = "lookup" if lookup is not None else "admitted"
        print(f"gate: {what} hit rate {admitted:.4f} {'>=' if not failed else '<'} {args.min_hit_rate}")
    return 1 if failed else 0
