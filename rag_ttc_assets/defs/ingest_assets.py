"""Ingest stage: digest binding, chunks, representations."""


import json
from pathlib import Path

from dagster import (AssetCheckExecutionContext, AssetCheckResult, AssetCheckSeverity, AssetExecutionContext,
                     MaterializeResult, MetadataValue)

from rag_ttc_assets.adapters.store import ArmJson, Table
from rag_ttc_assets.core import artifacts
from rag_ttc_assets.core.arm_summaries import ImportMapping
from rag_ttc_assets.core.dataset import dataset_counts, labels_line, sha256_digest
from rag_ttc_assets.labelling.label_check import check_labels
from rag_ttc_assets.core.representations import RECORD as REPRESENTATION_RECORD
from rag_ttc_assets.core.roles import PROVIDER_POOL, REPRESENTATION_BUILDER
from rag_ttc_assets.defs.meta import artifact_metadata, artifact_result, numbers, version_of
from rag_ttc_assets.defs.index_assets import unused_result
from rag_ttc_assets.defs.arm_registry import arm_asset, arm_check
from rag_ttc_assets.defs.resources import LabResource, ProviderResource
from rag_ttc_assets.lab import LABELS_INPUT
from rag_ttc_assets.stages import ingest
from rag_ttc_assets.imported import import_stage

GROUP = "ingest"


@arm_asset(artifact=artifacts.CORPUS_BINDING, group=GROUP, kinds={"python", "json"},
           writes=(ArmJson.BINDING,))
def corpus_binding(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """The arm's corpus, validated (with its evaluation), bound by the digest of its bytes."""
    arm = lab.inputs(context)
    cfg, ds = arm.cfg, arm.dataset
    # What this arm was run against, so later comparisons read the corpus it used, not today's files. The labels
    # it used are the `labels` asset's (labels.json): a labels update leaves this asset, and the chunks, current.
    arm.write_arm_json(ArmJson.BINDING, {
        "dataset": cfg.dataset, "corpus_digest": ds.corpus_digest, "corpus_file": str(ds.corpus_path),
        "evaluation_file": str(ds.evaluation_path)})
    return MaterializeResult(
        metadata={
            "dataset": cfg.dataset,
            "corpus_file": MetadataValue.path(str(ds.corpus_path)),
            "corpus_digest": ds.corpus_digest,
            "effective_config": MetadataValue.json(cfg.model_dump(mode="json")),
            "documents": MetadataValue.int(len(ds.corpus)),
        },
        data_version=version_of(ds.corpus_digest),
    )


@arm_asset(artifact=artifacts.LABELS, group=GROUP, kinds={"python", "json"}, deps=("corpus_binding",),
           reads=(LABELS_INPUT,), writes=(ArmJson.LABELS,))
def labels(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """The labels the arm measures with (the evaluation's questions, requests, gold quotes, targets), by digest."""
    arm = lab.inputs(context)
    cfg, ds = arm.cfg, arm.dataset
    # Their data version is the labels files' digest: a `rag-ttc labels update` makes this asset and what reads it
    # stale, never the corpus side (docs/labels.md).
    digest = arm.lab.fingerprint_inputs(cfg)[LABELS_INPUT]
    arm.write_arm_json(ArmJson.LABELS, {
        "dataset": cfg.dataset, "evaluation_digest": ds.evaluation_digest, "labels_digest": digest,
        "corpus_digest": ds.corpus_digest, "corpus_file": str(ds.corpus_path),
        "evaluation_file": str(ds.evaluation_path),
        "labels": ds.labels})  # how many labels it measured with, and which it left out as stale
    counts = arm.store.read_summary(arm.arm, ArmJson.LABELS).labels  # as written, through its model
    return MaterializeResult(
        metadata={
            "dataset": cfg.dataset,
            "evaluation_file": MetadataValue.path(str(ds.evaluation_path)),
            "evaluation_digest": ds.evaluation_digest,
            "evaluation_corpus_digest": ds.evaluation.corpus_digest,
            "labels_digest": digest,
            **numbers(dataset_counts(ds)),
            # Labels `rag-ttc labels update` marked stale are out of every measurement: the UI says how many.
            "labels": labels_line(ds.labels) if counts.excluded else
            f"{counts.labels} of {counts.labels} labels current",
            **numbers({"labels_current": counts.current, "labels_excluded": counts.excluded}),
        },
        data_version=version_of(sha256_digest(digest.encode())),
    )


@arm_asset(group=GROUP, kinds={"python", "parquet"}, deps=("corpus_binding", "labels"),
           artifact=artifacts.IMPORTED_SOURCE,
           writes=(Table.IMPORTED_CHUNKS, Table.IMPORTED_ROWS, ArmJson.IMPORT_MAPPING, ArmJson.IMPORTED_SPANS))
def imported_source(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """An imported arm's traces or rows (a file, or a Phoenix project), bound by their digest, mapped to the questions."""
    arm = lab.inputs(context)
    if arm.cfg.supply != "imported":
        return unused_result(arm.unused[artifacts.IMPORTED_SOURCE.name])
    # Read, parsed and mapped before anything is written: a bad file fails here, naming file, trace and field.
    read = import_stage.read_import(arm.lab.arms_file, arm.cfg, arm.dataset, arm.questions)
    mapping = read.mapping
    m = ImportMapping.model_validate(mapping)  # the mapping as import_mapping.json's model reads it
    arm.write_table(Table.IMPORTED_CHUNKS, read.chunks)
    arm.write_table(Table.IMPORTED_ROWS, read.rows)
    if read.records is not None:
        arm.write_arm_json(ArmJson.IMPORTED_SPANS, read.records)
    arm.write_arm_json(ArmJson.IMPORT_MAPPING, mapping)
    where = ({"source_file": MetadataValue.path(m.source_file)} if m.source_file else
             {"endpoint": MetadataValue.url(m.endpoint), "project": m.project, "spans": m.spans})
    return MaterializeResult(
        metadata={"used_by_arm": MetadataValue.bool(True), **where, "source_digest": m.source_digest,
                  "format": m.format, "answer_format": m.answer_format, "citation_style": m.citation_style,
                  **numbers({k: v for k, v in mapping.items() if isinstance(v, int) and not isinstance(v, bool)}),
                  "unmatched_trace_ids": MetadataValue.json(m.unmatched_trace_ids),
                  "unanswered_question_ids": MetadataValue.json(m.unanswered_question_ids),
                  "external_document_ids": MetadataValue.json(m.external_document_ids)},
        data_version=version_of(m.source_digest + arm.dataset.evaluation_digest + arm.dataset.corpus_digest),
    )


@arm_asset(group=GROUP, kinds={"python", "parquet"}, deps=("corpus_binding",),
           artifact=artifacts.CHUNKS)
def chunks(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """Rune-based chunks with overlap and stable IDs `<doc_id>#chunk-<n>`."""
    arm = lab.inputs(context)
    if arm.chunks is None:
        return unused_result(arm.unused[artifacts.CHUNKS.name])
    return artifact_result(arm.chunks, {"corpus": arm.dataset.corpus_digest})


@arm_asset(group=GROUP, kinds={"python", "litellm", "parquet"}, deps=("chunks",),
           artifact=artifacts.REPRESENTATIONS, pool=PROVIDER_POOL,
           writes=(ArmJson.REPRESENTATIONS,))
def representations(context: AssetExecutionContext, lab: LabResource, provider: ProviderResource) -> MaterializeResult:
    """The text each chunk is indexed and embedded as (plain, titled, or contextual: a builder's context first)."""
    arm = lab.inputs(context)
    if artifacts.REPRESENTATIONS.name in arm.unused:  # (arm.representations would build it: this asset does)
        return unused_result(arm.unused[artifacts.REPRESENTATIONS.name])
    arm.check_vector_index()  # an index parameter this corpus cannot take fails before anything is built
    built = ingest.build_representations(arm.store, arm.cfg, arm.dataset, arm.chunks, arm.builder_prompt,
                                         lambda: provider.caller(REPRESENTATION_BUILDER, arm.lab, arm.cfg),
                                         progress=arm.progress, retry_faults=True)
    info = built.manifest["info"]
    # What this arm's indexes were built from, so a comparison reads the era it ran with, not today's config.
    record = {k: info.get(k) for k in REPRESENTATION_RECORD}
    arm.write_arm_json(ArmJson.REPRESENTATIONS,
                       {**record, "content_digest": built.content_digest, "key_digest": built.key_digest})
    rep = arm.store.read_summary(arm.arm, ArmJson.REPRESENTATIONS)  # as written, through its model
    meta = artifact_metadata(built, {"chunks": arm.chunks.content_digest})
    texts = {"builder": rep.builder, "builder_model": rep.builder_model, "era": rep.era,
             "prompt_digest": rep.prompt_digest}
    meta.update({k: MetadataValue.text(str(v)) for k, v in texts.items()},
                offline_baseline=MetadataValue.bool(rep.offline_baseline),
                statuses=MetadataValue.json(rep.statuses),
                # Rows a rerun should retry (provider faults, budget stops): `rag-ttc run` re-runs the asset for them.
                incomplete_rows=MetadataValue.int(rep.retryable))
    return MaterializeResult(metadata=meta, data_version=version_of(built.content_digest))


@arm_check(asset="labels",
           description="the evaluation names the digest of the exact corpus bytes it was run with")
def digest_binding(context: AssetCheckExecutionContext, lab: LabResource) -> AssetCheckResult:
    lab_, _ = lab.arm(context.partition_key)
    binding = lab_.store.read_summary(context.partition_key, ArmJson.LABELS)
    evaluation = json.loads(Path(binding.evaluation_file).read_text(encoding="utf-8"))
    actual = sha256_digest(Path(binding.corpus_file).read_bytes())
    return AssetCheckResult(passed=evaluation.get("corpus_digest") == actual == binding.corpus_digest,
                            metadata={"evaluation_corpus_digest": str(evaluation.get("corpus_digest")),
                                      "corpus_file_digest": actual, "recorded_digest": binding.corpus_digest})


@arm_check(asset="labels",
           description="every label (gold quote, target) is current against the corpus: none changed, gone or "
                       "ambiguous, none marked stale (rag-ttc labels check lists them)")
def labels_current(context: AssetCheckExecutionContext, lab: LabResource) -> AssetCheckResult:
    lab_, _ = lab.arm(context.partition_key)
    binding = lab_.store.read_summary(context.partition_key, ArmJson.LABELS)
    cbytes = Path(binding.corpus_file).read_bytes()
    evaluation = json.loads(Path(binding.evaluation_file).read_text(encoding="utf-8"))
    report = check_labels(binding.dataset, evaluation, binding.evaluation_file,
                          json.loads(cbytes)["documents"], binding.corpus_file, sha256_digest(cbytes))
    person = report.needs_person
    return AssetCheckResult(
        passed=not person and not report.problems, severity=AssetCheckSeverity.WARN,
        metadata={"labels": report.summary(), **numbers(report.counts),
                  # the first ones; `rag-ttc labels check DATASET` lists every one with both texts
                  "need_a_person": MetadataValue.json([{"label": r.label, "status": r.status, "how": r.how,
                                                        "doc_id": r.doc_id} for r in person[:50]]),
                  "problems": MetadataValue.json([str(p) for p in report.problems])})
