"""Ingest stage: digest binding, chunks, representations."""


import json
from pathlib import Path

from dagster import (AssetCheckExecutionContext, AssetCheckResult, AssetExecutionContext, MaterializeResult,
                     MetadataValue)

from rag_ttc_assets.adapters.store import ArmJson
from rag_ttc_assets.core import artifacts
from rag_ttc_assets.core.dataset import dataset_counts, sha256_digest
from rag_ttc_assets.core.representations import BUILDERS
from rag_ttc_assets.defs.meta import artifact_result, numbers, version_of
from rag_ttc_assets.defs.registry import arm_asset, arm_check
from rag_ttc_assets.defs.resources import LabResource

GROUP = "ingest"


@arm_asset(artifact=artifacts.CORPUS_BINDING, group=GROUP, kinds={"python", "json"},
           writes=(ArmJson.BINDING,))
def corpus_binding(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """The arm's corpus and evaluation, validated, with the evaluation's digest binding checked."""
    arm = lab.inputs(context)
    cfg, ds = arm.cfg, arm.dataset
    # What this arm was run against, so later comparisons read the labels it used, not today's files.
    arm.write_arm_json(ArmJson.BINDING, {
        "dataset": cfg.dataset, "corpus_digest": ds.corpus_digest, "evaluation_digest": ds.evaluation_digest,
        "corpus_file": str(ds.corpus_path), "evaluation_file": str(ds.evaluation_path)})
    return MaterializeResult(
        metadata={
            "dataset": cfg.dataset,
            "corpus_file": MetadataValue.path(str(ds.corpus_path)),
            "evaluation_file": MetadataValue.path(str(ds.evaluation_path)),
            "corpus_digest": ds.corpus_digest,
            "evaluation_digest": ds.evaluation_digest,
            "evaluation_corpus_digest": ds.evaluation.corpus_digest,
            "effective_config": MetadataValue.json(cfg.model_dump(mode="json")),
            **numbers(dataset_counts(ds)),
        },
        data_version=version_of(ds.corpus_digest + ds.evaluation_digest),
    )


@arm_asset(group=GROUP, kinds={"python", "parquet"}, deps=("corpus_binding",),
           artifact=artifacts.CHUNKS)
def chunks(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """Rune-based chunks with overlap and stable IDs `<doc_id>#chunk-<n>`."""
    arm = lab.inputs(context)
    return artifact_result(arm.chunks, {"corpus": arm.dataset.corpus_digest})


@arm_asset(group=GROUP, kinds={"python", "parquet"}, deps=("chunks",),
           artifact=artifacts.REPRESENTATIONS)
def representations(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """The text each chunk is indexed and embedded as (plain, or titled with its section title)."""
    arm = lab.inputs(context)
    return artifact_result(arm.representations, {"chunks": arm.chunks.content_digest},
                           builder=BUILDERS[arm.cfg.representation])


@arm_check(asset="corpus_binding",
           description="the evaluation names the digest of the exact corpus bytes it was run with")
def digest_binding(context: AssetCheckExecutionContext, lab: LabResource) -> AssetCheckResult:
    lab_, _ = lab.arm(context.partition_key)
    binding = lab_.store.read_arm_json(context.partition_key, ArmJson.BINDING)
    evaluation = json.loads(Path(binding["evaluation_file"]).read_text(encoding="utf-8"))
    actual = sha256_digest(Path(binding["corpus_file"]).read_bytes())
    return AssetCheckResult(passed=evaluation.get("corpus_digest") == actual == binding["corpus_digest"],
                            metadata={"evaluation_corpus_digest": str(evaluation.get("corpus_digest")),
                                      "corpus_file_digest": actual, "recorded_digest": binding["corpus_digest"]})
