"""`rag-ttc bench`'s report as records: the report `run_bench` returns (`BenchReport`) and a measurement's record as
its table reads it (`BenchItem`: the fields of harness.item every measurement returns).

`BenchReport.to_json()` is the JSON object `--json` prints, key for key and in the same order as the dict it
replaces; each measurement's record in it is the measurement's own dict, untouched (its extra fields included).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

Number = int | float  # as measured: an int stays an int, so the table prints it as it did


class BenchItem(BaseModel):
    """A measurement's record (harness.item) as the table reads it; the fields it does not read are left out."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str
    product_s: Number | None  # median wall seconds
    reference_s: Number | None
    ratio: Number | None  # wall time, of kind `ratio_kind`
    ratio_kind: str | None  # "cost", "throughput", ...
    target: str  # "<= 1.2" or "report only"
    verdict: str  # "meets", "misses", "report", "skipped"
    cpu_ratio: Number | None  # the same ratio of CPU seconds
    detail: str | None = ""
    notes: list[Any] = []


class BenchReport(BaseModel):
    """The measurements run (in the documented order), where and how."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: str
    scale: int | None  # a synthetic corpus of that many documents; None: the bundled dataset
    repeat: int
    home: str | None  # the store folder given; None: a temporary folder, removed afterwards
    python: str
    cpus: int | None
    items: dict[str, dict[str, Any]]  # measurement -> its record (harness.item), as it returned it

    def to_json(self) -> dict[str, Any]:
        """The report as `--json` prints it (json.dumps, default=str): each record as its measurement returned it."""
        return dict(self)

    def measured(self) -> list[BenchItem]:
        return [BenchItem.model_validate(i) for i in self.items.values()]
