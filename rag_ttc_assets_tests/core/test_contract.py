from __future__ import annotations

import json

import pytest

from rag_ttc_assets.core.contract import (
    AnswerObject,
    ContractSummary,
    RequestItem,
    check_contract,
    contract_sums_close,
    locate_json_object,
    summarize_contract,
)

ADMITTED = ["c1", "c2", "c3"]


def _answer(**overrides: object) -> str:
    body: dict[str, object] = {"answer": "Use functools.cache.", "citation_chunk_ids": ["c1"], "abstained": False}
    body.update(overrides)
    return json.dumps(body)


def _request(**overrides: object) -> dict[str, object]:
    item: dict[str, object] = {"request": "what", "answer": "this", "citation_chunk_ids": ["c2"], "supported": True}
    item.update(overrides)
    return item


def test_valid_answer() -> None:
    result = check_contract(_answer(requests=[_request()]), ADMITTED)
    assert (result.status, result.reason) == ("valid", "")
    assert result.answer == AnswerObject(
        answer="Use functools.cache.",
        citation_chunk_ids=["c1"],
        abstained=False,
        requests=[RequestItem(request="what", answer="this", citation_chunk_ids=["c2"], supported=True)],
    )


def test_fenced_json_and_surrounding_whitespace_accepted() -> None:
    assert check_contract(f"\n  ```json\n{_answer()}\n```  \n", ADMITTED).status == "valid"
    assert check_contract(f"```JSON {_answer()}```", ADMITTED).status == "valid"
    assert check_contract(f"```\n{_answer()}\n```", ADMITTED).status == "valid"


def test_a_clean_reply_is_parsed_from_json() -> None:
    assert check_contract(_answer(), ADMITTED).parsed_from == "json"
    assert check_contract(f"  {_answer()}\n", ADMITTED).parsed_from == "json"


@pytest.mark.parametrize(
    ("raw", "parsed_from"),
    [
        (f"```json\n{_answer()}\n```", "fenced"),
        (f"Here is the answer:\n```json\n{_answer()}\n```\nI hope this helps.", "fenced"),
        (f"```python\nprint(1)\n```\nand the answer:\n```\n{_answer()}\n```", "fenced"),
        (f"Here you go: {_answer()}", "prose"),
        (f"{_answer()}\n\nNote: chunk c1 says so.", "prose"),
        (f"The answer {{is}} below.\n{_answer()}", "prose"),
    ],
)
def test_an_object_in_a_fence_or_after_prose_is_parsed_and_says_where(raw: str, parsed_from: str) -> None:
    result = check_contract(raw, ADMITTED)
    assert (result.status, result.parsed_from) == ("valid", parsed_from)
    assert result.answer is not None and result.answer.answer == "Use functools.cache."


def test_the_first_object_is_taken_as_written_never_merged_or_repaired() -> None:
    obj, error, where = locate_json_object('Draft: {"answer": "a"} Final: {"answer": "b"}')
    assert (obj, error, where) == ({"answer": "a"}, "", "prose")
    # Found in prose, then checked as it is: the missing fields are the model's contract failure.
    result = check_contract('Answer: {"answer": "a"}', ADMITTED)
    assert (result.status, result.reason, result.parsed_from) == (
        "contract_failure", "schema: citation_chunk_ids: missing", "prose")


def test_a_fenced_or_prose_object_still_meets_the_rules() -> None:
    stray = check_contract(f"```json\n{_answer(citation_chunk_ids=['c9'])}\n```", ADMITTED)
    assert (stray.status, stray.reason, stray.parsed_from) == (
        "contract_failure", "citation of a chunk that was not admitted: c9", "fenced")
    assert check_contract("Sure! Here is the answer.", ADMITTED).parsed_from is None


def test_extra_fields_ignored() -> None:
    result = check_contract(_answer(confidence=0.9), ADMITTED)
    assert result.status == "valid"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("Sure! Here is the answer.", "not JSON: Expecting value: line 1 column 1 (char 0)"),
        ("Here you go: {not json} and {'single': 'quotes'}", "not JSON: Expecting value: line 1 column 1 (char 0)"),
        ('{"answer": "x",', "not JSON: Expecting property name enclosed in double quotes: line 1 column 16 (char 15)"),
        ("", "not JSON: empty text"),
        ("   \n", "not JSON: empty text"),
        (None, "not JSON: empty text"),
        ("```json\n```", "not JSON: empty text"),
        ("[1, 2]", "not an object: array"),
        ('"text"', "not an object: string"),
        ("null", "not an object: null"),
        ("true", "not an object: boolean"),
    ],
)
def test_parse_failures(raw: str | None, reason: str) -> None:
    result = check_contract(raw, ADMITTED)
    assert (result.status, result.reason, result.answer) == ("parse_failure", reason, None)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ('{"answer": "x", "abstained": false}', "schema: citation_chunk_ids: missing"),
        (_answer(abstained="false"), "schema: abstained: wrong type, expected boolean"),
        (_answer(answer=None), "schema: answer: wrong type, expected string"),
        (_answer(citation_chunk_ids="c1"), "schema: citation_chunk_ids: wrong type, expected array"),
        (_answer(citation_chunk_ids=[1]), "schema: citation_chunk_ids.0: wrong type, expected string"),
        (_answer(requests=[_request(supported=1)]), "schema: requests.0.supported: wrong type, expected boolean"),
        (_answer(requests=["a"]), "schema: requests.0: wrong type, expected object"),
        (_answer(requests=[{"request": "r"}]), "schema: requests.0.answer: missing"),
    ],
)
def test_schema_violations_are_contract_failures(raw: str, reason: str) -> None:
    result = check_contract(raw, ADMITTED)
    assert (result.status, result.reason, result.answer) == ("contract_failure", reason, None)


def test_abstained_without_claims() -> None:
    raw = _answer(answer="The evidence does not say.", citation_chunk_ids=[], abstained=True)
    result = check_contract(raw, ADMITTED)
    assert (result.status, result.reason) == ("abstained", "abstained")
    assert result.answer is not None and result.answer.abstained
    assert check_contract(_answer(answer="", citation_chunk_ids=[], abstained=True), ADMITTED).status == "abstained"


@pytest.mark.parametrize(
    "overrides",
    [
        {"citation_chunk_ids": ["c1"]},
        {"citation_chunk_ids": [], "requests": [_request(supported=False)]},
        {"citation_chunk_ids": [], "requests": [_request(citation_chunk_ids=[], supported=True)]},
    ],
)
def test_abstained_yet_claiming(overrides: dict[str, object]) -> None:
    result = check_contract(_answer(abstained=True, **overrides), ADMITTED)
    assert (result.status, result.reason) == ("contract_failure", "abstained yet claiming")
    assert result.answer is not None


def test_empty_answer() -> None:
    result = check_contract(_answer(answer="  \n"), ADMITTED)
    assert (result.status, result.reason) == ("contract_failure", "empty answer")


def test_missing_citations() -> None:
    # Request-level citations do not stand in for the answer's own.
    result = check_contract(_answer(citation_chunk_ids=[], requests=[_request()]), ADMITTED)
    assert (result.status, result.reason) == ("contract_failure", "missing citations")


def test_citation_not_admitted_top_level_and_in_requests() -> None:
    result = check_contract(_answer(citation_chunk_ids=["c1", "c9", "c8"]), ADMITTED)
    assert (result.status, result.reason) == ("contract_failure", "citation of a chunk that was not admitted: c9")
    result = check_contract(_answer(requests=[_request(), _request(citation_chunk_ids=["c7"])]), ADMITTED)
    assert result.reason == "citation of a chunk that was not admitted: c7"
    assert check_contract(_answer(), []).reason == "citation of a chunk that was not admitted: c1"


def test_supported_request_without_citation() -> None:
    raw = _answer(requests=[_request(), _request(citation_chunk_ids=[], supported=True)])
    result = check_contract(raw, ADMITTED)
    assert (result.status, result.reason) == ("contract_failure", "supported request without citation: requests[1]")
    unsupported = _answer(requests=[_request(citation_chunk_ids=[], supported=False)])
    assert check_contract(unsupported, ADMITTED).status == "valid"


def test_rule_order_first_failure_wins() -> None:
    # Blank answer and an unadmitted citation: rule 3 (empty answer) comes before rule 5.
    assert check_contract(_answer(answer="", citation_chunk_ids=["zz"]), ADMITTED).reason == "empty answer"
    # Unadmitted citation and an uncited supported request: rule 5 before rule 6.
    raw = _answer(citation_chunk_ids=["zz"], requests=[_request(citation_chunk_ids=[])])
    assert check_contract(raw, ADMITTED).reason == "citation of a chunk that was not admitted: zz"


@pytest.mark.parametrize(
    "status",
    ["timeout", "rate_limited", "server_error", "connection_error", "empty_response", "truncated", "budget_exhausted"],
)
def test_provider_status_passes_through_without_reading_text(status: str) -> None:
    result = check_contract(_answer(), ADMITTED, provider_status=status)
    assert (result.status, result.reason, result.answer) == (status, status, None)


@pytest.mark.parametrize("status", ["", "valid", "abstained", "parse_failure", "contract_failure"])
def test_provider_status_must_not_impersonate_a_contract_status(status: str) -> None:
    with pytest.raises(ValueError, match="is not a provider status"):
        check_contract(_answer(), ADMITTED, provider_status=status)


def test_summary_counts_every_bucket() -> None:
    rows = [
        ("valid", ""),
        ("valid", ""),
        ("parse_failure", "not JSON: Expecting value: line 1 column 1 (char 0)"),
        ("contract_failure", "citation of a chunk that was not admitted: c9"),
        ("contract_failure", "citation of a chunk that was not admitted: c7"),
        ("contract_failure", "schema: abstained: wrong type, expected boolean"),
        ("contract_failure", "missing citations"),
        ("abstained", "abstained"),
        ("timeout", "timeout"),
        ("timeout", "timeout"),
        ("rate_limited", "rate_limited"),
    ]
    summary = summarize_contract(rows)
    assert summary == ContractSummary(
        total=11,
        valid=2,
        parse_failures=1,
        contract_failures=4,
        contract_failure_reasons={"citation of a chunk that was not admitted": 2, "missing citations": 1, "schema": 1},
        abstentions=1,
        provider_faults={"rate_limited": 1, "timeout": 2},
    )
    assert contract_sums_close(summary)


def test_summary_of_check_contract_rows_closes() -> None:
    results = [
        check_contract(_answer(), ADMITTED),
        check_contract("nope", ADMITTED),
        check_contract(_answer(citation_chunk_ids=[]), ADMITTED),
        check_contract(_answer(citation_chunk_ids=[], abstained=True), ADMITTED),
        check_contract(None, ADMITTED, provider_status="truncated"),
    ]
    summary = summarize_contract([(r.status, r.reason) for r in results])
    assert (summary.total, summary.valid, summary.parse_failures, summary.contract_failures) == (5, 1, 1, 1)
    assert (summary.abstentions, summary.provider_faults) == (1, {"truncated": 1})
    assert contract_sums_close(summary)


def test_sums_close_detects_a_lost_row() -> None:
    summary = ContractSummary(
        total=3,
        valid=1,
        parse_failures=0,
        contract_failures=1,
        contract_failure_reasons={"empty answer": 1},
        abstentions=0,
        provider_faults={},
    )
    assert not contract_sums_close(summary)
    assert contract_sums_close(summarize_contract([]))


def test_summary_rejects_ok_as_a_row_status() -> None:
    with pytest.raises(ValueError, match=r"statuses\[1\]: 'ok' is not a row status"):
        summarize_contract([("valid", ""), ("ok", "")])
