"""What an arm reads (core.usage): every retrieval mode against every supply mode, with the reasons."""

import pytest

from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.arms import ImportedSource
from rag_ttc_assets.core.usage import (BM25_INDEX, CHUNKS, IMPORTED_SOURCE, QUESTION_EMBEDDINGS, REPRESENTATIONS, SHARED,
                                      VECTOR_INDEX, unused, uses)

ALWAYS = {"corpus_binding", "chunks", "representations", "retrieval_rows"}
SUPPLIES = {"retrieval": {}, "preloaded": {"supply": "preloaded"}, "tool": {"supply": "tool"}}


@pytest.mark.parametrize("supply", list(SUPPLIES))
@pytest.mark.parametrize("retrieval,read", [("bm25", {BM25_INDEX}),
                                            ("vector", {VECTOR_INDEX, QUESTION_EMBEDDINGS}),
                                            ("rrf", {BM25_INDEX, VECTOR_INDEX, QUESTION_EMBEDDINGS})])
def test_an_arm_reads_the_sources_its_retrieval_mode_searches_whatever_its_supply(retrieval, read, supply):
    # A tool arm's lookup searches the same sources as its retrieval rows; a preloaded arm still ranks for its
    # retrieval metrics: supply adds or removes no index.
    cfg = ArmConfig(retrieval=retrieval, **SUPPLIES[supply])
    assert uses(cfg) == ALWAYS | read
    assert set(unused(cfg)) == set(SHARED) - ALWAYS - read - {IMPORTED_SOURCE} | {IMPORTED_SOURCE}
    assert uses(cfg) | set(unused(cfg)) == set(SHARED)


NOTHING_IMPORTED = "supply: retrieval: the lab builds its own retrieval rows; nothing is imported"


def test_each_unused_artifact_says_why_in_the_arm_s_words():
    assert unused(ArmConfig(retrieval="bm25")) == {
        IMPORTED_SOURCE: NOTHING_IMPORTED,
        VECTOR_INDEX: "retrieval: bm25: its retrieval rows search the Tantivy index only",
        QUESTION_EMBEDDINGS: "retrieval: bm25: its retrieval rows search the Tantivy index only"}
    assert unused(ArmConfig(retrieval="vector", supply="tool")) == {
        IMPORTED_SOURCE: "supply: tool: the lab builds its own retrieval rows; nothing is imported",
        BM25_INDEX: "retrieval: vector: its retrieval rows and its lookup tool search the LanceDB table only"}
    assert unused(ArmConfig()) == {IMPORTED_SOURCE: NOTHING_IMPORTED}


@pytest.mark.parametrize("retrieval", ["bm25", "vector", "rrf"])
def test_an_imported_arm_reads_none_of_the_lab_s_chunks_representations_or_indexes(retrieval):
    cfg = ArmConfig(retrieval=retrieval, supply="imported",
                    source=ImportedSource(file="traces.json", format="otlp_json"))
    why = ("supply: imported: its retrieval rows, admitted contexts and answers are read from traces.json; "
           "its chunks are that system's documents")
    assert unused(cfg) == dict.fromkeys([CHUNKS, REPRESENTATIONS, BM25_INDEX, VECTOR_INDEX, QUESTION_EMBEDDINGS], why)
    assert uses(cfg) == {"corpus_binding", IMPORTED_SOURCE, "retrieval_rows"}
