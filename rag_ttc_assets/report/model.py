"""The case report's data: plain rows of an arm's tables in, the page's JSON-able model out.

Pure (no dagster, no file I/O): `collect.py` reads the store and hands rows here; `html.py` renders the model.
The model keeps every chunk text once (`chunks`: one table per chunking, keyed by chunk id) and refers to chunks
by id everywhere else, including inside the messages as sent (`segments`), so a report's size grows with its
cases, not with how often a chunk is mentioned.

A pair report's case lists, per arm, every ranked chunk with its state (``admitted``, ``omitted``, ``selected``:
within evidence_k but not in context for another reason, ``ranked``: beyond evidence_k), whether the answer
cited it, and which requests' judge excerpts cite it; ``differs`` names the chunks whose state, citation or
excerpt citations are not the same in both arms (a chunk one arm did not rank is ``not ranked`` there), which
the page highlights.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from rag_ttc_assets.core.chunking import Chunk
from rag_ttc_assets.core.compare_records import Bucket, CaseValues, PairReport, TransitionCell
from rag_ttc_assets.diagnosis.flow import FLOW_BRANCHES
from rag_ttc_assets.core.records import Question
from rag_ttc_assets.core.tables import Table

# the declared column names (core.tables)
ROWS, CTX, COV = Table.RETRIEVAL_ROWS.c, Table.ADMITTED_CONTEXTS.c, Table.REQUEST_COVERAGE.c
ANS, CON, JV = Table.ANSWERS.c, Table.CONTRACT_RESULTS.c, Table.JUDGE_VERDICTS.c
FLOW, RJ, OUT = Table.FAILURE_FLOW.c, Table.REQUEST_JUDGMENTS.c, Table.REQUEST_OUTCOMES.c

NOT_RANKED = "not ranked"
# A ranked chunk, as a row (rank = position + 1; its document and runes are in the chunk table).
RANKED_COLUMNS = ("chunk_id", "bm25_rank", "vector_rank", "state", "cited", "excerpt_of", "supports")
MIN_SEGMENT = 40  # shorter chunk texts are left inline: a reference would not save anything


class JurorVerdict(BaseModel):
    """One juror of a request-judge panel as its judgments row keeps it (judging.panel): what the case page shows."""

    model_config = ConfigDict(frozen=True)  # the row keeps more (coverage, calibrated): the page shows these three

    model: str
    status: str
    verdict: str | None


class SentMessage(BaseModel):
    """One message of a provider call as the message archive keeps it (the OpenAI format litellm was sent): its
    role and content (a text, or structured parts); its other fields (tool calls, ids) are not shown."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    role: str | None = None
    content: Any = None


class SentCall(BaseModel):
    """One provider call's request as the message archive keeps it (store.messages): its messages and the tools
    it offered."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    messages: list[SentMessage] | None = None
    tools: Any = None


@dataclass(frozen=True)
class PairFacts:
    """What a pair report's case list reads of the comparison: the headline's values per case, the catastrophic
    cases, the transition cells and the buckets (core.compare_records.PairReport's, or a synthetic report's)."""

    per_case: Mapping[str, CaseValues]
    catastrophic: frozenset[str]
    cells: Sequence[TransitionCell]
    buckets: Sequence[Bucket]

    @classmethod
    def of(cls, report: PairReport) -> PairFacts:
        return cls(report.per_case, frozenset(c.case_id for c in report.catastrophic), report.transitions.cells,
                   report.buckets)


def chunk_state(cid: str, context: Mapping[str, Any]) -> str:
    if cid in (context.get(CTX.admitted_chunk_ids) or ()):
        return "admitted"
    if cid in (context.get(CTX.omitted_chunk_ids) or ()):
        return "omitted"
    if cid in (context.get(CTX.selected_chunk_ids) or ()):
        return "selected"
    return "ranked"


def segments(text: str, chunk_texts: Mapping[str, str], candidates: Sequence[str]) -> list[Any]:
    """`text` cut into plain strings and {"chunk": id} references wherever a candidate chunk's text occurs
    verbatim (first occurrence, non-overlapping, in text order); joining the pieces back gives `text`."""
    hits = []
    for cid in dict.fromkeys(candidates):
        body = chunk_texts.get(cid)
        if body and len(body) >= MIN_SEGMENT:
            at = text.find(body)
            if at >= 0:
                hits.append((at, at + len(body), cid))
    out: list[Any] = []
    pos = 0
    for start, end, cid in sorted(hits):
        if start < pos:
            continue  # overlaps the previous reference: leave it as text
        if start > pos:
            out.append(text[pos:start])
        out.append({"chunk": cid})
        pos = end
    if pos < len(text) or not out:
        out.append(text[pos:])
    return out


def _json_list(raw: str | None) -> list:
    return json.loads(raw) if raw else []


def arm_case(retrieval: Mapping | None, context: Mapping | None, contract: Mapping | None, answer: Mapping | None,
             judge: Mapping | None, flows: Sequence[Mapping], judgments: Sequence[Mapping],
             coverage: Sequence[Mapping], messages_sent: Sequence[Mapping] | None,
             chunk_texts: Mapping[str, str], evidence_k: int, outcomes: Sequence[Mapping] = ()) -> dict:
    """One arm's view of one case: ranked chunks with state and citations, the context accounting, the request
    flow and the request judge's verdicts, the contract, the answer, the statement judge, the messages as sent."""
    context = context or {}
    cited = set((contract or {}).get(CON.citation_chunk_ids) or [])
    excerpt: dict[str, list[str]] = {}
    for j in judgments:
        for cid in j.get(RJ.cited_chunk_ids) or []:
            excerpt.setdefault(cid, []).append(j[RJ.request_id])
    supports: dict[str, list[str]] = {}
    for c in coverage:
        for cid in c.get(COV.supporting_chunk_ids) or []:
            supports.setdefault(cid, []).append(c[COV.request_id])
    ranked = []
    if retrieval:
        for i, cid in enumerate(retrieval[ROWS.ranked_chunk_ids]):
            ranked.append([cid, retrieval[ROWS.bm25_ranks][i], retrieval[ROWS.vector_ranks][i],
                           chunk_state(cid, context),
                           cid in cited, sorted(excerpt.get(cid, [])), sorted(supports.get(cid, []))])
    by_request = {j[RJ.request_id]: j for j in judgments}
    # Each request's coverage as request_outcomes records it (a panel's: its calibrated mean; 0 where nothing was
    # delivered), and the question's completeness read two ways (question_readings).
    coverage_of = {o[OUT.request_id]: o[OUT.coverage] for o in outcomes}
    requests = {}
    for f in flows:
        j = by_request.get(f[FLOW.request_id], {})
        requests[f[FLOW.request_id]] = {
            "branch": f[FLOW.branch], "answered": f[FLOW.answered], "supported": f[FLOW.supported],
            "contradicts_gold": f[FLOW.contradicts_gold], "judge_status": j.get(RJ.status),
            "addressed": j.get(RJ.addressed), "verdict": j.get(RJ.verdict), "excerpt": j.get(RJ.excerpt),
            "excerpt_cites": j.get(RJ.cited_chunk_ids) or [],
            "reason": j.get(RJ.reason),
            # A panel of request judges: every juror's verdict, side by side (judging.panel).
            "jurors": [JurorVerdict.model_validate(x).model_dump() for x in _json_list(j.get(RJ.jurors))],
            "jurors_disagree": j.get(RJ.jurors_disagree),
            **({"coverage": coverage_of[f[FLOW.request_id]]} if f[FLOW.request_id] in coverage_of else {})}
    candidates = list(context.get(CTX.admitted_chunk_ids) or []) + [r[0] for r in ranked]
    calls = [SentCall.model_validate(call) for call in messages_sent or []]
    sent = [{"messages": [{"role": m.role, "content": segments(_content(m), chunk_texts, candidates)}
                          for m in call.messages or []],
             "tools": call.tools} for call in calls]
    return {
        "ranked": ranked, "evidence_k": evidence_k, "used_runes": context.get(CTX.used_runes),
        "max_runes": context.get(CTX.max_runes), "selected": list(context.get(CTX.selected_chunk_ids) or []),
        "admitted": list(context.get(CTX.admitted_chunk_ids) or []),
        "omitted": list(context.get(CTX.omitted_chunk_ids) or []), "requests": requests,
        "completeness": question_readings(outcomes),
        "contract": ({"status": contract[CON.status], "reason": contract[CON.reason], "answer": contract[CON.answer],
                      "abstained": contract[CON.abstained], "citations": list(contract[CON.citation_chunk_ids] or [])}
                     if contract else None),
        "answer": ({"model": answer[ANS.model], "status": answer[ANS.status], "cache_hit": answer[ANS.cache_hit],
                    "raw_response": answer[ANS.raw_text], "error": answer[ANS.error]} if answer else None),
        "judge": ({"model": judge[JV.judge_model], "status": judge[JV.status], "faithfulness": judge[JV.faithfulness],
                   "contradicts_gold": judge[JV.contradicts_gold], "verdicts": _json_list(judge[JV.verdicts]),
                   "gold_verdicts": _json_list(judge[JV.gold_verdicts])} if judge else None),
        "messages_sent": sent,
    }


def question_readings(outcomes: Sequence[Mapping]) -> dict | None:
    """A question's completeness read two ways from its request_outcomes rows, graded first (docs/judges.md): the
    mean coverage of its measured requests with one (graded, graded_n of measured), and the share of its measured
    requests addressed (addressed, measured of requests). graded is None where no measured request has a coverage
    (a judge that reports none, an LLM's: not measured, never 0); None for a question without requests."""
    if not outcomes:
        return None
    measured = [o for o in outcomes if o[OUT.measured]]
    covered = [float(o[OUT.coverage]) for o in measured if o[OUT.coverage] is not None]
    return {"graded": sum(covered) / len(covered) if covered else None, "graded_n": len(covered),
            "measured": len(measured), "requests": len(outcomes),
            "addressed": sum(o[OUT.answered] is True for o in measured) / len(measured) if measured else None}


def _content(message: SentMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False)  # structured content (parts, tool calls): shown as JSON


def _chunk_keys(view: Mapping) -> dict[str, tuple]:
    return {r[0]: (r[3], r[4], tuple(r[5])) for r in view["ranked"]}


def differing_chunks(view_a: Mapping, view_b: Mapping) -> list[str]:
    """Chunk ids whose (state, cited by the answer, cited by which requests' excerpts) differ between the arms."""
    ka, kb = _chunk_keys(view_a), _chunk_keys(view_b)
    missing = (NOT_RANKED, False, ())
    return sorted(c for c in ka.keys() | kb.keys() if ka.get(c, missing) != kb.get(c, missing))


def bucket_of(delta: float | None, buckets: Sequence[Bucket], tie_eps: float = 1e-12) -> str | None:
    """The label of the core.case_comparison bucket a delta falls in: the tie row when |delta| <= tie_eps, else the row
    of its side with low < |delta| <= high (high None: the open top row)."""
    if delta is None:
        return None
    if abs(delta) <= tie_eps:
        return next(b.label for b in buckets if b.side == "tie")
    side = "gain" if delta > 0 else "loss"
    for b in buckets:
        if b.side == side and b.low is not None and abs(delta) > b.low and (b.high is None or abs(delta) <= b.high):
            return b.label
    raise ValueError(f"delta {delta!r} falls in no bucket of {[b.label for b in buckets]}")


def case_header(question: Question) -> dict:
    """A case's question and requests (each with its text)."""
    return {"id": question.id, "question": question.text, "answerable": question.answerable,
            "requests": [{"id": r.id, "text": r.text} for r in question.requests]}


def pair_cases(questions: Sequence[Question], views_a: Mapping[str, dict], views_b: Mapping[str, dict],
               comparison: PairFacts) -> list[dict]:
    """The pair report's cases, in case-id order: the headline values per arm, delta, bucket, catastrophic flag,
    the transitions of its requests (the matrix cells it is in), the per-arm views and the differing chunks."""
    keys_of: dict[str, list[str]] = {}
    for cell in comparison.cells:
        for case in cell.cases:
            keys_of.setdefault(case, []).append(cell.key)
    out = []
    for q in sorted(questions, key=lambda q: q.id):
        qid = q.id
        va, vb = views_a.get(qid), views_b.get(qid)
        if va is None and vb is None:
            continue
        values = comparison.per_case.get(qid)
        a, b = (values.a, values.b) if values is not None else (None, None)
        delta = b - a if a is not None and b is not None else None
        changed = [k for k in keys_of.get(qid, []) if k.split(" -> ")[0] != k.split(" -> ")[1]]
        out.append({**case_header(q), "a": a, "b": b, "delta": delta,
                    "bucket": bucket_of(delta, comparison.buckets), "catastrophic": qid in comparison.catastrophic,
                    "transitions": keys_of.get(qid, []), "changed": changed,
                    "arms": [va, vb], "differs": differing_chunks(va, vb) if va and vb else []})
    return out


def arm_cases(questions: Sequence[Question], views: Mapping[str, dict]) -> list[dict]:
    """One arm's report cases, in case-id order, with the branches of their requests."""
    out = []
    for q in sorted(questions, key=lambda q: q.id):
        view = views.get(q.id)
        if view is None:
            continue
        branches = sorted({r["branch"] for r in view["requests"].values()}, key=FLOW_BRANCHES.index)
        out.append({**case_header(q), "branches": branches, "arms": [view], "differs": []})
    return out


def chunk_table(chunks: Sequence[Chunk], cases: Sequence[Mapping], arm_index: int) -> dict[str, list]:
    """chunk id -> [doc_id, runes, text] for the chunks some case of arm `arm_index` ranked (each text once)."""
    used = {r[0] for c in cases if c["arms"][arm_index] for r in c["arms"][arm_index]["ranked"]}
    return {c.chunk_id: [c.doc_id, c.runes, c.text] for c in chunks if c.chunk_id in used}


def finite_or_none(x: Any) -> Any:
    """JSON has no NaN or infinity: such floats become None (the page shows them as undefined)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: finite_or_none(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite_or_none(v) for v in x]
    return x
