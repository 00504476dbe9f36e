"""Index stage: BM25 (Tantivy) and vector (LanceDB) indexes over the representations.

Each asset materializes for every arm; for an arm whose retrieval mode does not search it (core.usage) it
builds nothing and says so (`used_by_arm: false` and the reason).
"""


from dagster import AssetExecutionContext, DataVersion, MaterializeResult, MetadataValue

from rag_ttc_assets.core import artifacts
from rag_ttc_assets.defs.meta import artifact_result
from rag_ttc_assets.defs.arm_registry import arm_asset
from rag_ttc_assets.defs.resources import LabResource

GROUP = "indexes"
UNUSED = DataVersion("unused")  # the data version of an index an arm does not read: nothing was built


def unused_result(reason: str) -> MaterializeResult:
    """The materialization of an artifact the arm never reads: no work, no store write, the reason."""
    return MaterializeResult(metadata={"used_by_arm": MetadataValue.bool(False), "unused_reason": reason},
                             data_version=UNUSED)


@arm_asset(group=GROUP, kinds={"tantivy"}, deps=("representations",),
           artifact=artifacts.BM25_INDEX)
def bm25_index(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """Tantivy BM25 index of the representations, English stemming."""
    arm = lab.inputs(context)
    if (built := arm.bm25) is None:
        return unused_result(arm.unused[artifacts.BM25_INDEX.name])
    return artifact_result(built, {"representations": arm.representations.content_digest},
                           used_by_arm=MetadataValue.bool(True))


@arm_asset(group=GROUP, kinds={"lancedb"}, deps=("representations",),
           artifact=artifacts.VECTOR_INDEX)
def vector_index(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """LanceDB table of representation embeddings (cosine), all-MiniLM-L6-v2 offline by default."""
    arm = lab.inputs(context)
    if (built := arm.vectors) is None:
        return unused_result(arm.unused[artifacts.VECTOR_INDEX.name])
    return artifact_result(built, {"representations": arm.representations.content_digest},
                           used_by_arm=MetadataValue.bool(True),
                           embedding_calls_this_run=0 if built.cache_hit else built.manifest["info"]["embedding_calls"])
