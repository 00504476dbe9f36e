"""What a judge is asked about, as typed records: the stage that renders a judge's prompt builds these from the same
data, and an offline judge (local/lexical and the request jurors, adapters.local_providers) reads them instead of
re-reading the prompt. A model judge reads the rendered prompt; the prompt, its digest and the cache key are
unchanged.

Texts are as a reader of the rendered prompt sees them: a block's surrounding whitespace trimmed, a request's text
and the question on one line (runs of whitespace made one space), a statement's lines joined by one space.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

TASK_EXTRACT = "extract_statements"
TASK_VERIFY = "verify_statements"
TASK_GOLD = "verify_against_gold"
TASK_REQUESTS = "judge_requests"


def one_line(text: str | None) -> str:
    """Runs of whitespace made one space, ends trimmed."""
    return " ".join((text or "").split())


def statement_line(statement: str) -> str:
    """A statement as a `[n] text` line reads: each of its lines trimmed, the non-blank ones joined by one space."""
    return " ".join(line.strip() for line in statement.splitlines() if line.strip())


@dataclass(frozen=True)
class ExtractStatements:
    """Stage 1 of the statement judge: the answer whose statements to list."""

    question: str
    answer: str
    task: str = TASK_EXTRACT

    @classmethod
    def of(cls, question: str, answer: str) -> ExtractStatements:
        return cls(one_line(question), answer.strip())


@dataclass(frozen=True)
class VerifyStatements:
    """Stage 2: the statements against the admitted evidence (the chunk texts, numbered from 1 in this order)."""

    question: str
    statements: tuple[str, ...]
    evidence: tuple[str, ...]
    task: str = TASK_VERIFY

    @classmethod
    def of(cls, question: str, statements: list[str], evidence: list[str]) -> VerifyStatements:
        return cls(one_line(question), tuple(statement_line(s) for s in statements),
                   tuple(t.strip() for t in evidence))


@dataclass(frozen=True)
class VerifyAgainstGold:
    """Stage 3: the statements against the question's gold texts (diagnosis.completeness.gold_texts), numbered from 1."""

    question: str
    statements: tuple[str, ...]
    gold: tuple[str, ...]
    task: str = TASK_GOLD

    @classmethod
    def of(cls, question: str, statements: list[str], gold: list[str]) -> VerifyAgainstGold:
        return cls(one_line(question), tuple(statement_line(s) for s in statements), tuple(t.strip() for t in gold))


@dataclass(frozen=True)
class GoldRequest:
    """One labelled request as the request judge reads it: id, text, gold quotes and gold answer (None: none)."""

    id: str
    text: str
    quotes: tuple[str, ...]
    gold_answer: str | None

    @classmethod
    def of(cls, rid: str, text: str, quotes: list[str], gold_answer: str | None) -> GoldRequest:
        return cls(rid.strip(), one_line(text), tuple(q.strip() for q in quotes),
                   gold_answer.strip() if gold_answer else None)


@dataclass(frozen=True)
class Passage:
    """A cited passage of the answer: a request item's answer with its own citations (or the whole answer)."""

    text: str
    cites: tuple[str, ...]


@dataclass(frozen=True)
class JudgeRequests:
    """The request judge's case: the labelled requests and the answer with its citations and cited passages."""

    question: str | None
    requests: tuple[GoldRequest, ...]
    answer_text: str
    citations: tuple[str, ...]
    passages: tuple[Passage, ...]
    task: str = TASK_REQUESTS

    @classmethod
    def of(cls, question: str, requests: list[GoldRequest], answer: str, citations: list[str],
           passages: list[tuple[str, list[str]]]) -> JudgeRequests:
        return cls(one_line(question) or None, tuple(requests), answer.strip(), tuple(" ".join(citations).split()),
                   tuple(Passage(text.strip(), tuple(" ".join(cites).split())) for text, cites in passages))


JudgeInput = Union[ExtractStatements, VerifyStatements, VerifyAgainstGold, JudgeRequests]
