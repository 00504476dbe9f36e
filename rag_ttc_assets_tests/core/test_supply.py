"""Supply modes: the title index, whole-document pasting, lookup arguments and the lookup flow's accounting."""

import json

import pytest

from rag_ttc_assets.core.chunking import chunk_text
from rag_ttc_assets.core.records import Document, Evidence, Question, Request
from rag_ttc_assets.core.supply import (LOOKUP_BRANCHES, LookupCall, case_quality, lookup_branch, lookup_cases,
                                        lookup_flow, lookup_queries, one_line_summary, parse_lookup_arguments,
                                        seamless_offsets, title_index)


def test_one_line_summary_is_the_first_sentence_on_one_line_clipped():
    assert one_line_summary("The  assert\nstatement checks. It raises AssertionError.") == "The assert statement checks."
    long = "word " * 60
    s = one_line_summary(long, limit=40)
    assert len(s) <= 40 and s.endswith("…")


def test_title_index_lists_every_document_once_with_id_title_and_summary():
    docs = [Document(id="a", title="Alpha", text="Alpha does one thing. More."),
            Document(id="b", title="", text="Beta text without a stop")]
    assert title_index(docs).splitlines() == ["- [a] Alpha: Alpha does one thing.",
                                              "- [b] b: Beta text without a stop"]


@pytest.mark.parametrize("size,overlap", [(50, 10), (80, 0), (30, 29), (200, 40)])
def test_seamless_offsets_paste_each_document_whole_and_once(size, overlap):
    texts = {"d1": "one two three four five six seven eight nine ten " * 7, "d2": "short doc", "d3": "x" * 130}
    chunks = [c for d, t in texts.items() for c in chunk_text(d, t, size, overlap)]
    offsets = seamless_offsets(chunks)
    pasted: dict[str, str] = {}
    for c, o in zip(chunks, offsets):
        pasted[c.doc_id] = pasted.get(c.doc_id, "") + c.text[o:]
    assert pasted == texts
    assert offsets[0] == 0 and all(o >= 0 for o in offsets)


@pytest.mark.parametrize("arguments,expected", [
    ('{"query": "  for   loop else "}', ("for loop else", None)),
    ({"query": "x"}, ("x", None)),
    ('{"q": "x"}', (None, "argument 'query' is missing or not a non-empty string")),
    ('{"query": ""}', (None, "argument 'query' is missing or not a non-empty string")),
    ('[1]', (None, "arguments are not a JSON object")),
])
def test_parse_lookup_arguments(arguments, expected):
    assert parse_lookup_arguments(arguments) == expected


def test_parse_lookup_arguments_names_the_json_error():
    query, error = parse_lookup_arguments("{not json")
    assert query is None and error.startswith("arguments are not JSON:")


def test_lookup_queries_are_the_questions_own_split_or_the_whole_question():
    assert lookup_queries("What does the assert statement do and what are lambda expressions?") == [
        "What does the assert statement do?", "What are lambda expressions?"]
    assert lookup_queries("Why is raise used; when is finally run?") == ["Why is raise used?", "When is finally run?"]
    assert lookup_queries("What do assert and lambda do?") == ["What do assert and lambda do?"]


def _q(qid: str, docs: list[str]) -> Question:
    return Question(id=qid, text=f"question {qid}?", requests=[
        Request(id=f"{qid}-r{i}", text=f"request {i}", evidence=[Evidence(doc_id=d, quote="q")])
        for i, d in enumerate(docs)])


def _call(docs: list[str]) -> LookupCall:
    return LookupCall(call_id="c", query="q", result_chunk_ids=[f"{d}#chunk-0" for d in docs], result_doc_ids=docs)


def test_lookup_branch_checks_no_call_then_empty_then_every_requests_governing_document():
    q = _q("q1", ["a", "b"])
    assert lookup_branch(q, []) == ("no_call", ["q1-r0", "q1-r1"])
    assert lookup_branch(q, [_call([]), _call([])]) == ("empty_results", ["q1-r0", "q1-r1"])
    assert lookup_branch(q, [_call(["a", "z"])]) == ("wrong_document", ["q1-r1"])
    # Results are pooled over the case's calls: one call per request is how the offline answerer searches.
    assert lookup_branch(q, [_call(["a"]), _call(["b"])]) == ("correct_document", [])


def test_case_quality_wrong_beats_unanswered_beats_acceptable():
    assert case_quality(["acceptable", "wrong"]) == "wrong"
    assert case_quality(["unanswered", "unanswered"]) == "unanswered"
    assert case_quality(["acceptable", "unanswered"]) == "acceptable"


def test_case_quality_not_measured_beats_everything_but_wrong():
    assert case_quality(["acceptable", "not_measured"]) == "not_measured"
    assert case_quality(["unanswered", "not_measured"]) == "not_measured"
    assert case_quality(["not_measured", "wrong"]) == "wrong"


def test_acceptable_on_misses_counts_only_acceptable_cases():
    # Misses: 2 acceptable, 1 wrong, 1 unanswered, 1 not measured (no_call); a hit, acceptable.
    plan = [("no_call", ["acceptable"]), ("no_call", ["acceptable", "unanswered"]), ("empty_results", ["wrong"]),
            ("wrong_document", ["unanswered"]), ("wrong_document", ["acceptable", "not_measured"]),
            ("correct_document", ["acceptable"])]
    questions, lookups, qualities = [], {}, {}
    for i, (branch, request_qualities) in enumerate(plan):
        q = _q(f"c{i}", ["gold"])
        questions.append(q)
        lookups[q.id] = {"no_call": [], "empty_results": [_call([])], "wrong_document": [_call(["other"])],
                         "correct_document": [_call(["gold"])]}[branch]
        qualities[q.id] = request_qualities
    flow = lookup_flow(lookup_cases(questions, lookups, qualities)).model_dump()
    assert (flow["misses"], flow["wrong_on_misses"], flow["acceptable_on_misses"]) == (5, 1, 2)
    assert flow["accounting"]["wrong_document"] == {"acceptable": 0, "wrong": 0, "unanswered": 1, "not_measured": 1}
    assert flow["accounting_closes"]


def test_lookup_flow_reproduces_the_seeds_accounting():
    """The second seed's 300 cases: 22 no-calls (6 wrong), 5 empty (2 wrong), 22 wrong rule (7 wrong), 251 correct
    (4 wrong): hit rate 251/300 over ALL cases, 15 wrong answers on the misses, 34 acceptable misses."""
    plan = ([("no_call", "wrong")] * 6 + [("no_call", "acceptable")] * 16
            + [("empty_results", "wrong")] * 2 + [("empty_results", "acceptable")] * 3
            + [("wrong_document", "wrong")] * 7 + [("wrong_document", "acceptable")] * 15
            + [("correct_document", "wrong")] * 4 + [("correct_document", "acceptable")] * 247)
    questions, lookups, qualities = [], {}, {}
    for i, (branch, quality) in enumerate(plan):
        q = _q(f"c{i}", ["gold"])
        questions.append(q)
        lookups[q.id] = {"no_call": [], "empty_results": [_call([])], "wrong_document": [_call(["other"])],
                         "correct_document": [_call(["gold"])]}[branch]
        qualities[q.id] = [quality]
    questions.append(Question(id="unanswerable", text="?", answerable=False))
    cases = lookup_cases(questions, lookups, qualities)
    flow = lookup_flow(cases).model_dump()
    assert list(flow) == [*LOOKUP_BRANCHES, "cases", "called", "lookup_calls", "hits", "hit_rate", "misses",
                          "wrong_on_misses", "acceptable_on_misses", "wrong_on_hits", "accounting", "closes",
                          "accounting_closes"]  # the failure flow's lookup_flow, key for key
    assert {b: flow[b] for b in LOOKUP_BRANCHES} == {"no_call": 22, "empty_results": 5, "wrong_document": 22,
                                                     "correct_document": 251}
    assert flow["cases"] == 300 and flow["called"] == 278
    assert flow["hit_rate"] == pytest.approx(251 / 300)
    assert flow["wrong_on_misses"] == 15 and flow["acceptable_on_misses"] == 34 and flow["wrong_on_hits"] == 4
    assert flow["accounting"]["no_call"] == {"acceptable": 16, "wrong": 6, "unanswered": 0, "not_measured": 0}
    assert flow["closes"] and flow["accounting_closes"]
    json.dumps(flow)  # written as failure_flow.json


def test_lookup_flow_of_nothing_is_empty_not_an_error():
    flow = lookup_flow([]).model_dump()
    assert flow["cases"] == 0 and flow["hit_rate"] is None and flow["closes"]
