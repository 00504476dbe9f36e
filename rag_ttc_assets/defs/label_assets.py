"""Labels beside the arms: requests derived from gold answers (per dataset), and the judges measured against people."""

from dagster import AssetExecutionContext, Config, MaterializeResult, MetadataValue, asset

from rag_ttc_assets.defs.meta import md_table
from rag_ttc_assets.defs.resources import LabResource
from rag_ttc_assets.core.arms import ModelConfig
from rag_ttc_assets.core.roles import REQUEST_DERIVER
from rag_ttc_assets.stages.calls import role_caller
from rag_ttc_assets.stages.derive_requests import PROMPT, derive
from rag_ttc_assets.core.request_derivation import OFFLINE_MODEL, describe
from rag_ttc_assets.judging import judge_agreement_stage as stage

GROUP = "labels"


class DerivedRequestsConfig(Config):
    """Which datasets (default: every dataset an arm names) and which deriver: the offline rule `local/claims-v1`, or
    any litellm model string (with its api_base and the NAME of its key's environment variable)."""

    datasets: list[str] = []
    model: str = "local/claims-v1"
    api_base: str | None = None
    api_key_env: str | None = None
    budget: int = 1000


@asset(group_name=GROUP, kinds={"python", "json"}, code_version="derived_requests/1")
def derived_requests(context: AssetExecutionContext, config: DerivedRequestsConfig,
                     lab: LabResource) -> MaterializeResult:
    """Requests derived from gold answers for questions without any, written beside each dataset's evaluation."""

    lab_ = lab.lab()
    names = config.datasets or sorted({cfg.dataset for cfg in lab_.arms.arms.values()})
    model = ModelConfig(model=config.model, api_base=config.api_base, api_key_env=config.api_key_env)
    # A model other than the offline rule: its prompt, and per dataset its own Caller (each dataset its budget).
    offline = model.model == OFFLINE_MODEL
    prompt = None if offline else lab_.prompt(PROMPT, "derive_requests")
    out = [derive(lab_.dataset_dir(name), name, model, prompt,
                  None if offline else role_caller(REQUEST_DERIVER, lab_, model=model, budget=config.budget))
           for name in names]
    rows = [{"dataset": o.dataset, "derived_by": o.derived_by, "questions": o.questions, "requests": o.requests,
             "with_evidence": o.requests_with_evidence, "not_derived": len(o.not_derived),
             "provider_calls": o.provider_calls, "cache_hits": o.cache_hits} for o in out]
    return MaterializeResult(metadata={"derived": md_table(rows), "results": MetadataValue.json(
        [o.model_dump() for o in out]), "requests": sum(o.requests for o in out)})


class JudgeAgreementConfig(Config):
    """The human labels (a JSON Lines file, docs/judges.md) and the bootstrap's seed."""

    labels: str
    seed: int = 0


@asset(group_name=GROUP, kinds={"python", "json"}, deps=["failure_flow"], code_version="judge_agreement/4")
def judge_agreement(context: AssetExecutionContext, config: JudgeAgreementConfig,
                    lab: LabResource) -> MaterializeResult:
    """Every judge that scored the labelled rows against the human labels, the annotators with each other as ceiling."""
    from pathlib import Path

    lab_ = lab.lab()
    report = stage.agreement(stage.read_agreement_inputs(lab_.store, lab_.arms_file, lab_.datasets_dir, lab_.arms,
                                                         Path(config.labels).expanduser().resolve()), config.seed)
    path = stage.write(lab_.store, report)
    meta = {f"table_{i}": MetadataValue.md(f"{title}\n\n" + md_table(
        [dict(zip(cols, row, strict=True)) for row in rows]).value) for i, (title, cols, rows) in
        enumerate(stage.tables(report), 1)}
    return MaterializeResult(metadata={**meta, "report": MetadataValue.path(str(path)),
                                       # the first ones; every one is in the report file
                                       "disagreements": MetadataValue.json(
                                           [d.to_json() for d in report.disagreements()[:50]]),
                                       "disagreements_total": MetadataValue.int(len(report.disagreements())),
                                       "arms": MetadataValue.json(report.arms),
                                       "requests_derived": MetadataValue.json(
                                           {a: describe(d) for a, d in report.requests_derived.items()})})


ASSETS = [derived_requests, judge_agreement]
