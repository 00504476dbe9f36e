"""Offline baseline providers behind litellm: `local/extractive` (answerer), `local/lexical` (judge) and
`local/contextual` (representation builder); and,
optionally, a real small language model in process, `local/smollm2` (adapters.smollm2, installed by
`make install-smollm2-inprocess`; the same model over HTTP is adapters.llama_server).
litellm hands "local/<name>" to the one handler registered for provider "local", so that handler routes on <name>."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before litellm: never fetch the cost map

import litellm  # noqa: E402
import numpy as np  # noqa: E402
from litellm import CustomLLM  # noqa: E402
from litellm.llms.custom_llm import CustomLLMError  # noqa: E402
from litellm.types.utils import ChatCompletionMessageToolCall, Function, ModelResponse, Usage  # noqa: E402

from rag_ttc_assets.adapters.llm import CallResult  # noqa: E402

from rag_ttc_assets.adapters import smollm2  # noqa: E402
from rag_ttc_assets.adapters.embeddings import content_word_vectors, encode_memoized  # noqa: E402
from rag_ttc_assets.core import contextual, prompt_markup  # noqa: E402
from rag_ttc_assets.core.extractive import answer_extractively  # noqa: E402
from rag_ttc_assets.judging.judge_inputs import (ExtractStatements, JudgeInput, JudgeRequests,  # noqa: E402
                                              VerifyStatements)
from rag_ttc_assets.judging.lexical_judge import extract_claims, verify_against_gold, verify_statements  # noqa: E402
from rag_ttc_assets.core.summaries import OFFLINE_REQUEST_JUDGES, REQUEST_JUDGE_RULES  # noqa: E402
from rag_ttc_assets.judging.request_judge import (LabelledRequest, WordVectors, judge_requests,  # noqa: E402
                                               judge_requests_soft, judge_requests_whole)
from rag_ttc_assets.adapters.learned_juror import load_parameters  # noqa: E402
from rag_ttc_assets.judging.learned_judge import judge_requests_learned  # noqa: E402
from rag_ttc_assets.core.supply import lookup_queries  # noqa: E402

PROVIDER = "local"
EXTRACTIVE = "extractive"
LEXICAL = "lexical"
COVERAGE = "coverage"
BERTSCORE = "bertscore"
LEARNED = "learned"
CONTEXTUAL = "contextual"
# Marks every response as coming from a baseline, not a language model.
FINGERPRINT = "offline-baseline"
SMOLLM2 = "smollm2"
# A real language model, small and local: not one of the offline baselines above.
SMOLLM2_FINGERPRINT = "local-small-llm:SmolLM2-135M-Instruct.Q4_1:llama.cpp"
SMOLLM2_DEFAULT_MAX_TOKENS = 512  # when the caller sets none; llama.cpp's own default is "until the context ends"

Embed = Callable[[list[str]], np.ndarray]


def _default_embed(texts: list[str]) -> np.ndarray:
    # The model loads at the first call (adapters/torch_embeddings.py), not at import: it costs seconds.
    return encode_memoized(texts)


def _text(message: dict[str, Any]) -> str:
    """A message's text; OpenAI-style content part lists are joined."""
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return content if isinstance(content, str) else ""


def last_user_text(messages: list[dict[str, Any]]) -> str:
    return next((_text(m) for m in reversed(messages) if m.get("role") == "user"), "")


def approx_tokens(text: str) -> int:
    """Whitespace token count: an approximation, there is no tokenizer behind these baselines."""
    return len(text.split())


class _Baseline(CustomLLM):
    """A CustomLLM whose reply is `respond(prompt)`; malformed prompts get a plain-text explanation."""

    name = ""

    def __init__(self, embed: Embed | None = None) -> None:
        super().__init__()
        self._embed = embed or _default_embed

    def respond(self, prompt: str) -> str:
        raise NotImplementedError

    def reply(self, prompt: str) -> str:
        try:
            return self.respond(prompt)
        except ValueError as error:
            # Deliberately not JSON: the caller's contract must record a parse failure, as it would for a model
            # that ignored the format.
            return f"{PROVIDER}/{self.name} (offline baseline) cannot answer this prompt: {error}."

    def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        return _respond(self, messages, kwargs.get("model_response"))

    async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        # Off the event loop: embedding is CPU-bound and would stall concurrent calls.
        return await asyncio.to_thread(_respond, self, messages, kwargs.get("model_response"))


class ExtractiveAnswerer(_Baseline):
    """Answers by quoting evidence sentences (core.extractive); JSON answer object out.

    Offered a `lookup` tool (tool arms), it first calls it once per request it splits from the question
    (core.supply.lookup_queries: the question text is all it reads), then answers from the tool results. Only an
    oracle prompt that lists the annotated requests in a <requests> block makes it look up those texts instead.
    It does not read a pre-loaded title index: a baseline that always searches makes no no-call cases of its own.
    """

    name = EXTRACTIVE

    def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        tools = (kwargs.get("optional_params") or {}).get("tools") or []
        if not any(isinstance(m, dict) and m.get("role") == "tool" for m in messages) and _offers_lookup(tools):
            return _lookup_calls(self, messages, kwargs.get("model_response"))
        return _respond(self, messages, kwargs.get("model_response"))

    async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        return await asyncio.to_thread(self.completion, model, messages, *args, **kwargs)

    def respond(self, prompt: str) -> str:
        parsed = prompt_markup.parse_answer_prompt(prompt)
        answer = answer_extractively(parsed.question, parsed.chunks, self._embed, requests=parsed.requests)
        return json.dumps(answer, ensure_ascii=False)


class _RecordJudge(_Baseline):
    """An offline judge: it reads the typed records the lab's judge stages build beside the prompt (judging.judge_inputs,
    handed in by stages.calls.Caller through `judge_call`), never the prompt. Reached through litellm with a prompt
    alone, it says so in plain text (a parse failure for the caller, as for a model that ignored the format)."""

    def respond(self, prompt: str) -> str:
        raise ValueError("it judges the typed records the lab's judge stages hand it (judging.judge_inputs), "
                         "not a prompt")

    def judge_records(self, case: JudgeInput) -> str:
        raise NotImplementedError

    def reply_to(self, case: JudgeInput) -> str:
        """`judge_records(case)`; a ValueError (a case it cannot judge, a juror's unreadable parameters) is explained
        in plain text, as `reply` explains a prompt it cannot read."""
        try:
            return self.judge_records(case)
        except ValueError as error:
            return f"{PROVIDER}/{self.name} (offline baseline) cannot judge this case: {error}."


def _labelled(case: JudgeRequests) -> list[LabelledRequest]:
    return [LabelledRequest(r.id, r.text, r.quotes, r.gold_answer) for r in case.requests]


def _passages(case: JudgeRequests) -> list[tuple[str, list[str]]]:
    return [(p.text, list(p.cites)) for p in case.passages]


class LexicalJudge(_RecordJudge):
    """Judges by content-word recall and embedding cosine (judging.lexical_judge, judging.request_judge), on each task's
    records: statements, verdicts, gold verdicts, request judgments."""

    name = LEXICAL

    def judge_records(self, case: JudgeInput) -> str:
        if isinstance(case, JudgeRequests):
            judged = judge_requests(_labelled(case), case.answer_text, list(case.citations), _passages(case),
                                    self._embed)
            return json.dumps({"requests": [j.model_dump() for j in judged]}, ensure_ascii=False)
        if isinstance(case, ExtractStatements):
            return json.dumps({"statements": extract_claims(_answer_text(case.answer))}, ensure_ascii=False)
        if isinstance(case, VerifyStatements):
            verdicts, relevance = verify_statements(list(case.statements), list(case.evidence), self._embed,
                                                    question=case.question)
            out: dict[str, Any] = {"verdicts": verdicts}
            if case.question:
                # Relevance is measured against the question; without one there is nothing honest to report.
                out["answer_relevance"] = relevance
            return json.dumps(out, ensure_ascii=False)
        verdicts = verify_against_gold(list(case.statements), list(case.gold), self._embed)
        return json.dumps({"verdicts": verdicts}, ensure_ascii=False)


class _RequestJuror(_RecordJudge):
    """An offline juror that judges requests only (a request_judge or a panel's juror): `judge` on the case's
    records."""

    def judge(self, labelled: list[LabelledRequest], case: JudgeRequests) -> list[dict]:
        raise NotImplementedError

    def judge_records(self, case: JudgeInput) -> str:
        if not isinstance(case, JudgeRequests):
            raise ValueError(f"{PROVIDER}/{self.name} judges requests only (a request_judge or juror), not "
                             f"{case.task!r}")
        return json.dumps({"requests": self.judge(_labelled(case), case)}, ensure_ascii=False)


class CoverageJuror(_RequestJuror):
    """A second offline request judge for panels: whole-answer content-word coverage (judging.request_judge.
    judge_requests_whole)."""

    name = COVERAGE

    def judge(self, labelled: list[LabelledRequest], case: JudgeRequests) -> list[dict]:
        return [j.model_dump() for j in judge_requests_whole(labelled, case.answer_text, list(case.citations),
                                                             self._embed)]


class BertScoreJuror(_RequestJuror):
    """A third offline request judge for panels, reading words in context: BERTScore recall with the bundled MiniLM's
    token embeddings (judging.request_judge.judge_requests_soft)."""

    name = BERTSCORE

    def __init__(self, embed: Embed | None = None, word_vectors: WordVectors | None = None) -> None:
        super().__init__(embed)
        self._word_vectors = word_vectors or content_word_vectors

    def judge(self, labelled: list[LabelledRequest], case: JudgeRequests) -> list[dict]:
        return [j.model_dump() for j in judge_requests_soft(labelled, case.answer_text, list(case.citations),
                                                            _passages(case), self._embed, self._word_vectors)]


class LearnedJuror(_RequestJuror):
    """A fourth offline request judge: a logistic regression fitted on people's labels over the other offline jurors'
    measurements (judging.learned_judge; its parameters file, shipped in the package or $RAG_TTC_LEARNED_JUROR)."""

    name = LEARNED

    def __init__(self, embed: Embed | None = None, word_vectors: WordVectors | None = None) -> None:
        super().__init__(embed)
        self._word_vectors = word_vectors or content_word_vectors

    def judge(self, labelled: list[LabelledRequest], case: JudgeRequests) -> list[dict]:
        return [j.model_dump() for j in judge_requests_learned(labelled, case.answer_text, list(case.citations),
                                                               _passages(case), self._embed, self._word_vectors,
                                                               load_parameters())]


class ContextualBuilder(_Baseline):
    """Writes a chunk's context from its document's own title, headings and first sentence
    (core.contextual.baseline_context): deterministic, no language model. JSON `{"context": ...}` out."""

    name = CONTEXTUAL

    def respond(self, prompt: str) -> str:
        title, document, chunk, position = contextual.parse_representation_prompt(prompt)
        return json.dumps({"context": contextual.baseline_context(title, document, chunk, position)},
                          ensure_ascii=False)


def _answer_text(answer: str) -> str:
    """The prose of an answer; a structured answer object (JSON with "answer") is unwrapped."""
    try:
        loaded = json.loads(answer)
    except ValueError:
        return answer
    if isinstance(loaded, dict) and isinstance(loaded.get("answer"), str):
        return loaded["answer"]
    return answer


LOOKUP = "lookup"


def _offers_lookup(tools: list) -> bool:
    return any(isinstance(t, dict) and (t.get("function") or {}).get("name") == LOOKUP for t in tools)


def _lookup_calls(baseline: _Baseline, messages: list, model_response: ModelResponse | None) -> ModelResponse:
    """The first turn of a tool arm: one `lookup` call per query. The queries are the answerer's own split of the
    question (lookup_queries); a prompt with a <requests> block (an oracle arm's) gives its request texts."""
    prompt = last_user_text(messages)
    try:
        requests = prompt_markup.parse_requests(prompt)
        queries = ([text for _, text in requests] if requests is not None
                   else lookup_queries(prompt_markup.parse_question(prompt)))
    except ValueError:
        return _respond(baseline, messages, model_response)  # explains what the prompt lacked
    response = model_response if model_response is not None else ModelResponse()
    message = response.choices[0].message  # type: ignore[union-attr]
    message.content = None
    message.tool_calls = [
        ChatCompletionMessageToolCall(id=f"lookup_{i}", type="function",
                                      function=Function(name=LOOKUP, arguments=json.dumps({"query": q})))
        for i, q in enumerate(queries)
    ]
    response.choices[0].finish_reason = "tool_calls"
    _stamp(response, baseline.name, "\n".join(_text(m) for m in messages if isinstance(m, dict)),
           json.dumps(queries))
    return response


def _conversation_prompt(messages: list) -> str:
    """What the answerer reads: the last user turn, then the results of the tool calls that followed it."""
    last_user = max((i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"),
                    default=-1)
    tail = [_text(m) for m in messages[last_user + 1:] if isinstance(m, dict) and m.get("role") == "tool"]
    return "\n\n".join([last_user_text(messages), *tail])


def _stamp(response: ModelResponse, name: str, prompt_text: str, content: str) -> None:
    response.model = f"{PROVIDER}/{name}"
    response.created = int(time.time())
    response.system_fingerprint = FINGERPRINT
    prompt_tokens, completion_tokens = approx_tokens(prompt_text), approx_tokens(content)
    response.usage = Usage(  # type: ignore[attr-defined]
        prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, total_tokens=prompt_tokens + completion_tokens
    )


def _respond(baseline: _Baseline, messages: list, model_response: ModelResponse | None) -> ModelResponse:
    prompt_text = "\n".join(_text(m) for m in messages if isinstance(m, dict))
    content = baseline.reply(_conversation_prompt(messages))
    response = model_response if model_response is not None else ModelResponse()
    response.choices[0].message.content = content  # type: ignore[union-attr]
    response.choices[0].finish_reason = "stop"
    _stamp(response, baseline.name, prompt_text, content)
    return response


class SmolLM2(CustomLLM):
    """`local/smollm2`: the model's raw reply, unrepaired, so parse and contract failures are the model's own.

    Honours max_tokens (default SMOLLM2_DEFAULT_MAX_TOKENS) and temperature (default 0, greedy); any other
    generation parameter is refused rather than silently ignored. Token counts are llama.cpp's own.
    """

    # litellm puts its own retry setting among the generation parameters; it is not one.
    _IGNORED = frozenset({"max_retries"})

    def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        params = dict(kwargs.get("optional_params") or {})
        unsupported = sorted(set(params) - {"max_tokens", "temperature"} - self._IGNORED)
        if unsupported:
            raise CustomLLMError(status_code=400, message=f"{PROVIDER}/{SMOLLM2} supports max_tokens and "
                                                          f"temperature only; got {unsupported}"
                                 + (" (set the arm's response_format: none)" if "response_format" in unsupported
                                    else ""))
        max_tokens = params.get("max_tokens")
        temperature = params.get("temperature")
        try:
            text, prompt_tokens, completion_tokens, finish_reason = smollm2.complete(
                messages,
                max_tokens=SMOLLM2_DEFAULT_MAX_TOKENS if max_tokens is None else int(max_tokens),
                temperature=0.0 if temperature is None else float(temperature),
            )
        except smollm2.LocalLLMUnavailable as error:
            # A setup error, not a transient fault: litellm would report a bare exception as a connection error
            # (retried); 404 reaches the caller as NotFoundError, not retried, with the install hint.
            raise CustomLLMError(status_code=404, message=str(error)) from error
        except ValueError as error:  # llama.cpp: prompt longer than the context window, bad sampling value
            raise CustomLLMError(status_code=400, message=f"{PROVIDER}/{SMOLLM2}: {error}") from error
        response = kwargs.get("model_response") or ModelResponse()
        response.choices[0].message.content = text  # type: ignore[union-attr]
        response.choices[0].finish_reason = finish_reason  # "length" when max_tokens cut it: the caller sees it
        response.model = f"{PROVIDER}/{SMOLLM2}"
        response.created = int(time.time())
        response.system_fingerprint = SMOLLM2_FINGERPRINT
        response.usage = Usage(  # type: ignore[attr-defined]
            prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
            total_tokens=prompt_tokens + completion_tokens,
        )
        return response

    async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        return await asyncio.to_thread(self.completion, model, messages, *args, **kwargs)


class LocalProviders(CustomLLM):
    """The single handler litellm finds for provider "local"; routes on the model name after "local/"."""

    def __init__(self, embed: Embed | None = None) -> None:
        super().__init__()
        self.models: dict[str, CustomLLM] = {
            EXTRACTIVE: ExtractiveAnswerer(embed), LEXICAL: LexicalJudge(embed), CONTEXTUAL: ContextualBuilder(embed),
            COVERAGE: CoverageJuror(embed), BERTSCORE: BertScoreJuror(embed), LEARNED: LearnedJuror(embed),
            SMOLLM2: SmolLM2()
        }

    def _route(self, model: str) -> CustomLLM:
        name = model.split("/", 1)[1] if model.startswith(f"{PROVIDER}/") else model
        if name not in self.models:
            # A misconfigured model name is a setup error, not a model reply: fail loudly.
            raise CustomLLMError(status_code=404, message=f"unknown offline baseline {PROVIDER}/{name}")
        return self.models[name]

    def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        return self._route(model).completion(model, messages, *args, **kwargs)

    async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
        return await self._route(model).acompletion(model, messages, *args, **kwargs)


def judge_call(model: str, case: JudgeInput, messages: list[dict[str, Any]]) -> CallResult:
    """One call of the offline judge `model` (core.summaries.OFFLINE_REQUEST_JUDGES) on `case`, the records the stage
    rendered `messages` from; accounted as the call through litellm would be: whitespace token counts of the
    messages and the reply, priced at zero, one attempt."""
    started = time.monotonic()
    judge = _handler()._route(model)
    if not isinstance(judge, _RecordJudge):
        raise ValueError(f"{model} is not an offline judge: it reads a prompt, not judge records")
    prompt_tokens = approx_tokens("\n".join(_text(m) for m in messages if isinstance(m, dict)))
    try:
        content = judge.reply_to(case)
    except Exception as exc:  # a fault of the judge is the row's status, as it was through litellm: never a crash
        return CallResult(status="provider_error", raw_text=None, input_tokens=None, output_tokens=None,
                          latency_s=time.monotonic() - started, cost_usd=None, attempts=1,
                          error=f"{model}: {type(exc).__name__}: {exc}")
    return CallResult(status="ok", raw_text=content, input_tokens=prompt_tokens,
                      output_tokens=approx_tokens(content), latency_s=time.monotonic() - started, cost_usd=0.0,
                      attempts=1, error=None)


def _handler() -> LocalProviders:
    """The registered handler (`register`), so a judge called with records uses the embedder litellm's would."""
    register()
    return next(v for item in litellm.custom_provider_map for v in item.values() if isinstance(v, LocalProviders))


def rules_of(model: str) -> str | None:
    """An offline baseline's rules version, part of its replies' cache key (adapters.provider_cache): the lexical
    judge and the coverage and BERTScore jurors judge requests by judging.request_judge's versioned rules, the learned juror
    by those rules and its fitted parameters (their digest: a refit never serves the replies of another fit); None
    for the others."""
    if model == f"{PROVIDER}/{LEARNED}":
        return f"{REQUEST_JUDGE_RULES}; learned {load_parameters().digest}"
    return REQUEST_JUDGE_RULES if model in OFFLINE_REQUEST_JUDGES else None


def register(embed: Embed | None = None) -> None:
    """Make `local/extractive`, `local/lexical`, `local/contextual`, the jurors `local/coverage`, `local/bertscore` and
    `local/learned`, and
    `local/smollm2` resolvable by litellm; calling it again changes
    nothing. `local/smollm2` loads nothing until its first call, and fails then if its packages are missing."""
    if any(item.get("provider") == PROVIDER for item in litellm.custom_provider_map):
        return
    litellm.custom_provider_map = [
        *litellm.custom_provider_map,
        {"provider": PROVIDER, "custom_handler": LocalProviders(embed)},
    ]
