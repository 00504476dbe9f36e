from __future__ import annotations

import pytest

from rag_ttc_assets.core.fusion import FusedHit, rrf


def test_two_sources_hand_computed() -> None:
    hits = rrf({"bm25": ["a", "b", "c"], "vector": ["c", "a", "d"]})
    assert [h.chunk_id for h in hits] == ["a", "c", "b", "d"]
    assert hits[0] == FusedHit(chunk_id="a", score=1 / (60 + 1) + 1 / (60 + 2), ranks={"bm25": 1, "vector": 2})
    assert hits[1].score == pytest.approx(1 / (60 + 3) + 1 / (60 + 1))
    assert hits[1].ranks == {"bm25": 3, "vector": 1}
    assert hits[2] == FusedHit(chunk_id="b", score=1 / (60 + 2), ranks={"bm25": 2, "vector": None})
    assert hits[3] == FusedHit(chunk_id="d", score=1 / (60 + 3), ranks={"bm25": None, "vector": 3})


def test_ties_break_by_chunk_id_ascending() -> None:
    hits = rrf({"bm25": ["y", "x"], "vector": ["x", "y"]})
    assert [h.chunk_id for h in hits] == ["x", "y"]
    assert hits[0].score == hits[1].score == 1 / 61 + 1 / 62


def test_three_source_tie_is_exact_whatever_the_source_order() -> None:
    # p, q, r each hold ranks {1, 2, 7}, through different sources; summed left to right in
    # floating point these three orders give different last bits.
    fill = ["f3", "f4", "f5", "f6"]
    hits = rrf({"s1": ["p", "q", *fill, "r"], "s2": ["q", "r", *fill, "p"], "s3": ["r", "p", *fill, "q"]})
    assert [h.chunk_id for h in hits] == ["f3", "p", "q", "r", "f4", "f5", "f6"]  # f3: 3/63 > 1/61+1/62+1/67
    assert hits[1].score == hits[2].score == hits[3].score
    assert hits[1].score == pytest.approx(1 / 61 + 1 / 62 + 1 / 67)


def test_custom_k_and_limit() -> None:
    hits = rrf({"bm25": ["a", "b"], "vector": ["b"]}, k=0, limit=1)
    assert hits == [FusedHit(chunk_id="b", score=1 / 2 + 1 / 1, ranks={"bm25": 2, "vector": 1})]
    assert rrf({"bm25": ["a"]}, limit=0) == []


def test_single_source_keeps_its_order() -> None:
    hits = rrf({"bm25": ["z", "a", "m"]})
    assert [(h.chunk_id, h.score) for h in hits] == [("z", 1 / 61), ("a", 1 / 62), ("m", 1 / 63)]


def test_empty_inputs() -> None:
    assert rrf({}) == []
    assert rrf({"bm25": [], "vector": []}) == []


def test_invalid_inputs() -> None:
    with pytest.raises(ValueError, match=r"ranking 'vector': chunk 'a' appears twice \(again at rank 3\)"):
        rrf({"bm25": ["a"], "vector": ["a", "b", "a"]})
    with pytest.raises(ValueError, match="k must be >= 0"):
        rrf({"bm25": ["a"]}, k=-1)
    with pytest.raises(ValueError, match="limit must be >= 0"):
        rrf({"bm25": ["a"]}, limit=-1)
