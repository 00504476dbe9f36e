"""Parsing of the tagged prompt protocol (<question>, <requests>, <chunk>, <task>, <statements>, <evidence>, <gold>).
Getters raise ValueError naming the missing tag, so a provider can say what its prompt lacked."""

from __future__ import annotations

import re
from dataclasses import dataclass

TASK_EXTRACT = "extract_statements"
TASK_VERIFY = "verify_statements"
TASK_GOLD = "verify_against_gold"
TASK_REQUESTS = "judge_requests"
TASKS = (TASK_EXTRACT, TASK_VERIFY, TASK_GOLD, TASK_REQUESTS)


def _block_pattern(tag: str, attrs: str = "") -> re.Pattern[str]:
    # The body may not contain another opening tag: instructions that merely *mention* "<question>"
    # before the real block then never swallow it.
    return re.compile(
        rf"<{tag}{attrs}\s*>((?:(?!<{tag}[\s>]).)*?)</{tag}\s*>",
        re.DOTALL | re.IGNORECASE,
    )


_ATTR_ID = r"\s+id\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s>]+))"
_ATTR_N = r"\s+n\s*=\s*(?:\"\s*(\d+)\s*\"|'\s*(\d+)\s*'|(\d+))"
_STATEMENT_LINE = re.compile(r"^\s*\[\s*(\d+)\s*\]\s*(.*)$")
_REQUEST_LINE = re.compile(r"^\s*[-*]\s*\[\s*([^\]]+?)\s*\]\s*(.*)$")


def find_tag(text: str, tag: str) -> str | None:
    """Stripped body of the first complete <tag>...</tag> block, or None."""
    match = _block_pattern(tag).search(text)
    return match.group(1).strip() if match else None


def require_tag(text: str, tag: str) -> str:
    body = find_tag(text, tag)
    if body is None:
        raise ValueError(f"prompt has no <{tag}>...</{tag}> block")
    return body


def parse_question(text: str) -> str:
    question = " ".join(require_tag(text, "question").split())
    if not question:
        raise ValueError("prompt has an empty <question> block")
    return question


def parse_task(text: str) -> str:
    task = require_tag(text, "task").strip().lower()
    if task not in TASKS:
        raise ValueError(f"<task> is {task!r}, expected one of {', '.join(TASKS)}")
    return task


def parse_requests(text: str) -> list[tuple[str, str]] | None:
    """`- [id] text` lines of the <requests> block; None when the prompt has no such block."""
    body = find_tag(text, "requests")
    if body is None:
        return None
    requests: list[tuple[str, str]] = []
    for line in body.splitlines():
        match = _REQUEST_LINE.match(line)
        if match:
            requests.append((match.group(1), " ".join(match.group(2).split())))
        elif line.strip() and requests:
            # A wrapped request line continues the previous request.
            rid, prior = requests[-1]
            requests[-1] = (rid, f"{prior} {' '.join(line.split())}")
    if not requests:
        raise ValueError("<requests> block has no '- [id] text' lines")
    return requests


def parse_chunks(text: str, required: bool = True) -> list[tuple[str, str]]:
    """(chunk id, text) of every <chunk id="..."> block, in prompt order.

    `required`: zero blocks is an error by default, because a template that renders its evidence
    under another tag would otherwise look like a model that always abstains.
    """
    chunks = [
        (next(g for g in m.groups()[:3] if g is not None).strip(), m.group(4).strip())
        for m in _block_pattern("chunk", _ATTR_ID).finditer(text)
    ]
    if not chunks and required:
        raise ValueError('prompt has no <chunk id="...">...</chunk> blocks')
    return chunks


def parse_statements(text: str) -> list[str]:
    """`[n] text` lines of the <statements> block, ordered by n; an empty block is a valid empty list."""
    body = require_tag(text, "statements")
    numbered: list[tuple[int, str]] = []
    for line in body.splitlines():
        match = _STATEMENT_LINE.match(line)
        if match:
            numbered.append((int(match.group(1)), match.group(2).strip()))
        elif line.strip() and numbered:
            n, prior = numbered[-1]
            numbered[-1] = (n, f"{prior} {line.strip()}")
        elif line.strip():
            raise ValueError(f"<statements> line is not '[n] text': {line.strip()[:60]!r}")
    return [statement for _, statement in sorted(numbered, key=lambda item: item[0])]


def parse_numbered(text: str, tag: str, required: bool = True) -> list[str]:
    """Bodies of <tag n="k"> blocks ordered by k (evidence, gold); zero blocks raises unless not `required`."""
    blocks = [
        (int(next(g for g in m.groups()[:3] if g is not None)), m.group(4).strip())
        for m in _block_pattern(tag, _ATTR_N).finditer(text)
    ]
    if not blocks and required:
        raise ValueError(f'prompt has no <{tag} n="...">...</{tag}> blocks')
    return [body for _, body in sorted(blocks, key=lambda item: item[0])]


@dataclass(frozen=True)
class AnswerPrompt:
    question: str
    chunks: list[tuple[str, str]]
    requests: list[tuple[str, str]] | None = None


@dataclass(frozen=True)
class JudgePrompt:
    task: str
    question: str | None
    answer: str | None = None
    statements: list[str] | None = None
    evidence: list[str] | None = None
    gold: list[str] | None = None


@dataclass(frozen=True)
class RequestJudgePrompt:
    """What the request judge reads: labelled requests (id, text, gold quotes, gold answer) and the answer with
    its citations and cited passages."""

    question: str | None
    requests: list[tuple[str, str, list[str], str | None]]
    answer_text: str
    citations: list[str]
    passages: list[tuple[str, list[str]]]


_PASSAGE = re.compile(r"<passage\s+n\s*=\s*\"\s*(\d+)\s*\"\s+cites\s*=\s*\"([^\"]*)\"\s*>(.*?)</passage\s*>",
                      re.DOTALL | re.IGNORECASE)


def parse_request_judge_prompt(text: str) -> RequestJudgePrompt:
    """The judge_requests prompt (core.prompts.gold_requests_block and cited_answer_block). Requests are read only
    inside <gold_requests> and passages only after it, so an answer that writes tags cannot add requests."""
    block = require_tag(text, "gold_requests")
    requests = []
    for m in _block_pattern("request", _ATTR_ID).finditer(block):
        rid = next(g for g in m.groups()[:3] if g is not None).strip()
        body = m.group(4)
        requests.append((rid, " ".join((find_tag(body, "text") or "").split()),
                         parse_numbered(body, "gold", required=False), find_tag(body, "gold_answer")))
    if not requests:
        raise ValueError('<gold_requests> has no <request id="..."> blocks')
    rest = text[text.index("</gold_requests>"):] if "</gold_requests>" in text else text
    # The answer text runs from the first <answer_text> to the LAST </answer_text>: whatever tags the answer itself
    # writes stay inside it; the citations and passages after it are the harness's own.
    start, end = rest.find("<answer_text>"), rest.rfind("</answer_text>")
    if start < 0 or end < start:
        raise ValueError("prompt has no <answer_text>...</answer_text> block")
    tail = rest[end:]
    passages = sorted(((int(m.group(1)), m.group(3).strip(), m.group(2).split()) for m in _PASSAGE.finditer(tail)),
                      key=lambda p: p[0])
    return RequestJudgePrompt(question=_optional_question(text), requests=requests,
                              answer_text=rest[start + len("<answer_text>"):end].strip(),
                              citations=(find_tag(tail, "answer_citations") or "").split(),
                              passages=[(body, cites) for _, body, cites in passages])


def _optional_question(text: str) -> str | None:
    question = find_tag(text, "question")
    return " ".join(question.split()) if question else None


def parse_answer_prompt(text: str) -> AnswerPrompt:
    """Question (required), requests (optional) and chunks. Zero chunks is accepted: nothing admitted is a
    legitimate rendering, and the answer to it is an abstention, not a parse failure."""
    return AnswerPrompt(
        question=parse_question(text), chunks=parse_chunks(text, required=False), requests=parse_requests(text)
    )


def parse_judge_prompt(text: str) -> JudgePrompt:
    """The parts each judge task needs. <question> is optional (core.prompts does not require it);
    zero evidence or gold blocks are accepted and leave every statement unsupported."""
    task = parse_task(text)
    if task == TASK_EXTRACT:
        return JudgePrompt(task=task, question=_optional_question(text), answer=require_tag(text, "answer"))
    if task == TASK_VERIFY:
        return JudgePrompt(
            task=task,
            question=_optional_question(text),
            statements=parse_statements(text),
            evidence=parse_numbered(text, "evidence", required=False),
        )
    return JudgePrompt(
        task=task,
        question=_optional_question(text),
        statements=parse_statements(text),
        gold=parse_numbered(text, "gold", required=False),
    )
