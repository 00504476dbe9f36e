"""Which shared artifacts an arm reads, and why it skips the others: an arm builds only what it reads.

Every arm ranks the evaluation's questions (its retrieval rows feed retrieval_summary, the comparisons and the
run record, whatever its supply), with the sources its `retrieval` names: `bm25` searches Tantivy only, `vector`
the LanceDB table and the question embeddings only, `rrf` both. A tool arm's `lookup` searches the same sources
(stages.supply.Lookup), so supply never adds or removes one; a preloaded arm still ranks for its retrieval
metrics, so its retrieval mode decides as well. An index the arm does not read is never built for it: its asset
records `used_by_arm: false` with the reason, and the artifact's fields are not part of the arm's keys or
fingerprints (core.artifacts).
"""

from __future__ import annotations

from rag_ttc_assets.core.arms import ArmConfig

BM25_INDEX, VECTOR_INDEX, QUESTION_EMBEDDINGS = "bm25_index", "vector_index", "question_embeddings"
# The shared artifacts of the corpus side, in build order (core.artifacts declares each).
SHARED = ("corpus_binding", "chunks", "representations", BM25_INDEX, VECTOR_INDEX, QUESTION_EMBEDDINGS,
          "retrieval_rows")
# What each retrieval mode searches.
SOURCES = {"bm25": (BM25_INDEX,), "vector": (VECTOR_INDEX, QUESTION_EMBEDDINGS),
           "rrf": (BM25_INDEX, VECTOR_INDEX, QUESTION_EMBEDDINGS)}
# The arm fields that decide what is read: they move an optional artifact's fingerprint, never a used one's key.
DECIDED_BY = ("retrieval",)
OPTIONAL = (BM25_INDEX, VECTOR_INDEX, QUESTION_EMBEDDINGS)


def unused(cfg: ArmConfig) -> dict[str, str]:
    """The shared artifacts `cfg` never reads, each with the reason (one line, shown in the asset's metadata)."""
    read = SOURCES[cfg.retrieval]
    where = "its retrieval rows and its lookup tool search" if cfg.supply == "tool" else "its retrieval rows search"
    searched = {BM25_INDEX: "the Tantivy index", VECTOR_INDEX: "the LanceDB table",
                QUESTION_EMBEDDINGS: "the LanceDB table"}
    only = " and ".join(dict.fromkeys(searched[a] for a in read))
    return {a: f"retrieval: {cfg.retrieval}: {where} {only} only" for a in OPTIONAL if a not in read}


def uses(cfg: ArmConfig) -> frozenset[str]:
    """The shared artifacts `cfg` reads (SHARED less `unused`)."""
    skipped = unused(cfg)
    return frozenset(a for a in SHARED if a not in skipped)
