"""Imported arms: another system's traces (OpenInference spans in OTLP JSON) or rows (RAGChecker, RAGAS) read
into typed records (ImportedTrace). Bytes in, records out: reading the file is the caller's. A Phoenix server's span
records are read into the same Span records by imported.phoenix_source; the records are mapped onto the evaluation's
questions and the corpus, and made the lab's rows, by imported.import_mapping.

The retrieved / selected / in-the-prompt distinction survives the import (the prompt's texts are read here; the
admitted list is imported.import_mapping's, from them):

  ranked     the RETRIEVER span's `retrieval.documents.{i}` in index order, with their `document.score`;
  selected   a RERANKER span's `reranker.output_documents.{i}` (no RERANKER span: the ranked list itself);
  admitted   the selected documents whose text is in the LLM span's input messages (`llm.input_messages.{i}.
             message.content`) or its prompt template variables (`llm.prompt_template.variables`), in the order
             they appear there (the prompt order: `[2]` cites the second).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from rag_ttc_assets.core.contract import NO_ANSWER_SPAN
from rag_ttc_assets.core.jsonl import json_lines

FORMATS = ("otlp_json", "otlp_jsonl", "ragchecker", "ragas")  # files; `phoenix` is a server (imported.phoenix_source)
CITATION_STYLES = ("numbered", "ids", "none")
ANSWER_FORMATS = ("free_text", "contract")

# OpenInference semantic conventions (spec/semantic_conventions.md; openinference.semconv.trace), as strings:
# core imports no tracing package. rag_ttc_assets_tests/imported/test_import_source.py checks them against the package.
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
                    return cast(str, obj[k])
    return value


def trace_record(trace_id: str, spans: Sequence[Span], source: str, question_attribute: str) -> ImportedTrace:
    """One trace's spans as an ImportedTrace: its first RETRIEVER span, its first RERANKER span, its last LLM span
    (the final answer), the question from the root span (else the RETRIEVER's input)."""
    where = f"{source}: trace {trace_id}"
    spans = sorted(spans, key=lambda s: (s.start_ns, s.span_id))
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if not s.parent_span_id or s.parent_span_id not in ids]
    by_kind: dict[str, list[Span | None]] = {}  # holds spans; `| None` types the `or [None]` fallbacks below
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
    return cast(str, _field(row, key, (str,), where, "a string (null when the system answered nothing)"))


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
