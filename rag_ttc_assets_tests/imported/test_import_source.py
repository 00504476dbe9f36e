"""imported.import_source and imported.import_mapping: OTLP JSON of OpenInference spans, RAGChecker and RAGAS rows into records;
the mapping to questions and the corpus, stated and counted; what the prompt held; citations of free text; errors
naming file, trace, field."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from rag_ttc_assets.imported import import_mapping as imap
from rag_ttc_assets.imported import import_source as imp
from rag_ttc_assets.core.evidence_map import request_support
from rag_ttc_assets.core.records import Evidence, Question, Request

SRC = "traces.json"
CORPUS = {"assert": "The assert statement checks a condition. It raises AssertionError when false.",
          "raise": "The raise statement raises an exception. Without arguments it re-raises."}


def attr(key: str, value) -> dict:
    if isinstance(value, bool):
        v = {"boolValue": value}
    elif isinstance(value, int):
        v = {"intValue": str(value)}
    elif isinstance(value, float):
        v = {"doubleValue": value}
    else:
        v = {"stringValue": value}
    return {"key": key, "value": v}


def span(trace: str, sid: str, kind: str, attrs: dict, parent: str = "", start: int = 1) -> dict:
    return {"traceId": trace, "spanId": sid, "parentSpanId": parent, "name": kind.lower(),
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 2_000_000),
            "attributes": [attr("openinference.span.kind", kind), *(attr(k, v) for k, v in attrs.items())]}


def docs(prefix: str, items: list[tuple[str | None, str, float]]) -> dict:
    out = {}
    for i, (did, text, score) in enumerate(items):
        if did is not None:
            out[f"{prefix}.{i}.document.id"] = did
        out[f"{prefix}.{i}.document.content"] = text
        out[f"{prefix}.{i}.document.score"] = score
    return out


A1 = "The assert statement checks a condition."
R1 = "The raise statement raises an exception."
OUTSIDE = "A passage from the system's own wiki, in no corpus document."


def trace(tid: str, question: str, qid: str | None = "q1", ranked=None, selected=None, prompt: str | None = None,
          answer: str | None = "It checks a condition [1].", start: int = 1, retriever: bool = True) -> list[dict]:
    ranked = ranked if ranked is not None else [("assert", A1, 2.0), (None, OUTSIDE, 1.5), ("raise#c0", R1, 1.0)]
    root = {"input.value": question}
    if qid is not None:
        root["metadata"] = json.dumps({"question_id": qid})
    spans = [span(tid, "r" + tid, "CHAIN", root, start=start)]
    if retriever:
        spans.append(span(tid, "s" + tid, "RETRIEVER", {"input.value": question,
                                                       **docs("retrieval.documents", ranked)}, "r" + tid, start + 1))
    if selected is not None:
        spans.append(span(tid, "k" + tid, "RERANKER", docs("reranker.output_documents", selected), "r" + tid, start + 2))
    if answer is not None:
        spans.append(span(tid, "l" + tid, "LLM", {
            "llm.model_name": "gpt-test", "llm.token_count.prompt": 120, "llm.token_count.completion": 9,
            "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": "Answer from context.",
            "llm.input_messages.1.message.role": "user",
            "llm.input_messages.1.message.content": prompt if prompt is not None else f"{R1}\n\n{A1}\n\nQ: {question}",
            "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": answer},
            "r" + tid, start + 3))
    return spans


def export(*spans_lists: list[dict]) -> bytes:
    return json.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [
        {"scope": {"name": "app"}, "spans": [s for spans in spans_lists for s in spans]}]}]}).encode()


QUESTIONS = [SimpleNamespace(id="q1", text="What does  assert do?"), SimpleNamespace(id="q2", text="What does raise do?")]


def test_the_conventions_are_openinference_s():
    semconv = pytest.importorskip("openinference.semconv.trace")
    S, D, M, R = semconv.SpanAttributes, semconv.DocumentAttributes, semconv.MessageAttributes, semconv.RerankerAttributes
    assert (imp.SPAN_KIND, imp.INPUT_VALUE, imp.OUTPUT_VALUE, imp.METADATA) == (
        S.OPENINFERENCE_SPAN_KIND, S.INPUT_VALUE, S.OUTPUT_VALUE, S.METADATA)
    assert (imp.RETRIEVAL_DOCUMENTS, imp.RERANKER_INPUT_DOCUMENTS, imp.RERANKER_OUTPUT_DOCUMENTS) == (
        S.RETRIEVAL_DOCUMENTS, R.RERANKER_INPUT_DOCUMENTS, R.RERANKER_OUTPUT_DOCUMENTS)
    assert (imp.LLM_INPUT_MESSAGES, imp.LLM_OUTPUT_MESSAGES, imp.LLM_PROMPT_TEMPLATE_VARIABLES, imp.LLM_MODEL_NAME,
            imp.LLM_TOKEN_COUNT_PROMPT, imp.LLM_TOKEN_COUNT_COMPLETION) == (
        S.LLM_INPUT_MESSAGES, S.LLM_OUTPUT_MESSAGES, S.LLM_PROMPT_TEMPLATE_VARIABLES, S.LLM_MODEL_NAME,
        S.LLM_TOKEN_COUNT_PROMPT, S.LLM_TOKEN_COUNT_COMPLETION)
    assert (imp.DOCUMENT_ID, imp.DOCUMENT_CONTENT, imp.DOCUMENT_SCORE, imp.DOCUMENT_METADATA) == (
        D.DOCUMENT_ID, D.DOCUMENT_CONTENT, D.DOCUMENT_SCORE, D.DOCUMENT_METADATA)
    assert (imp.MESSAGE_ROLE, imp.MESSAGE_CONTENT) == (M.MESSAGE_ROLE, M.MESSAGE_CONTENT)


def test_a_trace_reads_as_ranked_selected_prompt_and_answer():
    [t] = imp.otlp_traces(export(trace("t1", "What does assert do?", selected=[("assert", A1, 0.9),
                                                                              ("raise#c0", R1, 0.2)])), SRC)
    assert t.trace_id == "t1" and t.question_id == "q1" and t.question_text == "What does assert do?"
    assert [d.source_id for d in t.ranked] == ["assert", None, "raise#c0"]
    assert [d.score for d in t.ranked] == [2.0, 1.5, 1.0]
    assert [d.source_id for d in t.selected] == ["assert", "raise#c0"]
    assert t.answer == "It checks a condition [1]." and t.model == "gpt-test"
    assert (t.input_tokens, t.output_tokens, t.latency_s) == (120, 9, 0.002)
    assert t.status == "ok"


def test_mapping_by_attribute_then_by_normalised_text_and_counted():
    traces = imp.otlp_traces(export(trace("t1", "ignored text", qid="q1"),
                                    trace("t2", "What does raise   do?", qid=None),
                                    trace("t3", "Something nobody asked", qid="q9")), SRC)
    m = imap.map_traces(traces, QUESTIONS, SRC)
    assert {q: t.trace_id for q, t in m.traces.items()} == {"q1": "t1", "q2": "t2"}
    assert m.matched_by == {"q1": "attribute", "q2": "text"}
    assert m.unmatched_traces == ["t3"] and m.unanswered_questions == []
    assert m.counts() == {"traces": 3, "matched_traces": 2, "unmatched_traces": 1, "superseded_traces": 0,
                          "unanswered_questions": 0, "matched_by_attribute": 1, "matched_by_text": 1}


def test_two_traces_for_one_question_name_both_unless_pick_latest():
    traces = imp.otlp_traces(export(trace("t-old", "q", start=10), trace("t-new", "q", start=50)), SRC)
    with pytest.raises(imp.ImportSourceError, match=r"traces\.json: traces t-old and t-new both answer question 'q1'"):
        imap.map_traces(traces, QUESTIONS, SRC)
    m = imap.map_traces(traces, QUESTIONS, SRC, pick="latest")
    assert m.traces["q1"].trace_id == "t-new" and m.superseded_traces == ["t-old"]
    assert m.unanswered_questions == ["q2"]


def test_documents_map_by_id_else_by_content_else_external_and_gold_quotes_project_onto_them():
    traces = imp.otlp_traces(export(trace("t1", "q")), SRC)
    m = imap.map_traces(traces, QUESTIONS, SRC)
    matches, index = imap.map_documents(m.traces.values(), CORPUS)
    by = {x.chunk.chunk_id: (x.chunk.doc_id, x.matched_by, x.chunk.start, x.chunk.end) for x in matches}
    outside = index[(None, OUTSIDE)]
    assert by == {"assert": ("assert", "id", 0, len(A1)),
                  outside: ("external:" + outside, "external", 0, len(OUTSIDE)),
                  "raise#c0": ("raise", "id", 0, len(R1))}
    assert outside.startswith("text-")
    # A gold quote is supported by an imported document holding it, exactly as by a lab chunk.
    q = Question(id="q1", text="t", requests=[
        Request(id="q1.r1", text="assert?", evidence=[Evidence(doc_id="assert", quote="checks a condition")]),
        Request(id="q1.r2", text="false?", evidence=[Evidence(doc_id="assert", quote="raises AssertionError")])])
    assert request_support(CORPUS, [q], [x.chunk for x in matches]) == {"q1.r1": ["assert"], "q1.r2": []}


def test_a_document_without_an_id_is_found_by_its_content_even_with_other_whitespace():
    [t] = imp.otlp_traces(export(trace("t1", "q", ranked=[(None, "The raise  statement\nraises an exception.", 1.0)])),
                          SRC)
    [match], _ = imap.map_documents([t], CORPUS)
    assert (match.chunk.doc_id, match.matched_by, match.chunk.start, match.chunk.end) == ("raise", "content", 0,
                                                                                          len(R1))


def test_one_id_with_two_texts_gets_two_chunks():
    ranked = [("assert", A1, 1.0), ("assert", "It raises AssertionError when false.", 0.5)]
    [t] = imp.otlp_traces(export(trace("t1", "q", ranked=ranked)), SRC)
    matches, _ = imap.map_documents([t], CORPUS)
    ids = [x.chunk.chunk_id for x in matches]
    assert ids[0] == "assert" and ids[1].startswith("assert@") and len(set(ids)) == 2


def test_admitted_is_what_the_prompt_held_in_prompt_order():
    traces = imp.otlp_traces(export(trace("t1", "q")), SRC)
    m = imap.map_traces(traces, QUESTIONS, SRC)
    matches, index = imap.map_documents(m.traces.values(), CORPUS)
    text = {x.chunk.chunk_id: x.chunk.text for x in matches}
    [row, missing] = imap.imported_rows(QUESTIONS, m, index, text)
    assert row.ranked_chunk_ids == ["assert", index[(None, OUTSIDE)], "raise#c0"]
    assert row.selected_chunk_ids == row.ranked_chunk_ids  # no RERANKER span: nothing selected away
    assert row.admitted_chunk_ids == ["raise#c0", "assert"]  # the prompt has R1 first; OUTSIDE never
    assert (missing.status, missing.retrieval_status) == ("no_trace", "no_trace")


def test_prompt_template_variables_count_as_the_prompt():
    t = trace("t1", "q", prompt="Context is in the variables.")
    t[-1]["attributes"].append(attr("llm.prompt_template.variables", json.dumps({"context": A1, "question": "q"})))
    traces = imp.otlp_traces(export(t), SRC)
    m = imap.map_traces(traces, QUESTIONS, SRC)
    matches, index = imap.map_documents(m.traces.values(), CORPUS)
    [row, _] = imap.imported_rows(QUESTIONS, m, index, {x.chunk.chunk_id: x.chunk.text for x in matches})
    assert row.admitted_chunk_ids == ["assert"]


def test_a_trace_without_llm_or_retriever_span_is_a_row_status_not_an_error():
    traces = imp.otlp_traces(export(trace("t1", "q", answer=None), trace("t2", "What does raise do?", qid=None,
                                                                          retriever=False)), SRC)
    m = imap.map_traces(traces, QUESTIONS, SRC)
    matches, index = imap.map_documents(m.traces.values(), CORPUS)
    rows = imap.imported_rows(QUESTIONS, m, index, {x.chunk.chunk_id: x.chunk.text for x in matches})
    assert [(r.status, r.retrieval_status) for r in rows] == [("no_answer_span", "ok"), ("ok", "no_retrieval_span")]
    assert rows[0].admitted_chunk_ids == [] and rows[1].ranked_chunk_ids == []


@pytest.mark.parametrize(("answer", "style", "cited"), [
    ("Checks it [1] and raises [2].", "numbered", ["c-a", "c-b"]),
    ("Checks it [1, 2].", "numbered", ["c-a", "c-b"]),
    ("See [3].", "numbered", ["[3]"]),  # past the prompt's documents: kept, so the contract can name it
    ("Checks it [c-b].", "ids", ["c-b"]),
    ("Checks it [not-a-doc].", "ids", []),
    ("Checks it [1].", "none", []),
])
def test_free_text_citations_follow_the_declared_style(answer, style, cited):
    assert imap.citations(answer, style, ["c-a", "c-b"], ["c-a", "c-b"]) == cited


@pytest.mark.parametrize(("data", "message"), [
    (b"{not json", r"traces\.json: not OTLP JSON"),
    (b'{"results": []}', r"traces\.json: not OTLP JSON \(no resourceSpans\)"),
    (export([{**span("t1", "s1", "LLM", {}), "attributes": [{"key": "llm.token_count.prompt",
                                                              "value": {"intValue": "many"}}]}]),
     r"traces\.json: resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\] \(trace t1, span s1\): attribute "
     r"'llm\.token_count\.prompt': intValue holds a str"),
    (export([span("t1", "s1", "LLM", {"llm.token_count.prompt": "12"})]),
     r"traces\.json: trace t1, span s1: attribute 'llm\.token_count\.prompt' must be an integer, not str"),
    (export([span("t1", "s1", "RETRIEVER", {"retrieval.documents.0.document.id": "d"})]),
     r"traces\.json: trace t1, span s1: retrieval\.documents\.0: attribute 'document\.content' is missing"),
    (export([span("t1", "s1", "RETRIEVER", {"retrieval.documents.0.document.content": "x",
                                            "retrieval.documents.0.document.score": "high"})]),
     r"trace t1, span s1: retrieval\.documents\.0: attribute 'document\.score' must be a number, not str"),
])
def test_bad_files_and_attributes_name_the_file_the_trace_and_the_field(data, message):
    with pytest.raises(imp.ImportSourceError, match=message):
        imp.otlp_traces(data, SRC)


def test_jsonl_holds_one_request_or_one_span_a_line():
    spans = trace("t1", "q")
    lines = [json.dumps(json.loads(export(spans[:2]))), *(json.dumps(s) for s in spans[2:])]
    [t] = imp.otlp_traces("\n".join(lines).encode(), SRC, jsonl=True)
    assert t.answer == "It checks a condition [1]." and len(t.ranked) == 3
    with pytest.raises(imp.ImportSourceError, match=r"traces\.json: line 2: not JSON"):
        imp.otlp_traces(b'{"resourceSpans": []}\n{oops\n', SRC, jsonl=True)


def test_ragchecker_rows():
    data = json.dumps({"results": [{"query_id": "q1", "query": "What does assert do?", "gt_answer": "Checks.",
                                    "response": "It checks.", "retrieved_context": [{"doc_id": "assert", "text": A1}]}]})
    [t] = imp.ragchecker_rows(data.encode(), "rc.json")
    assert (t.question_id, t.question_text, t.answer, t.gold_answer) == ("q1", "What does assert do?", "It checks.",
                                                                         "Checks.")
    assert [d.source_id for d in t.ranked] == ["assert"] and t.prompt_texts == (A1,)
    bad = json.dumps({"results": [{"query_id": "q7", "query": "x", "response": "y", "retrieved_context": [{"doc_id": 1}]}]})
    with pytest.raises(imp.ImportSourceError, match=r"rc\.json: results\[0\] \(query_id q7\): retrieved_context\[0\]: "
                                                    r"field 'text' must be a string \(missing\)"):
        imp.ragchecker_rows(bad.encode(), "rc.json")


def test_ragas_rows_as_a_list_or_jsonl():
    row = {"user_input": "What does raise do?", "retrieved_contexts": [R1], "response": "Raises.", "reference": "It raises."}
    for data in (json.dumps([row]), json.dumps(row) + "\n"):
        [t] = imp.ragas_rows(data.encode(), "ragas.jsonl")
        assert (t.question_text, t.answer, t.gold_answer, t.question_id) == ("What does raise do?", "Raises.",
                                                                             "It raises.", None)
    with pytest.raises(imp.ImportSourceError, match=r"ragas\.jsonl: row 0: field 'retrieved_contexts' must be a list"):
        imp.ragas_rows(json.dumps([{**row, "retrieved_contexts": "R1"}]).encode(), "ragas.jsonl")


def test_the_judges_read_a_free_text_answer_without_the_markers_it_cites_by():
    """A numbered marker is a citation, never a number the claim states: `without_citations` takes out exactly the
    markers `citations` reads (before, the lexical judge read `[1]` in 'Item 3 is a widget [1].' as a number the
    gold does not state: contradicts)."""
    from rag_ttc_assets.imported.import_mapping import citations, without_citations
    from rag_ttc_assets.judging.lexical_judge import conflict

    text = "Item 3 is a widget [1]. It costs 3 dollars [1, 2].\nSee the plan."
    assert citations(text, "numbered", ["d1", "d2"], []) == ["d1", "d2"]
    assert without_citations(text, "numbered", []) == "Item 3 is a widget. It costs 3 dollars.\nSee the plan."
    # The marker read as a number the gold does not state, beside one the answer does not: a contradiction; without
    # the marker, none.
    gold = "Item 3 is a widget in 2 colours"
    assert conflict(text.split(".")[0], gold) is not None
    assert conflict(without_citations("Item 3 is a widget [1]", "numbered", []), gold) is None
    known = ["d1", "faq#chunk-2"]
    assert without_citations("Plans cost 12 dollars [faq#chunk-2]. Not [a note].", "ids", known) == \
        "Plans cost 12 dollars. Not [a note]."
    assert without_citations("Kept [1] as written.", "none", known) == "Kept [1] as written."


def test_a_null_response_is_an_answer_of_nothing_and_a_refusal_says_null_or_missing():
    """Real logs write `"response": null` for a system that answered nothing: read as an empty answer (before: refused
    as '(missing)', a word that was not true); a field that is there but null, or absent, is said as such."""
    import json

    from rag_ttc_assets.imported.import_source import ImportSourceError, ragas_rows, ragchecker_rows

    row = {"query_id": "q1", "query": "What is x?", "gt_answer": "X is y.", "response": None,
           "retrieved_context": [{"doc_id": "d1", "text": "X is y."}]}
    assert ragchecker_rows(json.dumps({"results": [row]}).encode(), "a.json")[0].answer == ""
    sample = {"user_input": "What is x?", "response": None, "retrieved_contexts": ["X is y."]}
    assert ragas_rows(json.dumps([sample]).encode(), "b.json")[0].answer == ""
    with pytest.raises(ImportSourceError, match=r"a.json: results\[0\] \(query_id q1\): field 'query' must be a "
                                                r"string \(null\)"):
        ragchecker_rows(json.dumps({"results": [{**row, "query": None}]}).encode(), "a.json")
    without = {k: v for k, v in row.items() if k != "query"}
    with pytest.raises(ImportSourceError, match=r"field 'query' must be a string \(missing\)"):
        ragchecker_rows(json.dumps({"results": [without]}).encode(), "a.json")
    with pytest.raises(ImportSourceError, match=r"field 'gt_answer' must be a string, not bool"):
        ragchecker_rows(json.dumps({"results": [{**row, "gt_answer": True}]}).encode(), "a.json")
