"""What `derive-requests` wrote for one dataset (stages.derive_requests.derive, through the `derived_requests`
asset's `results` metadata), as the stage returns it and `rag-ttc derive-requests` reads it back: field for
field and in its order. No logic."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class DerivationResult(BaseModel):
    """One dataset's derivation: the file, how (the Derivation record as written), the counts, what was not derived
    and why, and the provider's calls."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: str
    file: str
    derived: dict[str, Any]  # core.request_derivation.Derivation as the derived file records it
    derived_by: str
    questions: int
    statuses: dict[str, int]  # status -> questions
    requests: int
    requests_with_evidence: int
    not_derived: dict[str, str]  # question -> "status: error"
    nothing_to_derive: str | None
    provider_calls: int
    cache_hits: int

    def to_json(self) -> dict[str, Any]:
        """The JSON object `--json` prints: every field in the stage's order."""
        return self.model_dump()
