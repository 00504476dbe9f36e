"""The BM25 (Tantivy) and vector (LanceDB) indexes over an arm's representations."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag_ttc_assets.adapters import bm25, embeddings, vectors
from rag_ttc_assets.adapters.store import ArtifactStore, Built
from rag_ttc_assets.core import ann, artifacts
from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.dataset import Dataset
from rag_ttc_assets.core.progress import NO_PROGRESS, Progress
from rag_ttc_assets.stages.ingest import read_representations

if TYPE_CHECKING:  # numpy is imported where it is used: importing the code location does not load it
    import numpy as np

BM25_VERSION = artifacts.BM25_INDEX.version


def build_bm25(store: ArtifactStore, cfg: ArmConfig, reps: Built) -> Built:
    key = artifacts.BM25_INDEX.key(cfg, representations=reps.content_digest)

    def builder(tmp):
        df = read_representations(reps)
        # Streamed in slices: Tantivy's writer takes one document at a time, so no whole-corpus Python list.
        bm25.build_index(tmp / "tantivy", (row for part in df.select("chunk_id", "text").iter_slices(10_000)
                                           for row in part.iter_rows()))
        return {"documents": df.height, "analyzer": BM25_VERSION}

    return store.build_once(artifacts.BM25_INDEX.name, key, builder)


def build_vectors(store: ArtifactStore, cfg: ArmConfig, reps: Built, progress: Progress = NO_PROGRESS) -> Built:
    import numpy as np
    key = artifacts.VECTOR_INDEX.key(cfg, representations=reps.content_digest)

    def builder(tmp):
        df = read_representations(reps)
        with progress.task("embedding", "embedded", df.height, "chunks") as task:
            vecs = embeddings.encode(df["text"].to_list(), cfg.embedding_model, store=store, advance=task.advance)
        np.save(tmp / "embeddings.npy", vecs)
        version = vectors.build_table(tmp / "lancedb", df["chunk_id"].to_list(), vecs)
        # The approximate index is built into the same temporary folder as the table: the store publishes the
        # folder only when both are complete, so an interrupted build leaves no half index a later run reads.
        params = ann.resolve_build(cfg.vector_index, int(vecs.shape[0]), int(vecs.shape[1]))
        index = vectors.build_index(tmp / "lancedb", params) if cfg.vector_index.approximate else {}
        return {"vectors": int(vecs.shape[0]), "dimension": int(vecs.shape[1]), "embedding_calls": int(vecs.shape[0]),
                "embedding_model": cfg.embedding_model, "lancedb_table": vectors.TABLE,
                "lancedb_version": index.get("lancedb_version", version), "vector_index": params,
                **({"index": index} if index else {})}

    return store.build_once(artifacts.VECTOR_INDEX.name, key, builder)


def check_vector_index(cfg: ArmConfig, vectors_count: int, source: str) -> dict:
    """The approximate index's build parameters resolved for this corpus (core.ann), checked before anything is
    embedded or built: a parameter that cannot work is a ValueError naming `source` (the arms file and arm) and the
    field."""
    if not cfg.vector_index.approximate:
        return {"type": "flat"}
    try:
        # The deepest search the arm makes: each source's candidates for fusion, or a tool arm's lookup.
        ann.check_query(cfg.vector_index, max(artifacts.SOURCE_DEPTH, cfg.retrieve_k, cfg.lookup_top_n))
        return ann.resolve_build(cfg.vector_index, vectors_count, embeddings.dimension(cfg.embedding_model))
    except ann.IndexParamsError as e:
        raise ann.IndexParamsError(f"{source}: field {e}") from None


def build_question_embeddings(store: ArtifactStore, cfg: ArmConfig, ds: Dataset,
                              progress: Progress = NO_PROGRESS) -> Built:
    import numpy as np
    key = artifacts.QUESTION_EMBEDDINGS.key(cfg, evaluation_digest=ds.evaluation_digest)

    def builder(tmp):
        qs = ds.evaluation.questions
        with progress.task("embedding", "embedded", len(qs), "questions") as task:
            vecs = embeddings.encode([q.text for q in qs], cfg.embedding_model, store=store, advance=task.advance)
        np.save(tmp / "questions.npy", vecs)
        (tmp / "question_ids.txt").write_text("\n".join(q.id for q in qs) + "\n", encoding="utf-8")
        return {"questions": len(qs), "embedding_calls": len(qs)}

    return store.build_once(artifacts.QUESTION_EMBEDDINGS.name, key, builder)


def read_question_embeddings(built: Built) -> dict[str, np.ndarray]:
    import numpy as np
    ids = (built.path / "question_ids.txt").read_text(encoding="utf-8").split("\n")[:-1]
    vecs = np.load(built.path / "questions.npy")
    return dict(zip(ids, vecs))


def open_vector_index(cfg: ArmConfig, vec_built: Built) -> vectors.VectorIndex:
    """The arm's LanceDB table, searched with its query parameters resolved against the index it was built with
    (core.ann.resolve_query: the arm's own, then the lab's defaults for its type)."""
    build = (vec_built.manifest.get("info") or {}).get("vector_index", {})
    return vectors.VectorIndex(vec_built.location("lancedb"), query=ann.resolve_query(cfg.vector_index, build))
