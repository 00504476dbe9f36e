"""core.response_formats: the reply schemas agree with the parsers that read the replies."""

from __future__ import annotations

import pytest

from rag_ttc_assets.core.contract import AnswerObject, RequestItem
from rag_ttc_assets.judging.statement_judge import REQUEST_VERDICTS, RequestJudgment, StatementVerdict
from rag_ttc_assets.core.response_formats import (ANSWER, ANSWER_WITH_REQUESTS, REQUEST_JUDGMENTS, SCHEMAS,
                                                  answer_reply, response_format)
from rag_ttc_assets_tests.conftest import REPO

PROMPTS = REPO / "prompts"


def _required(model) -> set[str]:
    return {name for name, f in model.model_fields.items() if f.is_required()}


def test_the_answer_schemas_are_the_answer_object_as_each_prompt_asks_for_it() -> None:
    assert set(ANSWER["properties"]) == set(ANSWER["required"]) == _required(AnswerObject)
    assert set(ANSWER_WITH_REQUESTS["properties"]) == set(ANSWER_WITH_REQUESTS["required"]) == set(
        AnswerObject.model_fields)
    item = ANSWER_WITH_REQUESTS["properties"]["requests"]["items"]
    assert set(item["properties"]) == set(RequestItem.model_fields) == set(item["required"])


@pytest.mark.parametrize(("prompt", "reply"), [
    ("grounded-answer-v1", "answer"), ("grounded-answer-multipart-v2", "answer_with_requests"),
    ("tool-answer-v2", "answer_with_requests"), ("restated-evidence-v2", "answer_with_requests")])
def test_each_generation_prompt_gets_the_schema_its_reply_format_shows(prompt: str, reply: str) -> None:
    assert answer_reply((PROMPTS / f"{prompt}.txt").read_text(encoding="utf-8")) == reply


def test_the_judge_schemas_ask_for_what_the_parsers_read() -> None:
    verdict = SCHEMAS["verdicts"]["properties"]["verdicts"]["items"]
    assert set(verdict["properties"]) == set(StatementVerdict.model_fields) - {"contradicts_gold"}
    gold = SCHEMAS["gold_verdicts"]["properties"]["verdicts"]["items"]
    assert set(gold["properties"]) == set(StatementVerdict.model_fields)
    assert set(SCHEMAS["verdicts"]["required"]) == {"verdicts", "answer_relevance"}
    assert SCHEMAS["gold_verdicts"]["required"] == ["verdicts"]
    judged = REQUEST_JUDGMENTS["properties"]["requests"]["items"]
    # `coverage` is what the offline judges measure and report; an LLM judge is not asked for one (its replies
    # and prompt unchanged), so the schema leaves it out.
    assert set(judged["properties"]) == set(RequestJudgment.model_fields) - {"coverage"}
    assert judged["properties"]["verdict"]["enum"] == list(REQUEST_VERDICTS)


def test_no_schema_names_a_question_s_chunks_or_requests() -> None:
    # The contract must still be able to catch an invented chunk ID under constrained decoding.
    assert "enum" not in str(ANSWER_WITH_REQUESTS) and "enum" not in str(SCHEMAS["statements"])


def test_the_response_format_is_openai_s_strict_json_schema_form() -> None:
    answer = response_format("json_schema", "answer")
    assert answer == {"type": "json_schema", "json_schema": {"name": "answer", "schema": ANSWER, "strict": True}}
    assert all(response_format("json_schema", name)["json_schema"]["strict"] for name in SCHEMAS)
    assert response_format("json_schema", "request_judgments")["json_schema"]["strict"] is True
    assert response_format("none", "answer") is None
    with pytest.raises(ValueError, match="not one of"):
        response_format("grammar", "answer")
    with pytest.raises(KeyError):
        response_format("json_schema", "no-such-reply")
