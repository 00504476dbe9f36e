"""imported.phoenix_source, the Phoenix reader (span records as the server's REST API returns them, to the OTLP reader's
Span records) and its digest, and imported.phoenix_annotations (one annotation per request on its trace's root span)."""

from __future__ import annotations

import pytest

from rag_ttc_assets.imported import import_source as imported, phoenix_annotations, phoenix_source
from rag_ttc_assets.core.arms import ImportedSource


def record(span_id, parent=None, kind="CHAIN", start="2026-12-02T00:56:41.136289+00:00", **attributes):
    return {"id": f"row-{span_id}", "name": kind.lower(), "context": {"trace_id": "t1", "span_id": span_id},
            "span_kind": kind, "parent_id": parent, "start_time": start, "end_time": "2026-12-02T00:56:41.261570+00:00",
            "status_code": "UNSET", "attributes": attributes}


def test_phoenix_records_become_the_spans_the_otlp_reader_makes():
    recs = [record("r", **{"input.value": "What is X?", "metadata.question_id": "q1"}),
            record("s", parent="r", kind="RETRIEVER",
                   **{"retrieval": {"documents": [{"document": {"id": "d#0", "content": "X is Y.", "score": 2.5}}]}}),
            record("l", parent="r", kind="LLM", start="2026-12-02T00:56:41.200000+00:00",
                   **{"llm.input_messages.0.message.content": "X is Y.",
                      "llm.output_messages.0.message.content": "Y"})]
    spans = phoenix_source.phoenix_spans(recs, "srv")
    from datetime import datetime, timezone
    assert spans[0].start_ns == int(datetime(2026, 12, 2, 0, 56, 41, tzinfo=timezone.utc).timestamp()) * 10**9 \
        + 136_289_000
    assert spans[2].end_ns - spans[2].start_ns == 61_570_000  # exact microseconds, no float rounding
    assert spans[1].attributes == {"retrieval.documents.0.document.id": "d#0",
                                   "retrieval.documents.0.document.content": "X is Y.",
                                   "retrieval.documents.0.document.score": 2.5,
                                   "openinference.span.kind": "RETRIEVER"}
    (t,) = imported.traces_of(spans, "srv")
    assert (t.question_id, t.question_text, [d.source_id for d in t.ranked], t.answer) == ("q1", "What is X?",
                                                                                          ["d#0"], "Y")
    assert t.latency_s == pytest.approx(0.06157)


def test_phoenix_digest_is_over_span_ids_and_content_not_the_servers_row_ids_or_order():
    a, b = record("a", **{"input.value": "x"}), record("b", parent="a")
    d = phoenix_source.phoenix_digest([a, b])
    assert d == phoenix_source.phoenix_digest([b, {**a, "id": "another-row"}])
    assert d != phoenix_source.phoenix_digest([record("a", **{"input.value": "y"}), b])


def test_a_bad_phoenix_record_names_server_trace_span_and_field():
    with pytest.raises(imported.ImportSourceError, match=r"srv: trace t1, span a: field 'start_time': not an ISO"):
        phoenix_source.phoenix_spans([record("a", start="yesterday")], "srv")


def test_a_phoenix_source_takes_endpoint_and_project_and_no_file():
    s = ImportedSource(format="phoenix", endpoint="http://127.0.0.1:6006", project="app")
    assert s.server and s.label == "Phoenix project 'app' at http://127.0.0.1:6006"
    with pytest.raises(ValueError, match="missing: project"):
        ImportedSource(format="phoenix", endpoint="http://127.0.0.1:6006")
    with pytest.raises(ValueError, match="takes `file`, no `endpoint`"):
        ImportedSource(format="otlp_json", file="a.json", endpoint="http://127.0.0.1:6006")


def test_one_annotation_per_request_on_its_traces_root_span():
    spans = phoenix_source.phoenix_spans([record("r"), record("c", parent="r", kind="LLM")], "srv")
    roots = phoenix_annotations.root_spans(spans)
    assert roots == {"t1": "r"}
    flow = [{"query_id": "q1", "request_id": "q1.r1", "branch": "ok", "supported": True},
            {"query_id": "q1", "request_id": "q1.r2", "branch": "not_in_prompt", "supported": False},
            {"query_id": "q2", "request_id": "q2.r1", "branch": "not_retrieved", "supported": False}]
    judged = [{"request_id": "q1.r1", "reason": "covered", "verdict": "supported"},
              {"request_id": "q1.r2", "reason": None, "judge_error": "timeout", "verdict": None}]
    out, skipped = phoenix_annotations.annotations("app", flow, judged, {"q1": "t1", "q2": None}, roots)
    assert [(a["span_id"], a["identifier"], a["result"]) for a in out] == [
        ("r", "app/q1.r1", {"label": "ok", "score": 1.0, "explanation": "covered"}),
        ("r", "app/q1.r2", {"label": "not_in_prompt", "score": 0.0, "explanation": "timeout"})]
    assert skipped == [{"request_id": "q2.r1", "query_id": "q2", "reason": "no trace answered its question"}]
