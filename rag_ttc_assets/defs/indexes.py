"""Index stage: BM25 (Tantivy) and vector (LanceDB) indexes over the representations."""


from dagster import AssetExecutionContext, MaterializeResult

from rag_ttc_assets.core import artifacts
from rag_ttc_assets.defs.meta import artifact_result
from rag_ttc_assets.defs.registry import arm_asset
from rag_ttc_assets.defs.resources import LabResource

GROUP = "indexes"


@arm_asset(group=GROUP, kinds={"tantivy"}, deps=("representations",),
           artifact=artifacts.BM25_INDEX)
def bm25_index(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """Tantivy BM25 index of the representations, English stemming."""
    arm = lab.inputs(context)
    return artifact_result(arm.bm25, {"representations": arm.representations.content_digest})


@arm_asset(group=GROUP, kinds={"lancedb"}, deps=("representations",),
           artifact=artifacts.VECTOR_INDEX)
def vector_index(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """LanceDB table of representation embeddings (cosine), all-MiniLM-L6-v2 offline by default."""
    arm = lab.inputs(context)
    built = arm.vectors
    return artifact_result(built, {"representations": arm.representations.content_digest},
                           embedding_calls_this_run=0 if built.cache_hit else built.manifest["info"]["embedding_calls"])
