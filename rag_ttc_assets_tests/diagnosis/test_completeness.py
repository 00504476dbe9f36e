from __future__ import annotations

import json

import pytest

from rag_ttc_assets.core.answer_rows import Coverage
from rag_ttc_assets.diagnosis.completeness import (AbstentionOutcome, QuestionCompleteness, RequestOutcome,
                                                   abstention_outcome, answer_citations, completeness_totals,
                                                   coverage_by_request, gold_numbers, gold_texts, json_list,
                                                   question_completeness, request_outcomes, self_report)
from rag_ttc_assets.diagnosis.flow import flow_rows
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
RIDS = [r.id for r in Q.requests]


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


def judged(rid: str, addressed: bool = True, cites: list[str] | None = None, verdict: str | None = None) -> dict:
    """A request_judgments row as judging.request_judge_stage writes it for a judged request."""
    return {"query_id": rid.split(".")[0], "request_id": rid, "status": "judged", "addressed": addressed,
            "excerpt": "An answer." if addressed else "", "cited_chunk_ids": cites or [],
            "verdict": verdict or ("consistent" if addressed else "not_addressed"), "reason": ""}


def unjudged(rid: str, status: str) -> dict:
    """A row the judge did not judge: a judge fault (judge_*) or a contract status carried over."""
    return {"query_id": rid.split(".")[0], "request_id": rid, "status": status, "addressed": None, "excerpt": None,
            "cited_chunk_ids": [], "verdict": None, "reason": None}


def cases(outcomes: list[RequestOutcome]) -> list[str]:
    return [o.case for o in outcomes]


def test_gold_numbers_run_over_requests_then_quotes() -> None:
    assert [gold_numbers(Q, f"q1.r{i}") for i in (1, 2, 3, 4)] == [{1}, {2, 3}, {4}, {5}]


def test_gold_texts_put_gold_answers_after_every_quote() -> None:
    q = Question(id="g", text="?", requests=[
        Request(id="g.r1", text="A?", evidence=[Evidence(doc_id="d", quote="qa")], gold_answer="answer a"),
        Request(id="g.r2", text="B?", evidence=[Evidence(doc_id="d", quote="qb1"), Evidence(doc_id="d", quote="qb2")]),
        Request(id="g.r3", text="C?", gold_answer="answer c"),
    ])
    assert gold_texts(q) == [("g.r1", "qa"), ("g.r2", "qb1"), ("g.r2", "qb2"), ("g.r1", "answer a"),
                             ("g.r3", "answer c")]
    assert [gold_numbers(q, f"g.r{i}") for i in (1, 2, 3)] == [{1, 4}, {2, 3}, {5}]


def test_judgments_give_all_four_cases() -> None:
    row = contract(cites=["c1", "c9"])
    judgments = [judged("q1.r1", cites=["c1"]),  # cites its supporting chunk
                 judged("q1.r2", cites=["c9"]),  # addressed, but c9 holds none of r2's evidence
                 judged("q1.r3", addressed=False), judged("q1.r4", addressed=False)]
    out = request_outcomes(Q, COVERAGE, row, judgments)
    assert out[0] == RequestOutcome(query_id="q1", request_id="q1.r1", measured=True, judge_status="judged",
                                    answered=True, supported=True, evidence_admitted=True, cited_supporting=True,
                                    verdict="consistent", contradicts_gold=False, self_reported_answered=True,
                                    self_reported_supported=True, overclaimed=False, underclaimed=False,
                                    case="answered_supported")
    assert (out[1].answered, out[1].cited_supporting, out[1].supported) == (True, False, False)
    # r3 is not addressed though its evidence was admitted; r4 is not addressed and nothing was admitted.
    assert cases(out) == ["answered_supported", "answered_unsupported", "not_answered_evidence_admitted",
                          "not_answerable_from_admitted"]
    # The answer as a whole claims every request (valid, no items): r3 and r4 are overclaimed.
    assert [o.overclaimed for o in out] == [False, False, True, True]


def test_answered_comes_from_the_judge_not_from_the_request_items() -> None:
    # Every item says supported=true and cites its request's chunk; the judge finds r1 and r3 not addressed.
    row = contract(cites=["c1", "c2", "c4"], items=[item("q1.r1", cites=["c1"]), item("q1.r2", cites=["c2"]),
                                                     item("q1.r3", cites=["c4"]), item("q1.r4", cites=["c1"])])
    judgments = [judged("q1.r1", addressed=False), judged("q1.r2", cites=["c2"]),
                 judged("q1.r3", addressed=False), judged("q1.r4", addressed=False)]
    out = request_outcomes(Q, COVERAGE, row, judgments)
    assert [(o.self_reported_answered, o.self_reported_supported) for o in out] == [(True, True)] * 4
    assert [o.answered for o in out] == [False, True, False, False]
    assert [o.supported for o in out] == [False, True, False, False]
    assert [o.overclaimed for o in out] == [True, False, True, True]
    assert [o.underclaimed for o in out] == [False] * 4
    assert cases(out) == ["not_answered_evidence_admitted", "answered_supported", "not_answered_evidence_admitted",
                          "not_answerable_from_admitted"]


def test_underclaimed_when_the_judge_finds_an_answer_the_generator_disowned() -> None:
    row = contract(cites=["c1", "c2"], items=[item("q1.r1", cites=["c1"]),
                                               item("q1.r2", answer="The provided evidence does not say.",
                                                    supported=False)])
    judgments = [judged("q1.r1", cites=["c1"]), judged("q1.r2", cites=["c2"]),
                 judged("q1.r3", addressed=False), judged("q1.r4", addressed=False)]
    out = request_outcomes(Q, COVERAGE, row, judgments)
    # Keyed items: r2 (supported=false), r3 and r4 (no item) claim nothing.
    assert [o.self_reported_answered for o in out] == [True, False, False, False]
    assert [o.underclaimed for o in out] == [False, True, False, False]
    assert [o.overclaimed for o in out] == [False] * 4
    assert (out[1].answered, out[1].supported) == (True, True)


@pytest.mark.parametrize("judgment", [unjudged("q1.r1", "judge_timeout"), unjudged("q1.r1", "judge_parse_failure"),
                                      unjudged("q1.r1", "judge_budget_exhausted"), None],
                         ids=["timeout", "parse_failure", "budget", "no-judgment-row"])
def test_a_request_judge_fault_is_not_measured_never_not_answered(judgment: dict | None) -> None:
    row = contract(cites=["c1", "c2"])
    judgments = [judged("q1.r2", cites=["c2"]), judged("q1.r3", addressed=False), judged("q1.r4", addressed=False)]
    out = request_outcomes(Q, COVERAGE, row, judgments + ([judgment] if judgment else []))
    status = judgment["status"] if judgment else "no_request_judgment"
    assert out[0] == RequestOutcome(query_id="q1", request_id="q1.r1", measured=False, judge_status=status,
                                    answered=None, supported=None, evidence_admitted=True, cited_supporting=None,
                                    verdict=None, contradicts_gold=None, self_reported_answered=True,
                                    self_reported_supported=True, overclaimed=None, underclaimed=None,
                                    case="not_measured")
    assert [o.measured for o in out] == [False, True, True, True]
    flow = flow_rows(Q, COVERAGE, row, None, judgments + ([judgment] if judgment else []))
    assert (flow[0].branch, flow[0].quality, flow[0].answered) == ("not_measured", "not_measured", None)


@pytest.mark.parametrize(("row", "claims"), [
    (contract(status="abstained", answer="The evidence is insufficient.", abstained=True), (False, False)),
    (contract(status="parse_failure", answer=None), (None, None)),
    (contract(status="timeout", answer=None, abstained=None), (None, None)),
    (contract(status="contract_failure", cites=["c1"]), (None, None)),  # parsed, cites support, still rejected
    (None, (None, None)),  # no contract row at all
], ids=["abstained", "parse_failure", "timeout", "contract_failure", "no-row"])
@pytest.mark.parametrize("carried", [True, False], ids=["status-rows", "no-rows"])
def test_a_row_that_is_not_contract_valid_is_measured_as_not_answered(row: dict | None, claims: tuple,
                                                                      carried: bool) -> None:
    status = row["status"] if row else "no_answer_row"
    # judging.request_judge_stage writes the contract status on every request of such a row; no rows read the same.
    judgments = [unjudged(rid, status) for rid in RIDS] if carried else []
    out = request_outcomes(Q, COVERAGE, row, judgments)
    assert [(o.measured, o.judge_status, o.answered, o.supported, o.cited_supporting, o.verdict, o.contradicts_gold)
            for o in out] == [(True, status, False, False, False, None, False)] * 4
    assert cases(out) == ["not_answered_evidence_admitted"] * 3 + ["not_answerable_from_admitted"]
    assert {(o.self_reported_answered, o.self_reported_supported) for o in out} == {claims}
    # An abstention claims nothing and answers nothing: neither over- nor underclaimed; other rows claim nothing known.
    calibration = (False, False) if claims == (False, False) else (None, None)
    assert {(o.overclaimed, o.underclaimed) for o in out} == {calibration}


def test_supported_needs_the_excerpt_to_cite_an_admitted_supporting_chunk() -> None:
    # The answer cites c1, c2, c5, c9 (valid rows cite admitted chunks only; r4's c5 contradicts its coverage on
    # purpose, to show that supported still needs the evidence admitted).
    row = contract(cites=["c1", "c2", "c5", "c9"])
    judgments = [judged("q1.r1", cites=["c9", "c1"]),  # one of its cited chunks supports r1
                 judged("q1.r2", cites=["c9"]),  # the answer cites r2's c2 elsewhere: the excerpt does not
                 judged("q1.r3", cites=["c4"]),  # c4 supports r3, but the answer never cited it: a judge's invention
                 judged("q1.r4", cites=["c5"])]  # cites r4's chunk, whose evidence was never admitted
    out = request_outcomes(Q, COVERAGE, row, judgments)
    assert [(o.answered, o.cited_supporting, o.evidence_admitted, o.supported) for o in out] == [
        (True, True, True, True), (True, False, True, False), (True, False, True, False), (True, True, False, False)]
    assert cases(out) == ["answered_supported", "answered_unsupported", "answered_unsupported",
                          "answered_unsupported"]


def test_a_supporting_chunk_the_answer_never_cited_was_not_admitted() -> None:
    # r2 is supported by c2 (admitted) and c3 (not admitted: the valid answer could not cite it). A judge that
    # credits the excerpt with c3 does not make r2 supported; the same excerpt citing c2 does.
    row = contract(cites=["c1", "c2"], items=[item("q1.r2", cites=["c2"])])
    assert [o.supported for o in request_outcomes(Q, COVERAGE, row, [judged("q1.r2", cites=["c3"])])][1] is False
    assert [o.supported for o in request_outcomes(Q, COVERAGE, row, [judged("q1.r2", cites=["c2"])])][1] is True


def test_answer_citations_are_top_level_and_item_citations() -> None:
    row = contract(cites=["c1"], items=[item("q1.r2", cites=["c2", "c1"]), item("x", cites=["c7"])])
    assert answer_citations(row) == {"c1", "c2", "c7"}
    assert answer_citations(None) == set()
    assert answer_citations(contract(status="parse_failure", answer=None)) == set()


def test_a_contradicts_verdict_is_wrong_even_when_cited_and_admitted() -> None:
    row = contract(cites=["c1"])
    judgments = [judged("q1.r1", cites=["c1"], verdict="contradicts")] + [judged(r, addressed=False) for r in RIDS[1:]]
    out = request_outcomes(Q, COVERAGE, row, judgments)
    assert (out[0].answered, out[0].supported, out[0].verdict, out[0].contradicts_gold, out[0].case) == (
        True, True, "contradicts", True, "answered_supported")
    assert out[0].overclaimed is True  # claimed answered, and the judge says the claim contradicts the gold
    assert [o.contradicts_gold for o in out[1:]] == [False, False, False]
    flow = flow_rows(Q, COVERAGE, row, None, judgments)
    assert (flow[0].branch, flow[0].quality) == ("judged_unsupported", "wrong")


def test_self_report_keyed_items_speak_per_request() -> None:
    row = contract(cites=["c1", "c2"], items=[
        item("q1.r1", cites=["c1"]),  # by id
        item("When is raise used?", answer="   ", cites=["c2"]),  # by exact text, but blank
        item("q1.r4", answer="The evidence does not say.", supported=False),
    ])
    assert [self_report(Q, r, row) for r in Q.requests] == [(True, True), (False, False), (False, False),
                                                           (False, False)]
    # A supported item without a citation claims the answer but not its support.
    row = contract(cites=["c1"], items=[item("q1.r3", cites=[])])
    assert self_report(Q, Q.requests[2], row) == (True, False)


def test_self_report_unkeyed_items_are_attributed_through_the_judges_excerpt() -> None:
    # The label-free prompt: a model keys its items to its own split, which names no labelled request.
    own_split = contract(cites=["c1"], items=[item("What does pass do", answer="Pass does nothing.", cites=["c1"]),
                                              item("why del", answer="The evidence does not say.", supported=False)])
    found = {**judged("q1.r1", cites=["c1"]), "excerpt": "Pass does nothing."}
    disowned_part = {**judged("q1.r3"), "excerpt": "The evidence does not say."}
    assert self_report(Q, Q.requests[0], own_split, found) == (True, True)
    assert self_report(Q, Q.requests[2], own_split, disowned_part) == (False, False)
    # No excerpt to attribute the claim by: unattributable, not a claim either way.
    assert self_report(Q, Q.requests[1], own_split, judged("q1.r2", addressed=False)) == (None, None)
    assert self_report(Q, Q.requests[0], own_split) == (None, None)
    disowned = contract(cites=["c1"], items=[item("What does pass do", supported=False)])
    assert {self_report(Q, r, disowned) for r in Q.requests} == {(False, False)}
    assert {self_report(Q, r, contract(cites=["c1"])) for r in Q.requests} == {(True, True)}  # no items
    assert {self_report(Q, r, contract(cites=[])) for r in Q.requests} == {(True, False)}  # nothing cited
    totals = completeness_totals(request_outcomes(Q, COVERAGE, own_split, [found, judged("q1.r2", addressed=False),
                                                                           disowned_part,
                                                                           judged("q1.r4", addressed=False)]), [])
    assert (totals["self_reported_answered"], totals["self_report_unattributed"]) == (1, 2)


@pytest.mark.parametrize(("row", "claims"), [
    (contract(status="abstained", answer="Insufficient.", abstained=True, items=[item("q1.r1", supported=False)]),
     (False, False)),
    (contract(status="contract_failure", cites=["c1"], items=[item("q1.r1", cites=["c1"])]), (None, None)),
    (contract(status="parse_failure", answer=None), (None, None)),
    (contract(answer=None), (None, None)),
    (None, (None, None)),
], ids=["abstained", "contract_failure", "parse_failure", "valid-without-answer", "no-row"])
def test_self_report_of_rows_that_deliver_nothing(row: dict | None, claims: tuple) -> None:
    assert self_report(Q, Q.requests[0], row) == claims


def test_missing_coverage_row_means_nothing_arrived() -> None:
    row = contract(cites=["c1", "c2"])
    out = request_outcomes(Q, COVERAGE[:1], row, [judged("q1.r1", cites=["c1"]), judged("q1.r2", cites=["c2"]),
                                                  judged("q1.r3", addressed=False), judged("q1.r4", addressed=False)])
    # Without its coverage row, r2 has no known supporting chunk: citing c2 does not count for it.
    assert [(o.evidence_admitted, o.cited_supporting, o.case) for o in out] == [
        (True, True, "answered_supported"), (False, False, "answered_unsupported"),
        (False, False, "not_answerable_from_admitted"), (False, False, "not_answerable_from_admitted")]
    assert coverage_by_request(Q, [])["q1.r3"] == Coverage.of(cov("q1.r3", [], ranked=False, selected=False,
                                                                  admitted=False))


def test_coverage_and_judgment_rows_are_checked() -> None:
    with pytest.raises(ValueError, match=r"coverage_rows\[0\]: request q2/q2.r1 is not a request of question 'q1'"):
        request_outcomes(Q, [cov("q2.r1", ["c1"])], None, [])
    with pytest.raises(ValueError, match=r"coverage_rows\[1\]: second coverage row for request 'q1.r1'"):
        request_outcomes(Q, [cov("q1.r1", ["c1"]), cov("q1.r1", ["c1"])], None, [])
    with pytest.raises(ValueError, match=r"admitted implies selected implies ranked"):
        request_outcomes(Q, [cov("q1.r1", ["c1"], ranked=False)], None, [])
    with pytest.raises(ValueError, match=r"request_judgments\[1\]: request q2/q2.r1 is not a request of question"):
        request_outcomes(Q, COVERAGE, contract(cites=["c1"]), [judged("q1.r1"), judged("q2.r1")])
    with pytest.raises(ValueError, match=r"request_judgments\[0\]: request q1/q1.r7 is not a request of question"):
        request_outcomes(Q, COVERAGE, contract(cites=["c1"]), [judged("q1.r7")])
    with pytest.raises(ValueError, match="unanswerable: use abstention_outcome"):
        request_outcomes(UNANSWERABLE, [], None, [])
    with pytest.raises(ValueError, match="answerable: use request_outcomes"):
        abstention_outcome(Q, None)


def test_json_list_reads_stored_and_decoded_lists() -> None:
    assert json_list('["a", "b"]') == ["a", "b"]
    assert json_list(("a",)) == ["a"]
    assert json_list(None) == []


def test_stored_list_fields_read_the_same_as_decoded_ones() -> None:
    row = contract(cites=["c1"])
    stored = [{**judged("q1.r1", cites=["c1"]), "cited_chunk_ids": json.dumps(["c1"])}]
    assert request_outcomes(Q, COVERAGE, row, stored) == request_outcomes(Q, COVERAGE, row,
                                                                          [judged("q1.r1", cites=["c1"])])
    assert request_outcomes(Q, COVERAGE, row, stored)[0].supported is True


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


def _outcome(qid: str, rid: str, case: str, claimed: tuple[bool, bool] = (True, True),
             contradicts: bool = False) -> RequestOutcome:
    """An outcome built by hand, its calibration fields by the module's rules."""
    if case == "not_measured":
        return RequestOutcome(query_id=qid, request_id=rid, measured=False, judge_status="judge_timeout",
                              answered=None, supported=None, evidence_admitted=True, cited_supporting=None,
                              verdict=None, contradicts_gold=None, self_reported_answered=claimed[0],
                              self_reported_supported=claimed[1], overclaimed=None, underclaimed=None, case=case)
    answered, supported = case.startswith("answered"), case == "answered_supported"
    return RequestOutcome(query_id=qid, request_id=rid, measured=True, judge_status="judged", answered=answered,
                          supported=supported, evidence_admitted=case != "not_answerable_from_admitted",
                          cited_supporting=supported,
                          verdict="contradicts" if contradicts else ("consistent" if answered else "not_addressed"),
                          contradicts_gold=contradicts, self_reported_answered=claimed[0],
                          self_reported_supported=claimed[1],
                          overclaimed=claimed[0] and (not answered or contradicts),
                          underclaimed=not claimed[0] and answered, case=case)


# qa: complete (2/2; r2 underclaimed); qb: partial (1 of 3; r2 and r3 overclaimed); qc: none (answered,
# unsupported, contradicting, overclaimed); qd: one request unmeasured, so its completeness is unknown.
OUTCOMES = [
    _outcome("qa", "qa.r1", "answered_supported"), _outcome("qa", "qa.r2", "answered_supported", (False, False)),
    _outcome("qb", "qb.r1", "answered_supported"), _outcome("qb", "qb.r2", "not_answered_evidence_admitted"),
    _outcome("qb", "qb.r3", "not_answerable_from_admitted", (True, False)),
    _outcome("qc", "qc.r1", "answered_unsupported", contradicts=True),
    _outcome("qd", "qd.r1", "answered_supported"), _outcome("qd", "qd.r2", "not_measured"),
]


def test_question_completeness() -> None:
    assert question_completeness(OUTCOMES) == [
        QuestionCompleteness(query_id="qa", requests=2, measured=2, answered=2, supported=2, complete=True),
        QuestionCompleteness(query_id="qb", requests=3, measured=3, answered=1, supported=1, complete=False),
        QuestionCompleteness(query_id="qc", requests=1, measured=1, answered=1, supported=0, complete=False),
        QuestionCompleteness(query_id="qd", requests=2, measured=1, answered=1, supported=1, complete=None),
    ]


def test_completeness_totals() -> None:
    abstentions = [AbstentionOutcome(query_id="u1", abstained=True, correct_abstention=True, answered_anyway=False),
                   AbstentionOutcome(query_id="u2", abstained=False, correct_abstention=False, answered_anyway=True),
                   AbstentionOutcome(query_id="u3", abstained=True, correct_abstention=True, answered_anyway=False)]
    assert completeness_totals(OUTCOMES, abstentions) == {
        "requests_total": 8, "requests_measured": 7, "requests_answered": 5, "requests_supported": 4,
        "answered_supported": 4, "answered_unsupported": 1, "not_answered_evidence_admitted": 1,
        "not_answerable_from_admitted": 1, "not_measured": 1, "requests_contradicting_gold": 1,
        # Over the 7 measured requests only: qd.r2's claim is not counted.
        "self_reported_answered": 6, "self_reported_supported": 5, "self_report_unattributed": 0, "overclaimed": 3, "underclaimed": 1,
        "unanswerable_questions": 3, "correct_abstentions": 2, "correct_abstention_rate": 2 / 3,
        "questions_total": 4, "questions_measured": 3,
        "questions_complete": 1, "questions_partial": 1, "questions_none": 1,
        # qd.r2's judge timed out: one request, and with it question qd, not measured (judge_error).
        "requests_not_measured": {"judge_error": 1},
        # Every request has gold quotes: support measured wherever the judge measured; 5 of the 7 answered.
        "no_gold_quotes": 0, "requests_support_measured": 7, "requests_support_not_measured": {"judge_error": 1},
        "requests_answered_share": 5 / 7,
        # These outcomes carry no coverage (a judge that reports none): graded over none of the 7 measured.
        "requests_graded": 0, "graded_completeness": None,
        # Question completeness over qa, qb, qc: (2/2 + 1/3 + 0/1) / 3 = 4/9; qd is not in the mean.
        "mean_completeness": 4 / 9, "completeness_measured": 3, "completeness_of": 4,
        "completeness_not_measured": {"judge_error": 1},
    }


def test_graded_completeness_is_the_mean_coverage_of_the_measured_requests_with_its_n_of_m() -> None:
    covered = [o.model_copy(update={"coverage": c}) for o, c in zip(OUTCOMES, [1.0, 0.8, 0.6, 0.2, 0.0, 0.4, None,
                                                                              None], strict=True)]
    totals = completeness_totals(covered, [])
    # qd.r1 is measured without a coverage and qd.r2 is not measured: 6 of the 7 measured graded.
    assert totals["requests_graded"] == 6 and totals["requests_measured"] == 7
    assert totals["graded_completeness"] == pytest.approx((1.0 + 0.8 + 0.6 + 0.2 + 0.0 + 0.4) / 6)


def test_completeness_totals_without_unanswerable_questions() -> None:
    totals = completeness_totals([], [])
    assert (totals["requests_total"], totals["requests_measured"], totals["correct_abstention_rate"],
            totals["questions_total"], totals["questions_none"]) == (0, 0, None, 0, 0)


def test_end_to_end_totals_for_one_question() -> None:
    row = contract(cites=["c1", "c9"], items=[item("q1.r1", cites=["c1"]), item("q1.r2", cites=["c9"])])
    judgments = [judged("q1.r1", cites=["c1"]), judged("q1.r2", cites=["c9"]), judged("q1.r3", addressed=False),
                 unjudged("q1.r4", "judge_parse_failure")]
    totals = completeness_totals(request_outcomes(Q, COVERAGE, row, judgments),
                                 [abstention_outcome(UNANSWERABLE, contract(status="abstained", abstained=True))])
    # r1 answered_supported, r2 answered_unsupported, r3 not answered (its evidence admitted), r4 not measured:
    # the question's completeness is unknown. Keyed items: r1 and r2 claim, r3 does not.
    assert {k: totals[k] for k in ("requests_total", "requests_measured", "requests_answered", "requests_supported",
                                   "not_measured", "self_reported_answered", "overclaimed", "underclaimed",
                                   "questions_measured", "questions_partial", "correct_abstention_rate")} == {
        "requests_total": 4, "requests_measured": 3, "requests_answered": 2, "requests_supported": 1,
        "not_measured": 1, "self_reported_answered": 2, "overclaimed": 0, "underclaimed": 0,
        "questions_measured": 0, "questions_partial": 0, "correct_abstention_rate": 1.0}


def test_a_request_without_gold_quotes_has_its_answer_measured_and_its_support_not() -> None:
    # An imported dataset's requests: a gold answer, no quotes. One addressed, one not; neither's support measurable.
    q = Question(id="g", text="What does pass do and what does del do?", requests=[
        Request(id="g.r1", text="What does pass do?", gold_answer="pass does nothing"),
        Request(id="g.r2", text="What does del do?", gold_answer="del removes a binding")])
    coverage = [cov("g.r1", [], ranked=False, selected=False, admitted=False),
                cov("g.r2", [], ranked=False, selected=False, admitted=False)]
    outcomes = request_outcomes(q, coverage, {**contract(cites=[]), "query_id": "g", "status": "free_text"},
                                [judged("g.r1", cites=[]), judged("g.r2", addressed=False)])
    assert [(o.measured, o.answered, o.supported, o.case) for o in outcomes] == [
        (True, True, None, "no_gold_quotes"), (True, False, None, "no_gold_quotes")]
    assert question_completeness(outcomes)[0].complete is None
    totals = completeness_totals(outcomes, [])
    assert (totals["mean_completeness"], totals["completeness_not_measured"]) == (None, {"no_gold_quotes": 1})
    assert (totals["requests_answered"], totals["requests_answered_share"], totals["requests_support_measured"],
            totals["requests_not_measured"]) == (1, 0.5, 0, {})
    # In the flow's accounting the addressed one is neither acceptable nor wrong: not measured.
    assert [f.quality for f in flow_rows(q, coverage, {**contract(cites=[]), "query_id": "g", "status": "free_text"},
                                         None, [judged("g.r1", cites=[]), judged("g.r2", addressed=False)])] == [
        "not_measured", "unanswered"]


def test_a_judge_that_reports_no_coverage_grades_nothing_not_even_an_undelivered_answers_zero() -> None:
    """An LLM judge reports no coverage; a request nothing was delivered for is measured with coverage 0.0 (the
    offline judges' reading of an empty answer). Graded completeness is then not measured, never 0."""
    undelivered = OUTCOMES[0].model_copy(update={"query_id": "qe", "request_id": "qe.r1", "judge_status": "abstained",
                                                 "answered": False, "coverage": 0.0})
    totals = completeness_totals([*OUTCOMES, undelivered], [])
    assert (totals["requests_graded"], totals["graded_completeness"]) == (0, None)
    # An offline judge (a coverage on a judged request): the undelivered request's 0.0 counts.
    graded = [OUTCOMES[0].model_copy(update={"coverage": 0.5}), undelivered]
    assert (completeness_totals(graded, [])["requests_graded"], completeness_totals(graded, [])["graded_completeness"]) \
        == (2, 0.25)
