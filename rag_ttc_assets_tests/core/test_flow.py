from __future__ import annotations

import json

import pytest

from rag_ttc_assets.core.flow import FLOW_BRANCHES, FlowRow, flow_branch, flow_rows, flow_table, hit_rate
from rag_ttc_assets.core.records import Evidence, Question, Request


def question(qid: str, n: int = 2, answerable: bool = True) -> Question:
    """Requests r1 (pass, gold quote 1) and r2 (raise, gold quote 2), then r3 (del, gold quote 3)."""
    asks = [("What does pass do?", "pass is a null operation"),
            ("When is raise used?", "raise re-raises the exception"),
            ("Why use del?", "deletion removes the binding")]
    return Question(id=qid, text=" ".join(t for t, _ in asks[:n]), answerable=answerable, requests=[
        Request(id=f"{qid}.r{i}", text=text, evidence=[Evidence(doc_id="d", quote=quote)])
        for i, (text, quote) in enumerate(asks[:n], start=1)])


def cov(rid: str, sup: list[str], ranked: bool = True, selected: bool = True, admitted: bool = True) -> dict:
    return {"query_id": rid.split(".")[0], "request_id": rid, "has_evidence": bool(sup), "supporting_chunk_ids": sup,
            "ranked": ranked, "selected": selected, "admitted": admitted}


def contract(status: str = "valid", answer: str | None = "An answer.", cites: list[str] | None = None,
             items: list[dict] | None = None, abstained: bool | None = False) -> dict:
    return {"status": status, "reason": "", "answer": answer, "citation_chunk_ids": cites or [],
            "abstained": abstained, "request_items": json.dumps(items or [])}


def item(request: str, cites: list[str], supported: bool = True) -> dict:
    return {"request": request, "answer": "An answer.", "citation_chunk_ids": cites, "supported": supported}


def judge(gold: list[dict] | None = None, faithfulness: float | None = 1.0, judged: bool = True) -> dict:
    return {"status": "judged" if judged else "judge_timeout", "judged": judged, "faithfulness": faithfulness,
            "gold_verdicts": json.dumps(gold or [])}


def verdict(n: int, supported: bool, evidence: list[int], contradicts: bool = False) -> dict:
    return {"statement": n, "supported": supported, "evidence": evidence, "contradicts_gold": contradicts}


P = question("p")
ADMITTED = cov("p.r1", ["c1"])
CITES = contract(cites=["c1"])


def test_branch_order() -> None:
    assert FLOW_BRANCHES == ("not_retrieved", "cut_by_evidence_k", "omitted_by_context", "contract_failure",
                             "admitted_not_cited", "judged_unsupported", "ok")


@pytest.mark.parametrize(("coverage", "branch"), [
    (cov("p.r1", [], ranked=False, selected=False, admitted=False), "not_retrieved"),  # no supporting chunk at all
    (cov("p.r1", ["c1"], ranked=False, selected=False, admitted=False), "not_retrieved"),
    (cov("p.r1", ["c1"], selected=False, admitted=False), "cut_by_evidence_k"),
    (cov("p.r1", ["c1"], admitted=False), "omitted_by_context"),
])
def test_retrieval_side_comes_first_whatever_the_answer(coverage: dict, branch: str) -> None:
    # A valid, cited, judged-supported answer does not lift a request whose evidence never arrived.
    assert flow_branch(P, coverage, CITES, judge([verdict(1, True, [1])])) == branch
    assert flow_branch(P, coverage, None, None) == branch


@pytest.mark.parametrize("row", [
    contract(status="parse_failure", answer=None),
    contract(status="timeout", answer=None, abstained=None),
    contract(status="rate_limited", answer=None, abstained=None),
    contract(status="contract_failure", answer=None),  # schema failure
    contract(status="contract_failure", cites=["c1"]),  # parsed, cites support, still rejected
    None,
], ids=["parse_failure", "timeout", "rate_limited", "schema", "parsed-contract-failure", "no-row"])
def test_contract_failure(row: dict | None) -> None:
    assert flow_branch(P, ADMITTED, row, None) == "contract_failure"


@pytest.mark.parametrize("row", [
    contract(cites=["c9"]),
    contract(status="abstained", answer="Insufficient.", abstained=True),
    # The top level cites c1, but the answer has request items and r1's item cites c9.
    contract(cites=["c1"], items=[item("p.r1", ["c9"]), item("p.r2", ["c1"])]),
    contract(cites=["c1"], items=[item("p.r2", ["c1"])]),  # no item for r1
], ids=["valid-other-chunk", "abstained", "item-cites-other", "no-item"])
def test_admitted_not_cited(row: dict) -> None:
    assert flow_branch(P, ADMITTED, row, judge([verdict(1, True, [1])])) == "admitted_not_cited"


@pytest.mark.parametrize("judge_row", [
    judge([verdict(1, True, [2]), verdict(2, False, [1])]),  # the supported statement is r2's, not r1's
    judge([], faithfulness=0.0),  # no gold verdicts: no statement supported by the admitted evidence
    judge([], faithfulness=None),  # judged, no statements
], ids=["gold-other-request", "faithfulness-0", "no-statements"])
def test_judged_unsupported(judge_row: dict) -> None:
    assert flow_branch(P, ADMITTED, CITES, judge_row) == "judged_unsupported"


@pytest.mark.parametrize("judge_row", [
    None,  # the judge did not run
    judge([], faithfulness=None, judged=False),  # the judge call failed: no verdict
    judge([verdict(1, False, [2]), verdict(2, True, [1, 2])]),
    judge([], faithfulness=0.5),  # gold judge failed: one of two statements supported by the evidence
], ids=["no-judge", "judge-failed", "gold-supported", "faithfulness-half"])
def test_ok(judge_row: dict | None) -> None:
    assert flow_branch(P, ADMITTED, CITES, judge_row) == "ok"


def test_request_items_cite_per_request() -> None:
    row = contract(cites=["c1"], items=[item("What does pass do?", ["c1"])])  # matched by text
    assert flow_branch(P, ADMITTED, row, None) == "ok"


# Five questions, nine requests; branch and accounting worked out by hand.
A, B, C, D, E = question("a"), question("b", 3), question("c", 1), question("d"), question("e", 1)
CASES = [
    # a.r1 ok and acceptable; a.r2 cited and supported, but the gold judge finds its statement unsupported
    # and contradicting: judged_unsupported, wrong.
    (A, [cov("a.r1", ["c1"]), cov("a.r2", ["c2"])],
     contract(cites=["c1", "c2"], items=[item("a.r1", ["c1"]), item("a.r2", ["c2"])]),
     judge([verdict(1, True, [1]), verdict(2, False, [2], contradicts=True)])),
    # b.r1 never ranked, but the answer text covers its quote (3/3 content words): answered without support, wrong.
    # b.r2 cut by evidence_k, b.r3 omitted by the budget: both unanswered.
    (B, [cov("b.r1", ["c1"], ranked=False, selected=False, admitted=False),
         cov("b.r2", ["c2"], selected=False, admitted=False), cov("b.r3", ["c3"], admitted=False)],
     contract(answer="The pass statement is a null operation.", cites=["c7"]), None),
    # c.r1 admitted, the answer never parsed.
    (C, [cov("c.r1", ["c1"])], contract(status="parse_failure", answer=None), None),
    # d.r1 answered citing a chunk that does not support it (wrong); d.r2 declared unsupported (unanswered).
    (D, [cov("d.r1", ["c1"]), cov("d.r2", ["c2"])],
     contract(cites=["c9"], items=[item("d.r1", ["c9"]), item("d.r2", [], supported=False)]), None),
    # e never reached retrieval (no coverage rows) and abstained.
    (E, [], contract(status="abstained", answer="Insufficient.", abstained=True), None),
]


def all_rows() -> list[FlowRow]:
    return [r for q, coverage, row, judge_row in CASES for r in flow_rows(q, coverage, row, judge_row)]


def test_flow_rows_per_request() -> None:
    assert [(r.request_id, r.branch, r.quality) for r in all_rows()] == [
        ("a.r1", "ok", "acceptable"), ("a.r2", "judged_unsupported", "wrong"),
        ("b.r1", "not_retrieved", "wrong"), ("b.r2", "cut_by_evidence_k", "unanswered"),
        ("b.r3", "omitted_by_context", "unanswered"),
        ("c.r1", "contract_failure", "unanswered"),
        ("d.r1", "admitted_not_cited", "wrong"), ("d.r2", "admitted_not_cited", "unanswered"),
        ("e.r1", "not_retrieved", "unanswered"),
    ]
    assert all_rows()[1] == FlowRow(query_id="a", request_id="a.r2", branch="judged_unsupported", admitted=True,
                                    answered=True, supported=True, contradicts_gold=True, quality="wrong")


def test_flow_table_closes() -> None:
    table = flow_table(all_rows())
    assert {b: table[b] for b in FLOW_BRANCHES} == {
        "not_retrieved": 2, "cut_by_evidence_k": 1, "omitted_by_context": 1, "contract_failure": 1,
        "admitted_not_cited": 2, "judged_unsupported": 1, "ok": 1}
    assert (table["total"], table["closes"], table["accounting_closes"]) == (9, True, True)
    assert table["accounting"] == {
        "not_retrieved": {"acceptable": 0, "wrong": 1, "unanswered": 1},
        "cut_by_evidence_k": {"acceptable": 0, "wrong": 0, "unanswered": 1},
        "omitted_by_context": {"acceptable": 0, "wrong": 0, "unanswered": 1},
        "contract_failure": {"acceptable": 0, "wrong": 0, "unanswered": 1},
        "admitted_not_cited": {"acceptable": 0, "wrong": 1, "unanswered": 1},
        "judged_unsupported": {"acceptable": 0, "wrong": 1, "unanswered": 0},
        "ok": {"acceptable": 1, "wrong": 0, "unanswered": 0},
    }
    for branch in FLOW_BRANCHES:
        assert sum(table["accounting"][branch].values()) == table[branch]
    # The wrong answers on the failing branches add up to every wrong answer: 1 + 1 + 1 = 3.
    assert sum(table["accounting"][b]["wrong"] for b in FLOW_BRANCHES if b != "ok") == 3


def test_flow_table_of_nothing_has_every_branch() -> None:
    table = flow_table([])
    assert {b: table[b] for b in FLOW_BRANCHES} == dict.fromkeys(FLOW_BRANCHES, 0)
    assert (table["total"], table["closes"], table["accounting_closes"]) == (0, True, True)


def test_contradicting_an_unanswered_request_is_wrong() -> None:
    # The answer never addresses p.r2 lexically nor cites it, but a statement contradicts its gold quote.
    rows = flow_rows(P, [ADMITTED, cov("p.r2", ["c2"])], CITES,
                     judge([verdict(1, True, [1]), verdict(2, False, [2], contradicts=True)]))
    assert [(r.branch, r.answered, r.quality) for r in rows] == [("ok", True, "acceptable"),
                                                                  ("admitted_not_cited", False, "wrong")]


def test_hit_rate_counts_every_case() -> None:
    # Question hits: a, c, d (every request admitted); misses: b (nothing admitted) and e (never retrieved).
    # Requests admitted: a 2, b 0, c 1, d 2, e 0 = 5 of 9.
    assert hit_rate(all_rows()) == {"hits": 3, "cases": 5, "hit_rate": 3 / 5,
                                    "request_hits": 5, "request_cases": 9, "request_hit_rate": 5 / 9}


def test_a_question_that_never_retrieved_is_a_miss_in_the_denominator() -> None:
    rows = flow_rows(A, [cov("a.r1", ["c1"]), cov("a.r2", ["c2"])], CITES, None) + flow_rows(E, [], None, None)
    assert hit_rate(rows) == {"hits": 1, "cases": 2, "hit_rate": 0.5,
                              "request_hits": 2, "request_cases": 3, "request_hit_rate": 2 / 3}
    # One request missing makes the whole question a miss.
    rows = flow_rows(A, [cov("a.r1", ["c1"]), cov("a.r2", ["c2"], admitted=False)], CITES, None)
    assert hit_rate(rows)["hits"] == 0


def test_hit_rate_of_nothing_is_undefined() -> None:
    assert hit_rate([]) == {"hits": 0, "cases": 0, "hit_rate": None,
                            "request_hits": 0, "request_cases": 0, "request_hit_rate": None}


def test_unanswerable_questions_have_no_flow() -> None:
    with pytest.raises(ValueError, match="unanswerable"):
        flow_rows(question("u", 1, answerable=False), [], None, None)
