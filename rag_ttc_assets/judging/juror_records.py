"""A panel juror's kept row (judging.panel.combine), as a request_judgments row's `jurors` column holds it: the
juror's model, its status, its vote and verdict, its raw and calibrated coverage, and why it measured nothing. The
readers of that column (judging.request_judge_stage.panel_summary, stages.inspect) read it through this record. Pure.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, TypeAdapter


class KeptJuror(BaseModel):
    """One juror's row of one request; a row written before calibrated coverage was kept has none (None)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    model: str
    status: str
    addressed: bool | None = None
    verdict: str | None = None
    coverage: float | int | None = None  # as written: an int stays an int
    calibrated_coverage: float | int | None = None
    reason: str | None = None
    judge_error: str | None = None


_JURORS = TypeAdapter(list[KeptJuror])


def kept_jurors(column_value: str) -> list[KeptJuror]:
    """The jurors of one request_judgments row, from its `jurors` column (JSON text)."""
    return _JURORS.validate_python(json.loads(column_value))
