"""adapters.llm against a real OpenAI-compatible HTTP server on 127.0.0.1 that injects faults."""

from __future__ import annotations

import logging
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402
import pytest  # noqa: E402

from rag_ttc_assets.adapters.llm import CallResult, ModelSpec, complete, is_priced  # noqa: E402
from rag_ttc_assets_tests.support.openai_server import (  # noqa: E402
    NON_JSON_TEXT,
    FakeOpenAIServer,
    FaultPlan,
)

KEY_ENV = "RAG_TTC_TEST_LLM_KEY"
SENTINEL_KEY = "sk-SENTINEL-7f3a9c2e-do-not-log"
OPAQUE_KEY = "SENTINEL-KEY-7f3a9c2e-do-not-log"  # no "sk-" shape for a pattern-based redactor to catch
ANSWER = '{"answer": "Paris is the capital of France", "citations": ["doc-1"]}'
QUESTION = "What is the capital of France?"  # 6 words -> 6 prompt tokens on the fake server


def answer_fn(messages: list[dict]) -> str:
    return ANSWER


def ask(text: str = QUESTION) -> list[dict]:
    return [{"role": "user", "content": text}]


def spec_for(server: FakeOpenAIServer, **overrides) -> ModelSpec:
    fields = dict(
        model="openai/fake-model",
        params={"temperature": 0.0, "max_tokens": 64},
        api_base=server.base_url,
        api_key_env=KEY_ENV,
        timeout_s=1.0,
        max_retries=2,
        backoff_s=0.5,
    )
    fields.update(overrides)
    return ModelSpec(**fields)


class Sleeps(list):
    """Injected `sleep`: records the delays instead of waiting them out."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SENTINEL_KEY)


def test_ok_returns_content_tokens_and_request_as_sent():
    with FakeOpenAIServer(answer_fn) as server:
        result = complete(spec_for(server), [{"role": "system", "content": "Answer briefly."}, *ask()])

    assert result.status == "ok" and result.ok
    assert result.raw_text == ANSWER
    assert (result.input_tokens, result.output_tokens) == (2 + 6, 9)
    assert result.attempts == 1
    assert result.error is None
    assert result.cost_usd is None  # openai/fake-model is not in litellm's cost map
    assert 0 < result.latency_s < 5.0  # generous: the first call also pays litellm's lazy imports
    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["body"]["model"] == "fake-model"  # litellm strips the "openai/" provider prefix
    assert request["body"]["messages"][1] == {"role": "user", "content": QUESTION}
    assert (request["body"]["temperature"], request["body"]["max_tokens"]) == (0.0, 64)
    assert request["auth_present"] is True
    assert not {"authorization", "api-key"} & {h.lower() for h in request["headers"]}
    assert request["headers"]["x-stainless-retry-count"] == "0"  # the openai client adds no retries


def test_response_format_reaches_an_openai_compatible_server_verbatim_and_only_when_asked():
    # What litellm 1.110.2 sends for `openai/` models: the dict as given (no rewriting to json_object or tools).
    from rag_ttc_assets.core.response_formats import response_format

    wanted = response_format("json_schema", "answer")
    with FakeOpenAIServer(answer_fn) as server:
        complete(spec_for(server), ask(), response_format=wanted)
        complete(spec_for(server), ask())
    constrained, free = server.requests
    assert constrained["body"]["response_format"] == wanted
    assert constrained["body"]["response_format"]["json_schema"]["schema"]["required"] == [
        "answer", "citation_chunk_ids", "abstained"]
    assert constrained["body"]["response_format"]["json_schema"]["strict"] is True
    assert "response_format" not in free["body"]


def test_response_format_in_params_is_refused_in_favour_of_the_argument():
    with pytest.raises(ValueError, match="response_format"):
        ModelSpec(model="openai/x", params={"response_format": {"type": "json_object"}})


def test_priced_model_cost_comes_from_litellm_cost_map():
    with FakeOpenAIServer(answer_fn) as server:
        result = complete(spec_for(server, model="openai/gpt-4o-mini"), ask())

    rates = litellm.model_cost["gpt-4o-mini"]
    assert result.status == "ok"
    assert (result.input_tokens, result.output_tokens) == (6, 9)
    assert result.cost_usd == pytest.approx(6 * rates["input_cost_per_token"] + 9 * rates["output_cost_per_token"])
    assert result.cost_usd > 0


def test_is_priced_uses_cost_map_and_treats_local_as_free():
    assert is_priced("openai/gpt-4o-mini") is True
    assert is_priced("gpt-4o-mini") is True
    assert is_priced("openai/fake-model") is False
    assert is_priced("no-such-provider/no-such-model") is False
    assert is_priced("local/qwen-tiny") is True


@pytest.mark.parametrize(
    ("fault", "plan", "status"),
    [
        ("rate_limited", FaultPlan(retry_after=None), "rate_limited"),
        ("server_error", FaultPlan(server_error_status=500), "server_error"),
        ("server_error", FaultPlan(server_error_status=503), "server_error"),
        ("connection_reset", FaultPlan(), "connection_error"),
        ("empty", FaultPlan(), "empty_response"),
    ],
    ids=["429", "500", "503", "reset", "empty"],
)
def test_persistent_retryable_fault_gives_status_after_bounded_attempts(fault, plan, status):
    sleeps = Sleeps()
    with FakeOpenAIServer(answer_fn, plan) as server:
        result = complete(spec_for(server), ask(f"{QUESTION} FAULT:{fault}"), sleep=sleeps)

    assert result.status == status
    assert result.attempts == 3  # max_retries + 1
    assert server.request_count == 3  # and no hidden retries inside litellm or the openai client
    assert server.fault_counts == {fault: 3}
    assert sleeps == [0.5, 1.0]  # exponential from backoff_s (429 here sent no Retry-After)
    assert result.error is not None and "openai/fake-model" in result.error and server.base_url in result.error
    assert result.cost_usd is None


def test_persistent_timeout_gives_timeout_after_bounded_attempts():
    sleeps = Sleeps()
    with FakeOpenAIServer(answer_fn, FaultPlan(timeout_sleep_s=2.0)) as server:
        result = complete(spec_for(server, max_retries=1), ask(f"{QUESTION} FAULT:timeout"), sleep=sleeps)

    assert result.status == "timeout"
    assert result.attempts == 2
    assert server.fault_counts == {"timeout": 2}
    assert sleeps == [0.5]
    assert 2.0 <= result.latency_s < 3.9  # two 1 s client timeouts, not two 2 s server sleeps
    assert result.raw_text is None and result.input_tokens is None


def test_empty_response_keeps_verbatim_empty_text_and_usage():
    with FakeOpenAIServer(answer_fn) as server:
        result = complete(spec_for(server, max_retries=0), ask(f"{QUESTION} FAULT:empty"), sleep=Sleeps())

    assert (result.status, result.raw_text, result.attempts) == ("empty_response", "", 1)
    assert (result.input_tokens, result.output_tokens) == (7, 0)


@pytest.mark.parametrize(
    ("fault", "status"),
    [("auth_error", "auth_error"), ("bad_request", "bad_request")],
)
def test_non_retryable_fault_returns_after_one_attempt(fault, status):
    sleeps = Sleeps()
    with FakeOpenAIServer(answer_fn) as server:
        result = complete(spec_for(server, max_retries=3), ask(f"{QUESTION} FAULT:{fault}"), sleep=sleeps)

    assert (result.status, result.attempts, server.request_count) == (status, 1, 1)
    assert sleeps == []
    assert result.raw_text is None


def test_truncated_keeps_partial_text_and_does_not_retry():
    sleeps = Sleeps()
    with FakeOpenAIServer(answer_fn) as server:
        result = complete(spec_for(server), ask(f"{QUESTION} FAULT:truncated"), sleep=sleeps)

    assert result.status == "truncated"
    assert result.raw_text == ANSWER[: len(ANSWER) // 2]
    assert (result.attempts, server.request_count, sleeps) == (1, 1, [])
    assert (result.input_tokens, result.output_tokens) == (7, len(ANSWER[: len(ANSWER) // 2].split()))
    assert "length" in result.error


def test_non_json_content_is_returned_verbatim_as_ok():
    # Parsing the answer is the caller's job; the adapter only reports what came back.
    with FakeOpenAIServer(answer_fn) as server:
        result = complete(spec_for(server), ask(f"{QUESTION} FAULT:non_json"))

    assert (result.status, result.raw_text, result.attempts) == ("ok", NON_JSON_TEXT, 1)


@pytest.mark.parametrize(
    "fault", ["rate_limited_once", "server_error_once", "connection_reset_once", "empty_once", "timeout_once"]
)
def test_once_faults_succeed_on_retry(fault):
    sleeps = Sleeps()
    plan = FaultPlan(retry_after=0, timeout_sleep_s=2.0)
    with FakeOpenAIServer(answer_fn, plan) as server:
        result = complete(spec_for(server), ask(f"{QUESTION} FAULT:{fault}"), sleep=sleeps)

    assert (result.status, result.raw_text, result.attempts) == ("ok", ANSWER, 2)
    assert server.fault_counts == {fault.removesuffix("_once"): 1}
    assert [r["fault"] for r in server.requests] == [fault.removesuffix("_once"), None]
    assert sleeps == ([0.0] if fault == "rate_limited_once" else [0.5])
    assert result.error is None


@pytest.mark.parametrize(("retry_after", "expected"), [(1, [1.0, 1.0]), (0, [0.0, 0.0]), (120, [30.0, 30.0])])
def test_retry_after_is_honoured_and_capped(retry_after, expected):
    sleeps = Sleeps()
    with FakeOpenAIServer(answer_fn, FaultPlan(retry_after=retry_after)) as server:
        result = complete(spec_for(server), ask(f"{QUESTION} FAULT:rate_limited"), sleep=sleeps)

    assert (result.status, result.attempts) == ("rate_limited", 3)
    assert sleeps == expected


def test_backoff_doubles_and_caps_at_eight_seconds():
    sleeps = Sleeps()
    plan = FaultPlan(by_index={i: "server_error" for i in range(6)})
    with FakeOpenAIServer(answer_fn, plan) as server:
        result = complete(spec_for(server, max_retries=6, backoff_s=1.0), ask(), sleep=sleeps)

    assert (result.status, result.attempts, result.raw_text) == ("ok", 7, ANSWER)
    assert sleeps == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]


@pytest.mark.parametrize(
    "key",
    [SENTINEL_KEY, OPAQUE_KEY],
    ids=["openai-shaped", "opaque"],  # litellm's own log redaction only knows some key shapes
)
def test_api_key_never_reaches_errors_repr_or_logs(key, monkeypatch, caplog, capsys):
    monkeypatch.setenv(KEY_ENV, key)
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="LiteLLM")  # litellm logs the raw provider error at DEBUG
    # The server expects another key, so it answers 401 echoing the one it was sent.
    with FakeOpenAIServer(answer_fn, expected_key="the-right-one") as server:
        result = complete(spec_for(server), ask(), sleep=Sleeps())
        again = complete(spec_for(server), ask(f"{QUESTION} FAULT:server_error"), sleep=Sleeps())

    assert (result.status, result.attempts) == ("auth_error", 1)
    assert "Incorrect API key provided: ***" in result.error
    assert again.status == "auth_error"  # the server checks the key before injecting faults
    assert [r["auth_present"] for r in server.requests] == [True, True]
    out, err = capsys.readouterr()
    assert "Incorrect API key provided" in caplog.text  # the echo was logged, so scrubbing was exercised
    for text in (result.error, repr(result), again.error, repr(again), caplog.text, out, err):
        assert key not in text
    for record in caplog.records:
        assert key not in record.getMessage()


def test_retry_log_lines_name_model_and_are_scrubbed(caplog):
    caplog.set_level(logging.INFO, logger="rag_ttc_assets.adapters.llm")
    with FakeOpenAIServer(answer_fn) as server:
        complete(spec_for(server, max_retries=1), ask(f"{QUESTION} FAULT:server_error"), sleep=Sleeps())

    lines = [r.getMessage() for r in caplog.records if r.name == "rag_ttc_assets.adapters.llm"]
    assert len(lines) == 1
    assert lines[0].startswith("llm: attempt 1/2 of openai/fake-model gave server_error; retrying in 0.50s")


def test_call_result_repr_holds_no_key_even_on_success():
    with FakeOpenAIServer(answer_fn) as server:
        result = complete(spec_for(server), ask())
    assert SENTINEL_KEY not in repr(result)
    assert isinstance(result, CallResult)


def test_spec_rejects_reserved_params_and_missing_key_env(monkeypatch):
    with pytest.raises(ValueError, match=r"ModelSpec\('openai/x'\)\.params: \['num_retries', 'timeout'\]"):
        ModelSpec("openai/x", params={"timeout": 5, "num_retries": 2})
    with pytest.raises(ValueError, match="max_retries >= 0"):
        ModelSpec("openai/x", max_retries=-1)
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(ValueError, match=f"environment variable '{KEY_ENV}' is unset"):
        complete(ModelSpec("openai/x", api_key_env=KEY_ENV), ask())


def test_seeded_rate_plan_is_deterministic():
    def run() -> list[str | None]:
        plan = FaultPlan(rate=0.5, rate_kinds=("server_error", "empty"), seed=11)
        with FakeOpenAIServer(answer_fn, plan) as server:
            for i in range(8):
                complete(spec_for(server, max_retries=0), ask(f"question {i}"), sleep=Sleeps())
            return [r["fault"] for r in server.requests]

    first, second = run(), run()
    assert first == second
    assert len(first) == 8 and 0 < sum(f is not None for f in first) < 8


def test_tool_calls_are_returned_and_a_tool_call_without_content_is_ok():
    from rag_ttc_assets.core.supply import LOOKUP_TOOL

    call = {"id": "call_7", "name": "lookup", "arguments": '{"query": "capital of France"}'}
    with FakeOpenAIServer(lambda messages: {"tool_calls": [call]}) as server:
        result = complete(spec_for(server), ask(), tools=[LOOKUP_TOOL])
    assert result.status == "ok" and result.attempts == 1
    assert result.tool_calls == [call]
    (request,) = server.requests
    assert request["body"]["tools"] == [LOOKUP_TOOL]
    # Without tools, an empty content is still an empty response (retried, then reported).
    with FakeOpenAIServer(lambda messages: "") as server:
        result = complete(spec_for(server, max_retries=0), ask())
    assert result.status == "empty_response" and result.tool_calls is None


def test_missing_key_is_an_auth_error_without_retries(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAIServer(answer_fn) as server:
        result = complete(spec_for(server, api_key_env=None), ask(), sleep=Sleeps())
    assert result.status == "auth_error" and result.attempts == 1
    assert "Missing credentials" in result.error
    assert server.request_count == 0
