"""Generation stage: answers through litellm, then the answer contract and its summary."""

import polars as pl
from dagster import (AssetCheckExecutionContext, AssetCheckResult, AssetCheckSeverity, AssetExecutionContext,
                     MaterializeResult, MetadataValue)

from rag_ttc_assets.core import artifacts
from rag_ttc_assets.adapters.store import ArmJson, Table
from rag_ttc_assets.defs.meta import md_table, numbers, run_status_lookup, version_of
from rag_ttc_assets.defs.progress import step_progress
from rag_ttc_assets.defs.registry import arm_asset, arm_check
from rag_ttc_assets.defs.resources import LabResource
from rag_ttc_assets.stages import generation as stage
from rag_ttc_assets.lab import prompt_fields
from rag_ttc_assets.stages import ingest, supply
from rag_ttc_assets.stages import run_record as records
from rag_ttc_assets.stages.calls import Caller
from rag_ttc_assets.stages.retrieval import arm_questions

GROUP = "generation"


@arm_asset(group=GROUP, kinds={"litellm", "parquet"}, deps=("admitted_contexts",),
           artifact=artifacts.ANSWERS, pool="provider",
           writes=(Table.ANSWERS,))
def answers(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """One litellm call per question over its admitted evidence (or lookup turns); response, tokens, cost, status."""
    arm = context.partition_key
    lab_, cfg = lab.arm(arm)
    ds = ingest.bind_dataset(lab_, cfg)
    chunks = ingest.build_chunks(lab_, cfg, ds)
    chunk_text = {c.chunk_id: c.text for c in ingest.read_chunks(chunks)}
    fields = prompt_fields(cfg)
    prompt = lab_.prompt(cfg.prompt, fields["prompt"])
    tools = supply.supply_tools(lab_, cfg, ds, chunks)
    caller = Caller(cfg.generator, lab_.provider_cache_root, "generation", cfg.generation_budget,
                    cfg.allow_unpriced_provider, stage.GENERATOR_ROLE, archive=lab_.store.messages)
    run_dir = records.open_run(lab_, arm, context.run.run_id, run_status_lookup(context), "answers")
    log = stage.RowLog(run_dir / records.PARTIAL_ANSWERS)
    try:
        df = stage.generate(cfg, arm_questions(cfg, ds), lab_.store.read_table(arm, Table.ADMITTED_CONTEXTS),
                            chunk_text, prompt, caller, log, tools, progress=step_progress(context))
    finally:
        log.close()
    digest = lab_.store.write_table(arm, Table.ANSWERS, df)
    calls = stage.calls_summary(df)
    statuses = dict(df.group_by("status").len().iter_rows())
    return MaterializeResult(
        metadata={
            "dagster/row_count": df.height, **numbers(calls),
            "model": cfg.generator.model, "provider_role": stage.GENERATOR_ROLE,
            "offline_baseline": MetadataValue.bool(df["offline_baseline"].all() if df.height else False),
            "prompt": prompt.name, "prompt_digest": prompt.digest,
            # none / oracle (the generator saw the request annotation) / counterfactual:<kind>
            "label_use": cfg.label_use,
            "provider_statuses": MetadataValue.json(statuses),
            "budget": cfg.generation_budget, "table_digest": digest,
            "run_record": MetadataValue.path(str(run_dir)),
            # Rows a rerun should retry: provider faults and budget stops (parse failures are answers).
            "incomplete_rows": int((df["status"] != "ok").sum()),
            "supply": cfg.supply, "lookup_calls": int(df["lookup_calls"].sum()),
            "citation_checks": MetadataValue.json(dict(df.group_by("citation_check").len().iter_rows())),
        },
        data_version=version_of(digest),
    )


@arm_asset(group=GROUP, kinds={"pydantic", "parquet"}, deps=("answers",), artifact=artifacts.CONTRACT_RESULTS,
           writes=(Table.CONTRACT_RESULTS,))
def contract_results(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """Each answer row through the contract: exactly one status (valid, parse/contract failure, abstained, fault)."""
    arm = context.partition_key
    lab_, _ = lab.arm(arm)
    df = stage.contract(lab_.store.read_table(arm, Table.ANSWERS))
    digest = lab_.store.write_table(arm, Table.CONTRACT_RESULTS, df)
    failures = df.filter(pl.col("status") != "valid").head(10)
    return MaterializeResult(
        metadata={"dagster/row_count": df.height,
                  "statuses": MetadataValue.json(dict(df.group_by("status").len().iter_rows())),
                  "not_valid": md_table(failures.select("query_id", "status", "reason").to_dicts()),
                  "table_digest": digest},
        data_version=version_of(digest),
    )


@arm_asset(group=GROUP, kinds={"json"}, deps=("contract_results",),
           artifact=artifacts.CONTRACT_SUMMARY,
           writes=(ArmJson.CONTRACT_SUMMARY,))
def contract_summary(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """Total, valid, parse failures, contract failures by reason, abstentions, provider faults."""
    arm = context.partition_key
    lab_, _ = lab.arm(arm)
    s = stage.contract_summary(lab_.store.read_table(arm, Table.CONTRACT_RESULTS))
    digest = lab_.store.write_arm_json(arm, ArmJson.CONTRACT_SUMMARY, s)
    return MaterializeResult(
        metadata={**numbers(s), "contract_failure_reasons": MetadataValue.json(s["contract_failure_reasons"]),
                  "provider_faults": MetadataValue.json(s["provider_faults"]),
                  "summary": md_table([{k: s[k] for k in ("total", "valid", "parse_failures", "contract_failures",
                                                          "abstentions")}])},
        data_version=version_of(digest),
    )


@arm_check(asset="contract_summary", description="valid + parse + contract failures + abstentions + faults = total")
def contract_sums_close(context: AssetCheckExecutionContext, lab: LabResource) -> AssetCheckResult:
    s = lab.lab().store.read_arm_json(context.partition_key, ArmJson.CONTRACT_SUMMARY)
    return AssetCheckResult(passed=bool(s["sums_close"]), severity=AssetCheckSeverity.ERROR,
                            metadata={k: s[k] for k in ("total", "valid", "parse_failures", "contract_failures",
                                                        "abstentions")})
