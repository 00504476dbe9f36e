"""`rag-ttc inspect` and `rag-ttc runs`: one case in the seed's reading order; the run records."""

from __future__ import annotations

import json

from rag_ttc_assets.cli.common import CliError, dagster_home, lab_from_args, text_table
from rag_ttc_assets.cli.materialize import open_instance, reap_dead_runs


def cmd_inspect(args) -> int:
    # late: polars loads only when this runs
    from rag_ttc_assets.stages.inspect import InspectError, inspect_question, to_markdown
    from rag_ttc_assets.stages.resolve import ArmInputs  # late: polars, as above

    lab = lab_from_args(args)
    lab.arms[args.arm]
    try:
        view = inspect_question(lab.store, ArmInputs(lab, args.arm).inspected(), args.question_id)
    except InspectError as e:
        raise CliError(str(e)) from None
    print(json.dumps(view.model_dump(), indent=2, default=str) if args.json else to_markdown(view))
    return 0


def cmd_runs(args) -> int:
    from rag_ttc_assets.stages.run_record import list_runs  # late: polars, pytrec_eval load only when this runs

    lab = lab_from_args(args)
    if args.arm:
        lab.arms[args.arm]
    with open_instance(dagster_home()) as instance:
        reap_dead_runs(instance)

        def status_of(run_id):
            run = instance.get_run_by_id(run_id)
            return run.status.value if run else None

        runs = list_runs(lab.runs, args.arm, status_of)
    if args.json:
        print(json.dumps([r.to_json() for r in runs], indent=2))
        return 0
    rows = [[r.arm, r.status, r.started_at, r.counts.get("answer_rows"), r.counts.get("valid"),
             sum(r.partial_rows.values()) if r.partial_rows else None, r.failed_step, r.run_dir]
            for r in runs]
    print(text_table(["arm", "status", "started_at", "answer_rows", "valid", "partial_rows", "failed_step",
                      "run_dir"], rows)
          if rows else "no run records yet (rag-ttc run ARM writes one per materialization)")
    return 0
