"""Retrieval stage: ranked rows (RRF), retrieval metrics from the ranked list, admitted contexts."""

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue

from rag_ttc_assets.adapters.store import ArmJson, Table
from rag_ttc_assets.core import artifacts
from rag_ttc_assets.core.arm_summaries import RetrievalMeasures
from rag_ttc_assets.core.measured import measured_text
from rag_ttc_assets.defs.meta import md_table, numbers, version_of
from rag_ttc_assets.defs.arm_registry import arm_asset
from rag_ttc_assets.defs.resources import LabResource
from rag_ttc_assets.imported import import_stage
from rag_ttc_assets.stages import retrieval as stage

GROUP = "retrieval"
ROWS, CTX = Table.RETRIEVAL_ROWS.c, Table.ADMITTED_CONTEXTS.c  # the declared column names (core.tables)


@arm_asset(group=GROUP, kinds={"python", "parquet"},
           deps=("labels", "bm25_index", "vector_index", "imported_source"),
           artifact=(artifacts.QUESTION_EMBEDDINGS, artifacts.RETRIEVAL_ROWS),
           writes=(Table.RETRIEVAL_ROWS,))
def retrieval_rows(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """Per question: ranked_chunk_ids (retrieve_k) fused by RRF, with each source's rank and score."""
    arm = lab.inputs(context)
    cfg, bm, vec = arm.cfg, arm.bm25, arm.vectors
    if arm.imported:  # the system's own RETRIEVER span's documents, in rank order (imported_source)
        df = import_stage.retrieval_rows(arm.table(Table.IMPORTED_ROWS), arm.chunk_docs)
    else:
        # Shared in the store: arms that differ only downstream of retrieval (a K sweep) retrieve once.
        df = stage.retrieve_once(arm.store, cfg, arm.dataset, arm.chunks, bm, vec, arm.question_embeddings)
    digest = arm.write_table(Table.RETRIEVAL_ROWS, df)
    return MaterializeResult(
        metadata={
            "dagster/row_count": df.height,
            "retrieval": cfg.retrieval, "retrieve_k": cfg.retrieve_k, "rrf_k": cfg.rrf_k,
            # An index the arm does not read is null here (core.usage; its own asset says why).
            "upstream_digests": MetadataValue.json({
                "bm25_index": bm and bm.content_digest, "vector_index": vec and vec.content_digest,
                "lancedb_version": vec and vec.manifest["info"]["lancedb_version"],
                "imported_source": arm.imported and arm.arm_json(ArmJson.IMPORT_MAPPING)["source_digest"]}),
            "table_digest": digest,
            "path": MetadataValue.path(str(arm.store.table_path(arm.arm, Table.RETRIEVAL_ROWS))),
            "preview": md_table(df.head(5).select(ROWS.query_id, ROWS.ranked_chunk_ids).to_dicts()),
        },
        data_version=version_of(digest),
    )


@arm_asset(group=GROUP, kinds={"python", "json"}, deps=("retrieval_rows",),
           artifact=artifacts.RETRIEVAL_SUMMARY,
           writes=(ArmJson.RETRIEVAL_SUMMARY,))
def retrieval_summary(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """trec_eval's measures (recip_rank, recall_10, ndcg_cut_10, success_10, map, P_5...) from the ranked list only."""
    arm = lab.inputs(context)
    result = stage.retrieval_metrics(arm.questions, arm.table(Table.RETRIEVAL_ROWS))
    digest = arm.write_arm_json(ArmJson.RETRIEVAL_SUMMARY, result)
    s = result["summary"]
    return MaterializeResult(
        metadata={
            **numbers(s),
            "metric_definitions": s["metric_definitions"],
            "undefined_query_ids": MetadataValue.json(s["undefined_query_ids"]),
            "measured": measured_text(RetrievalMeasures.model_validate(s)) + " questions",
            "summary": md_table([{k: s[k] for k in ("recip_rank", "recall_10", "ndcg_cut_10", "success_10",
                                                    "evaluated", "undefined")}]),
        },
        data_version=version_of(digest),
    )


@arm_asset(group=GROUP, kinds={"python", "parquet"}, deps=("retrieval_rows",),
           artifact=artifacts.ADMITTED_CONTEXTS,
           writes=(Table.ADMITTED_CONTEXTS, Table.REQUEST_COVERAGE, ArmJson.ADMISSION_SUMMARY))
def admitted_contexts(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """The evidence_k prefix, then whole chunks admitted under context_runes (or the preloaded set); omissions."""
    import polars as pl

    arm = lab.inputs(context)
    cfg = arm.cfg
    contexts, coverage, summary = stage.admitted_contexts(
        cfg, arm.questions, arm.table(Table.RETRIEVAL_ROWS), arm.support, arm.chunk_text_of,
        preloaded=arm.preloaded_chunks, imported_rows=arm.table(Table.IMPORTED_ROWS) if arm.imported else None,
        lookup=arm.lookup)
    digest = arm.write_table(Table.ADMITTED_CONTEXTS, contexts)
    arm.write_table(Table.REQUEST_COVERAGE, coverage)
    arm.write_arm_json(ArmJson.ADMISSION_SUMMARY, summary)
    worst = contexts.sort(pl.col(CTX.omitted_chunk_ids).list.len(), descending=True).head(5)
    return MaterializeResult(
        metadata={
            "dagster/row_count": contexts.height,
            "evidence_k": cfg.evidence_k, "context_runes": cfg.context_runes, "evidence_order": cfg.evidence_order,
            "supply": cfg.supply, **numbers(summary),
            "most_omissions": md_table(worst.select(CTX.query_id, CTX.admitted_chunk_ids, CTX.omitted_chunk_ids,
                                                    CTX.used_runes, CTX.max_runes).to_dicts()),
            "table_digest": digest,
        },
        data_version=version_of(digest),
    )
