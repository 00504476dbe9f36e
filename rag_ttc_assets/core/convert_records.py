"""What the input commands (`rag-ttc import-outputs`, `convert-realsumm`, `convert-pyramid`; cli/data.py) report
about the dataset they wrote, one pydantic model each, its fields in the order of the JSON `--json` prints.

`ImportCounts` is imported.import_mapping.dataset_from_rows' counts, read into a record where the command reads them
(a renamed count fails there, naming the field); `ConvertedSet` is what a convert-* command wrote: core.realsumm's
counts of the set, the arms and the written dataset's corpus digest. `model_dump()` is the JSON object printed, key
for key and in the same order as the dicts they replace.

Pure: pydantic only, no I/O.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """Strict types, no undeclared field, never changed once built."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ImportCounts(Record):
    """imported.import_mapping.dataset_from_rows: what an import of RAGChecker or RAGAS rows made."""

    documents: int  # distinct retrieved contexts: the corpus
    questions: int
    gold_answers: int
    questions_with_derived_requests: int  # a gold answer with a claim: no requests of its own
    derived_requests_offline: int  # the claims of those gold answers (the offline rule's requests)
    questions_as_one_request: int  # the whole question as its one request
    gold_answers_without_claim: int  # of those, the ones whose gold answer holds no claim (too short to split)
    rows_without_context: int
    rows_without_context_first: list[str]  # the first few, as messages name a row


class ConvertedSet(Record):
    """A convert-* command's result: the lab folder written (core.realsumm's mapping of the set)."""

    out: str  # the lab folder
    # core.realsumm.dataset's counts
    documents: int
    questions: int
    requests: int
    requests_with_quote: int  # an SCU found verbatim in its document
    # core.realsumm.counts
    systems: int
    summaries: int
    labels: int
    labelled_items: int
    items_by_label_count: dict[str, int]  # "<labels per item>" -> items
    present_share: float | None  # None without labels
    arms: list[str]  # one imported arm per system
    corpus_digest: str  # of the dataset as written and read back
    annotators: str  # what the labels' annotators are (a sentence)
