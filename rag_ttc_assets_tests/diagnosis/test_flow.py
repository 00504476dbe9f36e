from __future__ import annotations

import json

import pytest

from rag_ttc_assets.diagnosis.completeness import RequestOutcome, request_outcomes
from rag_ttc_assets.diagnosis.flow import (FLOW_BRANCHES, IMPORTED_BRANCHES, QUALITIES, FlowRow, flow_branch, flow_rows,
                                           flow_table, hit_rate, quality)
from rag_ttc_assets.core.records import Evidence, Question, Request
from rag_ttc_assets_tests.diagnosis.test_completeness import judged, unjudged


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
    """A judge_verdicts row (the statement judge)."""
    return {"status": "judged" if judged else "judge_timeout", "judged": judged, "faithfulness": faithfulness,
            "gold_verdicts": json.dumps(gold or [])}


def verdict(n: int, supported: bool, evidence: list[int], contradicts: bool = False) -> dict:
    return {"statement": n, "supported": supported, "evidence": evidence, "contradicts_gold": contradicts}


P = question("p")
ADMITTED = cov("p.r1", ["c1"])
CITES = contract(cites=["c1"])
ADDRESSED = [judged("p.r1", cites=["c1"])]


def first(coverage: dict, row: dict | None, judge_row: dict | None = None,
          judgments: list[dict] = ADDRESSED) -> FlowRow:
    """p.r1's flow row (p.r2 has no coverage row: not retrieved)."""
    return flow_rows(P, [coverage], row, judge_row, judgments)[0]


def test_branch_order() -> None:
    assert FLOW_BRANCHES == ("no_trace", "no_retrieval_span", "not_retrieved", "missed_by_ann", "cut_by_evidence_k",
                             "cut_by_reranker", "no_answer_span", "omitted_by_context", "not_in_prompt",
                             "contract_failure", "not_measured", "not_addressed", "admitted_not_cited",
                             "judged_unsupported", "ok")
    assert QUALITIES == ("acceptable", "wrong", "unanswered", "not_measured")


@pytest.mark.parametrize(("coverage", "branch"), [
    (cov("p.r1", [], ranked=False, selected=False, admitted=False), "not_retrieved"),  # no supporting chunk at all
    (cov("p.r1", ["c1"], ranked=False, selected=False, admitted=False), "not_retrieved"),
    (cov("p.r1", ["c1"], selected=False, admitted=False), "cut_by_evidence_k"),
    (cov("p.r1", ["c1"], admitted=False), "omitted_by_context"),
])
def test_retrieval_side_comes_first_whatever_the_answer(coverage: dict, branch: str) -> None:
    # A valid, cited, judged-supported answer does not lift a request whose evidence never arrived.
    assert first(coverage, CITES, judge([verdict(1, True, [1])])).branch == branch
    assert first(coverage, None, None, []).branch == branch
    assert first(coverage, CITES, None, [unjudged("p.r1", "judge_timeout")]).branch == branch


def imported_first(coverage: dict, row: dict | None, retrieval_status: str = "ok",
                   judgments: list[dict] = ADDRESSED) -> FlowRow:
    return flow_rows(P, [coverage], row, judge([verdict(1, True, [1])]), judgments, imported=True,
                     retrieval_status=retrieval_status)[0]


@pytest.mark.parametrize(("coverage", "row", "retrieval_status", "branch"), [
    (cov("p.r1", ["c1"], ranked=False, selected=False, admitted=False), contract(status="no_trace", answer=None),
     "no_trace", "no_trace"),
    # No RETRIEVER span: retrieval was not measured, so the request is never counted as not retrieved.
    (cov("p.r1", ["c1"], ranked=False, selected=False, admitted=False), CITES, "no_retrieval_span",
     "no_retrieval_span"),
    (cov("p.r1", ["c1"], ranked=False, selected=False, admitted=False), CITES, "ok", "not_retrieved"),
    (cov("p.r1", ["c1"], selected=False, admitted=False), CITES, "ok", "cut_by_reranker"),
    (cov("p.r1", ["c1"], admitted=False), CITES, "ok", "not_in_prompt"),
    (ADMITTED, contract(status="no_answer_span", answer=None, abstained=None), "ok", "no_answer_span"),
    # Without an LLM span what the prompt held is unknown: selected evidence is not "not in the prompt".
    (cov("p.r1", ["c1"], admitted=False), contract(status="no_answer_span", answer=None, abstained=None), "ok",
     "no_answer_span"),
    (ADMITTED, CITES, "ok", "ok"),
    # A free-text answer is read as an answer: cited through its citation style, judged like a valid one.
    (ADMITTED, contract(status="free_text", cites=["c1"]), "ok", "ok"),
    (ADMITTED, contract(status="free_text", cites=[]), "ok", "admitted_not_cited"),
])
def test_an_imported_arm_s_boundaries_are_what_its_trace_shows(coverage, row, retrieval_status, branch) -> None:
    assert imported_first(coverage, row, retrieval_status).branch == branch


def test_a_lab_arm_never_lands_in_an_imported_branch() -> None:
    rows = [first(c, r) for c in (ADMITTED, cov("p.r1", ["c1"], admitted=False), cov("p.r1", ["c1"], selected=False,
                                                                                     admitted=False))
            for r in (CITES, contract(status="no_answer_span", answer=None, abstained=None), None)]
    assert not {r.branch for r in rows} & set(IMPORTED_BRANCHES)


@pytest.mark.parametrize(("exact_ranked", "branch"), [
    (True, "missed_by_ann"),  # the exact vector list would have ranked it: the approximate index lost it
    (False, "not_retrieved"),  # missed by both lists
    (None, "not_retrieved"),  # an exact (flat) arm: no second list
])
def test_missed_by_ann_is_an_unranked_request_the_exact_list_would_have_ranked(exact_ranked, branch) -> None:
    coverage = {**cov("p.r1", ["c1"], ranked=False, selected=False, admitted=False), "exact_ranked": exact_ranked}
    assert first(coverage, CITES, judge([verdict(1, True, [1])])).branch == branch
    # Ranked by the approximate list as well: never missed_by_ann, whatever the exact list holds.
    assert first({**ADMITTED, "exact_ranked": True}, CITES, judge([verdict(1, True, [1])])).branch == "ok"
    assert flow_table(flow_rows(P, [coverage], CITES, None, ADDRESSED))["closes"]


@pytest.mark.parametrize("row", [
    contract(status="parse_failure", answer=None),
    contract(status="timeout", answer=None, abstained=None),
    contract(status="rate_limited", answer=None, abstained=None),
    contract(status="contract_failure", answer=None),  # schema failure
    contract(status="contract_failure", cites=["c1"]),  # parsed, cites support, still rejected
    None,
], ids=["parse_failure", "timeout", "rate_limited", "schema", "parsed-contract-failure", "no-row"])
def test_contract_failure(row: dict | None) -> None:
    status = row["status"] if row else "no_answer_row"
    for judgments in ([], [unjudged("p.r1", status)]):
        r = first(ADMITTED, row, None, judgments)
        assert (r.branch, r.answered, r.supported, r.quality) == ("contract_failure", False, False, "unanswered")


@pytest.mark.parametrize("judgments", [[unjudged("p.r1", "judge_timeout")], [unjudged("p.r1", "judge_parse_failure")],
                                       []], ids=["judge-timeout", "judge-parse-failure", "no-judgment"])
def test_not_measured_is_its_own_branch_and_quality(judgments: list[dict]) -> None:
    # Valid, citing r1's chunk, and the statement judge supports it: without the request judge, still unmeasured.
    r = first(ADMITTED, CITES, judge([verdict(1, True, [1])]), judgments)
    assert r == FlowRow(query_id="p", request_id="p.r1", branch="not_measured", admitted=True, answered=None,
                        supported=None, contradicts_gold=None, quality="not_measured")


@pytest.mark.parametrize(("row", "judgments"), [
    (CITES, [judged("p.r1", addressed=False)]),
    (contract(status="abstained", answer="Insufficient.", abstained=True), []),
    (contract(status="abstained", answer="Insufficient.", abstained=True), [unjudged("p.r1", "abstained")]),
], ids=["judged-not-addressed", "abstained", "abstained-status-row"])
def test_not_addressed(row: dict, judgments: list[dict]) -> None:
    r = first(ADMITTED, row, judge([verdict(1, True, [1])]), judgments)
    assert (r.branch, r.answered, r.quality) == ("not_addressed", False, "unanswered")


@pytest.mark.parametrize(("row", "judgments"), [
    (contract(cites=["c9"]), [judged("p.r1", cites=["c9"])]),
    (CITES, [judged("p.r1", cites=[])]),  # the answer cites c1, the excerpt nothing
    # The request item for r1 cites c1, but the judge's excerpt is the part citing c9.
    (contract(cites=["c1", "c9"], items=[item("p.r1", ["c1"]), item("p.r2", ["c9"])]), [judged("p.r1", cites=["c9"])]),
    (contract(cites=["c9"]), [judged("p.r1", cites=["c1"])]),  # the judge credits a chunk the answer never cited
], ids=["valid-other-chunk", "excerpt-cites-nothing", "item-cites-support-excerpt-does-not", "judge-invented"])
def test_admitted_not_cited(row: dict, judgments: list[dict]) -> None:
    r = first(ADMITTED, row, judge([verdict(1, True, [1])]), judgments)
    assert (r.branch, r.answered, r.supported, r.quality) == ("admitted_not_cited", True, False, "wrong")


@pytest.mark.parametrize("judge_row", [
    judge([verdict(1, True, [2]), verdict(2, False, [1])]),  # the supported statement is r2's, not r1's
    judge([], faithfulness=0.0),  # no gold verdicts: no statement supported by the admitted evidence
    judge([], faithfulness=None),  # judged, no statements
], ids=["gold-other-request", "faithfulness-0", "no-statements"])
def test_judged_unsupported_by_the_statement_judge(judge_row: dict) -> None:
    # The request judge found r1 addressed, cited and consistent: acceptable, on the judged_unsupported branch.
    r = first(ADMITTED, CITES, judge_row)
    assert (r.branch, r.supported, r.quality) == ("judged_unsupported", True, "acceptable")


@pytest.mark.parametrize("judge_row", [None, judge([verdict(1, True, [1])])], ids=["no-judge", "gold-supported"])
def test_judged_unsupported_by_a_contradicts_verdict(judge_row: dict | None) -> None:
    r = first(ADMITTED, CITES, judge_row, [judged("p.r1", cites=["c1"], verdict="contradicts")])
    assert r == FlowRow(query_id="p", request_id="p.r1", branch="judged_unsupported", admitted=True, answered=True,
                        supported=True, contradicts_gold=True, quality="wrong")


@pytest.mark.parametrize("judge_row", [
    None,  # the judge did not run
    judge([], faithfulness=None, judged=False),  # the judge call failed: no verdict
    judge([verdict(1, False, [2]), verdict(2, True, [1, 2])]),
    judge([], faithfulness=0.5),  # gold judge failed: one of two statements supported by the evidence
], ids=["no-judge", "judge-failed", "gold-supported", "faithfulness-half"])
def test_ok(judge_row: dict | None) -> None:
    r = first(ADMITTED, CITES, judge_row)
    assert (r.branch, r.quality) == ("ok", "acceptable")


def test_not_verifiable_is_not_a_contradiction() -> None:
    r = first(ADMITTED, CITES, None, [judged("p.r1", cites=["c1"], verdict="not_verifiable")])
    assert (r.branch, r.contradicts_gold, r.quality) == ("ok", False, "acceptable")


def test_flow_branch_takes_the_completeness_outcome() -> None:
    outcome = request_outcomes(P, [ADMITTED], CITES, ADDRESSED)[0]
    assert flow_branch(P, ADMITTED, CITES, None, outcome) == "ok"
    unmeasured = request_outcomes(P, [ADMITTED], CITES, [])[0]
    assert flow_branch(P, ADMITTED, CITES, None, unmeasured) == "not_measured"


# Six questions, eleven requests; branch and accounting worked out by hand.
A, B, C, D, E, F = question("a"), question("b", 3), question("c", 1), question("d"), question("e", 1), question("f")
CASES = [
    # a.r1 ok and acceptable; a.r2 addressed and cited, but the request judge's verdict is contradicts:
    # judged_unsupported, wrong.
    (A, [cov("a.r1", ["c1"]), cov("a.r2", ["c2"])], contract(cites=["c1", "c2"]),
     judge([verdict(1, True, [1]), verdict(2, True, [2])]),
     [judged("a.r1", cites=["c1"]), judged("a.r2", cites=["c2"], verdict="contradicts")]),
    # b.r1 never ranked, but the judge finds it addressed (citing c7, no support): answered, unsupported, wrong.
    # b.r2 cut by evidence_k, b.r3 omitted by the budget: neither addressed, both unanswered.
    (B, [cov("b.r1", ["c1"], ranked=False, selected=False, admitted=False),
         cov("b.r2", ["c2"], selected=False, admitted=False), cov("b.r3", ["c3"], admitted=False)],
     contract(answer="The pass statement is a null operation.", cites=["c7"]), None,
     [judged("b.r1", cites=["c7"]), judged("b.r2", addressed=False), judged("b.r3", addressed=False)]),
    # c.r1 admitted, the answer never parsed (the judge did not see it).
    (C, [cov("c.r1", ["c1"])], contract(status="parse_failure", answer=None), None,
     [unjudged("c.r1", "parse_failure")]),
    # d.r1 addressed citing a chunk that does not support it (wrong); d.r2 not addressed (unanswered).
    (D, [cov("d.r1", ["c1"]), cov("d.r2", ["c2"])], contract(cites=["c9"]), None,
     [judged("d.r1", cites=["c9"]), judged("d.r2", addressed=False)]),
    # e never reached retrieval (no coverage rows) and abstained.
    (E, [], contract(status="abstained", answer="Insufficient.", abstained=True), None,
     [unjudged("e.r1", "abstained")]),
    # f: the request judge timed out. f.r1 admitted: not_measured; f.r2 omitted by the budget: its retrieval
    # branch stands, its quality is not measured.
    (F, [cov("f.r1", ["c1"]), cov("f.r2", ["c2"], admitted=False)], contract(cites=["c1"]), None,
     [unjudged("f.r1", "judge_timeout"), unjudged("f.r2", "judge_timeout")]),
]


def all_rows() -> list[FlowRow]:
    return [r for q, coverage, row, judge_row, judgments in CASES
            for r in flow_rows(q, coverage, row, judge_row, judgments)]


def test_flow_rows_per_request() -> None:
    assert [(r.request_id, r.branch, r.quality) for r in all_rows()] == [
        ("a.r1", "ok", "acceptable"), ("a.r2", "judged_unsupported", "wrong"),
        ("b.r1", "not_retrieved", "wrong"), ("b.r2", "cut_by_evidence_k", "unanswered"),
        ("b.r3", "omitted_by_context", "unanswered"),
        ("c.r1", "contract_failure", "unanswered"),
        ("d.r1", "admitted_not_cited", "wrong"), ("d.r2", "not_addressed", "unanswered"),
        ("e.r1", "not_retrieved", "unanswered"),
        ("f.r1", "not_measured", "not_measured"), ("f.r2", "omitted_by_context", "not_measured"),
    ]
    assert all_rows()[1] == FlowRow(query_id="a", request_id="a.r2", branch="judged_unsupported", admitted=True,
                                    answered=True, supported=True, contradicts_gold=True, quality="wrong")
    assert all_rows()[10] == FlowRow(query_id="f", request_id="f.r2", branch="omitted_by_context", admitted=False,
                                     answered=None, supported=None, contradicts_gold=None, quality="not_measured")


def test_flow_table_closes() -> None:
    table = flow_table(all_rows())
    assert {b: table[b] for b in FLOW_BRANCHES} == {
        **dict.fromkeys(IMPORTED_BRANCHES, 0),  # a lab arm never lands in an imported arm's branches
        "not_retrieved": 2, "missed_by_ann": 0, "cut_by_evidence_k": 1, "omitted_by_context": 2,
        "contract_failure": 1,
        "not_measured": 1, "not_addressed": 1, "admitted_not_cited": 1, "judged_unsupported": 1, "ok": 1}
    assert (table["total"], table["closes"], table["accounting_closes"]) == (11, True, True)
    none = {"acceptable": 0, "wrong": 0, "unanswered": 0, "not_measured": 0}
    assert table["accounting"] == {
        **{b: none for b in IMPORTED_BRANCHES},
        "not_retrieved": {**none, "wrong": 1, "unanswered": 1},
        "missed_by_ann": none,
        "cut_by_evidence_k": {**none, "unanswered": 1},
        "omitted_by_context": {**none, "unanswered": 1, "not_measured": 1},
        "contract_failure": {**none, "unanswered": 1},
        "not_measured": {**none, "not_measured": 1},
        "not_addressed": {**none, "unanswered": 1},
        "admitted_not_cited": {**none, "wrong": 1},
        "judged_unsupported": {**none, "wrong": 1},
        "ok": {**none, "acceptable": 1},
    }
    for branch in FLOW_BRANCHES:
        assert sum(table["accounting"][branch].values()) == table[branch]
    # The wrong answers on the failing branches add up to every wrong answer: 1 + 1 + 1 = 3.
    assert sum(table["accounting"][b]["wrong"] for b in FLOW_BRANCHES if b != "ok") == 3


def test_flow_table_of_nothing_has_every_branch() -> None:
    table = flow_table([])
    assert {b: table[b] for b in FLOW_BRANCHES} == dict.fromkeys(FLOW_BRANCHES, 0)
    assert (table["total"], table["closes"], table["accounting_closes"]) == (0, True, True)


def test_contradicting_an_uncited_request_is_wrong() -> None:
    # p.r2 is addressed and contradicts its gold, citing only c1 (p.r1's chunk): not cited, and wrong.
    rows = flow_rows(P, [ADMITTED, cov("p.r2", ["c2"])], CITES, None,
                     [judged("p.r1", cites=["c1"]), judged("p.r2", cites=["c1"], verdict="contradicts")])
    assert [(r.branch, r.answered, r.contradicts_gold, r.quality) for r in rows] == [
        ("ok", True, False, "acceptable"), ("admitted_not_cited", True, True, "wrong")]


def test_quality_precedence() -> None:
    def outcome(**kw) -> RequestOutcome:
        base = dict(query_id="p", request_id="p.r1", measured=True, judge_status="judged", answered=True,
                    supported=True, evidence_admitted=True, cited_supporting=True, verdict="consistent",
                    contradicts_gold=False, self_reported_answered=True, self_reported_supported=True,
                    overclaimed=False, underclaimed=False, case="answered_supported")
        return RequestOutcome(**{**base, **kw})

    assert quality(outcome()) == "acceptable"
    assert quality(outcome(contradicts_gold=True, verdict="contradicts")) == "wrong"
    assert quality(outcome(supported=False, case="answered_unsupported")) == "wrong"
    assert quality(outcome(answered=False, supported=False, case="not_answered_evidence_admitted")) == "unanswered"
    assert quality(outcome(measured=False, answered=None, supported=None, contradicts_gold=None,
                           case="not_measured")) == "not_measured"


def test_hit_rate_counts_every_case() -> None:
    # Question hits: a, c, d (every request admitted); misses: b (nothing admitted), e (never retrieved) and f
    # (f.r2 omitted; that the request judge measured nothing of f changes no hit).
    # Requests admitted: a 2, b 0, c 1, d 2, e 0, f 1 = 6 of 11.
    assert hit_rate(all_rows()) == {"hits": 3, "cases": 6, "hit_rate": 3 / 6,
                                    "measured": 6, "of": 6, "not_measured": {},
                                    "request_hits": 6, "request_cases": 11, "request_hit_rate": 6 / 11,
                                    "request_measured": 11, "request_of": 11, "request_not_measured": {}}


def test_a_question_that_never_retrieved_is_a_miss_in_the_denominator() -> None:
    rows = flow_rows(A, [cov("a.r1", ["c1"]), cov("a.r2", ["c2"])], CITES, None) + flow_rows(E, [], None, None)
    assert hit_rate(rows) == {"hits": 1, "cases": 2, "hit_rate": 0.5, "measured": 2, "of": 2, "not_measured": {},
                              "request_hits": 2, "request_cases": 3, "request_hit_rate": 2 / 3,
                              "request_measured": 3, "request_of": 3, "request_not_measured": {}}
    # One request missing makes the whole question a miss.
    rows = flow_rows(A, [cov("a.r1", ["c1"]), cov("a.r2", ["c2"], admitted=False)], CITES, None)
    assert hit_rate(rows)["hits"] == 0


def test_hit_rate_of_nothing_is_undefined() -> None:
    assert hit_rate([]) == {"hits": 0, "cases": 0, "hit_rate": None, "measured": 0, "of": 0, "not_measured": {},
                            "request_hits": 0, "request_cases": 0, "request_hit_rate": None,
                            "request_measured": 0, "request_of": 0, "request_not_measured": {}}


def test_unanswerable_questions_have_no_flow() -> None:
    with pytest.raises(ValueError, match="unanswerable"):
        flow_rows(question("u", 1, answerable=False), [], None, None)


def test_a_request_without_gold_quotes_is_no_hit_rate_miss_but_not_measured():
    """Before, an imported question with gold answers and no gold quotes counted as a miss: hit rate 0.0000."""
    from rag_ttc_assets.diagnosis.flow import FlowRow, hit_rate

    def row(q, r, admitted):
        return FlowRow(query_id=q, request_id=r, branch="not_retrieved" if not admitted else "ok", admitted=admitted,
                       answered=None, supported=None, contradicts_gold=None, quality="not_measured")

    rows = [row("q1", "q1.r1", True), row("q1", "q1.r2", False), row("q2", "q2.r1", False), row("q3", "q3.r1", True)]
    h = hit_rate(rows, {("q1", "q1.r2"), ("q2", "q2.r1")})
    assert (h["hits"], h["measured"], h["of"], h["hit_rate"]) == (2, 2, 3, 1.0)
    assert h["not_measured"] == {"no_gold_quotes": 1}
    assert (h["request_hits"], h["request_measured"], h["request_hit_rate"]) == (2, 2, 1.0)
    everything = hit_rate(rows)
    assert (everything["hits"], everything["hit_rate"]) == (1, 1 / 3)
