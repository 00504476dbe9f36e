"""`rag-ttc sample-labels ARM --budget N`: which of an arm's answer rows people should label (core/label_sampling.py),
written as a sample file, one row per line, each with its stratum and inclusion probability."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from rag_ttc_assets.cli.common import CliError, lab_from_args, text_table
from rag_ttc_assets.core import label_sampling as ls


def arm_rows(lab, arm: str) -> list[ls.Row]:
    """The arm's answer rows: the judge's completeness (share of the row's requests addressed), the row's failure-flow
    branch (the branch most of its requests land in; ties by name) and, for a panel, whether its jurors split on any
    of the row's requests."""
    from rag_ttc_assets.adapters.store import Table
    from rag_ttc_assets.stages.run_record import list_runs

    RJ, FLOW = Table.REQUEST_JUDGMENTS.c, Table.FAILURE_FLOW.c
    try:
        rj = lab.store.read_table(arm, Table.REQUEST_JUDGMENTS)
    except FileNotFoundError:
        raise CliError(f"arm {arm!r} has no request judgments (run it first: rag-ttc run {arm})") from None
    try:
        flow = {(r[FLOW.query_id], r[FLOW.request_id]): r[FLOW.branch]
                for r in lab.store.read_table(arm, Table.FAILURE_FLOW).iter_rows(named=True)}
    except FileNotFoundError:
        flow = {}
    runs = [r for r in list_runs(lab, arm) if r.get("dagster_run_id")]
    run_id = runs[-1]["dagster_run_id"] if runs else ""
    by_q: dict[str, list[dict]] = {}
    for r in rj.iter_rows(named=True):
        by_q.setdefault(r[RJ.query_id], []).append(r)
    rows = []
    for q, reqs in sorted(by_q.items()):
        branches = Counter(flow.get((q, r[RJ.request_id]), "no failure flow") for r in reqs)
        branch = sorted(branches.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        completeness = sum(bool(r[RJ.addressed]) for r in reqs) / len(reqs)
        kept = [json.loads(r.get(RJ.jurors) or "[]") for r in reqs]
        panel = any(kept)
        split = any(len({j.get("addressed") for j in k if j.get("addressed") is not None}) > 1 for k in kept)
        rows.append(ls.Row(q, run_id, branch, completeness, split if panel else None))
    return rows


def cmd_sample_labels(args) -> int:
    lab = lab_from_args(args)
    if args.budget < 1:
        raise CliError(f"--budget {args.budget}: label at least 1 row")
    rows = arm_rows(lab, args.arm)
    if not rows:
        raise CliError(f"arm {args.arm!r} has no judged rows to sample")
    picks = ls.sample_rows(rows, args.budget, args.seed)
    out = Path(args.out).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps({"arm": args.arm, "question": p.question, "run_id": p.run_id,
                                       "stratum": p.stratum, "probability": p.probability}) + "\n" for p in picks),
                   encoding="utf-8")
    if args.budget >= len(rows):
        print(f"budget {args.budget} covers all {len(rows)} rows of arm {args.arm}: every row taken, probability 1")
    strata = Counter(r.stratum for r in rows)
    taken = Counter(p.stratum for p in picks)
    print(text_table(["stratum", "rows", "sampled", "probability"],
                     [[h, strata[h], taken[h], f"{taken[h] / strata[h]:.3f}"] for h in sorted(strata)]))
    print(f"{len(picks)} of {len(rows)} rows of arm {args.arm} to label (seed {args.seed}); written: {out}")
    return 0


def add_parser(sub, common) -> None:
    s = sub.add_parser("sample-labels", parents=[common], help="which rows of an arm people should label",
                       description="A stratified sample of an arm's answer rows (strata: failure-flow branch, and for "
                                   "a panel whether its jurors split), the budget shared by Neyman allocation from "
                                   "the judge's per-stratum spread, at least one row per stratum; each row's "
                                   "inclusion probability is written so that the corrected completeness "
                                   "(`judge-agreement`) stays unbiased. JSON Lines: arm, question, run_id, stratum, "
                                   "probability.")
    s.add_argument("arm")
    s.add_argument("--budget", type=int, required=True, help="how many rows to label")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", required=True, help="the sample file to write")
    s.set_defaults(fn=cmd_sample_labels)
