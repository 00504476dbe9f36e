"""A Phoenix server's spans: the span records Phoenix's REST API returns, read into the Span records the OTLP
reader makes (imported.import_source), so everything after is shared; and the digest that binds what was read.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from rag_ttc_assets.imported.import_source import SPAN_KIND, ImportSourceError, Span

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
