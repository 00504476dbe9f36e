"""The run directory's own records (stages/run_record.py), one model each: its `status.json`, the runs `list_runs`
gives, `config.json`, the post-run validation's checks.

`status.json` is rewritten as a run goes (opened, marked interrupted, failed, complete), each writer adding its fields
after those already written: `RunStatus` keeps the order its file had, `with_` appends the fields it sets as a dict
update would, and `to_json` gives the fields in that order, so the file stays what the writers wrote. `RunFolders`:
where the run directories live. `ProviderCalls`: a role's calls, which the run record's provenance and `rag-ttc run`'s
report read. Pure: pydantic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr

from rag_ttc_assets.core.judge_summaries import JudgeSummary


@dataclass(frozen=True)
class RunFolders:
    """Where the run directories live: `<root>/<arm>/<run>`, root `<home>/runs` (a folder, or an object store's
    UPath: `local` False, and a run named by its URI is opened there, stages.run_record.run_path)."""

    root: Path
    local: bool

    def of(self, arm: str) -> Path:
        """The arm's run directories' folder."""
        return self.root / arm


class ProviderCalls(BaseModel):
    """One role's provider calls over its rows (stages.generation.calls_summary): calls made, cache hits, tokens,
    latency and cost; `to_json` in this order (the report's `calls.answers`, the answers asset's metadata)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    provider_calls: int
    cache_hits: int
    input_tokens: int
    output_tokens: int
    mean_input_tokens: float
    p95_latency_s: float
    cost_usd: float
    unpriced_rows: int

    def to_json(self) -> dict[str, Any]:
        return self.model_dump()


class RunStatus(BaseModel):
    """`runs/<arm>/<run>/status.json`: every field any writer writes, each None where that writer has not run."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    status: str | None = None
    arm: str | None = None
    dagster_run_id: str | None = None
    started_at: str | None = None
    stage: str | None = None
    pid: int | None = None
    host: str | None = None
    updated_at: str | None = None
    detected_at: str | None = None
    dagster_status: str | None = None
    finished_at: str | None = None
    reason: str | None = None
    failed_step: str | None = None
    exception: str | None = None
    error: str | None = None
    steps_succeeded: list[str] | None = None
    partial_rows: dict[str, int] | None = None
    counts: dict[str, int] | None = None
    exit_code: int | None = None
    _order: tuple[str, ...] = PrivateAttr(default=())  # the fields as the file holds them

    @classmethod
    def of(cls, fields: Mapping[str, Any]) -> RunStatus:
        """The status holding `fields`, in their order (a file read back, or a new status)."""
        status = cls.model_validate(dict(fields))
        status._order = tuple(fields)
        return status

    def with_(self, **changes: Any) -> RunStatus:
        """This status with `changes`: a field already written keeps its place, a new one comes last."""
        return RunStatus.of({**self.to_json(), **changes})

    def to_json(self) -> dict[str, Any]:
        """As the file holds it: the fields written, in the order they were written."""
        return {name: getattr(self, name) for name in self._order}


class RunFailure(BaseModel):
    """Why a run ended unfinished (cli.materialize: the failed step, its exception, the steps that succeeded)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    step: str | None = None
    reason: str | None = None
    exception: str | None = None
    error: str | None = None
    failed_steps: list[str | None] = []
    steps_succeeded: list[str] = []


class RunEntry(BaseModel):
    """One run directory as `rag-ttc runs` lists it; a failed or interrupted run's adds why (`--json`: to_json)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    arm: str
    run_dir: str
    status: str | None
    started_at: str | None
    dagster_run_id: str | None
    counts: dict[str, int]
    partial_rows: dict[str, int]
    failed_step: str | None = None  # these four: a failed or interrupted run's only (null when not recorded)
    exception: str | None = None
    error: str | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        """As `--json` prints it: a failed or interrupted run's four fields only when it listed them."""
        return self.model_dump(mode="json", exclude_unset=True)


class ModelAssignments(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    generator: str
    judge: str
    request_judge: str
    same_model: bool


class RunConfig(BaseModel):
    """`config.json`: the arm's effective config, fingerprints, the data's digests, the models, where the cache is."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    arm: str
    effective_config: dict[str, Any]
    fingerprints: dict[str, Any]
    corpus_digest: str
    evaluation_digest: str
    model_assignments: ModelAssignments
    label_use: str  # none, oracle, or counterfactual:<kind>
    arms_file: str
    provider_cache: str


class RunJudgeSummary(JudgeSummary):
    """`results/judge-summary.json`: the arm's judge summary and the judge's configuration."""

    judge_config: dict[str, Any]


class AnswerRole(BaseModel):
    """What the validation reads of a row of `results/generated-answers.json` (the answers table's row)."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    model: str | None
    provider_role: str


class RunCheck(BaseModel):
    """One step of the post-run validation: what was checked, whether it passed, what was found."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    check: str
    passed: bool
    detail: str
