"""`rag-ttc derive-requests` and `rag-ttc judge-agreement`: materialize the label assets (defs/label_assets.py) as the UI
does, recorded in DAGSTER_HOME, and print what they wrote."""

from __future__ import annotations

import json

from rag_ttc_assets.adapters.input_files import load_dataset
from rag_ttc_assets.cli.common import CliError, dagster_home, lab_from_args, text_table
from rag_ttc_assets.cli.materialize import failure_text, open_instance
from rag_ttc_assets.judging.agreement_records import read_report
from rag_ttc_assets.judging.judge_agreement_stage import tables
from rag_ttc_assets.core.derivation_result import DerivationResult
from rag_ttc_assets.core.request_derivation import describe, nothing_to_derive

SHOWN_DISAGREEMENTS = 20  # a public set has tens of thousands; the report file keeps them all


def materialize_label_asset(name: str, config: dict) -> dict:
    """Run `<name>_job` with the asset's config; the materialization's metadata values by key."""
    from rag_ttc_assets.definitions import build_definitions  # late: dagster loads only when this runs

    job = build_definitions().resolve_job_def(f"{name}_job")
    with open_instance(dagster_home()) as instance:
        result = job.execute_in_process(instance=instance, raise_on_error=False, tags={"rag_ttc/source": "cli"},
                                        run_config={"loggers": {"console": {"config": {"log_level": "CRITICAL"}}},
                                                    "ops": {name: {"config": config}}})
        if not result.success:
            raise CliError(f"{name}: run {result.run_id} failed:\n{failure_text(result)}")
        meta = result.get_asset_materialization_events()[0].materialization.metadata
    return {k: getattr(v, "value", v) for k, v in meta.items()} | {"run_id": result.run_id}


def cmd_derive_requests(args) -> int:
    lab = lab_from_args(args)
    if not lab.dataset_dir(args.dataset).is_dir():
        raise CliError(f"unknown dataset {args.dataset!r} (no folder {lab.dataset_dir(args.dataset)})")
    # As the stage reads it (without the derived file); a dataset with nothing to derive is said so, not "0 for 0".
    ds = load_dataset(lab.dataset_dir(args.dataset), args.dataset, use_derived=False)
    why = nothing_to_derive(ds.evaluation.questions, args.dataset)
    if why:
        raise CliError(why)
    config = {"datasets": [args.dataset], "model": args.model, "api_base": args.api_base,
              "api_key_env": args.api_key_env, "budget": args.budget}
    out = DerivationResult.model_validate(materialize_label_asset("derived_requests", config)["results"][0])
    if args.json:
        print(json.dumps(out.to_json(), indent=2))
        return 0
    print(f"{out.dataset}: {out.requests} requests derived for {out.questions} questions by "
          f"{out.derived_by} ({out.requests_with_evidence} with an evidence quote in the question's targets); "
          f"provider calls {out.provider_calls}, cache hits {out.cache_hits}")
    print(f"written: {out.file} (labels: the judges and metrics read them, never the generator)")
    if out.not_derived:
        print("not derived (rerun to retry; finished questions come from the provider cache):")
        print(text_table(["question", "why"], sorted(out.not_derived.items())))
    return 0


def cmd_judge_agreement(args) -> int:
    from pathlib import Path

    lab_from_args(args)
    path = Path(args.labels).expanduser().resolve()
    if not path.is_file():
        raise CliError(f"{path}: labels file not found")
    meta = materialize_label_asset("judge_agreement", {"labels": str(path), "seed": args.seed})
    report = read_report(Path(meta["report"]).read_text(encoding="utf-8"), meta["report"])
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
        return 0

    for arm, d in report.requests_derived.items():
        if d:
            print(f"arm {arm}: {d['requests']} requests of {d['questions']} questions were derived from gold answers "
                  f"by {describe(d)} (labels, for the judges only)")
    edits = report.request_edits
    if edits.edits or edits.labels_not_compared:
        print(f"request annotation: {edits.edits} request edits, {edits.labels_not_compared} labels of requests "
              "an annotator added, split, merged or reworded (no judge measured them: not compared)")
    for title, cols, rows in tables(report):
        print(title)
        print(text_table(cols, rows))
        print()
    d = report.disagreements()
    if d:
        shown = d if args.all_disagreements else d[:SHOWN_DISAGREEMENTS]
        more = f"; the first {len(shown)} shown, all in the report (--all-disagreements)" if len(shown) < len(d) else ""
        print(f"requests the judge and a person disagree on ({len(d)}{more}):")
        print(text_table(["rater", "arm", "question", "request", "annotator", "human", "judge", "judge's reason"],
                         [[x.rater, x.arm, x.question, x.request, x.annotator, x.human, x.judge, x.judge_reason]
                          for x in shown]))
    print(f"report: {meta['report']}")
    return 0


def add_parser(sub, common) -> None:
    s = sub.add_parser("judge-agreement", parents=[common], help="the judges against human labels",
                       description="Every judge that scored the labelled rows against the human labels (per-request "
                                   "`addressed`: Cohen's kappa, accuracy, confusion; pairwise preferences: Pearson "
                                   "and Spearman with bootstrap intervals), the annotators with each other as the "
                                   "ceiling. The format is in docs/judges.md.")
    s.add_argument("labels", help="a JSON Lines file of per-request labels and/or pairwise preferences")
    s.add_argument("--seed", type=int, default=0, help="the bootstrap's seed")
    s.add_argument("--all-disagreements", action="store_true",
                   help=f"print every disagreeing request (default: the first {SHOWN_DISAGREEMENTS}; all are in the "
                        "report file)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_judge_agreement)

    s = sub.add_parser("derive-requests", parents=[common], help="derive requests from gold answers",
                       description="For every question with a gold answer and no requests (as `import-outputs` writes "
                                   "them), derive its requests "
                                   "(atomic claims) and locate their evidence in the question's target documents; "
                                   "written to <dataset>/derived_requests.json, bound to the evaluation's digest. "
                                   "Without that file such questions get the offline rule's requests.")
    s.add_argument("dataset", help="a dataset name in the datasets folder")
    s.add_argument("--model", default="local/claims-v1",
                   help="local/claims-v1 (the offline rule: sentences, then coordinated clauses) or a litellm model "
                        "string given the prompt derive-requests-v1")
    s.add_argument("--api-base", help="the model's API base (an OpenAI-compatible server)")
    s.add_argument("--api-key-env", help="the NAME of the environment variable holding the model's key")
    s.add_argument("--budget", type=int, default=1000, help="at most this many provider calls")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_derive_requests)
