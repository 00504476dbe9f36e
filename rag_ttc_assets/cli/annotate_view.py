"""What the labelling page (cli/annotate_page.py, cli/annotate_session.py) reads, as records: a row's view
(labelling.annotate_stage.Source.view: `inspect`'s view of the question, core.inspect_view.InspectView, plus the texts and
documents of the chunks shown) and the labels it shows back (labelling.annotation's replayed label and pair changes)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from rag_ttc_assets.core.inspect_view import InspectView


class RowView(InspectView):
    """A row's view as the page shows it: the inspect view, `chunks` (chunk id -> text) and `chunk_doc` (chunk id ->
    document id) of the chunks admitted, omitted or selected."""

    chunks: dict[str, str]
    chunk_doc: dict[str, str]

    @classmethod
    def of(cls, view: dict[str, Any]) -> RowView:
        return cls.model_validate(view)

    @property
    def answer_text(self) -> str:
        """The answer as the user saw it (the contract's), "" when there is none."""
        return (self.contract.answer if self.contract is not None else None) or ""


class _Shown(BaseModel):
    """A replayed change the page shows: the fields it reads (the change's other fields ignored)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    note: str | None = None


class ShownLabel(_Shown):
    """A request's current label (a label change): its case, note, gold quote and the run and answer it was made on."""

    case: str | None = None
    run_id: str | None = None
    answer_sha256: str | None = None
    quote: str | None = None
    quote_chunk_id: str | None = None

    @classmethod
    def of(cls, change: dict[str, Any] | None) -> ShownLabel | None:
        return cls.model_validate(change) if change else None


class ShownPair(_Shown):
    """A pair's current label (a pair change): which answer is more complete, -2..2, and its note."""

    completeness: int

    @classmethod
    def of(cls, change: dict[str, Any] | None) -> ShownPair | None:
        return cls.model_validate(change) if change else None
