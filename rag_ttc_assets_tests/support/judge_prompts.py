"""Reading a judge prompt back (<task>, <statements>, <evidence n>, <gold n>, <gold_requests>, <answer_text>): what a
model judge reads in the prompt a judge stage sends, for the tests that compare it with the records an offline judge
is handed (judging.judge_inputs). The product reads no judge prompt; the tag syntax is core.prompt_markup's."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag_ttc_assets.judging.judge_inputs import TASK_EXTRACT, TASK_GOLD, TASK_REQUESTS, TASK_VERIFY
from rag_ttc_assets.core.prompt_markup import _ATTR_ID, _ATTR_N, _block_pattern, find_tag, require_tag

_STATEMENT_LINE = re.compile(r"^\s*\[\s*(\d+)\s*\]\s*(.*)$")

TASKS = (TASK_EXTRACT, TASK_VERIFY, TASK_GOLD, TASK_REQUESTS)


def parse_task(text: str) -> str:
    task = require_tag(text, "task").strip().lower()
    if task not in TASKS:
        raise ValueError(f"<task> is {task!r}, expected one of {', '.join(TASKS)}")
    return task


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
