"""Derive a dataset's requests from its gold answers and write them beside its evaluation (derived_requests.json).

The offline rule (core.request_derivation, model `local/claims-v1`) calls nothing; any other litellm model gets the
versioned prompt derive-requests-v1 per question through the provider cache (stages.calls.Caller). A provider fault
or an unusable reply is that question's recorded status in the file, never a crash that loses the others; loading
the dataset then names the question until a rerun (served from the cache for the finished ones) derives it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from rag_ttc_assets.adapters.input_files import load_dataset
from rag_ttc_assets.adapters.store import atomic_write_bytes
from rag_ttc_assets.core import request_derivation as dr
from rag_ttc_assets.core.arms import ModelConfig
from rag_ttc_assets.core.contract import locate_json_object
from rag_ttc_assets.core.derivation_result import DerivationResult
from rag_ttc_assets.core.progress import NO_PROGRESS
from rag_ttc_assets.core.prompts import Prompt
from rag_ttc_assets.core.records import Derivation, Question, Request
from rag_ttc_assets.stages.calls import Caller, pooled

PROMPT = "derive-requests-v1"
DERIVED = "derived"
PARSE_FAILURE = "parse_failure"


class QuestionDerivation(BaseModel):
    """One question's line of derived_requests.json: derived, or the call's fault (its requests then empty)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    status: str  # DERIVED, PARSE_FAILURE or the provider call's status
    error: str | None
    requests: list[dict[str, Any]]  # each a core.records.Request as JSON


def _to_derive(questions: list[Question]) -> list[Question]:
    """The questions with a gold answer and no hand-written request (loaded without the derived file, their
    requests are the offline rule's)."""
    return [q for q in questions if q.requests and all(r.derived is not None for r in q.requests)]


def derive(folder: Path, dataset: str, model: ModelConfig, prompt: Prompt | None = None, caller: Caller | None = None,
           workers: int = 4) -> DerivationResult:
    """Derive the requests of the dataset `dataset` (its folder `folder`) with `model`: dr.OFFLINE_MODEL, the rule;
    any other model, its `prompt` (PROMPT) through its `caller` (the request deriver's, with its budget). Writes
    derived_requests.json and returns what was written: the derivation, per-status counts, requests, those with
    evidence, calls."""
    if model.model != dr.OFFLINE_MODEL and (prompt is None or caller is None):
        raise ValueError(f"deriving requests with {model.model!r} needs the prompt {PROMPT} and a Caller")
    ds = load_dataset(folder, dataset, use_derived=False)
    docs = ds.documents_by_id
    questions = _to_derive(ds.evaluation.questions)
    provider_calls = cache_hits = 0
    if model.model == dr.OFFLINE_MODEL:
        derivation = dr.OFFLINE
        rows = [QuestionDerivation(id=q.id, status=DERIVED, error=None,
                                   requests=[r.model_dump(mode="json") for r in dr.derive_offline(q, docs)])
                for q in questions]
    else:
        derivation = Derivation(method=dr.MODEL, model=model.model, prompt_digest=prompt.digest)

        def one(q: Question) -> QuestionDerivation:
            call = caller.call([{"role": "user", "content": prompt.render(question=q.text,
                                                                          gold_answer=q.gold_answer or "")}])
            if call.status != "ok":
                return QuestionDerivation(id=q.id, status=call.status, error=call.error, requests=[])
            obj, why, _ = locate_json_object(call.raw_text)
            try:
                claims = dr.parse_claims(obj) if obj is not None else None
            except dr.DerivationError as e:
                why, claims = str(e), None
            if claims is None:
                return QuestionDerivation(id=q.id, status=PARSE_FAILURE, error=why, requests=[])
            return QuestionDerivation(id=q.id, status=DERIVED, error=None, requests=[
                r.model_dump(mode="json") for r in dr.derived_requests(q, claims, derivation, docs)])

        rows = pooled(one, questions, workers, NO_PROGRESS, "deriving", "derived", "questions")
        provider_calls, cache_hits = caller.provider_calls, caller.cache_hits
    content = dr.derived_file(ds.evaluation_digest, derivation, [r.model_dump() for r in rows])
    path = folder / dr.DERIVED_FILE
    atomic_write_bytes(path, dr.dumps(content).encode("utf-8"), mode=0o644)
    statuses: dict[str, int] = {}
    for row in rows:
        statuses[row.status] = statuses.get(row.status, 0) + 1
    requests = [Request.model_validate(r) for row in rows for r in row.requests]
    return DerivationResult(
        dataset=dataset, file=str(path), derived=derivation.model_dump(), derived_by=dr.describe(derivation),
        questions=len(rows), statuses=statuses, requests=len(requests),
        requests_with_evidence=sum(1 for r in requests if r.evidence),
        not_derived={r.id: f"{r.status}: {r.error}" for r in rows if r.status != DERIVED},
        nothing_to_derive=dr.nothing_to_derive(ds.evaluation.questions, dataset),
        provider_calls=provider_calls, cache_hits=cache_hits)
