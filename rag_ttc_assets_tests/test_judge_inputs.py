"""The judge gets typed inputs (judging.judge_inputs): each judge call of the statement judge (judging.statement_judge_stage.judge)
and the request judge (judging.request_judge_stage.judge_requests) hands the caller the records its prompt is rendered
from. An offline judge reads those records; a model judge reads the prompt. Both see the same content: the prompt
the stage sends, read back by the tagged-prompt parser (support.judge_prompts), holds what the records hold."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from rag_ttc_assets.core.arms import ArmConfig, ModelConfig
from rag_ttc_assets.judging.judge_inputs import (ExtractStatements, JudgeInput, JudgeRequests, VerifyAgainstGold,
                                                 VerifyStatements)
from rag_ttc_assets.core.prompts import parse_prompt
from rag_ttc_assets.core.records import Evidence, Question, Request
from rag_ttc_assets.judging import request_judge_stage, statement_judge_stage
from rag_ttc_assets.stages.calls import Call, Caller
from rag_ttc_assets_tests.support import judge_prompts

PROMPTS = Path(__file__).resolve().parents[1] / "prompts"
ASSERT = ("Assert statements are a convenient way to insert debugging assertions into a program. The current code "
          "generator emits no code for an assert statement when optimization is requested at compile time.")
LAMBDA = "Lambda expressions (sometimes called lambda forms) are used to create anonymous functions."
# Whitespace the rendered prompt carries and its reader does not: runs of spaces, line breaks, padded ends.
QUESTION = Question(id="q1", text="What does the assert statement do,\n  and what do lambda  expressions create?",
                    requests=[
                        Request(id="q1.r1", text="What does the\nassert statement do?",
                                evidence=[Evidence(doc_id="assert", quote=f"  {ASSERT}\n")],
                                gold_answer=" It inserts debugging assertions. "),
                        Request(id="q1.r2", text="What do lambda expressions create?",
                                evidence=[Evidence(doc_id="lambda", quote=LAMBDA)]),
                    ])
ANSWER = ("Assert statements insert debugging assertions into a program.\n"
          "Lambda expressions create anonymous functions.")
CONTRACTS = pl.DataFrame([{
    "query_id": "q1", "status": "valid", "answer": f"  {ANSWER}\n", "citation_chunk_ids": ["assert#0", "lambda#0"],
    "request_items": json.dumps([
        {"request": "q1.r1", "answer": "Assert statements insert debugging assertions into a program.",
         "citation_chunk_ids": ["assert#0"], "supported": True},
        {"request": "q1.r2", "answer": " Lambda expressions create anonymous functions. ",
         "citation_chunk_ids": ["lambda#0"], "supported": True}]),
}])
CONTEXTS = pl.DataFrame([{"query_id": "q1", "admitted_chunk_ids": ["assert#0", "lambda#0"]}])
CHUNK_TEXT = {"assert#0": f"\n{ASSERT}  ", "lambda#0": LAMBDA}


class Recording(Caller):
    """The offline judge's real Caller, keeping what each call was handed: the messages and the records."""

    def __init__(self, root: Path) -> None:
        super().__init__(ModelConfig(model="local/lexical"), root, "judge", budget=100)
        self.sent: list[tuple[str, JudgeInput | None]] = []

    def call(self, messages, *args, judge_input: JudgeInput | None = None, **kwargs) -> Call:
        self.sent.append((messages[-1]["content"], judge_input))
        return super().call(messages, *args, judge_input=judge_input, **kwargs)


def _prompt(name: str, kind: str):
    return parse_prompt(name, (PROMPTS / f"{name}.txt").read_text(encoding="utf-8"), kind)


def _flat_embed(texts: list[str]):
    """Every text the same unit vector: cheap (no model loads), and enough for these checks of what was read."""
    import numpy as np

    return np.full((len(texts), 4), 0.5)


@pytest.fixture(scope="module")
def offline_judges():
    import litellm

    from rag_ttc_assets.adapters import local_providers

    before = list(litellm.custom_provider_map)
    litellm.custom_provider_map = [item for item in before if item.get("provider") != "local"]
    local_providers.register(_flat_embed)
    yield
    litellm.custom_provider_map = before


@pytest.fixture(scope="module")
def sent(tmp_path_factory, offline_judges) -> tuple[list[tuple[str, JudgeInput | None]], pl.DataFrame, pl.DataFrame]:
    caller = Recording(tmp_path_factory.mktemp("provider_cache"))
    cfg = ArmConfig()
    prompts = statement_judge_stage.JudgePrompts(statements=_prompt("judge-statements-v1", "judge_statements"),
                                      verdicts=_prompt("judge-verdicts-v1", "judge_verdicts"),
                                      gold=_prompt("judge-gold-v1", "judge_gold"))
    verdicts = statement_judge_stage.judge(cfg, [QUESTION], CONTRACTS, CONTEXTS, CHUNK_TEXT, prompts, caller)
    judgments = request_judge_stage.judge_requests(cfg, [QUESTION], CONTRACTS,
                                             _prompt("judge-requests-v1", "judge_requests"), caller)
    return caller.sent, verdicts, judgments


def test_every_judge_call_hands_the_records_its_prompt_holds(sent) -> None:
    calls, verdicts, judgments = sent
    kinds = [type(case).__name__ for _, case in calls]
    assert kinds == ["ExtractStatements", "VerifyStatements", "VerifyAgainstGold", "JudgeRequests"]
    for prompt, case in calls:
        if isinstance(case, JudgeRequests):
            read = judge_prompts.parse_request_judge_prompt(prompt)
            assert read.question == case.question
            assert read.requests == [(r.id, r.text, list(r.quotes), r.gold_answer) for r in case.requests]
            assert (read.answer_text, read.citations) == (case.answer_text, list(case.citations))
            assert read.passages == [(p.text, list(p.cites)) for p in case.passages]
            continue
        read = judge_prompts.parse_judge_prompt(prompt)
        assert (read.task, read.question) == (case.task, case.question)
        if isinstance(case, ExtractStatements):
            assert read.answer == case.answer == ANSWER
        elif isinstance(case, VerifyStatements):
            assert (read.statements, read.evidence) == (list(case.statements), list(case.evidence))
            assert list(case.evidence) == [ASSERT, LAMBDA]
        else:
            assert isinstance(case, VerifyAgainstGold)
            assert (read.statements, read.gold) == (list(case.statements), list(case.gold))
            assert list(case.gold) == [ASSERT, LAMBDA, "It inserts debugging assertions."]
    # What the offline judge made of the records is what the stage recorded: every call judged.
    assert verdicts["status"].to_list() == ["judged"] and verdicts["faithfulness"].to_list() == [1.0]
    assert judgments["status"].to_list() == ["judged", "judged"]
    assert judgments["addressed"].to_list() == [True, True]
