"""The view `rag-ttc inspect` gives of one question of one arm (stages.inspect.inspect_question): every boundary's
record of it, one frozen pydantic model per part, so the markdown (stages.inspect.to_markdown), the annotation page
(labelling.annotate_stage) and `inspect --json` (the fields in this order) read one declared record. Pure: pydantic only.

Strict: a value of another type than declared is an error here, never converted (the JSON stays what the tables hold).
Payloads parsed from a table's JSON column or the message archive (jurors, verdicts, lookups, planted claims, the
messages sent) stay as parsed.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class _Part(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True)


class Sent(_Part):
    """The digests of the messages a row's calls were sent, and the `{"messages", "tools"}` each held (None: the
    table predates the message archive)."""

    messages_digests: list[str] | None
    messages_sent: list[Any] | None


class QuestionView(_Part):
    id: str
    text: str
    answerable: bool
    targets: list[dict[str, Any]]


class RequestJudgeRow(_Part):
    """The request judge's row of one request (the request_judgments columns of the same names), its jurors'
    verdicts parsed."""

    status: str | None
    addressed: bool | None
    excerpt: str | None
    cited_chunk_ids: list[str] | None
    verdict: str | None
    coverage: float | None
    reason: str | None
    judge_error: str | None
    request_judge_model: str | None
    prompt_digest: str | None
    jurors_disagree: Any
    jurors: list[dict[str, Any]]


class RequestView(_Part):
    id: str
    text: str
    supporting_chunk_ids: list[str] | None
    branch: str | None
    answered: bool | None
    supported: bool | None
    request_judge: RequestJudgeRow | None
    self_reported_answered: bool | None
    overclaimed: bool | None
    underclaimed: bool | None


class RankedChunk(_Part):
    rank: int
    chunk_id: str
    doc_id: str
    runes: int
    bm25_rank: int | None
    vector_rank: int | None
    state: str
    cited: bool


class AnnLists(_Part):
    """An approximate index's list beside the exact search's (core.ann)."""

    index: dict[str, Any]
    ann_recall_k: float | None
    vector_chunk_ids: list[str]
    exact_vector_chunk_ids: list[str]
    exact_ranked_chunk_ids: list[str]
    exact_only_requests: list[str]


class AnswerView(_Part):
    model: str | None
    status: str
    cache_hit: bool | None
    trace_id: str | None
    raw_response: str | None
    error: str | None
    citation_check: str | None
    messages_digests: list[str] | None  # Sent's, last
    messages_sent: list[Any] | None


class ContractView(_Part):
    status: str
    reason: str | None
    answer: str | None
    abstained: bool | None
    parsed_from: str | None


class JudgeView(_Part):
    status: str
    model: str
    statements: list[str] | None
    verdicts: list[dict[str, Any]]
    faithfulness: float | None
    gold_verdicts: Any
    contradicts_gold: bool | None
    messages_digests: list[str] | None  # Sent's, last
    messages_sent: list[Any] | None


class RequestJudgeView(_Part):
    model: str
    messages_digests: list[str] | None  # Sent's, last
    messages_sent: list[Any] | None


class InspectView(_Part):
    """One question of one arm, every boundary's record of it (inspect_question)."""

    arm: str
    label_use: str
    question: QuestionView
    requests: list[RequestView]
    ranked: list[RankedChunk]
    selected_chunk_ids: list[str]
    admitted_chunk_ids: list[str]
    omitted_chunk_ids: list[str]
    cited_chunk_ids: list[str]
    used_runes: int
    max_runes: int
    evidence_k: int
    counterfactual: str
    withheld_chunk_ids: list[str]
    planted: list[dict[str, Any]]
    supply: str
    ann: AnnLists | None
    lookups: list[dict[str, Any]]
    answer: AnswerView | None
    contract: ContractView | None
    judge: JudgeView | None
    request_judge: RequestJudgeView
