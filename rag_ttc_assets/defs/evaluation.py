"""Evaluation stage: the two-stage judge (with the gold judge beside it) and its summary."""

from dagster import (AssetCheckExecutionContext, AssetCheckResult, AssetExecutionContext, MaterializeResult,
                     MetadataValue)

from rag_ttc_assets.core import artifacts
from rag_ttc_assets.adapters.store import ArmJson, Table
from rag_ttc_assets.defs.meta import md_table, numbers, run_status_lookup, version_of
from rag_ttc_assets.defs.progress import step_progress
from rag_ttc_assets.defs.registry import arm_asset, arm_check
from rag_ttc_assets.defs.resources import LabResource
from rag_ttc_assets.stages import generation as stage
from rag_ttc_assets.stages import indexes, ingest, request_judge, supply
from rag_ttc_assets.stages import run_record as records
from rag_ttc_assets.stages.calls import Caller
from rag_ttc_assets.stages.retrieval import arm_questions

GROUP = "evaluation"


@arm_asset(group=GROUP, kinds={"litellm", "parquet"}, deps=("contract_results",),
           artifact=artifacts.JUDGE_VERDICTS, pool="provider",
           writes=(Table.JUDGE_VERDICTS,))
def judge_verdicts(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """Statements and per-statement verdicts for valid rows; invalid rows and abstentions kept unjudged."""
    arm = context.partition_key
    lab_, cfg = lab.arm(arm)
    ds = ingest.bind_dataset(lab_, cfg)
    chunk_text = {c.chunk_id: c.text for c in ingest.read_chunks(ingest.build_chunks(lab_, cfg, ds))}
    prompts = {"statements": lab_.prompt(cfg.judge_statements_prompt, "judge_statements"),
               "verdicts": lab_.prompt(cfg.judge_verdicts_prompt, "judge_verdicts"),
               "gold": lab_.prompt(cfg.judge_gold_prompt, "judge_gold")}
    caller = Caller(cfg.judge, lab_.provider_cache_root, "judging", cfg.judge_budget,
                    cfg.allow_unpriced_provider, stage.JUDGE_ROLE, archive=lab_.store.messages)
    run_dir = records.open_run(lab_, arm, context.run.run_id, run_status_lookup(context), "judge")
    log = stage.RowLog(run_dir / records.PARTIAL_JUDGE)
    try:
        df = stage.judge(cfg, arm_questions(cfg, ds), lab_.store.read_table(arm, Table.CONTRACT_RESULTS),
                         supply.arm_contexts(lab_, arm, cfg), chunk_text, prompts, caller, log,
                         progress=step_progress(context))
    finally:
        log.close()
    digest = lab_.store.write_table(arm, Table.JUDGE_VERDICTS, df)
    return MaterializeResult(
        metadata={"dagster/row_count": df.height, "judge_model": cfg.judge.model,
                  "prompt_digests": MetadataValue.json({k: p.digest for k, p in prompts.items()}),
                  "statuses": MetadataValue.json(dict(df.group_by("status").len().iter_rows())),
                  "provider_calls": caller.provider_calls, "cache_hits": caller.cache_hits,
                  "incomplete_rows": int(df["status"].str.starts_with("judge_").sum()),
                  "table_digest": digest},
        data_version=version_of(digest),
    )


@arm_asset(group=GROUP, kinds={"litellm", "parquet"}, deps=("contract_results",),
           artifact=artifacts.REQUEST_JUDGMENTS, pool="provider",
           writes=(Table.REQUEST_JUDGMENTS, ArmJson.REQUEST_JUDGE_SUMMARY))
def request_judgments(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """Per request: addressed, its excerpt and citations, a verdict against the gold material (one instrument)."""
    arm = context.partition_key
    lab_, cfg = lab.arm(arm)
    ds = ingest.bind_dataset(lab_, cfg)
    prompt = lab_.prompt(cfg.judge_requests_prompt, "judge_requests")
    caller = Caller(cfg.request_judge, lab_.provider_cache_root, "request_judging", cfg.request_judge_budget,
                    cfg.allow_unpriced_provider, "request judge", archive=lab_.store.messages)
    run_dir = records.open_run(lab_, arm, context.run.run_id, run_status_lookup(context), "request_judge")
    log = stage.RowLog(run_dir / records.PARTIAL_REQUEST_JUDGE)
    try:
        df = request_judge.judge_requests(cfg, arm_questions(cfg, ds),
                                          lab_.store.read_table(arm, Table.CONTRACT_RESULTS),
                                          prompt, caller, log, progress=step_progress(context))
    finally:
        log.close()
    digest = lab_.store.write_table(arm, Table.REQUEST_JUDGMENTS, df)
    s = request_judge.request_judge_summary(df)
    inst = request_judge.instrument(cfg, prompt)
    lab_.store.write_arm_json(arm, ArmJson.REQUEST_JUDGE_SUMMARY, {**s, "request_judge": inst,
                                                                  "label_use": cfg.label_use})
    return MaterializeResult(
        metadata={"dagster/row_count": df.height, "request_judge_model": inst["model"],
                  "prompt_digest": inst["prompt_digest"],
                  "offline_baseline_judge": MetadataValue.bool(inst["offline_baseline"]),
                  "label_use": cfg.label_use, "statuses": MetadataValue.json(s["statuses"]),
                  "verdicts": MetadataValue.json(s["verdicts"]), "provider_calls": s["provider_calls"],
                  "cache_hits": s["cache_hits"], "incomplete_rows": s["not_measured"], "table_digest": digest},
        data_version=version_of(digest),
    )


@arm_asset(group=GROUP, kinds={"json"}, deps=("judge_verdicts", "request_judgments", "admitted_contexts"),
           artifact=artifacts.JUDGE_SUMMARY,
           writes=(ArmJson.JUDGE_SUMMARY,))
def judge_summary(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """Judged, abstained and invalid rows, faithfulness and relevance, the judge model, the judges measured."""
    arm = context.partition_key
    lab_, cfg = lab.arm(arm)
    store = lab_.store
    s = stage.judge_summary(cfg, store.read_table(arm, Table.JUDGE_VERDICTS))
    s["judge_measurement"] = stage.measure_judges(cfg, arm_questions(cfg, ingest.bind_dataset(lab_, cfg)),
                                                  store.read_table(arm, Table.CONTRACT_RESULTS),
                                                  store.read_table(arm, Table.JUDGE_VERDICTS),
                                                  store.read_table(arm, Table.REQUEST_JUDGMENTS),
                                                  store.read_table(arm, Table.ADMITTED_CONTEXTS))
    s["request_judge_model"] = cfg.request_judge.model
    digest = store.write_arm_json(arm, ArmJson.JUDGE_SUMMARY, s)
    jm = s["judge_measurement"]
    return MaterializeResult(
        metadata={**numbers({k: v for k, v in s.items() if v is not None and not isinstance(v, (dict, str))}),
                  "judge_measurement": md_table([{"judge": j, "measure": m, **jm[m][j]}
                                                 for m in ("sensitivity", "false_alarms")
                                                 for j in ("gold_judge", "request_judge")]),
                  "label_use": cfg.label_use,
                  "judge_model": s["judge_model"], "generator_model": s["generator_model"],
                  "same_model_as_generator": MetadataValue.bool(s["same_model_as_generator"]),
                  "offline_baseline_judge": MetadataValue.bool(s["offline_baseline_judge"]),
                  "statuses": MetadataValue.json(s["statuses"]),
                  **stage.denominator_metadata(s),
                  "summary": md_table([{k: s[k] for k in ("answer_rows", "judged", "abstained", "invalid",
                                                          "mean_faithfulness", "mean_relevance",
                                                          "contradicts_gold", "judge_model",
                                                          "same_model_as_generator")}])},
        data_version=version_of(digest),
    )


@arm_check(asset="judge_summary", description="every answer row is in the judge output with exactly one status")
def judge_keeps_every_row(context: AssetCheckExecutionContext, lab: LabResource) -> AssetCheckResult:
    store = lab.lab().store
    arm = context.partition_key
    n_answers = store.read_table(arm, Table.CONTRACT_RESULTS).height
    s = store.read_arm_json(arm, ArmJson.JUDGE_SUMMARY)
    return AssetCheckResult(passed=s["answer_rows"] == n_answers == sum(s["statuses"].values()),
                            metadata={"answer_rows": n_answers, "judge_rows": s["answer_rows"]})


@arm_asset(group=GROUP, kinds={"json"}, deps=("judge_summary", "retrieval_summary", "contract_summary",
                                              "failure_flow"), artifact=artifacts.RUN_RECORD)
def run_record(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """The seed's self-contained run directory: config, input copies, preparation, results, summary, status."""
    arm = context.partition_key
    lab_, cfg = lab.arm(arm)
    ds = ingest.bind_dataset(lab_, cfg)
    ch = ingest.build_chunks(lab_, cfg, ds)
    reps = ingest.build_representations(lab_, cfg, ds, ch)
    built = {"chunks": ch, "representations": reps, "bm25_index": indexes.build_bm25(lab_, cfg, ds, reps),
             "vector_index": indexes.build_vectors(lab_, cfg, ds, reps)}
    run_dir = records.open_run(lab_, arm, context.run.run_id, run_status_lookup(context), "run_record")
    from rag_ttc_assets.defs.registry import fingerprints

    counts = records.write_run_record(lab_, arm, cfg, run_dir, ds, built,
                                         fingerprints(cfg, lab_.fingerprint_inputs(cfg)))
    return MaterializeResult(metadata={"run_dir": MetadataValue.path(str(run_dir)), **numbers(counts),
                                       "summary": MetadataValue.md((run_dir / "summary.md").read_text())})


@arm_check(asset="run_record", description="the seed's post-run validation sequence (section 10.4)")
def post_run_validation(context: AssetCheckExecutionContext, lab: LabResource) -> AssetCheckResult:
    lab_, cfg = lab.arm(context.partition_key)
    runs = [r for r in records.list_runs(lab_, context.partition_key) if r["status"] == records.COMPLETE]
    if not runs:
        return AssetCheckResult(passed=False, metadata={"detail": "no complete run record"})
    ds = ingest.bind_dataset(lab_, cfg)
    expected = len(arm_questions(cfg, ds))
    from pathlib import Path

    results = records.validate_run_record(Path(runs[-1]["run_dir"]), expected,
                                             {"generator": cfg.generator.model, "judge": cfg.judge.model})
    return AssetCheckResult(passed=all(r["passed"] for r in results),
                            metadata={"run_dir": MetadataValue.path(runs[-1]["run_dir"]),
                                      "steps": md_table(results)})
