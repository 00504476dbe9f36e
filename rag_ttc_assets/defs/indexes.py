"""Index stage: BM25 (Tantivy) and vector (LanceDB) indexes over the representations."""


from dagster import AssetExecutionContext, MaterializeResult

from rag_ttc_assets.core import artifacts
from rag_ttc_assets.defs.meta import artifact_metadata, version_of
from rag_ttc_assets.defs.progress import step_progress
from rag_ttc_assets.defs.registry import arm_asset
from rag_ttc_assets.defs.resources import LabResource
from rag_ttc_assets.stages import indexes, ingest

GROUP = "indexes"


def _upstream(context, lab):
    lab_, cfg = lab.arm(context.partition_key)
    ds = ingest.bind_dataset(lab_, cfg)
    reps = ingest.build_representations(lab_, cfg, ds, ingest.build_chunks(lab_, cfg, ds))
    return lab_, cfg, ds, reps


@arm_asset(group=GROUP, kinds={"tantivy"}, deps=("representations",),
           artifact=artifacts.BM25_INDEX)
def bm25_index(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """Tantivy BM25 index of the representations, English stemming."""
    lab_, cfg, ds, reps = _upstream(context, lab)
    built = indexes.build_bm25(lab_, cfg, ds, reps)
    meta = artifact_metadata(built, {"representations": reps.content_digest})
    return MaterializeResult(metadata=meta, data_version=version_of(built.content_digest))


@arm_asset(group=GROUP, kinds={"lancedb"}, deps=("representations",),
           artifact=artifacts.VECTOR_INDEX)
def vector_index(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """LanceDB table of representation embeddings (cosine), all-MiniLM-L6-v2 offline by default."""
    lab_, cfg, ds, reps = _upstream(context, lab)
    built = indexes.build_vectors(lab_, cfg, ds, reps, progress=step_progress(context))
    meta = artifact_metadata(built, {"representations": reps.content_digest})
    meta["embedding_calls_this_run"] = 0 if built.cache_hit else built.manifest["info"]["embedding_calls"]
    return MaterializeResult(metadata=meta, data_version=version_of(built.content_digest))
