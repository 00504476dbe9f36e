from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from rag_ttc_assets.core.prompts import (
    GENERATION_KINDS,
    KINDS,
    LABEL_PLACEHOLDER,
    Prompt,
    PromptError,
    cited_answer_block,
    evidence_block,
    gold_requests_block,
    label_values,
    numbered_block,
    parse_prompt,
    requests_block,
    statements_block,
)

PROMPTS = Path(__file__).resolve().parents[2] / "prompts"

KIND_BY_PREFIX = {"grounded-answer-": "answer", "judge-statements-": "judge_statements",
                  "judge-verdicts-": "judge_verdicts", "judge-gold-": "judge_gold", "tool-answer-": "tool_answer",
                  "restated-evidence-": "answer", "judge-requests-": "judge_requests",
                  "representation-": "representation", "derive-requests-": "derive_requests",
                  "judge-entailment-": "judge_entailment"}


def kind_of(name: str) -> str:
    kinds = [k for prefix, k in KIND_BY_PREFIX.items() if name.startswith(prefix)]
    assert len(kinds) == 1, f"prompt {name!r} has no known kind"
    return kinds[0]


def test_unknown_placeholder_names_file_and_placeholder() -> None:
    with pytest.raises(PromptError) as err:
        parse_prompt("p", "Q: {{question}}\n{{evidence}}\n{{context}}", "answer", "prompts/p.txt")
    assert str(err.value) == ("prompts/p.txt: unknown placeholder(s) ['context'] in answer prompt 'p'; "
                              "allowed: ['evidence', 'question', 'requests', 'title_index']")


def test_unknown_placeholder_without_source_names_the_prompt() -> None:
    with pytest.raises(PromptError) as err:
        parse_prompt("j", "{{ answer }} {{gold}}", "judge_statements")
    assert str(err.value) == ("j: unknown placeholder(s) ['gold'] in judge_statements prompt 'j'; "
                              "allowed: ['answer', 'question']")


def test_missing_required_placeholder() -> None:
    with pytest.raises(PromptError) as err:
        parse_prompt("p", "Q: {{question}}", "answer", "prompts/p.txt")
    assert str(err.value) == "prompts/p.txt: answer prompt 'p' lacks required placeholder(s) ['evidence']"
    with pytest.raises(PromptError) as err:
        parse_prompt("g", "{{question}}", "judge_gold", "prompts/g.txt")
    assert str(err.value) == "prompts/g.txt: judge_gold prompt 'g' lacks required placeholder(s) ['gold', 'statements']"


def test_optional_placeholders_may_be_left_out() -> None:
    assert parse_prompt("s", "{{answer}}", "judge_statements").placeholders == {"answer"}


def test_render_replaces_every_placeholder() -> None:
    p = parse_prompt("p", "[{{question}}] {{ evidence }} / {{question}}{{requests}}", "answer")
    assert p.placeholders == {"question", "evidence", "requests"}
    assert p.render(question="Q?", evidence="E", requests="R") == "[Q?] E / Q?R"


def test_render_does_not_rescan_or_escape_values() -> None:
    p = parse_prompt("p", "{{question}}|{{evidence}}", "answer")
    assert p.render(question="{{evidence}}", evidence=r"\1 \g<0>") == r"{{evidence}}|\1 \g<0>"


def test_render_requires_every_value() -> None:
    p = parse_prompt("p", "{{question}} {{evidence}} {{requests}}", "answer")
    with pytest.raises(PromptError) as err:
        p.render(question="Q")
    assert str(err.value) == "prompt 'p': no value for placeholder(s) ['evidence', 'requests']"


def test_json_braces_in_the_template_are_untouched() -> None:
    text = ('Reply: {"answer": "<a>", "requests": [{"id": "x", "ok": {}}]}\n'
            '{{question}}\n{ {evidence} }\n{{evidence}}\n{"nested": {"k": {"v": 1}}}')
    p = parse_prompt("p", text, "answer")
    assert p.render(question="Q", evidence="E") == (
        'Reply: {"answer": "<a>", "requests": [{"id": "x", "ok": {}}]}\nQ\n{ {evidence} }\nE\n'
        '{"nested": {"k": {"v": 1}}}')


def test_digest_is_over_the_text_only() -> None:
    assert Prompt("a", "abc", "answer").digest == (
        "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    assert Prompt("b", "abc", "judge_gold").digest == Prompt("a", "abc", "answer").digest
    assert Prompt("a", "abc ", "answer").digest != Prompt("a", "abc", "answer").digest
    text = "\u00e9 {{question}} {{evidence}}"
    assert parse_prompt("p", text, "answer").digest == "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_blocks() -> None:
    assert evidence_block([("d#chunk-0", "one"), ("e#chunk-2", "two")]) == (
        '<chunk id="d#chunk-0">\none\n</chunk>\n\n<chunk id="e#chunk-2">\ntwo\n</chunk>')
    assert requests_block([("q1.r1", "first?"), ("q1.r2", "second?")]) == "- [q1.r1] first?\n- [q1.r2] second?"
    assert statements_block(["A.", "B."]) == "[1] A.\n[2] B."
    assert numbered_block("gold", ["x", "y"]) == '<gold n="1">\nx\n</gold>\n\n<gold n="2">\ny\n</gold>'
    assert evidence_block([]) == requests_block([]) == statements_block([]) == numbered_block("g", []) == ""


def test_repository_prompts_parse_with_their_kinds() -> None:
    files = sorted(PROMPTS.glob("*.txt"))
    found = {}
    for f in files:
        p = parse_prompt(f.stem, f.read_text(encoding="utf-8"), kind_of(f.stem), str(f))
        found[f.stem] = (p.kind, p.placeholders)
    expected = {
        "grounded-answer-v1": ("answer", {"question", "evidence"}),
        "grounded-answer-multipart-v1": ("answer", {"question", "requests", "evidence"}),
        "judge-statements-v1": ("judge_statements", {"question", "answer"}),
        "judge-verdicts-v1": ("judge_verdicts", {"question", "statements", "evidence"}),
        "judge-gold-v1": ("judge_gold", {"question", "statements", "gold"}),
        "tool-answer-v1": ("tool_answer", {"question", "requests"}),
        "tool-answer-indexed-v1": ("tool_answer", {"question", "requests", "title_index"}),
        # v2: the product's prompts, with no annotated requests in them (the model identifies the requests).
        "tool-answer-v2": ("tool_answer", {"question"}),
        "tool-answer-indexed-v2": ("tool_answer", {"question", "title_index"}),
        "restated-evidence-v1": ("answer", {"question", "requests", "evidence"}),
        # The label-free v2 generation prompts: the model splits the question itself.
        "grounded-answer-multipart-v2": ("answer", {"question", "evidence"}),
        "restated-evidence-v2": ("answer", {"question", "evidence"}),
        "judge-requests-v1": ("judge_requests", {"question", "gold_requests", "answer"}),
        # A representation builder's: the chunk and its document, nothing of the evaluation.
        "representation-context-v1": ("representation", {"title", "document", "chunk_id", "chunk", "position"}),
    }
    assert {k: found[k] for k in expected} == expected


def test_label_values_render_the_requests_only_for_an_oracle_arm() -> None:
    labels = [("q1.r1", "first?"), ("q1.r2", "second?")]
    assert label_values("oracle", labels) == {"requests": "- [q1.r1] first?\n- [q1.r2] second?"}
    assert LABEL_PLACEHOLDER == "requests"
    assert label_values("none", labels) == {}
    assert label_values("Oracle", labels) == {}  # the declaration is exact


def test_a_label_template_in_a_non_oracle_arm_fails_to_render() -> None:
    p = parse_prompt("multipart", "{{question}}\n<requests>\n{{requests}}\n</requests>\n{{evidence}}", "answer")
    labels = [("q1.r1", "first?")]
    assert p.render(question="Q", evidence="E", **label_values("oracle", labels)) == (
        "Q\n<requests>\n- [q1.r1] first?\n</requests>\nE")
    with pytest.raises(PromptError) as err:
        p.render(question="Q", evidence="E", **label_values("none", labels))
    assert str(err.value) == "prompt 'multipart': no value for placeholder(s) ['requests']"
    # A label-free template renders the same either way.
    free = parse_prompt("free", "{{question}} {{evidence}}", "answer")
    assert free.render(question="Q", evidence="E", **label_values("none", labels)) == "Q E"


def test_generation_kinds_are_the_prompts_the_generator_reads() -> None:
    assert GENERATION_KINDS == {"answer", "tool_answer"}
    assert GENERATION_KINDS < set(KINDS)
    assert all(LABEL_PLACEHOLDER not in KINDS[k][0] for k in set(KINDS) - GENERATION_KINDS)


def test_judge_requests_kind() -> None:
    assert parse_prompt("r", "{{gold_requests}} {{answer}}", "judge_requests").placeholders == {"gold_requests",
                                                                                              "answer"}
    with pytest.raises(PromptError) as err:
        parse_prompt("r", "{{question}} {{answer}}", "judge_requests", "prompts/r.txt")
    assert str(err.value) == "prompts/r.txt: judge_requests prompt 'r' lacks required placeholder(s) ['gold_requests']"
    with pytest.raises(PromptError) as err:
        parse_prompt("r", "{{gold_requests}} {{answer}} {{requests}}", "judge_requests")
    assert str(err.value) == ("r: unknown placeholder(s) ['requests'] in judge_requests prompt 'r'; "
                              "allowed: ['answer', 'gold_requests', 'question']")


def test_gold_requests_block() -> None:
    block = gold_requests_block([("q1.r1", "first?", ["quote one", "quote two"], None),
                                 ("q1.r2", "second?", [], "the gold answer")])
    assert block == ('<request id="q1.r1">\n<text>first?</text>\n<gold n="1">\nquote one\n</gold>\n'
                     '<gold n="2">\nquote two\n</gold>\n</request>\n\n'
                     '<request id="q1.r2">\n<text>second?</text>\n<gold_answer>the gold answer</gold_answer>\n'
                     '</request>')
    assert gold_requests_block([]) == ""


def test_cited_answer_block() -> None:
    assert cited_answer_block("The answer.", ["c1", "c2"], [("Part one.", ["c1"]), ("Part two.", [])]) == (
        "<answer_text>\nThe answer.\n</answer_text>\n<answer_citations>c1 c2</answer_citations>\n"
        '<passage n="1" cites="c1">\nPart one.\n</passage>\n<passage n="2" cites="">\nPart two.\n</passage>')
    assert cited_answer_block("A.", [], []) == "<answer_text>\nA.\n</answer_text>\n<answer_citations></answer_citations>"
