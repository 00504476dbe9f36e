"""`rag-ttc sample-labels ARM --budget N`: which of an arm's answer rows people should label (core/label_sampling.py),
written as a sample file, one row per line, each with its stratum and inclusion probability."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from rag_ttc_assets.cli.common import CliError, lab_from_args, text_table
from rag_ttc_assets.core import label_sampling as ls


def cmd_sample_labels(args) -> int:
    lab = lab_from_args(args)
    if args.budget < 1:
        raise CliError(f"--budget {args.budget}: label at least 1 row")
    from rag_ttc_assets.stages.label_sample import NotJudged, arm_rows  # late: polars loads only when this runs

    try:
        rows = arm_rows(lab, args.arm)
    except NotJudged as e:
        raise CliError(str(e)) from None
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
