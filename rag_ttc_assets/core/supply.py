"""Supply modes (second seed): how the evidence reaches the model, and the lookup flow of tool arms.

  retrieval  the default: retrieve, cut at evidence_k, admit under the context budget.
  preloaded  a fixed document set (a "manual") pasted whole into every prompt: the governing text is present
             by construction when it is in the set, at the token cost of the whole set on every request.
  tool       just in time: the model is offered a `lookup` tool; each call's query and results are logged per
             case, and the answer may cite only what the lookups returned.

The lookup flow of a tool arm accounts for every answerable case exactly once, checked in order:

  no_call          the model answered without calling `lookup` (the governing text was never in context);
  empty_results    it called, and every call returned nothing;
  wrong_document   results arrived, but without the governing document of at least one request;
  correct_document every request's governing document was among the results.

Hit rate divides correct_document by ALL answerable cases: a case with no call is a miss, so the retriever is
scored on the questions the evaluation contains, not on the ones the model happened to search for.  Each branch
also counts its answers as acceptable, wrong or unanswered (a case is wrong when any of its requests is).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from rag_ttc_assets.core.arm_summaries import LookupCounts
from rag_ttc_assets.core.chunking import Chunk
from rag_ttc_assets.diagnosis.flow import branch_accounting
from rag_ttc_assets.core.judge_summaries import LookupAccounting
from rag_ttc_assets.core.records import Document, Question
from rag_ttc_assets.core.text import split_requests

SUPPLY_MODES = ("retrieval", "preloaded", "tool")
LOOKUP_TOOL_NAME = "lookup"
LOOKUP_BRANCHES = ("no_call", "empty_results", "wrong_document", "correct_document")
SUMMARY_RUNES = 100

# The one tool a tool arm offers, in the OpenAI function-calling format litellm forwards to every provider.
LOOKUP_TOOL = {
    "type": "function",
    "function": {
        "name": LOOKUP_TOOL_NAME,
        "description": "Search the document collection. Returns the passages that best match the query, each "
                       "with the chunk ID to cite.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to look up, in your own words."}},
            "required": ["query"],
        },
    },
}


class LookupCall(BaseModel):
    """One `lookup` call of one case: what the model asked and what the tool returned (or why it could not)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    call_id: str
    query: str
    result_chunk_ids: list[str]
    result_doc_ids: list[str]
    error: str | None = None


class ToolCall(BaseModel):
    """One tool call of a provider reply (stages.calls.Call.tool_calls, as adapters.llm reads it from the reply):
    its id, the tool it names and its arguments as the model wrote them."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: str
    name: str | None
    arguments: Any  # the JSON text the model wrote (parse_lookup_arguments reads it), sent back as it came


def parse_lookup_arguments(arguments: str | dict[str, Any] | None) -> tuple[str | None, str | None]:
    """(query, None), or (None, why the arguments are unusable): the tool answers a bad call with the error."""
    if isinstance(arguments, dict):
        obj = arguments
    else:
        try:
            obj = json.loads(arguments or "")
        except json.JSONDecodeError as exc:
            return None, f"arguments are not JSON: {exc}"
    if not isinstance(obj, dict):
        return None, "arguments are not a JSON object"
    query = obj.get("query")
    if not isinstance(query, str) or not query.strip():
        return None, "argument 'query' is missing or not a non-empty string"
    return " ".join(query.split()), None


def lookup_queries(question_text: str) -> list[str]:
    """The queries sent for a question with no annotation behind them: the question's own split into requests
    (core.text.split_requests, the split the extractive answerer uses when no requests are given), or the whole
    question when it does not split. Both the offline answerer's `lookup` calls and the no-generation hit rate
    (`rag-ttc hitrate` on a tool arm) take their queries from here, so the two cannot drift apart."""
    return split_requests(question_text) or [question_text]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def one_line_summary(text: str, limit: int = SUMMARY_RUNES) -> str:
    """The document's first sentence, on one line, clipped to `limit` runes (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    match = _SENTENCE_END.search(flat)
    first = flat[: match.start()] if match else flat
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def title_index(documents: Iterable[Document]) -> str:
    """The pre-loaded index of document titles and one-line summaries: one `- [doc id] title: summary` line each.

    It answers nothing; it tells the model what exists, so a question with a document behind it is visibly one.
    """
    return "\n".join(f"- [{d.id}] {d.title or d.id}: {one_line_summary(d.text)}" for d in documents)


def seamless_offsets(chunks: Sequence[Chunk]) -> list[int]:
    """For chunks pasted in document order: runes to drop from each so the overlap at seams is not repeated.

    With these offsets the pasted pieces of one document concatenate to exactly its text, so a preloaded
    document is pasted whole, once, while each piece keeps its chunk ID for citation.
    """
    offsets = []
    previous: Chunk | None = None
    for c in chunks:
        same_doc = previous is not None and previous.doc_id == c.doc_id and previous.end > c.start
        offsets.append(previous.end - c.start if same_doc and previous is not None else 0)
        previous = c
    return offsets


def governing_documents(question: Question) -> dict[str, set[str]]:
    """Per request with gold evidence: the documents its evidence quotes (the request's governing documents)."""
    return {r.id: {e.doc_id for e in r.evidence} for r in question.requests if r.evidence}


LookupBranch = Literal["no_call", "empty_results", "wrong_document", "correct_document"]
CaseQuality = Literal["acceptable", "wrong", "unanswered", "not_measured"]


class LookupCase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    query_id: str
    branch: LookupBranch
    calls: int
    results: int
    missing_requests: list[str]
    quality: CaseQuality


def lookup_branch(question: Question, calls: Sequence[LookupCall]) -> tuple[LookupBranch, list[str]]:
    """The case's branch and the requests whose governing document the lookups never returned."""
    if not calls:
        return "no_call", sorted(governing_documents(question))
    returned = {d for c in calls for d in c.result_doc_ids}
    if not returned:
        return "empty_results", sorted(governing_documents(question))
    missing = sorted(rid for rid, docs in governing_documents(question).items() if not docs & returned)
    return ("wrong_document" if missing else "correct_document"), missing


def case_quality(request_qualities: Sequence[str]) -> CaseQuality:
    """A case is wrong when any request is wrong, not measured when the request judge could not measure one of
    its requests, unanswered when none was answered, else acceptable."""
    if "wrong" in request_qualities:
        return "wrong"
    if "not_measured" in request_qualities:
        return "not_measured"
    if request_qualities and all(q == "unanswered" for q in request_qualities):
        return "unanswered"
    return "acceptable"


def lookup_cases(questions: Iterable[Question], lookups: dict[str, list[LookupCall]],
                 request_qualities: dict[str, list[str]]) -> list[LookupCase]:
    """One row per answerable question (a case without a lookup log made no call)."""
    out = []
    for q in questions:
        if not q.answerable or not governing_documents(q):
            continue
        calls = lookups.get(q.id, [])
        branch, missing = lookup_branch(q, calls)
        out.append(LookupCase(query_id=q.id, branch=branch, calls=len(calls),
                              results=sum(len(c.result_chunk_ids) for c in calls), missing_requests=missing,
                              quality=case_quality(request_qualities.get(q.id, []))))
    return out


class LookupBranches(BaseModel):
    """Cases per branch of LOOKUP_BRANCHES."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    no_call: int
    empty_results: int
    wrong_document: int
    correct_document: int


class LookupFlowReport(LookupBranches):
    """core.supply.lookup_flow: the lookup flow of a tool arm's cases; `model_dump()` is the failure flow's
    `lookup_flow` (core.judge_summaries.LookupFlow reads it back), its fields in this order."""

    cases: int
    called: int
    lookup_calls: int
    hits: int
    hit_rate: float | None  # hits over every case; None without a case
    misses: int
    wrong_on_misses: int
    acceptable_on_misses: int
    wrong_on_hits: int
    accounting: LookupAccounting  # per branch, the cases by answer quality
    closes: bool  # no-calls + calls = cases; empty + wrong + correct = calls
    accounting_closes: bool  # each branch's qualities add up to its cases

    def counts(self) -> LookupCounts:
        """The flow without its answer-quality accounting: what a lookup scored with no generation has."""
        return LookupCounts.model_validate(self.model_dump(include=set(LookupCounts.model_fields)))


def lookup_flow(cases: Iterable[LookupCase]) -> LookupFlowReport:
    """Cases per branch (every branch present), wrong answers per branch, hit rate over all cases, closure."""
    cases = list(cases)
    counts, accounting, accounting_closes = branch_accounting(cases, LOOKUP_BRANCHES)
    n, acc = LookupBranches.model_validate(counts), LookupAccounting.model_validate(accounting)
    called = len(cases) - n.no_call
    hits = n.correct_document
    missed = (acc.no_call, acc.empty_results, acc.wrong_document)
    return LookupFlowReport(
        **n.model_dump(),
        cases=len(cases),
        called=called,
        lookup_calls=sum(c.calls for c in cases),
        hits=hits,
        hit_rate=hits / len(cases) if cases else None,
        misses=len(cases) - hits,
        wrong_on_misses=sum(q.wrong for q in missed),
        acceptable_on_misses=sum(q.acceptable for q in missed),
        wrong_on_hits=acc.correct_document.wrong,
        accounting=acc,
        # The seed's identities: no-calls + calls = cases; empty + wrong + correct = calls; each branch's answers.
        closes=n.no_call + called == len(cases) and n.empty_results + n.wrong_document + n.correct_document == called,
        accounting_closes=accounting_closes,
    )
