from __future__ import annotations

import pytest

from rag_ttc_assets.core import prompt_markup as pm
from rag_ttc_assets.core.prompts import evidence_block, numbered_block, requests_block, statements_block

ANSWER_PROMPT = f"""Answer the <question> using only the <chunk> blocks below.

<question>
  What does X do,
  and how do I Z?
</question>

<requests>
{requests_block([("q7.r1", "What does X do?"), ("q7.r2", "How do I Z?")])}
</requests>

Evidence:
{evidence_block([("doc#chunk-0", "X does a thing."), ("doc#chunk-1", "Z is configured in a file.")])}
"""


def test_answer_prompt_parts() -> None:
    parsed = pm.parse_answer_prompt(ANSWER_PROMPT)
    assert parsed.question == "What does X do, and how do I Z?"
    assert parsed.requests == [("q7.r1", "What does X do?"), ("q7.r2", "How do I Z?")]
    assert parsed.chunks == [("doc#chunk-0", "X does a thing."), ("doc#chunk-1", "Z is configured in a file.")]


def test_requests_are_optional_and_attribute_quoting_is_flexible() -> None:
    text = "<question>Q?</question><chunk id='a#chunk-0' >one</chunk>\n<CHUNK  id = b#chunk-1>two</CHUNK>"
    parsed = pm.parse_answer_prompt(text)
    assert parsed.requests is None
    assert parsed.chunks == [("a#chunk-0", "one"), ("b#chunk-1", "two")]


def test_zero_chunks_is_an_empty_list_for_the_prompt_but_an_error_when_required() -> None:
    assert pm.parse_answer_prompt("<question>Q?</question>\nEvidence:\n").chunks == []
    with pytest.raises(ValueError, match='<chunk id="...">'):
        pm.parse_chunks("<question>Q?</question>")


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        ('<chunk id="a">x</chunk>', "<question>"),
        ("<question>   </question>", "<question>"),
        ("<question>Q?</question><requests>\nno markers\n</requests>", "<requests>"),
        ("<question>Q?", "<question>"),
    ],
)
def test_answer_prompt_missing_tag_is_named(text: str, tag: str) -> None:
    with pytest.raises(ValueError, match=tag):
        pm.parse_answer_prompt(text)


def test_verify_prompt_parts_ordered_by_number() -> None:
    text = f"""<task> verify_statements </task>
<question>Q?</question>
<statements>
{statements_block(["First claim.", "Second claim"])}
  continues here.
</statements>
<evidence n="2">B</evidence>
<evidence n='1'>
A
</evidence>"""
    parsed = pm.parse_judge_prompt(text)
    assert parsed.task == "verify_statements"
    assert parsed.question == "Q?"
    assert parsed.statements == ["First claim.", "Second claim continues here."]
    assert parsed.evidence == ["A", "B"]


def test_extract_and_gold_prompts() -> None:
    extract = pm.parse_judge_prompt("<task>extract_statements</task><answer>\n1. A.\n</answer>")
    assert (extract.task, extract.question, extract.answer) == ("extract_statements", None, "1. A.")
    gold = pm.parse_judge_prompt(
        f"<task>verify_against_gold</task><statements>\n</statements>\n{numbered_block('gold', ['G1', 'G2'])}"
    )
    assert (gold.statements, gold.gold, gold.question) == ([], ["G1", "G2"], None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("<question>Q?</question>", "<task>"),
        ("<task>summarise</task>", "expected one of extract_statements"),
        ("<task>extract_statements</task><question>Q?</question>", "<answer>"),
        ("<task>verify_statements</task><question>Q?</question>", "<statements>"),
        ("<task>verify_statements</task><statements>\nnot numbered\n</statements>", r"not '\[n\] text'"),
        ("<task>verify_against_gold</task><gold n=\"1\">G</gold>", "<statements>"),
    ],
)
def test_judge_prompt_errors_name_what_is_missing(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pm.parse_judge_prompt(text)
