"""Evaluation stage: the two-stage judge (with the gold judge beside it) and its summary."""

from dagster import (AssetCheckExecutionContext, AssetCheckResult, AssetExecutionContext, MaterializeResult,
                     MetadataValue)

from rag_ttc_assets.adapters.report_server import annotate_url
from rag_ttc_assets.adapters.store import ArmJson, Table
from rag_ttc_assets.core import artifacts
from rag_ttc_assets.labelling.annotation import annotate_command
from rag_ttc_assets.core.request_derivation import describe
from rag_ttc_assets.core.judge_summaries import Instrument
from rag_ttc_assets.core.summaries import generator_models, has_support_judge
from rag_ttc_assets.core.roles import JUDGE, PROVIDER_POOL, REQUEST_JUDGE
from rag_ttc_assets.defs.meta import md_table, numbers, run_status_lookup, version_of
from rag_ttc_assets.defs.arm_registry import arm_asset, arm_check, fingerprints
from rag_ttc_assets.defs.resources import LabResource, ProviderResource
from rag_ttc_assets.judging import statement_judge_stage as stage
from rag_ttc_assets.stages import arm_supply
from rag_ttc_assets.judging import request_judge_stage
from rag_ttc_assets.stages import run_record as records

GROUP = "evaluation"
JV = Table.JUDGE_VERDICTS.c  # the declared column names (core.tables)


@arm_asset(group=GROUP, kinds={"litellm", "parquet"}, deps=("contract_results",),
           artifact=artifacts.JUDGE_VERDICTS, pool=PROVIDER_POOL,
           writes=(Table.JUDGE_VERDICTS,))
def judge_verdicts(context: AssetExecutionContext, lab: LabResource, provider: ProviderResource) -> MaterializeResult:
    """Statements and per-statement verdicts for valid rows; invalid rows and abstentions kept unjudged."""
    arm = lab.inputs(context)
    cfg = arm.cfg
    prompts = stage.JudgePrompts(statements=arm.prompt("judge_statements_prompt"),
                                 verdicts=arm.prompt("judge_verdicts_prompt"), gold=arm.prompt("judge_gold_prompt"))
    # Statements, verdicts and the gold judge's verdicts; none with `judge: none` (no support judge is called).
    caller = provider.caller(JUDGE, arm.lab, cfg) if has_support_judge(cfg) else None
    run_dir = records.open_run(arm.lab.runs, arm.arm, context.run.run_id, run_status_lookup(context), "judge")
    with stage.RowLog(run_dir / records.PARTIAL_JUDGE) as log:
        df = stage.judge(cfg, arm.questions, arm.table(Table.CONTRACT_RESULTS),
                         arm_supply.arm_contexts(arm.store, arm.arm, cfg), arm.chunk_text, prompts, caller, log,
                         progress=arm.progress)
    digest = arm.write_table(Table.JUDGE_VERDICTS, df)
    return MaterializeResult(
        metadata={"dagster/row_count": df.height, "judge_model": cfg.judge.model,
                  "prompt_digests": MetadataValue.json({k: p.digest for k, p in prompts.items()}),
                  "statuses": MetadataValue.json(dict(df.group_by(JV.status).len().iter_rows())),
                  # An offline judge (local/lexical) reaches no provider: its calls are no provider calls.
                  "provider_calls": 0 if caller is None or caller.offline_baseline else caller.provider_calls,
                  "cache_hits": caller.cache_hits if caller is not None else 0,
                  "incomplete_rows": int(df[JV.status].str.starts_with("judge_").sum()),
                  "table_digest": digest},
        data_version=version_of(digest),
    )


@arm_asset(group=GROUP, kinds={"litellm", "parquet"}, deps=("contract_results",),
           artifact=artifacts.REQUEST_JUDGMENTS, pool=PROVIDER_POOL,
           writes=(Table.REQUEST_JUDGMENTS, ArmJson.REQUEST_JUDGE_SUMMARY))
def request_judgments(context: AssetExecutionContext, lab: LabResource, provider: ProviderResource
                      ) -> MaterializeResult:
    """Per request: addressed, its excerpt and citations, a verdict against the gold material (one instrument)."""
    arm = lab.inputs(context)
    cfg, prompt = arm.cfg, arm.prompt("judge_requests_prompt")
    # The prompt of the entailment jurors (or judge), one request per call; None when the arm has none.
    entailed = arm.prompt("judge_entailment_prompt") if cfg.entailment_jurors else None
    # One request judge, or a panel's jurors (judging.panel), each with its own budget.
    callers = provider.callers(REQUEST_JUDGE, arm.lab, cfg)
    run_dir = records.open_run(arm.lab.runs, arm.arm, context.run.run_id, run_status_lookup(context), "request_judge")
    with stage.RowLog(run_dir / records.PARTIAL_REQUEST_JUDGE) as log:
        if cfg.request_judges:
            df = request_judge_stage.judge_panel(cfg, arm.questions, arm.table(Table.CONTRACT_RESULTS), prompt, callers,
                                           log, progress=arm.progress, entailment_prompt=entailed)
        else:
            df = request_judge_stage.judge_requests(cfg, arm.questions, arm.table(Table.CONTRACT_RESULTS), prompt,
                                              callers[0], log, progress=arm.progress, entailment_prompt=entailed)
    digest = arm.write_table(Table.REQUEST_JUDGMENTS, df)
    s = request_judge_stage.request_judge_summary(df)
    panel = request_judge_stage.panel_summary(cfg, df)
    instrument = request_judge_stage.instrument(cfg, prompt, arm.questions, entailed)
    inst = Instrument.model_validate(instrument)  # the instrument as the summary's model reads it
    generators = generator_models(cfg, arm.table(Table.ANSWERS)[Table.ANSWERS.c.model].to_list())
    same = bool(set(generators) & set((inst.jurors or []) if panel else [inst.model]))
    arm.write_arm_json(ArmJson.REQUEST_JUDGE_SUMMARY, {**s, "request_judge": instrument,
                                                       "label_use": cfg.label_use, "same_model_as_generator": same,
                                                       **({"panel": panel} if panel else {})})
    rs = arm.store.read_summary(arm.arm, ArmJson.REQUEST_JUDGE_SUMMARY)  # as written, through its model
    return MaterializeResult(
        metadata={"dagster/row_count": df.height, "request_judge_model": inst.model,
                  "prompt_digest": inst.prompt_digest,
                  "offline_baseline_judge": MetadataValue.bool(inst.offline_baseline),
                  "label_use": cfg.label_use, "requests_derived": describe(inst.requests_derived and
                                                                            inst.requests_derived.model_dump()),
                  "statuses": MetadataValue.json(rs.statuses),
                  "verdicts": MetadataValue.json(rs.verdicts.model_dump()), "provider_calls": rs.provider_calls,
                  "cache_hits": rs.cache_hits, "incomplete_rows": rs.not_measured, "table_digest": digest,
                  **({"panel": MetadataValue.json(panel)} if panel else {}),
                  # the labelling page of this arm's answers (docs/annotate.md), and its address when one is known
                  "annotate": annotate_command([arm.arm]),
                  **({"annotate_url": MetadataValue.url(url)} if (url := annotate_url()) else {})},
        data_version=version_of(digest),
    )


@arm_asset(group=GROUP, kinds={"json"}, deps=("judge_verdicts", "request_judgments", "admitted_contexts"),
           artifact=artifacts.JUDGE_SUMMARY,
           writes=(ArmJson.JUDGE_SUMMARY,))
def judge_summary(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """Judged, abstained and invalid rows, faithfulness and relevance, the judge model, the judges measured."""
    arm = lab.inputs(context)
    cfg = arm.cfg
    s = stage.judge_summary(cfg, arm.table(Table.JUDGE_VERDICTS), arm.table(Table.ANSWERS))
    jm = stage.measure_judges(cfg, arm.questions, *(arm.table(t) for t in (
        Table.CONTRACT_RESULTS, Table.JUDGE_VERDICTS, Table.REQUEST_JUDGMENTS, Table.ADMITTED_CONTEXTS)))
    rjs = arm.store.read_summary(arm.arm, ArmJson.REQUEST_JUDGE_SUMMARY)
    # a panel of request judges: the jurors' Fleiss' kappa and Krippendorff's alpha
    panel = rjs.panel.model_dump() if rjs.panel else None
    s = {**s, "judge_measurement": jm, "request_judge_model": rjs.request_judge.model,
         **({"request_judge_panel": panel} if panel else {})}
    digest = arm.write_arm_json(ArmJson.JUDGE_SUMMARY, s)
    js = arm.store.read_summary(arm.arm, ArmJson.JUDGE_SUMMARY)  # as written, through its model
    return MaterializeResult(
        metadata={**numbers({k: v for k, v in s.items() if v is not None and not isinstance(v, (dict, str))}),
                  "judge_measurement": md_table([{"judge": j, "measure": m, **jm[m][j]}
                                                 for m in ("sensitivity", "false_alarms")
                                                 for j in ("gold_judge", "request_judge")]),
                  "label_use": cfg.label_use,
                  **({"request_judge_panel": md_table([{k: v for k, v in panel.items()
                                                        if not isinstance(v, (list, dict))}])}
                     if panel else {}),
                  "judge_model": js.judge_model, "generator_model": js.generator_model,
                  "same_model_as_generator": MetadataValue.bool(js.same_model_as_generator),
                  "offline_baseline_judge": MetadataValue.bool(js.offline_baseline_judge),
                  "statuses": MetadataValue.json(js.statuses),
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
    s = store.read_summary(arm, ArmJson.JUDGE_SUMMARY)
    return AssetCheckResult(passed=s.answer_rows == n_answers == sum(s.statuses.values()),
                            metadata={"answer_rows": n_answers, "judge_rows": s.answer_rows})


@arm_asset(group=GROUP, kinds={"json"}, deps=("judge_summary", "retrieval_summary", "contract_summary",
                                              "failure_flow"), artifact=artifacts.RUN_RECORD)
def run_record(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """The seed's self-contained run directory: config, input copies, preparation, results, summary, status."""
    arm = lab.inputs(context)
    cfg = arm.cfg
    built = {"chunks": arm.chunks, "representations": arm.representations, "bm25_index": arm.bm25,
             "vector_index": arm.vectors}
    run_dir = records.open_run(arm.lab.runs, arm.arm, context.run.run_id, run_status_lookup(context), "run_record")
    counts = records.write_run_record(arm.store, arm.arm, cfg, run_dir, arm.dataset, built,
                                      fingerprints(cfg, arm.lab.fingerprint_inputs(cfg)),
                                      prompts={field: arm.prompt(field) for field in records.recorded_prompts(cfg)},
                                      arms_file=arm.lab.arms_file, provider_cache=arm.lab.provider_cache_root)
    return MaterializeResult(metadata={"run_dir": MetadataValue.path(str(run_dir)), **numbers(counts),
                                       "summary": MetadataValue.md((run_dir / "summary.md").read_text())})


@arm_check(asset="run_record", description="the seed's post-run validation sequence (section 10.4)")
def post_run_validation(context: AssetCheckExecutionContext, lab: LabResource) -> AssetCheckResult:
    arm = lab.inputs(context)
    cfg = arm.cfg
    runs = [r for r in records.list_runs(arm.lab.runs, arm.arm) if r.status == records.COMPLETE]
    if not runs:
        return AssetCheckResult(passed=False, metadata={"detail": "no complete run record"})
    expected = len(arm.questions)

    results = records.validate_run_record(records.run_path(arm.lab.runs, runs[-1].run_dir), expected,
                                          None if cfg.supply == "imported" else cfg.generator.model, cfg.judge.model)
    return AssetCheckResult(passed=all(r.passed for r in results),
                            metadata={"run_dir": MetadataValue.path(runs[-1].run_dir),
                                      "steps": md_table([r.model_dump() for r in results])})
