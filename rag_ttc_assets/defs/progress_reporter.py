"""Which reporter a step's long stages report to: the one `rag-ttc run` installed for its own run, else the
step's Dagster log (a UI run), a line at most every LOG_EVERY_S seconds."""

from __future__ import annotations

import time
from contextlib import contextmanager

from rag_ttc_assets.core.progress import Progress, Task, ThrottledTask, progress_text

LOG_EVERY_S = 30.0  # a step's event log is read in the UI; a line each half minute tells it is moving

_by_run: dict[str, Progress] = {}


@contextmanager
def reporting(run_id: str, progress: Progress):
    """Steps of run `run_id` (executed in this process) report to `progress` meanwhile."""
    _by_run[run_id] = progress
    try:
        yield progress
    finally:
        _by_run.pop(run_id, None)


def step_progress(context) -> Progress:
    return _by_run.get(context.run_id) or LogProgress(context.log)


class LogProgress(Progress):
    def __init__(self, log, every_s: float = LOG_EVERY_S, clock=time.monotonic):
        self.log, self.every_s, self.clock = log, every_s, clock

    def task(self, doing: str, done: str, total: int, unit: str) -> Task:
        return _LogTask(self, doing, total, unit)


class _LogTask(ThrottledTask):
    def __init__(self, owner: LogProgress, doing: str, total: int, unit: str):
        super().__init__(doing, total, unit, owner.clock)
        self.owner = owner

    def every_s(self) -> float:
        return self.owner.every_s

    def report(self, now: float) -> None:
        self.owner.log.info(progress_text(self.doing, self.done, self.total, self.unit, now - self.started))
