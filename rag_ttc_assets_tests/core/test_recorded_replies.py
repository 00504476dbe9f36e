"""The contract and the judges' parsers on replies recorded from a real model, SmolLM2-135M-Instruct behind
llama.cpp's server (rag_ttc_assets_tests/data/replies/, whose README says how they were recorded)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_ttc_assets.judging import statement_judge
from rag_ttc_assets.core.contract import CONTRACT_STATUSES, check_contract, locate_json_object

DATA = Path(__file__).resolve().parents[1] / "data" / "replies" / "smollm2-135m-instruct.jsonl"
RECORDS = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
ANSWERS = [r for r in RECORDS if r["reply"] == "answer"]
PROVIDER_STATUSES = {"truncated", "timeout", "server_error", "connection_error", "empty_response"}


def record(arm: str, reply: str, query_id: str) -> dict:
    return next(r for r in RECORDS if (r["arm"], r["reply"], r["query_id"]) == (arm, reply, query_id))


def contract_of(r: dict, provider_status: str | None = None):
    return check_contract(r["raw_text"], r["admitted_chunk_ids"], provider_status or r["provider_status"])


def test_the_recording_has_every_pilot_answer_of_the_constrained_arm_and_eight_free_ones() -> None:
    # The free arm's run was stopped after 8 of its 12 answers (data/replies/README.md).
    assert [len({r["query_id"] for r in ANSWERS if r["arm"] == arm}) for arm in ("local-llm", "local-llm-free")] == [
        12, 8]


@pytest.mark.parametrize("r", ANSWERS, ids=lambda r: f"{r['arm']}:{r['query_id']}")
def test_every_recorded_answer_gets_exactly_one_status(r: dict) -> None:
    result = contract_of(r)
    assert result.status in CONTRACT_STATUSES | PROVIDER_STATUSES
    if r["provider_status"] == "ok":
        assert result.status in CONTRACT_STATUSES
        # Checked as if it had finished, a reply cut at max_tokens is still one status, never a crash.
    assert contract_of(r, "ok").status in CONTRACT_STATUSES
    if r["provider_status"] == "ok" and r["response_format"] == "json_schema":
        assert result.parsed_from == "json"  # the grammar allowed one object and nothing around it


def test_abstaining_while_citing_is_a_contract_failure_and_is_not_repaired() -> None:
    r = record("local-llm", "answer", "pyref-b-022")
    result = contract_of(r)
    assert (result.status, result.reason, result.parsed_from) == ("contract_failure", "abstained yet claiming", "json")
    # The object is kept as written: abstained, and citing two chunks that were admitted.
    assert result.answer.abstained is True
    assert list(result.answer.citation_chunk_ids) == ["raise#chunk-0", "raise#chunk-1"]


def test_an_invented_chunk_id_is_a_contract_failure_that_names_it() -> None:
    result = contract_of(record("local-llm", "answer", "pyref-a-111"))
    assert (result.status, result.reason) == ("contract_failure", "citation of a chunk that was not admitted: 1")


def test_a_chunk_id_close_to_an_admitted_one_is_not_matched_to_it() -> None:
    # "compound-function-definitions#chunk-2" for the admitted "compound--function-definitions#chunk-2": abstained
    # yet claiming comes first, so the same object with abstained false shows the citation rule's verdict.
    r = record("local-llm", "answer", "pyref-a-045")
    obj = json.loads(r["raw_text"])
    result = check_contract(json.dumps({**obj, "abstained": False}), r["admitted_chunk_ids"])
    assert (result.status, result.reason) == (
        "contract_failure", "citation of a chunk that was not admitted: compound-function-definitions#chunk-2")


def test_a_reply_cut_at_max_tokens_is_truncated_and_its_half_object_is_no_object() -> None:
    r = record("local-llm", "answer", "pyref-b-040")
    assert contract_of(r).status == "truncated"
    obj, error, where = locate_json_object(r["raw_text"])
    assert (obj, where) == (None, None) and error.startswith("not JSON: Unterminated string")


@pytest.mark.parametrize("wrap", [
    "```json\n{}\n```", "Here is the answer:\n```json\n{}\n```\nI hope this helps.", "Sure! {}", "{}\n\nNote: done."])
def test_a_real_reply_wrapped_as_models_wrap_it_keeps_its_verdict_and_says_where(wrap: str) -> None:
    r = record("local-llm", "answer", "pyref-a-111")
    plain = contract_of(r)
    wrapped = check_contract(wrap.replace("{}", r["raw_text"]), r["admitted_chunk_ids"])
    assert (wrapped.status, wrapped.reason) == (plain.status, plain.reason)
    assert wrapped.parsed_from == ("fenced" if "```" in wrap else "prose")


def test_free_decoding_writes_prose_that_runs_to_the_token_limit() -> None:
    free = [r for r in ANSWERS if r["arm"] == "local-llm-free"]
    for r in free:
        if r["provider_status"] == "truncated":
            assert contract_of(r).status == "truncated"
    prose = [r for r in free if locate_json_object(r["raw_text"])[0] is None]
    assert prose, "the free arm's replies were all JSON: rerecorded?"
    for r in prose:
        assert contract_of(r, "ok").status == "parse_failure"


JUDGES = [r for r in RECORDS if r["reply"] != "answer"]


def _parse(r: dict):
    if r["reply"] == "statements":
        return statement_judge.parse_statements(r["raw_text"])
    if r["reply"] == "request_judgments":
        return statement_judge.parse_request_judgments(r["raw_text"], r["request_ids"])
    return statement_judge.parse_verdicts(r["raw_text"], r["n_statements"], gold=r["reply"] == "gold_verdicts")


@pytest.mark.parametrize("r", JUDGES, ids=lambda r: f"{r['arm']}:{r['reply']}:{r['query_id']}")
def test_every_recorded_judge_reply_parses_or_is_a_judge_parse_error(r: dict) -> None:
    try:
        _parse(r)
    except statement_judge.JudgeParseError as error:
        assert str(error).split(":", 1)[0] in ("statements", "verdicts", "requests")
