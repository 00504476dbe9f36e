"""The entailment juror's reply (judging.entailment): read against its JSON schema, mapped onto the lab's verdicts, its
quote checked against the answer; and how an arm names such a juror (core.arms) and tells it apart
(core.compare_guards)."""

import json

import pytest

from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.arms_file import ArmsError, parse_arms_file
from rag_ttc_assets.core.compare_guards import InstrumentDriftError, instrument_drift
from rag_ttc_assets.judging.entailment import EntailmentReply, SpanNotInAnswer, parse_entailment, span_in
from rag_ttc_assets.judging.statement_judge import JudgeParseError
from rag_ttc_assets.core.prompts import parse_prompt
from rag_ttc_assets.core.response_formats import ENTAILMENT, response_format
from rag_ttc_assets_tests.conftest import REPO

ANSWER = "The “with” statement wraps a block\nin a context manager. It calls __exit__ on leaving."


def reply(**kw):
    out = {"addressed": True, "supported": True, "contradicts": False, "quote": "wraps a block in a context manager",
           "coverage": 0.8, "reason": "it says so"}
    return json.dumps({**out, **kw})


@pytest.mark.parametrize("kw, verdict", [
    ({}, "consistent"),
    ({"supported": False, "contradicts": True}, "contradicts"),
    ({"supported": False}, "not_verifiable"),
    ({"addressed": False, "supported": False, "quote": "", "coverage": 0.0}, "not_addressed"),
])
def test_a_reply_maps_onto_the_labs_verdicts(kw, verdict):
    e = parse_entailment(reply(**kw), [ANSWER])
    assert (e.verdict, e.addressed) == (verdict, verdict != "not_addressed")
    assert e.coverage == json.loads(reply(**kw))["coverage"] and e.reason == "entailment: it says so"
    assert e.excerpt == ("" if verdict == "not_addressed" else "wraps a block in a context manager")


@pytest.mark.parametrize("raw, says", [
    ("Sure! It is addressed.", "entailment: not JSON"),
    (reply(coverage=None), "field 'coverage'"),
    (reply(coverage=1.5), "field 'coverage': Input should be less than or equal to 1"),
    (reply(supported="true"), "field 'supported': Input should be a valid boolean"),
    (reply(verdict="consistent"), "field 'verdict': Extra inputs are not permitted"),
    (json.dumps({k: v for k, v in json.loads(reply()).items() if k != "quote"}), "field 'quote': Field required"),
    (reply(contradicts=True), "'supported' and 'contradicts' are both true"),
    (reply(addressed=False, quote=""), "the request is not addressed, yet 'supported' is true"),
])
def test_a_reply_outside_the_schema_is_a_parse_failure(raw, says):
    with pytest.raises(JudgeParseError) as e:
        parse_entailment(raw, [ANSWER])
    assert says in str(e.value)


def test_the_quote_must_occur_in_the_answer():
    # Case, line breaks, curly quotes and an ellipsis between parts in order are not differences.
    assert span_in('THE "with" statement wraps a block in ... calls __exit__', [ANSWER])
    assert not span_in("calls __exit__ ... wraps a block", [ANSWER])  # out of order
    assert span_in("calls __exit__", ["no", ANSWER])  # in any of the answer's passages
    with pytest.raises(SpanNotInAnswer, match="'wraps a list' does not occur in the answer"):
        parse_entailment(reply(quote="wraps a list"), [ANSWER])
    with pytest.raises(SpanNotInAnswer, match="addressed but the reply quotes no span"):
        parse_entailment(reply(quote=" "), [ANSWER])
    assert parse_entailment(reply(addressed=False, supported=False, quote="anything"), [ANSWER]).excerpt == ""


def test_the_schema_sent_is_the_one_the_reply_is_read_against():
    assert set(ENTAILMENT["properties"]) == set(EntailmentReply.model_fields) == set(ENTAILMENT["required"])
    assert ENTAILMENT["additionalProperties"] is False
    sent = response_format("json_schema", "entailment")
    assert sent["json_schema"] == {"name": "entailment", "schema": ENTAILMENT, "strict": True}
    text = (REPO / "prompts" / "judge-entailment-v1.txt").read_text()
    prompt = parse_prompt("judge-entailment-v1", text, "judge_entailment")
    assert prompt.placeholders == {"question", "request", "gold", "answer"}
    assert all(f'"{field}"' in text for field in ENTAILMENT["properties"])  # the prompt asks for every field


def test_an_arm_names_an_entailment_juror_by_its_kind():
    arms = parse_arms_file(b"arms:\n  p:\n    request_judges: [local/lexical, {model: openai/gpt-4o-mini, kind: "
                           b"entailment}]\n", "arms.yaml")
    cfg = arms["p"]
    assert [j.kind for j in cfg.request_judges] == ["requests", "entailment"]
    assert [j.model for j in cfg.entailment_jurors] == ["openai/gpt-4o-mini"]
    # The default kind is not written out: an arm without an entailment juror keeps its configuration as before.
    assert "kind" not in ArmConfig().model_dump()["request_judge"]
    assert cfg.model_dump()["request_judges"][1]["kind"] == "entailment"
    assert ArmConfig(**cfg.model_dump()) == cfg
    for arm, says in (
            (b"{request_judge: {model: openai/x, kind: nli}}", "field 'request_judge.kind': Input should be "
                                                              "'requests' or 'entailment'"),
            (b"{request_judge: {model: local/lexical, kind: entailment}}", "'local/lexical' is an offline baseline")):
        with pytest.raises(ArmsError) as e:
            parse_arms_file(b"arms:\n  bad: " + arm + b"\n", "arms.yaml")
        assert "arms.yaml: arms.bad: field 'request_judge" in str(e.value) and says in str(e.value)


def test_an_entailment_prompt_changed_is_instrument_drift():
    a = {"model": "m", "prompt_digest": "d", "entailment": {"jurors": ["m"], "prompt": "p", "prompt_digest": "x"}}
    b = {**a, "entailment": {**a["entailment"], "prompt_digest": "y"}}
    assert instrument_drift("a", a, "a2", a, allow=False) == []
    with pytest.raises(InstrumentDriftError, match="entailment"):
        instrument_drift("a", a, "b", b, allow=False)
    assert instrument_drift("a", {"model": "m", "prompt_digest": "d"}, "b", a, allow=True) == ["entailment"]
