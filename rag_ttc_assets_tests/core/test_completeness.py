from __future__ import annotations

import json

import pytest

from rag_ttc_assets.core.completeness import (
    AbstentionOutcome,
    QuestionCompleteness,
    RequestOutcome,
    abstention_outcome,
    addresses,
    completeness_totals,
    coverage_by_request,
    gold_numbers,
    json_list,
    question_completeness,
    request_outcomes,
)
from rag_ttc_assets.core.flow import flow_branch
from rag_ttc_assets.core.records import Evidence, Question, Request

# Gold quotes are numbered over the requests in order: r1 -> 1, r2 -> 2 and 3, r3 -> 4, r4 -> 5.
Q = Question(id="q1", text="What does pass do, when is raise used, why use del, and what does global do?", requests=[
    Request(id="q1.r1", text="What does pass do?",
            evidence=[Evidence(doc_id="pass", quote="pass is a null operation")]),
    Request(id="q1.r2", text="When is raise used?", evidence=[
        Evidence(doc_id="raise", quote="raise re-raises the exception that is currently being handled"),
        Evidence(doc_id="raise", quote="the exception must be a subclass of BaseException"),
    ]),
    Request(id="q1.r3", text="Why use del?", evidence=[Evidence(doc_id="del", quote="deletion removes the binding")]),
    Request(id="q1.r4", text="What does global do?",
            evidence=[Evidence(doc_id="global", quote="the global statement is a declaration")]),
])
UNANSWERABLE = Question(id="q9", text="What does the walrus do?", answerable=False,
                        requests=[Request(id="q9.r1", text="What does the walrus do?")])


def cov(rid: str, sup: list[str], ranked: bool = True, selected: bool = True, admitted: bool = True) -> dict:
    return {"query_id": rid.split(".")[0], "request_id": rid, "has_evidence": bool(sup), "supporting_chunk_ids": sup,
            "ranked": ranked, "selected": selected, "admitted": admitted}


# r1..r3 admitted; r4's only supporting chunk was ranked but cut by evidence_k.
COVERAGE = [cov("q1.r1", ["c1"]), cov("q1.r2", ["c2", "c3"]), cov("q1.r3", ["c4"]),
            cov("q1.r4", ["c5"], selected=False, admitted=False)]


def item(request: str, answer: str = "An answer.", cites: list[str] | None = None, supported: bool = True) -> dict:
    return {"request": request, "answer": answer, "citation_chunk_ids": cites or [], "supported": supported}


def contract(status: str = "valid", answer: str | None = "An answer.", cites: list[str] | None = None,
             items: list[dict] | None = None, abstained: bool | None = False) -> dict:
    return {"query_id": "q1", "status": status, "reason": "", "answer": answer, "citation_chunk_ids": cites or [],
            "abstained": abstained, "request_items": json.dumps(items or [])}


def cases(outcomes: list[RequestOutcome]) -> list[str]:
    return [o.case for o in outcomes]


def test_gold_numbers_run_over_requests_then_quotes() -> None:
    assert [gold_numbers(Q, f"q1.r{i}") for i in (1, 2, 3, 4)] == [{1}, {2, 3}, {4}, {5}]


def test_request_items_give_all_four_cases() -> None:
    row = contract(cites=["c1", "c9"], items=[
        item("q1.r1", cites=["c1"]),  # by id, cites its supporting chunk
        item("When is raise used?", cites=["c9"]),  # by exact text, cites nothing that supports r2
    ])
    out = request_outcomes(Q, COVERAGE, row, None)
    assert out[0] == RequestOutcome(query_id="q1", request_id="q1.r1", answered=True, supported=True,
                                    evidence_admitted=True, cited_supporting=True, contradicts_gold=None,
                                    case="answered_supported")
    assert (out[1].answered, out[1].cited_supporting, out[1].supported) == (True, False, False)
    # r3 has no item though its evidence was admitted; r4 has none and nothing was admitted.
    assert cases(out) == ["answered_supported", "answered_unsupported", "not_answered_evidence_admitted",
                          "not_answerable_from_admitted"]


def test_an_item_answers_only_when_supported_and_not_blank() -> None:
    row = contract(cites=["c1"], items=[
        item("q1.r1", answer="The evidence does not say.", supported=False),
        item("q1.r2", answer="   ", cites=["c2"]),
        item("why use del?", cites=["c4"]),  # not the exact text: matches nothing
    ])
    out = request_outcomes(Q, COVERAGE, row, None)
    assert [o.answered for o in out] == [False, False, False, False]
    # r2's item cites its supporting chunk, which is recorded even though the request went unanswered.
    assert [o.cited_supporting for o in out] == [False, True, False, False]
    assert cases(out)[:3] == ["not_answered_evidence_admitted"] * 3


def test_top_level_citations_count_only_without_items() -> None:
    # With items, r3's citation c4 sits at top level only: the item citations decide.
    row = contract(cites=["c4"], items=[item("q1.r3", cites=["c9"])])
    assert request_outcomes(Q, COVERAGE, row, None)[2].cited_supporting is False
    row = contract(cites=["c4"])
    assert request_outcomes(Q, COVERAGE, row, None)[2].cited_supporting is True


def test_addresses_by_content_word_recall() -> None:
    r1 = Q.requests[0]  # quote "pass is a null operation": content words {pass, null, operation}
    assert addresses("First point. The pass statement is a null statement.", r1)  # {pass, null}: 2/3
    assert not addresses("Pass does nothing.", r1)  # {pass}: 1/3 ("does" a stopword, "nothing" a negation)
    assert not addresses("A null pointer. Operation pass.", Q.requests[1])  # no sentence meets a raise quote
    r2 = Q.requests[1]  # any quote may match: the second's content words are {exception, subclass, baseexception}
    assert addresses("Any exception is a subclass of something.", r2)  # {exception, subclass}: 2/3


def test_without_items_answered_by_text_or_by_citing_support() -> None:
    answer = "The pass statement is a null statement. Use del sparingly."
    row = contract(answer=answer, cites=["c2", "c5"])
    out = request_outcomes(Q, COVERAGE, row, None)
    # r1: text recall 2/3, but c1 is not cited -> answered, unsupported.
    # r2: not in the text ("Use del sparingly" shares no quote word), but c2 supports it -> answered, supported.
    # r3: "del" is not a word of its quote -> not answered, evidence admitted.
    # r4: cites c5 (valid rows cite admitted chunks only, so this coverage is contradictory on purpose): the
    #     citation answers it, and supported still needs the evidence admitted.
    assert [(o.answered, o.cited_supporting, o.supported) for o in out] == [
        (True, False, False), (True, True, True), (False, False, False), (True, True, False)]
    assert cases(out) == ["answered_unsupported", "answered_supported", "not_answered_evidence_admitted",
                          "answered_unsupported"]


@pytest.mark.parametrize("row", [
    contract(status="parse_failure", answer=None),
    contract(status="timeout", answer=None, abstained=None),
    contract(status="contract_failure", answer=None),  # schema failure: nothing parsed
    contract(status="budget_exhausted", answer="The pass statement is a null statement.", cites=["c1"]),
    None,  # no contract row at all
], ids=["parse_failure", "timeout", "schema", "provider-fault-ignores-fields", "no-row"])
def test_no_parsed_answer_answers_nothing(row: dict | None) -> None:
    out = request_outcomes(Q, COVERAGE, row, None)
    assert [o.answered for o in out] == [False] * 4
    assert [o.cited_supporting for o in out] == [False] * 4
    assert cases(out) == ["not_answered_evidence_admitted"] * 3 + ["not_answerable_from_admitted"]


def test_abstention_answers_nothing() -> None:
    row = contract(status="abstained", answer="The evidence is insufficient.", abstained=True,
                   items=[item("q1.r1", supported=False)])
    assert [o.answered for o in request_outcomes(Q, COVERAGE, row, None)] == [False] * 4
    # Abstained yet claiming is a contract_failure that still abstained: nothing answered.
    row = contract(status="contract_failure", abstained=True, cites=["c1"])
    assert [o.answered for o in request_outcomes(Q, COVERAGE, row, None)] == [False] * 4


def test_contract_failure_rows_are_supported_only_with_admitted_evidence() -> None:
    # "citation of a chunk that was not admitted": c5 supports r4, whose evidence never arrived.
    row = contract(status="contract_failure", cites=["c1", "c5"])
    out = request_outcomes(Q, COVERAGE, row, None)
    assert (out[0].answered, out[0].supported) == (True, True)  # approximated by coverage.admitted
    assert (out[3].answered, out[3].cited_supporting, out[3].supported) == (True, True, False)


def test_contradicts_gold_is_attributed_through_quote_numbers() -> None:
    gold = [
        {"statement": 1, "supported": False, "evidence": [3], "contradicts_gold": True},  # r2's second quote
        {"statement": 2, "supported": True, "evidence": [1], "contradicts_gold": False},
        {"statement": 3, "supported": False, "evidence": [], "contradicts_gold": True},  # attributed to nobody
    ]
    judge = {"query_id": "q1", "judged": True, "gold_verdicts": json.dumps(gold)}
    out = request_outcomes(Q, COVERAGE, contract(cites=["c1"]), judge)
    assert [o.contradicts_gold for o in out] == [False, True, False, False]
    # Verdicts as a list (already decoded) read the same.
    assert request_outcomes(Q, COVERAGE, contract(cites=["c1"]), {**judge, "gold_verdicts": gold}) == out


@pytest.mark.parametrize("judge", [None, {"judged": False, "gold_verdicts": "[]"},
                                   {"judged": True, "gold_verdicts": "[]"}, {"judged": True, "gold_verdicts": None}])
def test_contradicts_gold_is_none_without_gold_verdicts(judge: dict | None) -> None:
    assert {o.contradicts_gold for o in request_outcomes(Q, COVERAGE, contract(cites=["c1"]), judge)} == {None}


def test_missing_coverage_row_means_nothing_arrived() -> None:
    out = request_outcomes(Q, COVERAGE[:1], contract(cites=["c1", "c2"]), None)
    # Without its coverage row, r2 has no known supporting chunk: citing c2 does not count for it.
    assert [(o.evidence_admitted, o.cited_supporting, o.case) for o in out] == [
        (True, True, "answered_supported")] + [(False, False, "not_answerable_from_admitted")] * 3
    assert coverage_by_request(Q, [])["q1.r3"] == cov("q1.r3", [], ranked=False, selected=False, admitted=False)


def test_coverage_rows_are_checked() -> None:
    with pytest.raises(ValueError, match=r"coverage_rows\[0\]: request q2/q2.r1 is not a request of question 'q1'"):
        request_outcomes(Q, [cov("q2.r1", ["c1"])], None, None)
    with pytest.raises(ValueError, match=r"coverage_rows\[1\]: second coverage row for request 'q1.r1'"):
        request_outcomes(Q, [cov("q1.r1", ["c1"]), cov("q1.r1", ["c1"])], None, None)
    with pytest.raises(ValueError, match=r"admitted implies selected implies ranked"):
        request_outcomes(Q, [cov("q1.r1", ["c1"], ranked=False)], None, None)
    with pytest.raises(ValueError, match="unanswerable: use abstention_outcome"):
        request_outcomes(UNANSWERABLE, [], None, None)
    with pytest.raises(ValueError, match="answerable: use request_outcomes"):
        abstention_outcome(Q, None)


def test_json_list_reads_stored_and_decoded_lists() -> None:
    assert json_list('["a", "b"]') == ["a", "b"]
    assert json_list(("a",)) == ["a"]
    assert json_list(None) == []


@pytest.mark.parametrize(("row", "abstained", "answered_anyway"), [
    (contract(status="abstained", answer="Insufficient.", abstained=True), True, False),
    (contract(cites=["c1"], items=[item("q9.r1", supported=False)]), True, False),  # every item unsupported
    (contract(cites=["c1"], items=[item("q9.r1"), item("other", supported=False)]), False, True),
    (contract(cites=["c1"]), False, True),  # no items: a valid answer is an answer
    (contract(status="contract_failure", cites=["c7"], items=[item("q9.r1", supported=False)]), True, False),
    (contract(status="contract_failure", cites=["c7"]), False, False),
    (contract(status="parse_failure", answer=None), False, False),
    (None, False, False),
])
def test_abstention_outcome(row: dict | None, abstained: bool, answered_anyway: bool) -> None:
    assert abstention_outcome(UNANSWERABLE, row) == AbstentionOutcome(
        query_id="q9", abstained=abstained, correct_abstention=abstained, answered_anyway=answered_anyway)


def _outcome(qid: str, rid: str, case: str, contradicts: bool | None = None) -> RequestOutcome:
    answered, supported = case.startswith("answered"), case == "answered_supported"
    return RequestOutcome(query_id=qid, request_id=rid, answered=answered, supported=supported,
                          evidence_admitted=case != "not_answerable_from_admitted", cited_supporting=supported,
                          contradicts_gold=contradicts, case=case)


# qa: complete (2/2), qb: partial (1 of 3 supported), qc: none (0/1, but answered).
OUTCOMES = [
    _outcome("qa", "qa.r1", "answered_supported", False), _outcome("qa", "qa.r2", "answered_supported", False),
    _outcome("qb", "qb.r1", "answered_supported"), _outcome("qb", "qb.r2", "not_answered_evidence_admitted"),
    _outcome("qb", "qb.r3", "not_answerable_from_admitted"),
    _outcome("qc", "qc.r1", "answered_unsupported", True),
]


def test_question_completeness() -> None:
    assert question_completeness(OUTCOMES) == [
        QuestionCompleteness(query_id="qa", requests=2, answered=2, supported=2, complete=True),
        QuestionCompleteness(query_id="qb", requests=3, answered=1, supported=1, complete=False),
        QuestionCompleteness(query_id="qc", requests=1, answered=1, supported=0, complete=False),
    ]


def test_completeness_totals() -> None:
    abstentions = [AbstentionOutcome(query_id="u1", abstained=True, correct_abstention=True, answered_anyway=False),
                   AbstentionOutcome(query_id="u2", abstained=False, correct_abstention=False, answered_anyway=True),
                   AbstentionOutcome(query_id="u3", abstained=True, correct_abstention=True, answered_anyway=False)]
    assert completeness_totals(OUTCOMES, abstentions) == {
        "requests_total": 6, "requests_answered": 4, "requests_supported": 3,
        "answered_supported": 3, "answered_unsupported": 1, "not_answered_evidence_admitted": 1,
        "not_answerable_from_admitted": 1, "requests_contradicting_gold": 1,
        "unanswerable_questions": 3, "correct_abstentions": 2, "correct_abstention_rate": 2 / 3,
        "questions_complete": 1, "questions_partial": 1, "questions_none": 1,
    }


def test_completeness_totals_without_unanswerable_questions() -> None:
    totals = completeness_totals([], [])
    assert (totals["requests_total"], totals["correct_abstention_rate"], totals["questions_none"]) == (0, None, 0)


def test_end_to_end_totals_for_one_question() -> None:
    row = contract(cites=["c1", "c9"], items=[item("q1.r1", cites=["c1"]), item("q1.r2", cites=["c9"])])
    totals = completeness_totals(request_outcomes(Q, COVERAGE, row, None),
                                 [abstention_outcome(UNANSWERABLE, contract(status="abstained", abstained=True))])
    assert {k: totals[k] for k in ("requests_total", "requests_answered", "requests_supported", "questions_partial",
                                   "correct_abstention_rate")} == {
        "requests_total": 4, "requests_answered": 2, "requests_supported": 1, "questions_partial": 1,
        "correct_abstention_rate": 1.0}


def test_items_keyed_to_the_models_own_split_fall_back_to_the_whole_answer() -> None:
    # The baseline prompt lists no requests, so a model keys its items to its own decomposition;
    # those cannot be attributed, and the answer is read as a whole: top-level citations and text.
    row = contract(answer="pass is a null operation.", cites=["c1", "c4"],
                   items=[item("What does pass do", cites=["c1"]), item("why use del", cites=["c4"])])
    outcomes = request_outcomes(Q, COVERAGE, row, None)
    assert [o.cited_supporting for o in outcomes] == [True, False, True, False]
    assert cases(outcomes) == ["answered_supported", "not_answered_evidence_admitted", "answered_supported",
                               "not_answerable_from_admitted"]
    flow = [flow_branch(Q, c, row, None) for c in COVERAGE]
    assert flow == ["ok", "admitted_not_cited", "ok", "cut_by_evidence_k"]
