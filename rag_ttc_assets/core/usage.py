"""Which shared artifacts an arm reads, and why it skips the others: an arm builds only what it reads.

Every arm ranks the evaluation's questions (its retrieval rows feed retrieval_summary, the comparisons and the
run record, whatever its supply), with the sources its `retrieval` names: `bm25` searches Tantivy only, `vector`
the LanceDB table and the question embeddings only, `rrf` both. A tool arm's `lookup` searches the same sources
(stages.arm_supply.Lookup), so supply never adds or removes one; a preloaded arm still ranks for its retrieval
metrics, so its retrieval mode decides as well. An index the arm does not read is never built for it: its asset
records `used_by_arm: false` with the reason, and the artifact's fields are not part of the arm's keys or
fingerprints (core.artifacts).

An imported arm (supply: imported, imported.import_source) reads none of the lab's corpus-side builds: its chunks are the
documents of the system it imports, ranked by that system. Its chunks, representations and indexes materialize
with `used_by_arm: false`; every other arm does not read `imported_source`.
"""

from __future__ import annotations

from rag_ttc_assets.core.arms import ArmConfig

BM25_INDEX, VECTOR_INDEX, QUESTION_EMBEDDINGS = "bm25_index", "vector_index", "question_embeddings"
CHUNKS, REPRESENTATIONS, IMPORTED_SOURCE = "chunks", "representations", "imported_source"
# The shared artifacts of the corpus side, in build order (core.artifacts declares each).
SHARED = ("corpus_binding", IMPORTED_SOURCE, CHUNKS, REPRESENTATIONS, BM25_INDEX, VECTOR_INDEX, QUESTION_EMBEDDINGS,
          "retrieval_rows")
# What each retrieval mode searches.
SOURCES = {"bm25": (BM25_INDEX,), "vector": (VECTOR_INDEX, QUESTION_EMBEDDINGS),
           "rrf": (BM25_INDEX, VECTOR_INDEX, QUESTION_EMBEDDINGS)}
# The arm fields that decide what is read: they move an optional artifact's fingerprint, never a used one's key.
DECIDED_BY = ("retrieval",)
OPTIONAL = (BM25_INDEX, VECTOR_INDEX, QUESTION_EMBEDDINGS)
# Decided by the supply alone: the lab's own chunks and representations (unused by an imported arm), the imported
# source (unused by every other arm).
SUPPLY_DECIDED = (CHUNKS, REPRESENTATIONS, IMPORTED_SOURCE)


def unused(cfg: ArmConfig) -> dict[str, str]:
    """The shared artifacts `cfg` never reads, each with the reason (one line, shown in the asset's metadata)."""
    if cfg.supply == "imported":
        why = (f"supply: imported: its retrieval rows, admitted contexts and answers are read from "
               f"{cfg.source.label if cfg.source else 'its source'}; its chunks are that system's documents")
        return {a: why for a in (CHUNKS, REPRESENTATIONS, *OPTIONAL)}
    out = {IMPORTED_SOURCE: f"supply: {cfg.supply}: the lab builds its own retrieval rows; nothing is imported"}
    read = SOURCES[cfg.retrieval]
    where = "its retrieval rows and its lookup tool search" if cfg.supply == "tool" else "its retrieval rows search"
    searched = {BM25_INDEX: "the Tantivy index", VECTOR_INDEX: "the LanceDB table",
                QUESTION_EMBEDDINGS: "the LanceDB table"}
    only = " and ".join(dict.fromkeys(searched[a] for a in read))
    out.update({a: f"retrieval: {cfg.retrieval}: {where} {only} only" for a in OPTIONAL if a not in read})
    return out


def uses(cfg: ArmConfig) -> frozenset[str]:
    """The shared artifacts `cfg` reads (SHARED less `unused`)."""
    skipped = unused(cfg)
    return frozenset(a for a in SHARED if a not in skipped)
