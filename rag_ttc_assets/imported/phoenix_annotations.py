"""The lab's diagnosis as Phoenix span annotations: for an arm imported from a Phoenix project, one annotation per
request on the root span of the trace that answered its question, so a Phoenix user sees it beside the trace.

  name         `rag-ttc`, and `identifier` `<arm>/<request_id>` (Phoenix keeps one annotation per name, span and
               identifier: a question's requests share its root span; a rerun replaces, never duplicates)
  label        the request's failure-flow branch (diagnosis.flow: not_retrieved, cut_by_reranker, ..., ok)
  score        1.0 when the request judge found the request supported, else 0.0
  explanation  the request judge's reason (its error, when it could not judge)
  metadata     arm, question and request IDs, the judge's verdict, model and prompt digest

Pure: rows in (the failure_flow and request_judgments tables, the imported rows' trace IDs, the spans as read),
annotation records out (phoenix.client's SpanAnnotationData); the caller logs them.
"""

# Postponed annotations under another name: this module's own `annotations` (below) is a function.
from __future__ import annotations as _postponed_annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rag_ttc_assets.imported.import_source import Span
from rag_ttc_assets.core.tables import Table

FLOW, RJ = Table.FAILURE_FLOW.c, Table.REQUEST_JUDGMENTS.c  # the rows' declared columns

NAME = "rag-ttc"
ANNOTATOR_KIND = "CODE"  # the branch is the lab's flow, computed; the verdict's own judge is named in the metadata


def root_spans(spans: Iterable[Span]) -> dict[str, str]:
    """Each trace's root span ID: the earliest span whose parent is not in the trace (ties by span ID)."""
    by_trace: dict[str, list[Span]] = {}
    for s in spans:
        by_trace.setdefault(s.trace_id, []).append(s)
    out = {}
    for trace_id, group in by_trace.items():
        ids = {s.span_id for s in group}
        roots = [s for s in group if not s.parent_span_id or s.parent_span_id not in ids] or group
        out[trace_id] = min(roots, key=lambda s: (s.start_ns, s.span_id)).span_id
    return out


def annotations(arm: str, flow: Sequence[Mapping[str, Any]], judgments: Sequence[Mapping[str, Any]],
                trace_of_question: Mapping[str, str | None], root_of_trace: Mapping[str, str]
                ) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """(annotations, skipped): one annotation per flow row whose question has a trace with a root span; the others
    listed with why (a question no trace answered has no span to annotate)."""
    judged = {j[RJ.request_id]: j for j in judgments}
    out, skipped = [], []
    for row in flow:
        request_id, query_id = row[FLOW.request_id], row[FLOW.query_id]
        trace_id = trace_of_question.get(query_id)
        span_id = root_of_trace.get(trace_id) if trace_id else None
        if span_id is None:
            skipped.append({"request_id": request_id, "query_id": query_id,
                            "reason": "no trace answered its question" if not trace_id else
                            f"trace {trace_id} has no span on the server"})
            continue
        j = judged.get(request_id, {})
        explanation = j.get(RJ.reason) or j.get(RJ.judge_error) or f"request judge status: {j.get(RJ.status)}"
        out.append({"span_id": span_id, "name": NAME, "annotator_kind": ANNOTATOR_KIND,
                    "identifier": f"{arm}/{request_id}",
                    "result": {"label": row[FLOW.branch], "score": 1.0 if row[FLOW.supported] else 0.0,
                               "explanation": explanation},
                    "metadata": {"arm": arm, "query_id": query_id, "request_id": request_id, "trace_id": trace_id,
                                 "verdict": j.get(RJ.verdict), "request_judge_model": j.get(RJ.request_judge_model),
                                 "request_judge_prompt_digest": j.get(RJ.prompt_digest)}})
    return out, skipped
