"""What the diagnostics stages hand the assets of defs/diagnostics.py, one frozen record each: the tables and the
summary of `request_completeness` (stages.diagnostics.completeness), of `failure_flow` (stages.diagnostics.
failure_flow) and what `arm_comparisons` wrote (report.comparisons.write_comparisons). Each is made from its
producer's result by keyword (`CompletenessResult.of(d)`), so a field its producer renamed or left out fails there,
naming it, not as a KeyError in the middle of the metadata."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class CompletenessResult:
    """Per request, per question, per abstention (polars frames), and the totals of request_completeness.json."""

    requests: Any
    questions: Any
    abstentions: Any
    completeness: dict[str, Any]

    @classmethod
    def of(cls, d: dict[str, Any]) -> CompletenessResult:
        return cls(**d)


@dataclass(frozen=True)
class FlowResult:
    """The failure-flow rows and a tool arm's lookup cases (polars frames), and failure_flow.json's summary."""

    flow: Any
    lookup_cases: Any
    flow_summary: dict[str, Any]

    @classmethod
    def of(cls, d: dict[str, Any]) -> FlowResult:
        return cls(**d)


@dataclass(frozen=True)
class Comparisons:
    """The pair reports drawn, the pairs refused, one summary row per pair, the pages and sweep plots written, the
    failure-flow bars of every arm (None: none drawn) and the people's labels the reports show (None: none)."""

    reports: list[Any]
    skipped: Any
    summary: list[dict[str, Any]]
    pages: dict[str, Any]
    sweeps: dict[str, Any]
    flow_png: Path | None
    human_labels: dict[str, Any] | None

    @classmethod
    def of(cls, d: dict[str, Any]) -> Comparisons:
        return cls(**d)


@dataclass(frozen=True)
class ImportRead:
    """An imported arm's source read and mapped (stages.imported.read_import): its chunks and rows (polars frames),
    import_mapping.json's mapping, and a Phoenix server's span records as read (None for a file)."""

    chunks: Any
    rows: Any
    mapping: dict[str, Any]
    records: list[dict[str, Any]] | None

    @classmethod
    def of(cls, d: dict[str, Any]) -> ImportRead:
        return cls(**d)
