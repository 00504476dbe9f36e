"""Negative and counterfactual evidence (seed section 11.5): withhold what supports a request, or
plant a chunk that contradicts its gold evidence, and record exactly what was done.

A planted falsehood is built deterministically from the gold quote, trying in order:
  number    the first number in the quote is changed (n -> n + 1; 0 -> 1);
  negation  "not" is inserted after the first auxiliary verb (is, are, can, must, ...), or removed
            when the quote already says "not";
  swap      the first two distinct quoted or dunder names (`"x"`, `__x__`) trade places.
A quote that offers none of these is left unplanted (recorded as kind "none").
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

PLANTED_PREFIX = "planted#"
_NUMBER = re.compile(r"(?<![\w.])(\d+)(?![\w.]*\w)")
_AUX = re.compile(r"\b(is|are|was|were|can|must|may|will|does|do|should|has|have)\b(?! not\b)")
_NOT = re.compile(r"\b(is|are|was|were|can|must|may|will|does|do|should|has|have) not\b")
_NAMES = re.compile(r'"[^"\s]{1,40}"|__\w+__')


class Planted(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    request_id: str
    chunk_id: str
    kind: str  # number | negation | swap | none
    original: str
    planted: str


def alter(quote: str) -> tuple[str, str]:
    """(kind, altered text) for a gold quote; ("none", quote) when nothing can be altered."""
    m = _NUMBER.search(quote)
    if m:
        n = int(m.group(1))
        return "number", quote[: m.start(1)] + str(n + 1) + quote[m.end(1):]
    m = _NOT.search(quote)
    if m:
        return "negation", quote[: m.start()] + m.group(1) + quote[m.end():]
    m = _AUX.search(quote)
    if m:
        return "negation", quote[: m.end()] + " not" + quote[m.end():]
    names: list[str] = []
    for found in _NAMES.finditer(quote):
        if found.group() not in names:
            names.append(found.group())
        if len(names) == 2:
            a, b = names
            swapped = quote.replace(a, "\0").replace(b, a).replace("\0", b)
            return "swap", swapped
    return "none", quote


def plant(request_id: str, quote: str) -> Planted:
    kind, text = alter(quote)
    return Planted(request_id=request_id, chunk_id=f"{PLANTED_PREFIX}{request_id}", kind=kind, original=quote,
                   planted=text)


def withhold(admitted: list[str], supporting: set[str]) -> tuple[list[str], list[str]]:
    """(kept, withheld): every admitted chunk that supports a request is removed, order kept."""
    kept = [c for c in admitted if c not in supporting]
    return kept, [c for c in admitted if c in supporting]


def repeats(answer: str | None, planted: Planted) -> bool:
    """The answer states the planted claim: it contains the altered token in the planted sentence's words.

    The altered span is what distinguishes the falsehood from the gold text, so the answer must carry
    it (the changed number, the inserted or removed "not", the swapped name order) and most of the rest.
    """
    if not answer or planted.kind == "none":
        return False
    text = " ".join(answer.split()).lower()
    planted_text = " ".join(planted.planted.split()).lower()
    if planted_text in text:
        return True
    original = " ".join(planted.original.split()).lower()
    # The shortest window around the alteration that differs from the gold quote.
    i = next((k for k, (x, y) in enumerate(zip(planted_text, original)) if x != y), min(len(planted_text),
                                                                                       len(original)))
    window = planted_text[max(0, i - 25): i + 25]
    return window in text and window not in original
