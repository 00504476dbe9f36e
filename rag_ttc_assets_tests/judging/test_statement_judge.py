"""Reading the request judge's reply: exactly one judgment per labelled request, or a JudgeParseError."""

from __future__ import annotations

import json

import pytest

from rag_ttc_assets.judging.statement_judge import REQUEST_VERDICTS, JudgeParseError, RequestJudgment, parse_request_judgments

IDS = ["q1.r1", "q1.r2"]


def j(request: str, addressed: bool = True, verdict: str | None = None, **extra) -> dict:
    return {"request": request, "addressed": addressed, "excerpt": "Pass is a null operation." if addressed else "",
            "cited_chunk_ids": ["c1"] if addressed else [],
            "verdict": verdict or ("consistent" if addressed else "not_addressed"), "reason": "why", **extra}


def reply(*items: dict) -> str:
    return json.dumps({"requests": list(items)})


def test_verdicts() -> None:
    assert REQUEST_VERDICTS == ("consistent", "contradicts", "not_addressed", "not_verifiable")


def test_judgments_come_back_in_request_order() -> None:
    out = parse_request_judgments(reply(j("q1.r2", False), j("q1.r1", verdict="contradicts")), IDS)
    assert out == [
        RequestJudgment(request="q1.r1", addressed=True, excerpt="Pass is a null operation.", cited_chunk_ids=["c1"],
                        verdict="contradicts", reason="why"),
        RequestJudgment(request="q1.r2", addressed=False, excerpt="", cited_chunk_ids=[], verdict="not_addressed",
                        reason="why"),
    ]


def test_optional_fields_default_and_extra_fields_are_ignored() -> None:
    raw = "```json\n" + reply({"request": "q1.r1", "addressed": True, "verdict": "not_verifiable", "score": 3},
                              {"request": "q1.r2", "addressed": False, "verdict": "not_addressed"}) + "\n```"
    out = parse_request_judgments(raw, IDS)
    assert out[0] == RequestJudgment(request="q1.r1", addressed=True, excerpt="", cited_chunk_ids=[],
                                     verdict="not_verifiable", reason="")
    assert [o.verdict for o in out] == ["not_verifiable", "not_addressed"]


@pytest.mark.parametrize(("raw", "message"), [
    (None, r"^requests: not JSON: empty text$"),
    ("", r"^requests: not JSON: empty text$"),
    ("The answer addresses both.", r"^requests: not JSON: Expecting value"),
    ("[1, 2]", r"^requests: not an object: array$"),
    (json.dumps({"judgments": []}), r"^requests: field 'requests' must be a list of objects$"),
    (json.dumps({"requests": {"q1.r1": True}}), r"^requests: field 'requests' must be a list of objects$"),
    (json.dumps({"requests": [1]}), r"^requests: item 1: Input should be a valid dictionary"),
    (reply({"request": "q1.r1", "verdict": "consistent"}, j("q1.r2")), r"^requests: item 1, field 'addressed': Field required$"),
    (reply({"request": "q1.r1", "addressed": True}, j("q1.r2")), r"^requests: item 1, field 'verdict': Field required$"),
    (reply(j("q1.r1", cited_chunk_ids="c1"), j("q1.r2")),
     r"^requests: item 1, field 'cited_chunk_ids': Input should be a valid list$"),
    (reply(j("q1.r1"), j("q1.r2", coverage=1.5)),
     r"^requests: item 2, field 'coverage': Input should be less than or equal to 1$"),
    (reply(j("q1.r1"), j("q1.r2"), j("q1.r3")),
     r"^requests: names request\(s\) \['q1.r3'\] that this question does not have$"),
    (reply(j("q1.r1"), j("q1.r1", False), j("q1.r2")), r"^requests: judges request\(s\) \['q1.r1'\] more than once$"),
    (reply(j("q1.r2")), r"^requests: omits request\(s\) \['q1.r1'\]$"),
    (reply(), r"^requests: omits request\(s\) \['q1.r1', 'q1.r2'\]$"),
    (reply(j("q1.r1", verdict="supported"), j("q1.r2")),
     r"^requests: q1.r1: verdict 'supported' is not one of \['consistent', 'contradicts', 'not_addressed', "
     r"'not_verifiable'\]$"),
    (reply(j("q1.r1", addressed=True, verdict="not_addressed"), j("q1.r2")),
     r"^requests: q1.r1: addressed is True but the verdict is 'not_addressed'$"),
    (reply(j("q1.r1"), j("q1.r2", addressed=False, verdict="consistent")),
     r"^requests: q1.r2: addressed is False but the verdict is 'consistent'$"),
    (reply(j("q1.r1"), j("q1.r2", addressed=False, verdict="contradicts")),
     r"^requests: q1.r2: addressed is False but the verdict is 'contradicts'$"),
], ids=["none", "empty", "prose", "array", "no-field", "field-not-list", "item-not-object", "no-addressed",
        "no-verdict", "citations-not-list", "coverage-above-one", "unknown", "twice", "omits-one", "omits-all", "bad-verdict",
        "addressed-not-addressed", "unaddressed-consistent", "unaddressed-contradicts"])
def test_a_reply_that_does_not_judge_every_request_exactly_once_is_a_parse_error(raw: str | None,
                                                                                 message: str) -> None:
    with pytest.raises(JudgeParseError, match=message):
        parse_request_judgments(raw, IDS)


def test_an_unknown_request_is_named_before_a_missing_one() -> None:
    # The judge renamed q1.r2: both faults, the unknown name is reported.
    with pytest.raises(JudgeParseError, match=r"names request\(s\) \['r2'\]"):
        parse_request_judgments(reply(j("q1.r1"), j("r2")), IDS)


def test_a_parse_error_is_a_value_error() -> None:
    assert issubclass(JudgeParseError, ValueError)


def test_judge_replies_in_a_fence_or_after_prose_are_parsed_and_missing_fields_are_named() -> None:
    from rag_ttc_assets.judging.statement_judge import parse_statements, parse_verdicts

    body = '{"statements": ["A lambda creates a function."]}'
    for raw in (f"```json\n{body}\n```", f"Here are the statements:\n{body}", f"{body}\nDone."):
        assert parse_statements(raw) == ["A lambda creates a function."]
    verdicts = '{"verdicts": [{"statement": 1, "supported": true}], "answer_relevance": 0.5}'
    parsed, relevance = parse_verdicts(f"Sure!\n```\n{verdicts}\n```", 1)
    assert (parsed[0].supported, relevance) == (True, 0.5)
    with pytest.raises(JudgeParseError, match="field 'verdicts' must be a list"):
        parse_verdicts('{"answer_relevance": 0.5}', 1)
    with pytest.raises(JudgeParseError, match="field 'statements' must be a list"):
        parse_statements('Statements: {"statement": ["x"]}')
