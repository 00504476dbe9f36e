from rag_ttc_assets.adapters.bm25 import BM25Index, build_index

DOCS = [
    ("a#chunk-0", "The for statement is used to iterate over the elements of a sequence."),
    ("b#chunk-0", "The raise statement raises an exception; raise from chains exceptions."),
    ("c#chunk-0", "Dictionaries map hashable keys to arbitrary values."),
    ("d#chunk-0", "An iterator is returned for the sequence; iteration stops on StopIteration."),
]


def test_real_tantivy_index_ranks_by_bm25_with_stemming(tmp_path):
    build_index(tmp_path / "ix", DOCS)
    ix = BM25Index(tmp_path / "ix")
    assert ix.num_docs == 4
    hits = ix.search("how do I iterate over sequences?", 10)
    ids = [c for c, _ in hits]
    # "sequences" stems to "sequenc", matching "sequence" in a and d; "iterate" matches only a.
    assert ids[0] == "a#chunk-0"
    assert set(ids) == {"a#chunk-0", "d#chunk-0"}
    assert all(s > 0 for _, s in hits)


def test_questions_with_query_syntax_never_fail(tmp_path):
    build_index(tmp_path / "ix", DOCS)
    ix = BM25Index(tmp_path / "ix")
    for q in ['What does "raise X from Y" do: AND NOT (chained)?', "key:value [a TO b]", "AND OR NOT", "(((", "-"]:
        ix.search(q, 5)  # parse_query would raise on these
    assert [c for c, _ in ix.search('what does "raise ... from" do: NOT chaining?', 1)] == ["b#chunk-0"]


def test_empty_query_and_ties_are_deterministic(tmp_path):
    build_index(tmp_path / "ix", [("z#chunk-0", "alpha beta"), ("y#chunk-0", "alpha beta"), ("x#chunk-0", "gamma")])
    ix = BM25Index(tmp_path / "ix")
    assert ix.search("the of and", 5) == []  # stop words only: no terms
    hits = ix.search("alpha", 5)
    assert [c for c, _ in hits] == ["y#chunk-0", "z#chunk-0"]  # equal scores: ascending chunk_id
    assert hits[0][1] == hits[1][1]
