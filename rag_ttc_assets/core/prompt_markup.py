"""Parsing of the tagged prompt protocol (<question>, <requests>, <chunk>), as the offline answerer (local/extractive)
and the contextual builder (local/contextual) read their prompts. The offline judges read no prompt: they are handed
the records the prompt is rendered from (judging.judge_inputs).
Getters raise ValueError naming the missing tag, so a provider can say what its prompt lacked."""

from __future__ import annotations

import re
from dataclasses import dataclass



def _block_pattern(tag: str, attrs: str = "") -> re.Pattern[str]:
    # The body may not contain another opening tag: instructions that merely *mention* "<question>"
    # before the real block then never swallow it.
    return re.compile(
        rf"<{tag}{attrs}\s*>((?:(?!<{tag}[\s>]).)*?)</{tag}\s*>",
        re.DOTALL | re.IGNORECASE,
    )


_ATTR_ID = r"\s+id\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s>]+))"
_ATTR_N = r"\s+n\s*=\s*(?:\"\s*(\d+)\s*\"|'\s*(\d+)\s*'|(\d+))"
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


@dataclass(frozen=True)
class AnswerPrompt:
    question: str
    chunks: list[tuple[str, str]]
    requests: list[tuple[str, str]] | None = None


def parse_answer_prompt(text: str) -> AnswerPrompt:
    """Question (required), requests (optional) and chunks. Zero chunks is accepted: nothing admitted is a
    legitimate rendering, and the answer to it is an abstention, not a parse failure."""
    return AnswerPrompt(
        question=parse_question(text), chunks=parse_chunks(text, required=False), requests=parse_requests(text)
    )
