"""Imported arms: another system's traces (OpenInference spans in OTLP JSON) or rows (RAGChecker, RAGAS) read
into typed records, then mapped onto the evaluation's questions and the corpus. Bytes in, records out: reading
the file is the caller's.

The retrieved / selected / in-the-prompt distinction survives the import:

  ranked     the RETRIEVER span's `retrieval.documents.{i}` in index order, with their `document.score`;
  selected   a RERANKER span's `reranker.output_documents.{i}` (no RERANKER span: the ranked list itself);
  admitted   the selected documents whose text is in the LLM span's input messages (`llm.input_messages.{i}.
             message.content`) or its prompt template variables (`llm.prompt_template.variables`), in the order
             they appear there (the prompt order: `[2]` cites the second).

Mapping, stated and counted (`ImportMapping`): a trace matches a question by an explicit attribute (default
`metadata.question_id`: the flat attribute, or the key `question_id` of the span's `metadata` JSON) or by the
question's text after whitespace normalisation (the root span's, else the RETRIEVER span's `input.value`);
a document matches the corpus by `document.id`, else by locating its content in the corpus; a document that
matches nothing is kept as external evidence with its text (doc ID `external:<chunk id>`), so judges still read it.
The imported documents are the arm's chunks: gold quotes are projected onto them as onto a lab chunk
(core.evidence_map), using the offsets where their content was located.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rag_ttc_assets.core.chunking import Chunk
from rag_ttc_assets.core.contract import NO_ANSWER_SPAN, NO_TRACE
from rag_ttc_assets.core.derive_requests import split_claims
from rag_ttc_assets.core.jsonl import json_lines

FORMATS = ("otlp_json", "otlp_jsonl", "ragchecker", "ragas")  # files; `phoenix` is a server (phoenix_spans)
CITATION_STYLES = ("numbered", "ids", "none")
ANSWER_FORMATS = ("free_text", "contract")

# OpenInference semantic conventions (spec/semantic_conventions.md; openinference.semconv.trace), as strings:
# core imports no tracing package. rag_ttc_assets_tests/core/test_imported.py checks them against the package.
SPAN_KIND = "openinference.span.kind"
INPUT_VALUE, OUTPUT_VALUE, METADATA = "input.value", "output.value", "metadata"
RETRIEVAL_DOCUMENTS = "retrieval.documents"
RERANKER_INPUT_DOCUMENTS, RERANKER_OUTPUT_DOCUMENTS = "reranker.input_documents", "reranker.output_documents"
LLM_INPUT_MESSAGES, LLM_OUTPUT_MESSAGES = "llm.input_messages", "llm.output_messages"
LLM_PROMPT_TEMPLATE_VARIABLES, LLM_MODEL_NAME = "llm.prompt_template.variables", "llm.model_name"
LLM_TOKEN_COUNT_PROMPT, LLM_TOKEN_COUNT_COMPLETION = "llm.token_count.prompt", "llm.token_count.completion"
DOCUMENT_ID, DOCUMENT_CONTENT, DOCUMENT_SCORE, DOCUMENT_METADATA = (
    "document.id", "document.content", "document.score", "document.metadata")
MESSAGE_ROLE, MESSAGE_CONTENT = "message.role", "message.content"
RETRIEVER, RERANKER, LLM, CHAIN = "RETRIEVER", "RERANKER", "LLM", "CHAIN"

# Row statuses of an imported question (beside the contract's own): no LLM span, no RETRIEVER span, no trace at all.
NO_RETRIEVAL_SPAN = "no_retrieval_span"
EXTERNAL = "external:"


class ImportSourceError(ValueError):
    """An imported source that cannot be used; the message names the file, the trace or row, and the field."""


# --- OTLP JSON ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Span:
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    start_ns: int
    attributes: dict[str, Any]
    end_ns: int = 0


def _any_value(v: Any, where: str) -> Any:
    """An OTLP AnyValue (`{"stringValue": ...}` etc.) as a Python value."""
    if not isinstance(v, dict) or len(v) > 1:
        raise ImportSourceError(f"{where}: not an OTLP AnyValue (one of stringValue, intValue, doubleValue, boolValue, "
                           f"arrayValue, kvlistValue): {json.dumps(v)[:80]}")
    if not v:
        return None
    (kind, x), = v.items()
    if kind == "stringValue" and isinstance(x, str):
        return x
    if kind == "intValue" and (isinstance(x, int) and not isinstance(x, bool) or isinstance(x, str) and
                               re.fullmatch(r"-?\d+", x)):
        return int(x)  # OTLP JSON writes int64 as a string
    if kind == "doubleValue" and isinstance(x, (int, float, str)) and not isinstance(x, bool):
        try:
            return float(x)
        except ValueError:
            pass
    if kind == "boolValue" and isinstance(x, bool):
        return x
    if kind == "arrayValue" and isinstance(x, dict):
        return [_any_value(e, f"{where}[{i}]") for i, e in enumerate(x.get("values") or [])]
    if kind == "kvlistValue" and isinstance(x, dict):
        return {kv.get("key"): _any_value(kv.get("value"), f"{where}.{kv.get('key')}") for kv in x.get("values") or []}
    raise ImportSourceError(f"{where}: {kind} holds a {type(x).__name__}: {json.dumps(x)[:80]}")


def _spans_of(request: Any, where: str) -> Iterable[Span]:
    if not isinstance(request, dict) or "resourceSpans" not in request:
        raise ImportSourceError(f"{where}: not OTLP JSON (no resourceSpans)")
    for r, rs in enumerate(request["resourceSpans"] or []):
        for s, ss in enumerate(rs.get("scopeSpans") or []):
            for i, span in enumerate(ss.get("spans") or []):
                yield _span(span, f"{where}: resourceSpans[{r}].scopeSpans[{s}].spans[{i}]")


def _span(span: Any, where: str) -> Span:
    if not isinstance(span, dict):
        raise ImportSourceError(f"{where}: a span is not an object")
    trace_id = span.get("traceId")
    if not isinstance(trace_id, str) or not trace_id:
        raise ImportSourceError(f"{where}: field 'traceId' is missing or not a string")
    where = f"{where} (trace {trace_id}, span {span.get('spanId')})"
    attrs = {}
    for a in span.get("attributes") or []:
        if not isinstance(a, dict) or not isinstance(a.get("key"), str):
            raise ImportSourceError(f"{where}: field 'attributes': an entry without a string 'key'")
        attrs[a["key"]] = _any_value(a.get("value"), f"{where}: attribute {a['key']!r}")
    try:
        start = int(span.get("startTimeUnixNano") or 0)
        end = int(span.get("endTimeUnixNano") or 0)
    except (TypeError, ValueError):
        raise ImportSourceError(f"{where}: field 'startTimeUnixNano' or 'endTimeUnixNano' is not an integer") from None
    return Span(trace_id=trace_id, span_id=str(span.get("spanId") or ""),
                parent_span_id=str(span.get("parentSpanId") or ""), name=str(span.get("name") or ""),
                start_ns=start, attributes=attrs, end_ns=end)


def parse_otlp(data: bytes, source: str, jsonl: bool = False) -> list[Span]:
    """Every span of an OTLP/JSON export (one ExportTraceServiceRequest), or of JSONL with one such request (or
    one span) a line. Errors name `source`, the line, the span and the field."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ImportSourceError(f"{source}: not UTF-8 at byte {e.start}") from None
    if not jsonl:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise ImportSourceError(f"{source}: not OTLP JSON: {e}") from None
        return list(_spans_of(obj, source))
    spans: list[Span] = []
    for n, obj, err in json_lines(text):
        if err:
            raise ImportSourceError(f"{source}: line {n}: not JSON: {err}")
        if isinstance(obj, dict) and "traceId" in obj:
            spans.append(_span(obj, f"{source}: line {n}"))
        else:
            spans.extend(_spans_of(obj, f"{source}: line {n}"))
    return spans


# --- one trace --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SourceDocument:
    """A document as the source gave it: its own ID (may be None), text, score, metadata."""

    source_id: str | None
    text: str
    score: float | None = None
    metadata: Any = None


@dataclass(frozen=True)
class ImportedTrace:
    """One request of the system under diagnosis. `ranked` is None when the trace has no RETRIEVER span; `answer`
    is None when it has no LLM span (then `status` says so)."""

    trace_id: str
    question_text: str | None
    question_id: str | None
    ranked: tuple[SourceDocument, ...] | None
    selected: tuple[SourceDocument, ...] | None
    prompt_texts: tuple[str, ...]
    answer: str | None
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    start_ns: int = 0
    latency_s: float | None = None  # the LLM span's duration, as the system's trace measured it
    gold_answer: str | None = None  # row formats carry the system's gold answer (RAGChecker gt_answer, RAGAS reference)

    @property
    def status(self) -> str:
        return NO_ANSWER_SPAN if self.answer is None else "ok"


def _typed(attrs: Mapping[str, Any], key: str, kinds: tuple[type, ...], where: str, kind_name: str) -> Any:
    v = attrs.get(key)
    if v is None:
        return None
    if not isinstance(v, kinds) or isinstance(v, bool) and bool not in kinds:
        raise ImportSourceError(f"{where}: attribute {key!r} must be {kind_name}, not {type(v).__name__}: "
                                f"{str(v)[:60]}")
    return v


def _indexed(attrs: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """`prefix.{i}.<rest>` attributes as a list of {rest: value} in index order (OpenInference's flattened lists)."""
    items: dict[int, dict[str, Any]] = {}
    p = prefix + "."
    for k, v in attrs.items():
        if k.startswith(p):
            i, _, rest = k[len(p):].partition(".")
            if i.isdigit() and rest:
                items.setdefault(int(i), {})[rest] = v
    return [items[i] for i in sorted(items)]


def _documents(attrs: Mapping[str, Any], prefix: str, where: str) -> tuple[SourceDocument, ...]:
    out = []
    for i, d in enumerate(_indexed(attrs, prefix)):
        w = f"{where}: {prefix}.{i}"
        content = _typed(d, DOCUMENT_CONTENT, (str,), w, "a string")
        if content is None:
            raise ImportSourceError(f"{w}: attribute {DOCUMENT_CONTENT!r} is missing "
                                    "(the lab reads the document's text)")
        doc_id = _typed(d, DOCUMENT_ID, (str, int), w, "a string or integer")
        score = _typed(d, DOCUMENT_SCORE, (int, float), w, "a number")
        out.append(SourceDocument(None if doc_id is None else str(doc_id), content,
                                  None if score is None else float(score), d.get(DOCUMENT_METADATA)))
    return tuple(out)


def _kind(span: Span) -> str | None:
    k = span.attributes.get(SPAN_KIND)
    return k.upper() if isinstance(k, str) else None


def question_id_of(spans: Sequence[Span], attribute: str) -> str | None:
    """The explicit question ID: the flat attribute, or, for `metadata.<key>`, the key of the `metadata` JSON."""
    for s in spans:
        v = s.attributes.get(attribute)
        if v is not None:
            return str(v)
        if attribute.startswith(METADATA + ".") and isinstance(s.attributes.get(METADATA), str):
            try:
                meta = json.loads(s.attributes[METADATA])
            except json.JSONDecodeError:
                continue
            v = meta.get(attribute[len(METADATA) + 1:]) if isinstance(meta, dict) else None
            if v is not None:
                return str(v)
    return None


def _query_text(value: Any) -> str | None:
    """`input.value` as the question: the text, or a JSON object's `query` / `question` / `input` string."""
    if not isinstance(value, str):
        return None
    if value.lstrip().startswith("{"):
        try:
            obj = json.loads(value)
        except json.JSONDecodeError:
            return value
        if isinstance(obj, dict):
            for k in ("query", "question", "input", "user_input"):
                if isinstance(obj.get(k), str):
                    return obj[k]
    return value


def trace_record(trace_id: str, spans: Sequence[Span], source: str, question_attribute: str) -> ImportedTrace:
    """One trace's spans as an ImportedTrace: its first RETRIEVER span, its first RERANKER span, its last LLM span
    (the final answer), the question from the root span (else the RETRIEVER's input)."""
    where = f"{source}: trace {trace_id}"
    spans = sorted(spans, key=lambda s: (s.start_ns, s.span_id))
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if not s.parent_span_id or s.parent_span_id not in ids]
    by_kind: dict[str, list[Span]] = {}
    for s in spans:
        by_kind.setdefault(_kind(s) or "", []).append(s)
    retriever = (by_kind.get(RETRIEVER) or [None])[0]
    reranker = (by_kind.get(RERANKER) or [None])[0]
    llm = (by_kind.get(LLM) or [None])[-1]
    for s in spans:
        _typed(s.attributes, INPUT_VALUE, (str,), f"{where}, span {s.span_id}", "a string")
    question = None
    for s in [*roots, *([retriever] if retriever else [])]:
        question = _query_text(s.attributes.get(INPUT_VALUE))
        if question:
            break
    ranked = selected = None
    if retriever is not None:
        ranked = _documents(retriever.attributes, RETRIEVAL_DOCUMENTS, f"{where}, span {retriever.span_id}")
        selected = ranked
        if reranker is not None:
            selected = _documents(reranker.attributes, RERANKER_OUTPUT_DOCUMENTS, f"{where}, span {reranker.span_id}")
    prompt_texts: list[str] = []
    answer = model = None
    tokens_in = tokens_out = None
    if llm is not None:
        w = f"{where}, span {llm.span_id}"
        for i, m in enumerate(_indexed(llm.attributes, LLM_INPUT_MESSAGES)):
            c = _typed(m, MESSAGE_CONTENT, (str,), f"{w}: {LLM_INPUT_MESSAGES}.{i}", "a string")
            if c:
                prompt_texts.append(c)
        variables = _typed(llm.attributes, LLM_PROMPT_TEMPLATE_VARIABLES, (str,), w, "a JSON string")
        if variables:
            try:
                obj = json.loads(variables)
            except json.JSONDecodeError:
                raise ImportSourceError(f"{w}: attribute {LLM_PROMPT_TEMPLATE_VARIABLES!r} is not JSON") from None
            if isinstance(obj, dict):
                prompt_texts.extend(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
                                    for v in obj.values())
        outputs = _indexed(llm.attributes, LLM_OUTPUT_MESSAGES)
        texts = [_typed(m, MESSAGE_CONTENT, (str,), f"{w}: {LLM_OUTPUT_MESSAGES}.{i}", "a string")
                 for i, m in enumerate(outputs)]
        texts = [t for t in texts if t is not None]
        answer = texts[-1] if texts else _typed(llm.attributes, OUTPUT_VALUE, (str,), w, "a string")
        if answer is None:
            answer = ""
        model = _typed(llm.attributes, LLM_MODEL_NAME, (str,), w, "a string")
        tokens_in = _typed(llm.attributes, LLM_TOKEN_COUNT_PROMPT, (int,), w, "an integer")
        tokens_out = _typed(llm.attributes, LLM_TOKEN_COUNT_COMPLETION, (int,), w, "an integer")
    latency = (llm.end_ns - llm.start_ns) / 1e9 if llm is not None and llm.end_ns >= llm.start_ns > 0 else None
    return ImportedTrace(trace_id=trace_id, question_text=question,
                         question_id=question_id_of([*roots, *spans], question_attribute),
                         ranked=ranked, selected=selected, prompt_texts=tuple(prompt_texts), answer=answer,
                         model=model, input_tokens=tokens_in, output_tokens=tokens_out,
                         start_ns=min((s.start_ns for s in spans), default=0), latency_s=latency)


def otlp_traces(data: bytes, source: str, jsonl: bool = False,
                question_attribute: str = "metadata.question_id") -> list[ImportedTrace]:
    """Every trace of an OTLP JSON export that holds an OpenInference span, in file order of first appearance."""
    return traces_of(parse_otlp(data, source, jsonl), source, question_attribute)


def traces_of(spans: Iterable[Span], source: str, question_attribute: str = "metadata.question_id"
              ) -> list[ImportedTrace]:
    """Spans grouped by trace, each trace that holds an OpenInference span read; in the order the traces started
    (then trace ID), whatever order the source lists them in (a file in export order, a server newest first), so
    the imported chunks are numbered alike from either."""
    by_trace: dict[str, list[Span]] = {}
    for s in spans:
        by_trace.setdefault(s.trace_id, []).append(s)
    traces = [trace_record(t, spans, source, question_attribute) for t, spans in by_trace.items()
              if any(_kind(s) for s in spans)]
    return sorted(traces, key=lambda t: (t.start_ns, t.trace_id))


# --- a Phoenix server's spans -------------------------------------------------------------------------------
# Phoenix's REST API (`GET /v1/projects/{project}/spans`, phoenix.client's `spans.get_spans`) returns each span as
# {"context": {"trace_id", "span_id"}, "parent_id", "name", "span_kind", "start_time", "end_time" (ISO 8601, to the
# microsecond), "attributes": {flattened OpenInference keys}, ...}; `id` is the server's own row ID.
PHOENIX_ROW_ID = "id"


def _flat(value: Any, prefix: str, out: dict[str, Any]) -> None:
    """Nested attributes (`{"retrieval": {"documents": [{"document": {...}}]}}`) as OpenInference's flattened
    keys (`retrieval.documents.0.document.id`); a list of scalars stays one value, as in OTLP."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flat(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        for i, v in enumerate(value):
            _flat(v, f"{prefix}.{i}", out)
    else:
        out[prefix] = value


def _iso_ns(value: Any, where: str) -> int:
    if not isinstance(value, str):
        raise ImportSourceError(f"{where}: not an ISO 8601 time string: {value!r}")
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        raise ImportSourceError(f"{where}: not an ISO 8601 time: {value!r}") from None
    if t.tzinfo is None:
        raise ImportSourceError(f"{where}: time without a time zone: {value!r}")
    # Integer arithmetic from the epoch, so the microseconds survive exactly (a float timestamp would round them).
    delta = t - datetime.fromisoformat("1970-01-01T00:00:00+00:00")
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def phoenix_spans(records: Sequence[Any], source: str) -> list[Span]:
    """Phoenix's span records as the Span records the OTLP reader makes, so everything after is shared. The
    span's kind is Phoenix's `span_kind` (Phoenix keeps it out of the attributes)."""
    spans = []
    for i, r in enumerate(records):
        where = f"{source}: span {i}"
        ctx = r.get("context") if isinstance(r, Mapping) else None
        if not isinstance(ctx, Mapping) or not isinstance(ctx.get("trace_id"), str) or not ctx["trace_id"]:
            raise ImportSourceError(f"{where}: field 'context.trace_id' is missing or not a string")
        where = f"{source}: trace {ctx['trace_id']}, span {ctx.get('span_id')}"
        raw = r.get("attributes") or {}
        if not isinstance(raw, Mapping):
            raise ImportSourceError(f"{where}: field 'attributes' is not an object")
        attrs: dict[str, Any] = {}
        _flat(raw, "", attrs)
        kind = r.get("span_kind")
        if isinstance(kind, str) and kind.upper() != "UNKNOWN" and SPAN_KIND not in attrs:
            attrs[SPAN_KIND] = kind.upper()
        spans.append(Span(trace_id=ctx["trace_id"], span_id=str(ctx.get("span_id") or ""),
                          parent_span_id=str(r.get("parent_id") or ""), name=str(r.get("name") or ""),
                          start_ns=_iso_ns(r.get("start_time"), f"{where}: field 'start_time'"), attributes=attrs,
                          end_ns=_iso_ns(r.get("end_time"), f"{where}: field 'end_time'")))
    return spans


def phoenix_digest(records: Sequence[Mapping[str, Any]]) -> str:
    """What was read from the server, bound: sha256 over each span's ID with the sha256 of its content (the record
    as the server returned it, without the server's own row ID), in span ID order."""
    parts = []
    for r in records:
        content = {k: v for k, v in r.items() if k != PHOENIX_ROW_ID}
        body = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        parts.append([str((r.get("context") or {}).get("span_id")), "sha256:" + hashlib.sha256(body).hexdigest()])
    parts.sort()
    return "sha256:" + hashlib.sha256(json.dumps(parts, separators=(",", ":")).encode("utf-8")).hexdigest()


# --- row formats -------------------------------------------------------------------------------------------------
def _field(row: Mapping[str, Any], key: str, kinds: tuple[type, ...], where: str, kind_name: str,
           required: bool = True) -> Any:
    v = row.get(key)
    if v is None and not required:
        return None
    if not isinstance(v, kinds) or isinstance(v, bool):
        raise ImportSourceError(f"{where}: field {key!r} must be {kind_name}" +
                                (" (missing)" if key not in row else " (null)" if v is None
                                 else f", not {type(v).__name__}"))
    return v


def _answer(row: Mapping[str, Any], key: str, where: str) -> str:
    """A row's answer: a string; null is a system that answered nothing (read as an empty answer, judged as one)."""
    if key in row and row[key] is None:
        return ""
    return _field(row, key, (str,), where, "a string (null when the system answered nothing)")


def ragchecker_rows(data: bytes, source: str) -> list[ImportedTrace]:
    """RAGChecker's input: `{"results": [{query_id, query, gt_answer, response, retrieved_context: [{doc_id,
    text}]}]}`. The retrieved context is both the ranked list and what the prompt held (a row has no prompt)."""
    obj = _json(data, source)
    results = obj.get("results") if isinstance(obj, dict) else None
    if not isinstance(results, list):
        raise ImportSourceError(f"{source}: not RAGChecker input: field 'results' must be a list")
    out = []
    for i, r in enumerate(results):
        where = f"{source}: results[{i}]"
        if not isinstance(r, dict):
            raise ImportSourceError(f"{where}: not an object")
        qid = _field(r, "query_id", (str, int), where, "a string")
        where = f"{source}: results[{i}] (query_id {qid})"
        ctx = _field(r, "retrieved_context", (list,), where, "a list")
        docs = []
        for j, c in enumerate(ctx):
            w = f"{where}: retrieved_context[{j}]"
            if not isinstance(c, dict):
                raise ImportSourceError(f"{w}: not an object")
            doc_id = _field(c, "doc_id", (str, int), w, "a string", required=False)
            text = _field(c, "text", (str,), w, "a string")
            docs.append(SourceDocument(None if doc_id is None else str(doc_id), text))
        docs_t = tuple(docs)
        out.append(ImportedTrace(trace_id=f"results[{i}]", question_text=_field(r, "query", (str,), where, "a string"),
                                 question_id=str(qid), ranked=docs_t, selected=docs_t,
                                 prompt_texts=tuple(d.text for d in docs_t),
                                 answer=_answer(r, "response", where),
                                 gold_answer=_field(r, "gt_answer", (str,), where, "a string", required=False)))
    return out


def ragas_rows(data: bytes, source: str) -> list[ImportedTrace]:
    """RAGAS's single-turn samples: a JSON list (or JSONL) of `{user_input, retrieved_contexts, response,
    reference}`; the contexts are the ranked list and what the prompt held."""
    text = data.decode("utf-8", errors="strict") if data else ""
    stripped = text.lstrip()
    if stripped.startswith("["):
        rows = _json(data, source)
    else:
        rows = []
        for n, obj, err in json_lines(text):
            if err:
                raise ImportSourceError(f"{source}: line {n}: not JSON: {err}")
            rows.append(obj)
    out = []
    for i, r in enumerate(rows):
        where = f"{source}: row {i}"
        if not isinstance(r, dict):
            raise ImportSourceError(f"{where}: not an object")
        ctx = _field(r, "retrieved_contexts", (list,), where, "a list")
        for j, c in enumerate(ctx):
            if not isinstance(c, str):
                raise ImportSourceError(f"{where}: field 'retrieved_contexts'[{j}] must be a string")
        docs = tuple(SourceDocument(None, c) for c in ctx)
        out.append(ImportedTrace(trace_id=f"row {i}", question_text=_field(r, "user_input", (str,), where, "a string"),
                                 question_id=None, ranked=docs, selected=docs, prompt_texts=tuple(ctx),
                                 answer=_answer(r, "response", where),
                                 gold_answer=_field(r, "reference", (str,), where, "a string", required=False)))
    return out


def _json(data: bytes, source: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ImportSourceError(f"{source}: not JSON: {e}") from None


def read_source(data: bytes, source: str, fmt: str, question_attribute: str = "metadata.question_id"
                ) -> list[ImportedTrace]:
    if fmt in ("otlp_json", "otlp_jsonl"):
        return otlp_traces(data, source, fmt == "otlp_jsonl", question_attribute)
    if fmt == "ragchecker":
        return ragchecker_rows(data, source)
    if fmt == "ragas":
        return ragas_rows(data, source)
    raise ImportSourceError(f"{source}: unknown format {fmt!r}; one of {', '.join(FORMATS)}")


# --- mapping -------------------------------------------------------------------------------------------------
def normalise(text: str) -> str:
    return " ".join(text.split())


@dataclass
class ImportMapping:
    """What matched what, with the counts every output states."""

    traces: dict[str, ImportedTrace]                      # question ID -> its trace
    matched_by: dict[str, str]                            # question ID -> "attribute" | "text"
    unmatched_traces: list[str] = field(default_factory=list)
    unanswered_questions: list[str] = field(default_factory=list)
    superseded_traces: list[str] = field(default_factory=list)  # older traces dropped by pick: latest

    def counts(self) -> dict[str, int]:
        return {"traces": len(self.traces) + len(self.unmatched_traces) + len(self.superseded_traces),
                "matched_traces": len(self.traces), "unmatched_traces": len(self.unmatched_traces),
                "superseded_traces": len(self.superseded_traces),
                "unanswered_questions": len(self.unanswered_questions),
                "matched_by_attribute": sum(v == "attribute" for v in self.matched_by.values()),
                "matched_by_text": sum(v == "text" for v in self.matched_by.values())}


def map_traces(traces: Sequence[ImportedTrace], questions: Sequence[Any], source: str,
               pick: str | None = None) -> ImportMapping:
    """Each trace to a question (`questions`: records with `id` and `text`): by the explicit ID when the trace has
    one and it names a question, else by whitespace-normalised text. Two traces for one question are an error
    naming both, unless `pick == "latest"` (the later start time wins; the other is counted as superseded)."""
    ids = {q.id for q in questions}
    by_text: dict[str, str] = {}
    for q in questions:
        by_text.setdefault(normalise(q.text), q.id)
    chosen: dict[str, ImportedTrace] = {}
    how: dict[str, str] = {}
    unmatched: list[str] = []
    superseded: list[str] = []
    for t in traces:
        if t.question_id is not None and t.question_id in ids:
            qid, by = t.question_id, "attribute"
        elif t.question_text is not None and normalise(t.question_text) in by_text:
            qid, by = by_text[normalise(t.question_text)], "text"
        else:
            unmatched.append(t.trace_id)
            continue
        if qid in chosen:
            other = chosen[qid]
            if pick != "latest":
                raise ImportSourceError(f"{source}: traces {other.trace_id} and {t.trace_id} both answer question "
                                        f"{qid!r}; "
                                   f"keep one, or set `pick: latest` on the arm's source")
            if (t.start_ns, t.trace_id) < (other.start_ns, other.trace_id):
                superseded.append(t.trace_id)
                continue
            superseded.append(other.trace_id)
        chosen[qid] = t
        how[qid] = by
    unanswered = [q.id for q in questions if q.id not in chosen]
    return ImportMapping(chosen, how, unmatched, unanswered, superseded)


@dataclass(frozen=True)
class DocumentMatch:
    chunk: Chunk
    matched_by: str  # "id" | "content" | "external"


class CorpusLocator:
    """Finds a source document in the corpus: by `document.id`, else by its content (exact, then with whitespace
    normalised). Offsets are into the corpus document's text, so gold quotes project onto it as onto a lab chunk."""

    def __init__(self, documents: Mapping[str, str]):
        self.documents = dict(documents)
        self._joined: str | None = None
        self._starts: list[tuple[int, str]] = []

    def _find_in(self, doc_id: str, text: str) -> tuple[int, int] | None:
        body = self.documents[doc_id]
        i = body.find(text)
        if i >= 0:
            return i, i + len(text)
        words = text.split()
        if not words:
            return None
        m = re.search(r"\s+".join(re.escape(w) for w in words), body)
        return (m.start(), m.end()) if m else None

    def locate(self, doc: SourceDocument) -> tuple[str, int, int, str] | None:
        """(doc_id, start, end, matched_by) or None."""
        if doc.source_id is not None and doc.source_id in self.documents:
            span = self._find_in(doc.source_id, doc.text)
            start, end = span if span else (0, 0)
            return doc.source_id, start, end, "id"
        if doc.source_id is not None and "#" in doc.source_id:
            # A chunk ID of the form <doc_id>#...: the document is named, the content says where.
            parent = doc.source_id.split("#", 1)[0]
            if parent in self.documents and (span := self._find_in(parent, doc.text)):
                return parent, span[0], span[1], "id"
        for doc_id in self.documents:
            if (span := self._find_in(doc_id, doc.text)) is not None:
                return doc_id, span[0], span[1], "content"
        return None


def chunk_id_of(doc: SourceDocument, taken: Mapping[str, str]) -> str:
    """A stable chunk ID: the source's own document ID when it names one text only, else the ID with a digest of
    the text (`<id>@<sha8>`), or `text-<sha12>` for a document without an ID."""
    digest = hashlib.sha256(doc.text.encode()).hexdigest()
    if doc.source_id is None:
        return f"text-{digest[:12]}"
    if taken.get(doc.source_id, doc.text) == doc.text:
        return doc.source_id
    return f"{doc.source_id}@{digest[:8]}"


DocumentIndex = dict[tuple[str | None, str], str]  # (source document ID, text) -> chunk ID


def map_documents(traces: Iterable[ImportedTrace], documents: Mapping[str, str]
                  ) -> tuple[list[DocumentMatch], DocumentIndex]:
    """Every distinct document of `traces` as a chunk of the arm (first appearance order), and the index from
    (source id, text) to its chunk ID."""
    locator = CorpusLocator(documents)
    text_by_id: dict[str, str] = {}
    index: dict[tuple[str | None, str], str] = {}
    matches: list[DocumentMatch] = []
    ordinal: dict[str, int] = {}
    for t in traces:
        for d in (*(t.ranked or ()), *(t.selected or ())):
            key = (d.source_id, d.text)
            if key in index:
                continue
            cid = chunk_id_of(d, text_by_id)
            if d.source_id is not None:
                text_by_id.setdefault(d.source_id, d.text)
            index[key] = cid
            found = locator.locate(d)
            if found is None:
                doc_id, start, end, by = EXTERNAL + cid, 0, len(d.text), "external"
            else:
                doc_id, start, end, by = found
            n = ordinal.get(doc_id, 0)
            ordinal[doc_id] = n + 1
            matches.append(DocumentMatch(Chunk(chunk_id=cid, doc_id=doc_id, ordinal=n, text=d.text, runes=len(d.text),
                                               start=start, end=end), by))
    return matches, index


# --- what each question had ---------------------------------------------------------------------------------------
def in_prompt(chunk_ids: Sequence[str], texts: Mapping[str, str], prompt_texts: Sequence[str]) -> list[str]:
    """The chunks whose text is in the prompt, in the order they appear there (ties: the given order)."""
    prompt = "\n".join(prompt_texts)
    flat = normalise(prompt)
    found = []
    for n, c in enumerate(dict.fromkeys(chunk_ids)):
        t = texts[c]
        i = prompt.find(t)
        if i < 0:
            j = flat.find(normalise(t)) if t.strip() else -1
            if j < 0:
                continue
            i = j
        found.append((i, n, c))
    return [c for _, _, c in sorted(found)]


_NUMBERED = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
_BRACKETS = re.compile(r"\[([^\[\]\n]+)\]")


def citations(answer: str, style: str, admitted: Sequence[str], known: Iterable[str]) -> list[str]:
    """The chunk IDs a free-text answer cites: `numbered` reads `[2]` as the second admitted document (in prompt
    order); `ids` reads document IDs in brackets (any known chunk ID, or a source ID mapped to one); `none`, none.
    A number past the admitted list is kept as `[n]` so the contract's citation rule can name it."""
    out: list[str] = []
    if style == "numbered":
        for m in _NUMBERED.finditer(answer):
            for n in m.group(1).split(","):
                k = int(n)
                cid = admitted[k - 1] if 1 <= k <= len(admitted) else f"[{k}]"
                if cid not in out:
                    out.append(cid)
    elif style == "ids":
        known = set(known)
        for m in _BRACKETS.finditer(answer):
            for part in m.group(1).split(","):
                part = part.strip()
                if part in known and part not in out:
                    out.append(part)
    return out


def without_citations(answer: str, style: str, known: Iterable[str]) -> str:
    """The answer's text with the citation markers `citations` reads taken out (`[2]`, `[1, 3]` for `numbered`; a
    bracket of known IDs for `ids`), as the lab's own answer format keeps its citations beside the text: the judges
    read the claims, and a marker is never read as a number the claim states. The answer as the user saw it stays
    the row's raw text."""
    if style == "numbered":
        spans = [m.span() for m in _NUMBERED.finditer(answer)]
    elif style == "ids":
        known = set(known)
        spans = [m.span() for m in _BRACKETS.finditer(answer)
                 if all(part.strip() in known for part in m.group(1).split(","))]
    else:
        return answer
    return _cut(answer, spans)


def _cut(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` without the spans, each with the blanks before it (`claim [2].` -> `claim.`)."""
    out, last = [], 0
    for start, end in spans:
        out.append(text[last:start].rstrip(" \t"))
        last = end
    out.append(text[last:])
    return "".join(out)


@dataclass(frozen=True)
class ImportedRow:
    """One question's imported retrieval, admission and answer, in the lab's terms."""

    query_id: str
    trace_id: str | None
    status: str                       # ok | no_answer_span | no_trace
    retrieval_status: str             # ok | no_retrieval_span | no_trace
    ranked_chunk_ids: list[str]
    scores: list[float | None]
    selected_chunk_ids: list[str]
    admitted_chunk_ids: list[str]
    answer: str | None
    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    latency_s: float | None = None


def imported_rows(questions: Sequence[Any], mapping: ImportMapping, index: Mapping[tuple[str | None, str], str],
                  chunk_text: Mapping[str, str]) -> list[ImportedRow]:
    """One row per question, in question order: a question with no trace has status `no_trace` (unanswered)."""
    out = []
    for q in questions:
        t = mapping.traces.get(q.id)
        if t is None:
            out.append(ImportedRow(q.id, None, NO_TRACE, NO_TRACE, [], [], [], [], None, None, None, None))
            continue
        ranked_scores: dict[str, float | None] = {}
        for d in t.ranked or ():
            ranked_scores.setdefault(index[(d.source_id, d.text)], d.score)
        selected = [index[(d.source_id, d.text)] for d in t.selected or ()]
        admitted = in_prompt(selected, chunk_text, t.prompt_texts) if t.answer is not None else []
        out.append(ImportedRow(q.id, t.trace_id, t.status, "ok" if t.ranked is not None else NO_RETRIEVAL_SPAN,
                               list(ranked_scores), list(ranked_scores.values()),
                               list(dict.fromkeys(selected)), admitted, t.answer, t.model, t.input_tokens,
                               t.output_tokens, t.latency_s))
    return out


# --- a dataset from rows ----------------------------------------------------------------------------------------
# The source fields a row format's messages name: the question, the gold answer, the retrieved contexts (and the
# field of one context holding its text, None when the context is the text itself).
ROW_FIELDS = {"ragchecker": ("query", "gt_answer", "retrieved_context", "text"),
              "ragas": ("user_input", "reference", "retrieved_contexts", None)}
SHOWN_ROWS = 10


def row_name(t: ImportedTrace) -> str:
    """A row as messages name it: `results[3] (query_id q7)`, `row 3`."""
    return t.trace_id + (f" (query_id {t.question_id})" if t.question_id is not None else "")


def dataset_from_rows(traces: Sequence[ImportedTrace], source: str, fmt: str = "ragchecker"
                      ) -> tuple[dict, dict, dict]:
    """For row formats without a corpus (RAGChecker, RAGAS): the corpus from the retrieved contexts (one document
    per distinct text, its ID the row's doc_id when it names one text, else `text-<sha12>`), and the questions.
    A question with a gold answer gets it and no requests, so its requests are derived from the gold answer
    (core.derive_requests: the offline rule when the dataset loads, or `rag-ttc derive-requests`); a question
    without one gets one request, the whole question. No gold quotes: the rows have none, so requests have no
    supporting chunk until quotes are added. Returns (corpus, evaluation without its digest, counts). A question's
    ID is its RAGChecker query_id, else `q-<n>` in row order.

    Refused (ImportSourceError naming the file, the row and the field): a blank question, a blank retrieved
    context, a question ID twice, and a file whose rows carry no retrieved context at all (the corpus would be
    empty). Rows without a context beside rows with one are counted (`rows_without_context`)."""
    query_field, gold_field, context_field, text_field = ROW_FIELDS.get(fmt, ROW_FIELDS["ragchecker"])
    if not traces:
        raise ImportSourceError(f"{source}: the file holds no rows")
    text_by_id: dict[str, str] = {}
    documents: dict[str, dict] = {}
    without_context: list[str] = []
    for t in traces:
        if not (t.question_text or "").strip():
            raise ImportSourceError(f"{source}: {row_name(t)}: field {query_field!r} is empty; a question needs "
                                    "its text")
        if not t.ranked:
            without_context.append(row_name(t))
        for j, d in enumerate(t.ranked or ()):
            if not d.text.strip():
                field = f"{context_field}[{j}]" + (f": field {text_field!r}" if text_field else "")
                raise ImportSourceError(f"{source}: {row_name(t)}: {field} is empty; the dataset's corpus is made "
                                        "of the retrieved contexts, and a document needs text")
            cid = chunk_id_of(d, text_by_id)
            if d.source_id is not None:
                text_by_id.setdefault(d.source_id, d.text)
            documents.setdefault(cid, {"id": cid, "title": "", "text": d.text, "metadata": {"imported_from": source}})
    if not documents:
        raise ImportSourceError(
            f"{source}: no row carries a retrieved context (field {context_field!r} is empty in all {len(traces)} "
            f"rows, the first {row_name(traces[0])}); the dataset's corpus is made of the retrieved contexts, so "
            "there would be nothing to measure retrieval or support against. Export the rows with the contexts "
            "the system retrieved.")
    questions, seen = [], set()
    requests_from_gold = 0
    for n, t in enumerate(traces, 1):
        qid = t.question_id or f"q-{n:04d}"
        if qid in seen:
            raise ImportSourceError(f"{source}: {t.trace_id}: question ID {qid!r} appears twice")
        seen.add(qid)
        question = {"id": qid, "text": t.question_text or "", "answerable": True, "targets": [], "requests": []}
        gold = t.gold_answer if t.gold_answer and t.gold_answer.strip() else None
        claims = split_claims(gold) if gold else []
        if gold:
            question["gold_answer"] = gold
        if claims:
            requests_from_gold += len(claims)  # derived when the dataset loads (or by derive-requests)
        else:  # no gold answer (or one without a claim): the whole question is the one request
            question["requests"] = [{"id": f"{qid}.r1", "text": t.question_text or "", "evidence": [],
                                     **({"gold_answer": gold} if gold else {})}]
        questions.append(question)
    counts = {"documents": len(documents), "questions": len(questions),
              "gold_answers": sum(1 for q in questions if q.get("gold_answer")),
              "questions_with_derived_requests": sum(1 for q in questions if not q["requests"]),
              "derived_requests_offline": requests_from_gold,
              "questions_as_one_request": sum(1 for q in questions if q["requests"]),
              # of those, the ones whose gold answer yields no claim (too short: "X is y.")
              "gold_answers_without_claim": sum(1 for q in questions if q["requests"] and q.get("gold_answer")),
              "rows_without_context": len(without_context),
              "rows_without_context_first": without_context[:SHOWN_ROWS]}
    return {"documents": list(documents.values())}, {"pilot": [], "questions": questions}, counts
