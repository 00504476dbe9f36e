"""The log of a labels update as records: each relocated gold quote (labelling.label_check.updated_evaluation's log, the
`relocated` list of `labels/evaluation.v<N>.log.json`) and each place an ambiguous quote was found (a
LabelResult's `places`, the `stale` list's), read back where `rag-ttc labels check` and `update` print them, so a
renamed field fails there, naming it.

Pure: pydantic only, no I/O.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Record(BaseModel):
    """No undeclared field, never changed once built."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class QuotePlace(Record):
    """Where a gold quote is: its document and its text there."""

    doc_id: str
    quote: str | None


class Relocated(Record):
    """A gold quote moved to its new place (fuzzy match, whitespace or case, or another document)."""

    label: str  # "questions[i] (id 'q') request 'r' evidence[k]"
    how: str
    score: float | None
    was: QuotePlace = Field(alias="from")
    now: QuotePlace = Field(alias="to")


def relocated(log: list[dict[str, object]]) -> list[Relocated]:
    """updated_evaluation's log as records."""
    return [Relocated.model_validate(x) for x in log]


class Found(Record):
    """A place an ambiguous gold quote was found (labelling.label_check: one of a LabelResult's `places`)."""

    doc_id: str
    start: int  # where in the document's text
    text: str  # the text found there


def places(found: list[dict[str, object]]) -> list[Found]:
    """A LabelResult's places as records."""
    return [Found.model_validate(p) for p in found]
