"""The labels two arms were measured on, told apart (labelling/label_drift_stage.labels_that_differ): each arm's labels digest,
the file holding that version, and the labels that differ (labelling.label_diff), or why they cannot be named. `rag-ttc
compare` prints it (labelling/label_drift_stage.drift_text) and keeps it in the pair report (core.compare_records.PairReport's
`labels_differ`). Pure: pydantic only."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


def _absent(value: str | None) -> bool:
    return value is None


class LabelDrift(BaseModel):
    """The JSON `rag-ttc compare --json` writes as `labels_differ`: digests, files, differ, and why_not only when a
    version is kept nowhere the lab looks (then differ is null)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    digests: dict[str, str]  # arm -> the digest of the labels it was measured on
    files: dict[str, str | None]  # arm -> the file holding that version (None: kept nowhere the lab looks)
    differ: list[str] | None  # one line per label that differs; None: a version was not found
    why_not: str | None = Field(default=None, exclude_if=_absent)  # why differ is None; absent when found
