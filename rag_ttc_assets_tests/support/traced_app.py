"""A small RAG application, traced the way a production system is: Tantivy (the lab's BM25 adapter) over the
dataset's chunks, a RERANKER step that keeps the top `evidence_k`, whole chunks under a rune budget in the prompt,
answers through litellm from an OpenAI-compatible server. Every request is traced with the OpenTelemetry SDK under
OpenInference's semantic conventions (CHAIN root, RETRIEVER, RERANKER, LLM spans) and exported as OTLP JSON, the
form OpenTelemetry's file exporter writes. It is the system an imported arm diagnoses."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from openinference.semconv.resource import ResourceAttributes
from openinference.semconv.trace import (DocumentAttributes, MessageAttributes, OpenInferenceSpanKindValues,
                                         RerankerAttributes, SpanAttributes)

PROJECT_NAME = ResourceAttributes.PROJECT_NAME  # openinference.project.name


def _value(v) -> dict:
    """An OTLP JSON AnyValue."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}  # int64 as a string, as the OTLP JSON mapping writes it
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [_value(x) for x in v]}}
    return {"stringValue": str(v)}


def _attributes(attrs) -> list[dict]:
    return [{"key": k, "value": _value(v)} for k, v in (attrs or {}).items()]


def otlp_json(spans: Sequence[ReadableSpan]) -> dict:
    """Spans as one OTLP/JSON ExportTraceServiceRequest: hex trace and span IDs, nanosecond times as strings."""
    by_resource: dict[int, tuple[ReadableSpan, dict[str, list[dict]]]] = {}
    for s in spans:
        _, scopes = by_resource.setdefault(id(s.resource), (s, {}))
        c = s.get_span_context()
        scopes.setdefault(s.instrumentation_scope.name if s.instrumentation_scope else "", []).append({
            "traceId": format(c.trace_id, "032x"), "spanId": format(c.span_id, "016x"),
            "parentSpanId": format(s.parent.span_id, "016x") if s.parent else "", "name": s.name,
            "kind": s.kind.value + 1, "startTimeUnixNano": str(s.start_time), "endTimeUnixNano": str(s.end_time),
            "attributes": _attributes(s.attributes), "status": {"code": s.status.status_code.value}})
    return {"resourceSpans": [
        {"resource": {"attributes": _attributes(first.resource.attributes)},
         "scopeSpans": [{"scope": {"name": name}, "spans": spans_} for name, spans_ in scopes.items()]}
        for first, scopes in by_resource.values()]}


class OtlpJsonFile(SpanExporter):
    """Collects finished spans; `write(path)` writes them as OTLP JSON (one export request)."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def write(self, path: Path, jsonl: bool = False) -> Path:
        request = otlp_json(self.spans)
        if jsonl:  # one span a line, each in its own request
            path.write_text("\n".join(json.dumps(otlp_json([s])) for s in self.spans) + "\n", encoding="utf-8")
        else:
            path.write_text(json.dumps(request), encoding="utf-8")
        return path


@dataclass
class AppConfig:
    chunk_runes: int
    overlap_runes: int
    retrieve_k: int
    evidence_k: int
    context_runes: int
    model: str
    api_base: str
    api_key: str
    prompt_text: str  # the answer prompt (the app answers in the lab's answer format)
    question_id_attribute: bool = True  # write metadata.question_id on the root span
    skip_llm_for: frozenset[str] = frozenset()  # question IDs answered without an LLM span (a cached reply)
    skip_retriever_for: frozenset[str] = frozenset()


def _docs(prefix: str, docs: list[tuple[str, str, float]]) -> dict:
    out = {}
    for i, (cid, text, score) in enumerate(docs):
        out[f"{prefix}.{i}.{DocumentAttributes.DOCUMENT_ID}"] = cid
        out[f"{prefix}.{i}.{DocumentAttributes.DOCUMENT_CONTENT}"] = text
        out[f"{prefix}.{i}.{DocumentAttributes.DOCUMENT_SCORE}"] = float(score)
    return out


def run_app(corpus: dict, questions: list[dict], cfg: AppConfig, workdir: Path,
            phoenix: tuple[str, str] | None = None) -> OtlpJsonFile:
    """Answer every question, tracing each request; return the exporter holding the spans. With `phoenix`
    (OTLP/HTTP traces endpoint, project name) the same spans are also exported to a Phoenix server over OTLP
    (protobuf over HTTP, as a production app's exporter sends them), into that project."""
    import litellm

    from rag_ttc_assets.adapters.bm25 import BM25Index, build_index
    from rag_ttc_assets.core.admission import admit_complete_chunks
    from rag_ttc_assets.core.chunking import chunk_corpus
    from rag_ttc_assets.core.prompts import evidence_block

    chunks = chunk_corpus([(d["id"], d["text"]) for d in corpus["documents"]], cfg.chunk_runes, cfg.overlap_runes)
    text = {c.chunk_id: c.text for c in chunks}
    build_index(workdir / "tantivy", [(c.chunk_id, c.text) for c in chunks])
    index = BM25Index(workdir / "tantivy")

    exporter = OtlpJsonFile()
    resource = {"service.name": "traced-rag-app"}
    if phoenix is not None:
        resource[PROJECT_NAME] = phoenix[1]  # Phoenix files a trace under its resource's project name
    provider = TracerProvider(resource=Resource.create(resource))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if phoenix is not None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=phoenix[0], timeout=30)))
    tracer = provider.get_tracer("traced_rag_app")
    kind = SpanAttributes.OPENINFERENCE_SPAN_KIND
    for q in questions:
        root_attrs = {kind: OpenInferenceSpanKindValues.CHAIN.value, SpanAttributes.INPUT_VALUE: q["text"]}
        if cfg.question_id_attribute:
            root_attrs[SpanAttributes.METADATA] = json.dumps({"question_id": q["id"]})
        with tracer.start_as_current_span("rag", attributes=root_attrs) as root:
            ranked = index.search(q["text"], max(100, cfg.retrieve_k))[: cfg.retrieve_k]
            if q["id"] not in cfg.skip_retriever_for:
                with tracer.start_as_current_span("retrieve", attributes={
                        kind: OpenInferenceSpanKindValues.RETRIEVER.value, SpanAttributes.INPUT_VALUE: q["text"],
                        **_docs(SpanAttributes.RETRIEVAL_DOCUMENTS, [(c, text[c], s) for c, s in ranked])}):
                    pass
            top = ranked[: cfg.evidence_k]
            with tracer.start_as_current_span("rerank", attributes={
                    kind: OpenInferenceSpanKindValues.RERANKER.value,
                    RerankerAttributes.RERANKER_QUERY: q["text"], RerankerAttributes.RERANKER_TOP_K: cfg.evidence_k,
                    **_docs(RerankerAttributes.RERANKER_INPUT_DOCUMENTS, [(c, text[c], s) for c, s in ranked]),
                    **_docs(RerankerAttributes.RERANKER_OUTPUT_DOCUMENTS, [(c, text[c], s) for c, s in top])}):
                pass
            admitted = admit_complete_chunks([(c, text[c]) for c, _ in top], cfg.context_runes).evidence
            prompt = cfg.prompt_text.replace("{{question}}", q["text"]).replace(
                "{{evidence}}", evidence_block([(e.chunk_id, text[e.chunk_id]) for e in admitted]))
            messages = [{"role": "user", "content": prompt}]
            if q["id"] in cfg.skip_llm_for:
                root.set_attribute(SpanAttributes.OUTPUT_VALUE, "(served from the app's cache)")
                continue
            with tracer.start_as_current_span("llm", attributes={
                    kind: OpenInferenceSpanKindValues.LLM.value, SpanAttributes.LLM_MODEL_NAME: cfg.model,
                    f"{SpanAttributes.LLM_INPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_ROLE}": "user",
                    f"{SpanAttributes.LLM_INPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_CONTENT}": prompt}) as llm:
                reply = litellm.completion(model=cfg.model, api_base=cfg.api_base, api_key=cfg.api_key,
                                           messages=messages, temperature=0)
                answer = reply.choices[0].message.content
                llm.set_attributes({
                    f"{SpanAttributes.LLM_OUTPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_ROLE}": "assistant",
                    f"{SpanAttributes.LLM_OUTPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_CONTENT}": answer,
                    SpanAttributes.LLM_TOKEN_COUNT_PROMPT: int(reply.usage.prompt_tokens),
                    SpanAttributes.LLM_TOKEN_COUNT_COMPLETION: int(reply.usage.completion_tokens)})
            root.set_attribute(SpanAttributes.OUTPUT_VALUE, answer)
    provider.shutdown()
    return exporter
