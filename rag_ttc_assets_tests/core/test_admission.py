from __future__ import annotations

import json
import random

import pytest

from rag_ttc_assets.core.admission import (
    AdmittedContext,
    EvidenceItem,
    admission_summary,
    admit_complete_chunks,
    context_row,
    coverage_rows,
    order_evidence,
    select_evidence,
)
from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.records import Evidence, Question, Request


def test_select_evidence_prefix() -> None:
    assert select_evidence(["c1", "c2", "c3"], 2) == ["c1", "c2"]
    assert select_evidence(["c1", "c2"], 5) == ["c1", "c2"]
    assert select_evidence(["c1"], 0) == []
    with pytest.raises(ValueError, match="evidence_k must be >= 0"):
        select_evidence(["c1"], -1)


def test_order_evidence_ranked_and_reversed() -> None:
    ids = ["c1", "c2", "c3"]
    assert order_evidence(ids, "ranked") == ["c1", "c2", "c3"]
    assert order_evidence(ids, "reversed") == ["c3", "c2", "c1"]
    assert ids == ["c1", "c2", "c3"]  # input untouched


def test_order_evidence_shuffled_is_seeded() -> None:
    ids = [f"c{i}" for i in range(10)]
    expected = list(ids)
    random.Random(7).shuffle(expected)
    random.seed(12345)  # global state must not matter
    assert order_evidence(ids, "shuffled", seed=7) == expected
    assert order_evidence(ids, "shuffled", seed=7) == order_evidence(ids, "shuffled", seed=7)
    assert sorted(order_evidence(ids, "shuffled", seed=3)) == sorted(ids)
    assert order_evidence(ids, "shuffled", seed=0) != order_evidence(ids, "shuffled", seed=1)


def test_order_evidence_unknown_order() -> None:
    with pytest.raises(ValueError, match="got 'best'"):
        order_evidence(["c1"], "best")  # type: ignore[arg-type]


def test_later_smaller_chunk_fits_after_omitted_big_one() -> None:
    chunks = [("a", "x" * 4), ("b", "y" * 7), ("c", "z" * 3), ("d", "w" * 2)]
    ctx = admit_complete_chunks(chunks, max_runes=10)
    # a: 0+4<=10 in; b: 4+7=11>10 out; c: 4+3=7 in; d: 7+2=9 in.
    assert [e.chunk_id for e in ctx.evidence] == ["a", "c", "d"]
    assert ctx.omitted_chunk_ids == ["b"]
    assert (ctx.used_runes, ctx.max_runes) == (9, 10)


def test_exact_fit_boundary() -> None:
    ctx = admit_complete_chunks([("a", "abcd"), ("b", "efghij"), ("c", "k")], max_runes=10)
    assert [e.chunk_id for e in ctx.evidence] == ["a", "b"]  # 4 + 6 == 10 fits
    assert ctx.omitted_chunk_ids == ["c"]  # 10 + 1 > 10
    assert ctx.used_runes == 10


def test_runes_are_code_points() -> None:
    text = "h\u00e9\u4e16\U0001f600"  # 4 code points, 10 UTF-8 bytes
    ctx = admit_complete_chunks([("a", text)], max_runes=4)
    assert ctx.evidence == [EvidenceItem(chunk_id="a", text=text, runes=4)]


def test_chunk_larger_than_budget_is_never_split() -> None:
    ctx = admit_complete_chunks([("big", "x" * 11)], max_runes=10)
    assert ctx == AdmittedContext(evidence=[], omitted_chunk_ids=["big"], used_runes=0, max_runes=10)


def test_zero_chunks() -> None:
    assert admit_complete_chunks([], max_runes=5) == AdmittedContext(
        evidence=[], omitted_chunk_ids=[], used_runes=0, max_runes=5
    )


@pytest.mark.parametrize("max_runes", [0, -3])
def test_max_runes_must_be_positive(max_runes: int) -> None:
    with pytest.raises(ValueError, match="max_runes must be a positive integer"):
        admit_complete_chunks([("a", "x")], max_runes=max_runes)


def test_duplicate_chunk_id_rejected() -> None:
    with pytest.raises(ValueError, match=r"chunks\[1\]: duplicate chunk_id 'a'"):
        admit_complete_chunks([("a", "x"), ("a", "y")], max_runes=5)


# --- one question's context, its coverage and the admission summary (core.admission, data in and out) ----------


TEXT = {"a#chunk-0": "x" * 40, "b#chunk-0": "y" * 70, "c#chunk-0": "z" * 20, "d#chunk-0": "w" * 10}
QUESTION = Question(id="q1", text="What is 2 and is it even?", requests=[
    Request(id="q1.r1", text="What is 2?", evidence=[Evidence(doc_id="b", quote="two is 2")]),
    Request(id="q1.r2", text="Is it even?", evidence=[])])
SUPPORT = {"q1.r1": ["b#chunk-0"], "q1.r2": []}
RANKED = ["a#chunk-0", "b#chunk-0", "c#chunk-0", "d#chunk-0"]


def test_context_row_cuts_orders_and_admits_whole_chunks():
    cfg = ArmConfig(evidence_k=3, context_runes=100)
    row = context_row(cfg, "q1", RANKED, TEXT, QUESTION, SUPPORT)
    assert row["selected_chunk_ids"] == ["a#chunk-0", "b#chunk-0", "c#chunk-0"]
    assert row["admitted_chunk_ids"] == ["a#chunk-0", "c#chunk-0"]  # b (70 runes) does not fit after a (40)
    assert row["omitted_chunk_ids"] == ["b#chunk-0"]
    assert (row["used_runes"], row["max_runes"], row["evidence_runes"]) == (60, 100, [40, 20])
    assert row["withheld_chunk_ids"] == [] and row["planted"] == "[]"


def test_context_row_withholds_what_supports_a_request():
    cfg = ArmConfig(evidence_k=3, context_runes=1000, counterfactual="withheld-relevant")
    row = context_row(cfg, "q1", RANKED, TEXT, QUESTION, SUPPORT)
    assert row["admitted_chunk_ids"] == ["a#chunk-0", "c#chunk-0"]
    assert row["withheld_chunk_ids"] == ["b#chunk-0"]
    assert row["used_runes"] == 60


def test_context_row_plants_a_contradiction_first():
    cfg = ArmConfig(evidence_k=1, context_runes=1000, counterfactual="planted-falsehood")
    row = context_row(cfg, "q1", RANKED, TEXT, QUESTION, SUPPORT)
    planted = json.loads(row["planted"])
    assert [p["kind"] for p in planted] == ["number"] and planted[0]["planted"] == "two is 3"
    assert row["admitted_chunk_ids"] == [planted[0]["chunk_id"], "a#chunk-0"]
    assert row["evidence_runes"] == [len("two is 3"), 40]


def test_coverage_and_summary_count_requests_at_each_boundary():
    cfg = ArmConfig(evidence_k=3, context_runes=100)
    row = context_row(cfg, "q1", RANKED, TEXT, QUESTION, SUPPORT)
    cov = coverage_rows([QUESTION], SUPPORT, {"q1": set(RANKED)}, {"q1": row})
    assert [(r["request_id"], r["has_evidence"], r["ranked"], r["selected"], r["admitted"]) for r in cov] == [
        ("q1.r1", True, True, True, False), ("q1.r2", False, False, False, False)]
    s = admission_summary(cov, [row])
    assert (s["requests_with_evidence"], s["requests_ranked"], s["requests_selected"], s["requests_admitted"]) == (
        1, 1, 1, 0)
    assert (s["queries_with_omissions"], s["omitted_chunks"], s["admission_coverage"]) == (1, 1, 0.0)
    assert admission_summary(cov, [row], "tool")["admission_coverage"] is None


def test_hit_rates_count_a_question_only_when_every_request_hits():
    from rag_ttc_assets.core.admission import hit_rates

    def cov(q, r, ranked, selected, admitted, has=True):
        return {"query_id": q, "request_id": r, "has_evidence": has, "ranked": ranked, "selected": selected,
                "admitted": admitted}

    rows = [cov("q1", "r1", True, True, True), cov("q1", "r2", True, True, False),
            cov("q2", "r1", True, False, False), cov("q3", "r1", False, False, False, has=False)]
    h = hit_rates(rows)
    assert (h["questions"], h["requests"]) == (2, 3)
    assert h["ranked"] == {"question_hits": 2, "question_hit_rate": 1.0, "request_hits": 3, "request_hit_rate": 1.0}
    assert h["selected"]["question_hits"] == 1 and h["selected"]["request_hits"] == 2
    assert h["admitted"] == {"question_hits": 0, "question_hit_rate": 0.0, "request_hits": 1,
                             "request_hit_rate": 1 / 3}
    assert hit_rates([])["admitted"]["question_hit_rate"] is None
