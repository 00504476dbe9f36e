"""The entailment juror's reply for ONE request (prompt kind judge_entailment, reply schema
core.response_formats.ENTAILMENT): read, checked, and mapped onto the lab's request verdicts.

  reply        {"addressed", "supported", "contradicts": booleans, "quote": the span of the answer that addresses
               the request ("" when none), "coverage": 0..1, the share of the gold answer the answer also says,
               "reason"}. Every field is required and no other is allowed (the JSON schema sent with the call);
               "supported" and "contradicts" both true, or either true of a request not addressed, is incoherent.
  verdict      not addressed -> not_addressed; contradicts -> contradicts; supported -> consistent; addressed but
               neither -> not_verifiable (judging.statement_judge.REQUEST_VERDICTS).
  quote        must occur in the answer (its text or a cited passage), compared after folding case, whitespace,
               curly quotes and dashes; an ellipsis ("..." or "…") may join parts that occur in that order. A
               reply whose quote of an addressed request is empty or is not in the answer is not a verdict: the
               row is `judge_span_not_in_answer` (not measured), the quote and the reply kept in its error.
  coverage     the reply's graded score, kept as the row's coverage.

A reply that is not one JSON object of that schema is a JudgeParseError (the row `judge_parse_failure`, the reply
kept in its error): not measured, never "not addressed".
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from rag_ttc_assets.core.contract import load_json_object
from rag_ttc_assets.judging.statement_judge import JudgeParseError

SPAN_NOT_IN_ANSWER = "judge_span_not_in_answer"


class EntailmentReply(BaseModel):
    """core.response_formats.ENTAILMENT as a validator: every field required, no other, booleans as booleans."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    addressed: StrictBool
    supported: StrictBool
    contradicts: StrictBool
    quote: str
    coverage: float = Field(ge=0.0, le=1.0)
    reason: str


@dataclass(frozen=True)
class Entailment:
    """One request's judgment, in the request judge's terms (judging.statement_judge.RequestJudgment's fields)."""

    addressed: bool
    verdict: str
    excerpt: str
    coverage: float
    reason: str


class SpanNotInAnswer(ValueError):
    """The reply's quote of an addressed request does not occur in the answer."""


def verdict_of(reply: EntailmentReply) -> str:
    if not reply.addressed:
        return "not_addressed"
    if reply.contradicts:
        return "contradicts"
    return "consistent" if reply.supported else "not_verifiable"


_FOLD = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-",
                       "\u00a0": " "})
_ELLIPSIS = re.compile(r"\s*(?:\.\.\.|\u2026)\s*")


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).translate(_FOLD).casefold().split())


def span_in(quote: str, texts: list[str]) -> bool:
    """Whether `quote` occurs in one of `texts` (folded; parts joined by an ellipsis in order)."""
    parts = [p for p in (_fold(x) for x in _ELLIPSIS.split(quote)) if p]
    if not parts:
        return False
    for text in (_fold(t) for t in texts):
        at = 0
        for p in parts:
            at = text.find(p, at)
            if at < 0:
                break
            at += len(p)
        else:
            return True
    return False


def parse_entailment(raw_text: str | None, answer_texts: list[str]) -> Entailment:
    """The reply as a verdict; JudgeParseError for a reply that is not the schema's object (or is incoherent),
    SpanNotInAnswer for an addressed request whose quote is not in `answer_texts`."""
    obj, error = load_json_object(raw_text)
    if obj is None:
        raise JudgeParseError(f"entailment: {error}")
    try:
        reply = EntailmentReply.model_validate(obj)
    except ValidationError as e:
        err = e.errors()[0]
        where = ", ".join(f"field {x!r}" for x in err["loc"] if isinstance(x, str))
        raise JudgeParseError(f"entailment: {where + ': ' if where else ''}{err['msg']}") from None
    if reply.supported and reply.contradicts:
        raise JudgeParseError("entailment: 'supported' and 'contradicts' are both true")
    if not reply.addressed and (reply.supported or reply.contradicts):
        raise JudgeParseError("entailment: the request is not addressed, yet "
                              + ("'supported'" if reply.supported else "'contradicts'") + " is true")
    quote = reply.quote.strip()
    if reply.addressed and not span_in(quote, answer_texts):
        raise SpanNotInAnswer(f"the quoted span {quote!r} does not occur in the answer" if quote else
                              "the request is addressed but the reply quotes no span of the answer")
    verdict = verdict_of(reply)
    return Entailment(addressed=reply.addressed, verdict=verdict, excerpt=quote if reply.addressed else "",
                      coverage=float(reply.coverage), reason=f"entailment: {reply.reason}".strip())
