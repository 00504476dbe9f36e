from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402

from rag_ttc_assets.adapters import local_providers  # noqa: E402
from rag_ttc_assets.core.contract import check_contract  # noqa: E402
from rag_ttc_assets.judging.judge_inputs import (ExtractStatements, GoldRequest, JudgeRequests,  # noqa: E402
                                              VerifyAgainstGold, VerifyStatements)
from rag_ttc_assets.core.prompts import (  # noqa: E402
    evidence_block,
    parse_prompt,
    requests_block,
)

PROMPTS = Path(__file__).resolve().parents[2] / "prompts"
CHUNKS = [
    ("assert#chunk-0", "Assert statements are a convenient way to insert debugging assertions into a program. "
                       "The current code generator emits no code for an assert statement when optimization is "
                       "requested at compile time."),
    ("lambda#chunk-0", "Lambda expressions (sometimes called lambda forms) are used to create anonymous functions."),
]  # fmt: skip
CHUNK_IDS = [cid for cid, _ in CHUNKS]


def render(name: str, kind: str, **values: str) -> str:
    return parse_prompt(name, (PROMPTS / f"{name}.txt").read_text(encoding="utf-8"), kind).render(**values)


def judged(model: str, case, prompt: str = "") -> str:
    """An offline judge's reply to `case`, the records a judge stage hands it beside the prompt it renders."""
    result = local_providers.judge_call(model, case, [{"role": "user", "content": prompt}])
    assert (result.status, result.attempts, result.cost_usd) == ("ok", 1, 0.0)
    assert result.input_tokens == len(prompt.split()) and result.output_tokens == len(result.raw_text.split())
    return result.raw_text


def ask(model: str, prompt: str) -> litellm.ModelResponse:
    return litellm.completion(model=model, messages=[{"role": "system", "content": "Be exact."},
                                                     {"role": "user", "content": prompt}])  # fmt: skip


@pytest.fixture(scope="module", autouse=True)
def registered():
    before = list(litellm.custom_provider_map)
    litellm.custom_provider_map = [item for item in before if item.get("provider") != "local"]
    local_providers.register()
    yield
    litellm.custom_provider_map = before


def test_register_is_idempotent() -> None:
    local_providers.register()
    local_providers.register()
    entries = [item for item in litellm.custom_provider_map if item["provider"] == "local"]
    assert len(entries) == 1
    assert isinstance(entries[0]["custom_handler"], local_providers.LocalProviders)


def test_extractive_multipart_prompt_gives_a_valid_answer_object() -> None:
    prompt = render(
        "grounded-answer-multipart-v1", "answer",
        question="What does the assert statement do, and how do I configure pip's proxy?",
        requests=requests_block([("q1.r1", "What does the assert statement do?"),
                                 ("q1.r2", "How do I configure pip's proxy?")]),
        evidence=evidence_block(CHUNKS),
    )  # fmt: skip
    response = ask("local/extractive", prompt)
    answer = json.loads(response.choices[0].message.content)
    assert answer["citation_chunk_ids"] == ["assert#chunk-0"]
    assert set(answer["citation_chunk_ids"]) <= set(CHUNK_IDS)
    assert [(r["request"], r["supported"], r["citation_chunk_ids"]) for r in answer["requests"]] == [
        ("q1.r1", True, ["assert#chunk-0"]),
        ("q1.r2", False, []),
    ]
    assert check_contract(response.choices[0].message.content, CHUNK_IDS).status == "valid"
    # Marked as a baseline, with approximate (whitespace) token counts.
    assert response.model == "local/extractive"
    assert response.system_fingerprint == "offline-baseline"
    assert response.choices[0].finish_reason == "stop"
    assert response.usage.prompt_tokens == len(prompt.split()) + 2  # + the system message
    assert response.usage.completion_tokens == len(response.choices[0].message.content.split())
    assert response.usage.total_tokens == response.usage.prompt_tokens + response.usage.completion_tokens


def test_extractive_abstains_on_an_unrelated_question() -> None:
    prompt = render("grounded-answer-v1", "answer", question="How do I configure pip's proxy?",
                    evidence=evidence_block(CHUNKS))  # fmt: skip
    raw = ask("local/extractive", prompt).choices[0].message.content
    assert json.loads(raw)["citation_chunk_ids"] == []
    assert check_contract(raw, CHUNK_IDS).status == "abstained"


def test_prompt_without_tags_is_explained_in_plain_text() -> None:
    raw = ask("local/extractive", "What does the assert statement do?").choices[0].message.content
    assert raw == (
        "local/extractive (offline baseline) cannot answer this prompt: prompt has no <question>...</question> block."
    )
    assert check_contract(raw, CHUNK_IDS).status == "parse_failure"
    # An offline judge reads the records a judge stage hands it, never a prompt: a prompt alone is refused.
    raw = ask("local/lexical", "<task>verify_statements</task> and nothing else").choices[0].message.content
    assert raw == ("local/lexical (offline baseline) cannot answer this prompt: it judges the typed records the lab's "
                   "judge stages hand it (judging.judge_inputs), not a prompt.")


def test_lexical_extract_statements() -> None:
    answer = json.dumps({
        "answer": "1. Assert statements insert debugging assertions.\n2. The provided evidence does not say.",
        "citation_chunk_ids": ["assert#chunk-0"],
        "abstained": False,
    })
    prompt = render("judge-statements-v1", "judge_statements", question="What does assert do?", answer=answer)
    assert json.loads(judged("local/lexical", ExtractStatements.of("What does assert do?", answer), prompt)) == {
        "statements": ["Assert statements insert debugging assertions."]
    }


def test_a_fault_inside_an_offline_judge_is_the_calls_status_not_a_crash(monkeypatch) -> None:
    """Through litellm a judge's exception was a provider fault; called on records in process it stays one, so the
    row records it and the finished rows are kept."""
    def broken(self, case):
        raise RuntimeError("lost its word vectors")

    monkeypatch.setattr(local_providers._RecordJudge, "reply_to", broken)
    result = local_providers.judge_call("local/lexical", ExtractStatements.of("What does assert do?", "It asserts."),
                                        [{"role": "user", "content": "a prompt"}])
    assert result.status == "provider_error" and result.raw_text is None
    assert result.error == "local/lexical: RuntimeError: lost its word vectors"


def test_lexical_verify_statements() -> None:
    statements = ["Assert statements insert debugging assertions into a program.",
                  "pip reads its proxy from HTTPS_PROXY."]
    case = VerifyStatements.of("What does the assert statement do?", statements, [text for _, text in CHUNKS])
    out = json.loads(judged("local/lexical", case))
    verdicts = [(v["statement"], v["supported"], v["evidence"]) for v in out["verdicts"]]
    assert verdicts == [(1, True, [1]), (2, False, [])]
    assert 0.0 <= out["answer_relevance"] <= 1.0


def test_lexical_verify_against_gold() -> None:
    case = VerifyAgainstGold.of("What does the assert statement do?", [
        "The current code generator emits code for an assert statement when optimization is requested at compile time.",
        "Assert statements are a convenient way to insert debugging assertions into a program.",
    ], [text for _, text in CHUNKS[:1]])
    out = json.loads(judged("local/lexical", case))
    assert [(v["statement"], v["supported"], v["contradicts_gold"], v["evidence"]) for v in out["verdicts"]] == [
        (1, False, True, [1]),
        (2, True, False, [1]),
    ]
    assert set(out) == {"verdicts"}


def test_acompletion_serves_the_same_answer() -> None:
    prompt = render("grounded-answer-v1", "answer", question="What do lambda expressions create?",
                    evidence=evidence_block(CHUNKS))  # fmt: skip
    messages = [{"role": "user", "content": prompt}]
    response = asyncio.run(litellm.acompletion(model="local/extractive", messages=messages))
    assert json.loads(response.choices[0].message.content)["citation_chunk_ids"] == ["lambda#chunk-0"]
    assert response.system_fingerprint == "offline-baseline"


def test_unknown_local_model_is_a_configuration_error() -> None:
    with pytest.raises(litellm.NotFoundError, match="unknown offline baseline local/nope"):
        ask("local/nope", "<question>Q?</question>")


def test_project_llm_adapter_reaches_the_baseline() -> None:
    from rag_ttc_assets.adapters.llm import ModelSpec, complete

    prompt = render("grounded-answer-v1", "answer", question="What do lambda expressions create?",
                    evidence=evidence_block(CHUNKS))  # fmt: skip
    result = complete(ModelSpec(model="local/extractive"), [{"role": "user", "content": prompt}])
    assert (result.status, result.attempts, result.cost_usd) == ("ok", 1, 0.0)
    assert result.input_tokens == len(prompt.split())
    assert check_contract(result.raw_text, CHUNK_IDS).status == "valid"


def _first_turn_queries(prompt: str) -> list[tuple[str, dict]]:
    from rag_ttc_assets.core.supply import LOOKUP_TOOL

    first = litellm.completion(model="local/extractive", messages=[{"role": "user", "content": prompt}],
                               tools=[LOOKUP_TOOL])
    assert first.choices[0].finish_reason == "tool_calls" and first.system_fingerprint == "offline-baseline"
    return [(c.function.name, json.loads(c.function.arguments)) for c in first.choices[0].message.tool_calls]


def test_extractive_looks_up_its_own_split_of_the_question_when_the_prompt_lists_no_requests() -> None:
    # The product's prompt carries the question only: the queries are the answerer's split of it, never a label.
    prompt = render("tool-answer-v2", "tool_answer",
                    question="What does the assert statement do and what are lambda expressions?")
    assert "<requests>" not in prompt
    assert _first_turn_queries(prompt) == [("lookup", {"query": "What does the assert statement do?"}),
                                           ("lookup", {"query": "What are lambda expressions?"})]
    # A question that does not split is looked up whole.
    assert _first_turn_queries(render("tool-answer-v2", "tool_answer", question="What do assert and lambda do?")) == [
        ("lookup", {"query": "What do assert and lambda do?"})]


def test_extractive_on_an_oracle_prompt_looks_up_the_listed_request_texts() -> None:
    # An oracle prompt (v1) lists the annotated requests; their texts differ from the question's own split.
    requests = [("q.r1", "assert statement purpose"), ("q.r2", "lambda expressions")]
    prompt = render("tool-answer-v1", "tool_answer", question="What do assert and lambda do?",
                    requests=requests_block(requests))
    assert _first_turn_queries(prompt) == [("lookup", {"query": "assert statement purpose"}),
                                           ("lookup", {"query": "lambda expressions"})]


def test_extractive_offered_lookup_calls_it_once_per_request_then_answers_from_the_results() -> None:
    from rag_ttc_assets.core.supply import LOOKUP_TOOL

    prompt = render("tool-answer-v2", "tool_answer",
                    question="What does the assert statement do and what are lambda expressions?")
    messages = [{"role": "user", "content": prompt}]
    first = litellm.completion(model="local/extractive", messages=messages, tools=[LOOKUP_TOOL])
    calls = first.choices[0].message.tool_calls
    assert [json.loads(c.function.arguments)["query"] for c in calls] == [
        "What does the assert statement do?", "What are lambda expressions?"]
    messages.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
        for c in calls]})
    for c, chunk in zip(calls, CHUNKS):
        messages.append({"role": "tool", "tool_call_id": c.id, "content": evidence_block([chunk])})
    second = litellm.completion(model="local/extractive", messages=messages, tools=[LOOKUP_TOOL])
    assert not second.choices[0].message.tool_calls
    result = check_contract(second.choices[0].message.content, CHUNK_IDS)
    assert result.status == "valid", result.reason
    assert set(result.answer.citation_chunk_ids) == set(CHUNK_IDS)
    # Each request is named in the answerer's own words (the v2 prompt has no request ids to give).
    assert [r.request for r in result.answer.requests] == [
        "What does the assert statement do?", "What are lambda expressions?"]
    # Without the tool the same first turn is an ordinary prompt with no evidence: an abstention, not a call.
    plain = litellm.completion(model="local/extractive", messages=messages[:1])
    assert check_contract(plain.choices[0].message.content, []).status == "abstained"


def test_the_bertscore_juror_judges_requests_with_the_bundled_minilm_word_vectors() -> None:
    """`local/bertscore` on a request judge case's records, with the real MiniLM: a paraphrase
    the lexical judge misses is addressed, a request nothing speaks to is not, and a task other than request judging
    is refused (a juror only)."""
    from rag_ttc_assets.adapters.embeddings import content_word_vectors
    from rag_ttc_assets.core.text import content_word_spans

    [(stems, vectors)] = content_word_vectors(["The firm's sales rose steeply in 2023."])
    assert stems == [s for s, _, _ in content_word_spans("The firm's sales rose steeply in 2023.")]
    assert vectors.shape == (len(stems), 384) and abs(float((vectors ** 2).sum(axis=1).min()) - 1) < 1e-5
    requests = [("q1.r1", "How did revenue change?", ["The company's revenue increased sharply in 2023."], None),
                ("q1.r2", "Where is it based?", ["Its headquarters are in Lyon."], None)]
    answer = "The firm's sales rose steeply in 2023. It also sells bicycles in Spain."
    case = JudgeRequests.of("How did revenue change, and where is it based?", [GoldRequest.of(*r) for r in requests],
                            answer, [], [])
    bert = {r["request"]: r for r in json.loads(judged("local/bertscore", case))["requests"]}
    lexical = {r["request"]: r for r in json.loads(judged("local/lexical", case))["requests"]}
    assert lexical["q1.r1"]["addressed"] is False and bert["q1.r1"]["addressed"] is True
    assert bert["q1.r1"]["coverage"] > lexical["q1.r1"]["coverage"] and bert["q1.r1"]["verdict"] == "consistent"
    assert bert["q1.r1"]["excerpt"] == "The firm's sales rose steeply in 2023."
    assert bert["q1.r2"]["addressed"] is False and bert["q1.r2"]["coverage"] < 0.65
    refused = judged("local/bertscore", ExtractStatements.of("What?", "X."))
    assert "local/bertscore judges requests only" in refused
