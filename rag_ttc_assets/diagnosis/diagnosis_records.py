"""What the written diagnosis is (diagnosis.diagnosis.diagnose's result, diagnosis.json): its sections of sentences, each
sentence with its rule, inputs, numbers as measured and as shown, the links to the cases behind them, its test and
p-values. The asset's metadata, `rag-ttc diagnose`, the page and diagnosis.md read it through these records; a
diagnosis.json edited by hand or written by an older rules version is read through `read_diagnosis`, which names the
file and the field."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from rag_ttc_assets.core.records import invalid_fields


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Link(Record):
    """Where a number's cases are: a case report (relative to diagnosis.json) and the filter that shows them."""

    url: str
    filter: dict[str, Any]


class WrittenSentence(Record):
    """One sentence as diagnosis.json keeps it (diagnosis.diagnosis_sentences.Sentence.done)."""

    id: str  # s1, s2, ... in document order
    rule: str  # the rule that wrote it (exec.baseline_flow, pair.effect, limit.human_correction, ...)
    text: str
    parts: list[str | dict[str, str]]  # text pieces, and {"n": name} where a named number goes
    inputs: dict[str, Any]  # what the rule read (arms, metric, family, ...), per rule
    numbers: dict[str, Any]  # name -> the value as measured
    kinds: dict[str, str]  # name -> how it is shown (share, count, delta, p, ...)
    shown: dict[str, str]  # name -> the value as the text shows it
    links: dict[str, Link]  # name -> the cases behind it
    test: str | None  # the test behind an effect stated
    p_value: float | None
    p_adjusted: float | None  # over the sweep (p_adjust): the only reading that states an effect
    cases: list[str]  # question ids behind the sentence, sorted
    requests: list[str]
    snippet: str | None = None  # a next experiment's arms-file snippet (only on those sentences)


class Section(Record):
    id: str  # summary, finding-<family or parameters>, decisions, limitations, next
    title: str
    sentences: list[WrittenSentence]


class HumanLabelsRead(Record):
    """The people's labels file a diagnosis or a report read (labelling.human_page.HumanLabels.summary)."""

    path: str
    sha256: str
    request_labels: int
    annotators: list[str]
    not_read: str | None = None  # the store's default file, unreadable for this lab: why nothing of it was read


class Diagnosis(Record):
    """The written diagnosis of a sweep (diagnosis.diagnosis.diagnose)."""

    baseline: str  # the arm whose failure flow the summary reads
    arms: list[str]
    families: list[str]
    pairs: list[list[str]]  # the compared pairs, [a, b]
    p_adjust: dict[str, Any] | None  # the adjustment over the sweep (core.compare_records.PAdjustment); None: no pair
    alpha: float
    min_paired: int  # paired cases below which no effect is stated
    sections: list[Section]
    human_labels: HumanLabelsRead | None

    def sentences(self, rule: str | None = None) -> list[WrittenSentence]:
        """Every sentence in document order (`rule`: only that rule's)."""
        return [s for sec in self.sections for s in sec.sentences if rule is None or s.rule == rule]

    def section(self, sid: str) -> Section | None:
        return next((sec for sec in self.sections if sec.id == sid), None)

    def to_json(self) -> dict[str, Any]:
        """diagnosis.json's object: every field in order; a sentence's snippet and a labels file's not_read only
        where they were given."""
        return self.model_dump(exclude_unset=True)


class DiagnosisFileError(ValueError):
    """A stored diagnosis.json that is not one: names the file and the field."""


def read_diagnosis(text: str, source: str) -> Diagnosis:
    """A diagnosis from its JSON text (`source`: the file it was read from, named in the error)."""
    try:
        return Diagnosis.model_validate(json.loads(text))
    except (ValidationError, ValueError) as e:
        if not isinstance(e, ValidationError):
            raise DiagnosisFileError(f"{source}: not JSON: {e}") from None
        where = invalid_fields(e)
        raise DiagnosisFileError(f"{source}: not a diagnosis: {where}") from None
