"""`rag-ttc sample-labels ARM --budget N`: which of an arm's answer rows people should label (labelling/label_sampling.py),
written as a sample file, one row per line, each with its stratum and inclusion probability."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from rag_ttc_assets.cli.common import CliError, lab_from_args, text_table
from rag_ttc_assets.labelling import label_sampling as ls


def write_sample(lab, arm: str, budget: int, seed: int, out: Path, append: bool = False) -> tuple[list, list]:
    """Sample `budget` of `arm`'s judged rows (labelling/label_sampling.py) and write them to `out` as the sample file
    `rag-ttc annotate --sample` reads (appended when `append`: one file for several arms). Returns (rows, picks)."""
    if budget < 1:
        raise CliError(f"--budget {budget}: label at least 1 row")
    from rag_ttc_assets.labelling.label_sampling_stage import NotJudged, arm_rows  # late: polars loads only when this runs

    try:
        rows = arm_rows(lab.store, lab.runs, arm)
    except NotJudged as e:
        raise CliError(str(e)) from None
    if not rows:
        raise CliError(f"arm {arm!r} has no judged rows to sample")
    picks = ls.sample_rows(rows, budget, seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a" if append else "w", encoding="utf-8") as f:
        f.write("".join(json.dumps({"arm": arm, "question": p.question, "run_id": p.run_id, "stratum": p.stratum,
                                    "probability": p.probability}) + "\n" for p in picks))
    if budget >= len(rows):
        print(f"budget {budget} covers all {len(rows)} rows of arm {arm}: every row taken, probability 1")
    return rows, picks


def cmd_sample_labels(args) -> int:
    lab = lab_from_args(args)
    out = Path(args.out).expanduser()
    rows, picks = write_sample(lab, args.arm, args.budget, args.seed, out)
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
