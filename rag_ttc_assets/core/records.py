"""Typed records of the dataset format (DESIGN section 4): corpus documents and evaluation questions."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Document(Record):
    id: str = Field(min_length=1)
    title: str = ""
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class Corpus(Record):
    documents: list[Document]


class Target(Record):
    """A document-level retrieval judgment (trec qrels row)."""

    doc_id: str = Field(min_length=1)
    relevance: int = 1
    stale: Literal["gone"] | None = None  # its document was removed (rag-ttc labels update): kept, not measured


class Evidence(Record):
    """A verbatim quote from one document that supports a request (a gold quote: a label).

    `quote_sha256` and `corpus_digest` (the corpus the quote was made on or last verified against) let
    `rag-ttc labels check` tell a quote edited by hand from one the corpus moved; `stale` marks a label the check
    found changed, gone or ambiguous (labelling.label_check): kept for a person, left out of every measurement."""

    doc_id: str = Field(min_length=1)
    quote: str = Field(min_length=1)
    quote_sha256: str | None = Field(default=None, pattern=r"^sha256:[0-9a-f]{64}$")
    corpus_digest: str | None = Field(default=None, pattern=r"^sha256:[0-9a-f]{64}$")
    stale: Literal["changed", "gone", "ambiguous"] | None = None


class Derivation(Record):
    """How a request was derived from its question's gold answer (core.request_derivation): by a rule or a model."""

    method: Literal["rule", "model"]
    model: str = Field(min_length=1)
    prompt_digest: str | None = None


class Request(Record):
    """One atomic ask of a (possibly multi-part) question; `derived` when it was derived from the gold answer."""

    id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    evidence: list[Evidence] = Field(default_factory=list)
    gold_answer: str | None = None
    derived: Derivation | None = None


class Question(Record):
    id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    answerable: bool = True
    targets: list[Target] = Field(default_factory=list)
    requests: list[Request] = Field(default_factory=list)
    gold_answer: str | None = None


class Evaluation(Record):
    corpus_digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    pilot: list[str] = Field(default_factory=list)
    questions: list[Question]


def invalid_fields(e: ValidationError) -> str:
    """Where a stored JSON file failed its model, as every reader names it: `field.path: message; ...`."""
    return "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '(the whole file)'}: {err['msg']}"
                     for err in e.errors())
