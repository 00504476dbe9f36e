"""Generation stage: answers through litellm, then the answer contract and its summary."""

from typing import TYPE_CHECKING

from dagster import (AssetCheckExecutionContext, AssetCheckResult, AssetCheckSeverity, AssetExecutionContext,
                     MaterializeResult, MetadataValue)

from rag_ttc_assets.core import artifacts
from rag_ttc_assets.adapters.store import ArmJson, Table
from rag_ttc_assets.defs.meta import md_table, numbers, run_status_lookup, version_of
from rag_ttc_assets.defs.arm_registry import arm_asset, arm_check
from rag_ttc_assets.core.roles import ANSWERS, PROVIDER_POOL
from rag_ttc_assets.defs.resources import LabResource, ProviderResource
from rag_ttc_assets.stages import generation as stage
from rag_ttc_assets.stages import arm_supply
from rag_ttc_assets.imported import import_stage
from rag_ttc_assets.stages import run_record as records

if TYPE_CHECKING:
    import polars as pl

GROUP = "generation"
ANS, CON = Table.ANSWERS.c, Table.CONTRACT_RESULTS.c  # the declared column names (core.tables)


@arm_asset(group=GROUP, kinds={"litellm", "parquet"}, deps=("admitted_contexts",),
           artifact=artifacts.ANSWERS, pool=PROVIDER_POOL,
           writes=(Table.ANSWERS,))
def answers(context: AssetExecutionContext, lab: LabResource, provider: ProviderResource) -> MaterializeResult:
    """One litellm call per question over its admitted evidence (or lookup turns); response, tokens, cost, status."""
    arm = lab.inputs(context)
    if arm.imported:  # the system's own answers, from its LLM spans: no provider call
        mapping = arm.arm_json(ArmJson.IMPORT_MAPPING)
        df = import_stage.answers(arm.cfg, arm.table(Table.IMPORTED_ROWS), mapping["source_digest"])
        return imported_answers_result(arm, df, mapping, arm.write_table(Table.ANSWERS, df))
    cfg, prompt = arm.cfg, arm.prompt("prompt")
    caller = provider.caller(ANSWERS, arm.lab, cfg)
    run_dir = records.open_run(arm.lab.runs, arm.arm, context.run.run_id, run_status_lookup(context), "answers")
    with stage.RowLog(run_dir / records.PARTIAL_ANSWERS) as log:
        df = stage.generate(cfg, arm.questions, arm.table(Table.ADMITTED_CONTEXTS), arm.chunk_text, prompt,
                            caller, log, arm_supply.supply_tools(cfg, arm.dataset, arm.lookup, arm.retry_prompt),
                            progress=arm.progress)
    digest = arm.write_table(Table.ANSWERS, df)
    calls = stage.calls_summary(df)
    statuses = dict(df.group_by(ANS.status).len().iter_rows())
    return MaterializeResult(
        metadata={
            "dagster/row_count": df.height, **numbers(calls.to_json()),
            "model": cfg.generator.model, "provider_role": ANSWERS.name,
            "offline_baseline": MetadataValue.bool(df[ANS.offline_baseline].all() if df.height else False),
            "prompt": prompt.name, "prompt_digest": prompt.digest,
            # none / oracle (the generator saw the request annotation) / counterfactual:<kind>
            "label_use": cfg.label_use,
            "provider_statuses": MetadataValue.json(statuses),
            "budget": cfg.generation_budget, "table_digest": digest,
            "run_record": MetadataValue.path(str(run_dir)),
            # Rows a rerun should retry: provider faults and budget stops (parse failures are answers).
            "incomplete_rows": int((df[ANS.status] != "ok").sum()),
            "supply": cfg.supply, "lookup_calls": int(df[ANS.lookup_calls].sum()),
            "citation_checks": MetadataValue.json(dict(df.group_by(ANS.citation_check).len().iter_rows())),
        },
        data_version=version_of(digest),
    )


def imported_answers_result(arm, df: "pl.DataFrame", mapping: dict, digest: str) -> MaterializeResult:
    """An imported arm's answers materialization: the system's LLM span outputs (imported.import_source)."""
    statuses = dict(df.group_by(ANS.status).len().iter_rows())
    return MaterializeResult(
        metadata={"dagster/row_count": df.height, "provider_calls": 0, "supply": arm.cfg.supply,
                  **({"source_file": MetadataValue.path(mapping["source_file"])} if mapping["source_file"] else
                     {"endpoint": MetadataValue.url(mapping["endpoint"]), "project": mapping["project"]}),
                  "source_digest": mapping["source_digest"],
                  "answer_format": arm.cfg.source.answer_format,
                  # The model names and token counts are what the system's traces say about themselves.
                  "models_self_reported": MetadataValue.json(sorted({m for m in df[ANS.model].to_list() if m})),
                  "row_statuses": MetadataValue.json(statuses), "label_use": arm.cfg.label_use,
                  "table_digest": digest},
        data_version=version_of(digest),
    )


@arm_asset(group=GROUP, kinds={"pydantic", "parquet"}, deps=("answers",), artifact=artifacts.CONTRACT_RESULTS,
           writes=(Table.CONTRACT_RESULTS,))
def contract_results(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """Each answer row through the contract: exactly one status (valid, parse/contract failure, abstained, fault)."""
    import polars as pl

    arm = lab.inputs(context)
    answers_df = arm.table(Table.ANSWERS)
    df = (import_stage.contract(arm.cfg, answers_df, arm.chunk_text) if arm.imported else stage.contract(answers_df))
    digest = arm.write_table(Table.CONTRACT_RESULTS, df)
    failures = df.filter(pl.col(CON.status) != "valid").head(10)
    return MaterializeResult(
        metadata={"dagster/row_count": df.height,
                  "statuses": MetadataValue.json(dict(df.group_by(CON.status).len().iter_rows())),
                  "not_valid": md_table(failures.select(CON.query_id, CON.status, CON.reason).to_dicts()),
                  "table_digest": digest},
        data_version=version_of(digest),
    )


@arm_asset(group=GROUP, kinds={"json"}, deps=("contract_results",),
           artifact=artifacts.CONTRACT_SUMMARY,
           writes=(ArmJson.CONTRACT_SUMMARY,))
def contract_summary(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """Total, valid, parse failures, contract failures by reason, abstentions, provider faults."""
    arm = lab.inputs(context)
    s = stage.contract_summary(arm.table(Table.CONTRACT_RESULTS))
    digest = arm.write_arm_json(ArmJson.CONTRACT_SUMMARY, s)
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
