"""Every use of Dagster's private modules (`dagster._core`, `dagster._utils`), in one place: each name below has
no public API in Dagster 1.13, and defs/test_dagster_private.py pins the behaviour this project relies on, so an
upgrade that changes it fails there first.

- `stale_status_resolver`: Dagster's own stale status of an asset partition and its root causes, what the UI's
  partition view shows, read by `rag-ttc run` to say why it runs an asset (defs/staleness.py).
- `RetryMode`: what an `Executor`'s `retries` returns (the dask executor, defs/dask_steps.py).
- `ReconstructableRepository`, `execute_run_iterator`: a created run executed in this process as its run worker,
  its steps in the executor's processes (`rag-ttc run` with RAG_TTC_EXECUTOR, cli/executor_run.py).
- `ActiveExecution.sleep_til_ready`, `InstanceConcurrencyContext.interval_to_next_pending_claim_check`,
  `check_captured_interrupt`: the in-process executor's wait for a concurrency pool slot (`interruptible_waits`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from dagster import DagsterExecutionInterruptedError, DagsterInstance
from dagster._core.definitions.data_version import CachingStaleStatusResolver
from dagster._core.definitions.reconstruct import ReconstructableRepository
from dagster._core.execution.api import execute_run_iterator
from dagster._core.execution.plan.active import ActiveExecution
from dagster._core.execution.plan.instance_concurrency_context import InstanceConcurrencyContext
from dagster._core.execution.retries import RetryMode
from dagster._core.loader import LoadingContext
from dagster._utils.interrupts import check_captured_interrupt

__all__ = ["ReconstructableRepository", "RetryMode", "execute_run_iterator", "interruptible_waits",
           "stale_status_resolver"]


class _Loading(LoadingContext):
    """The request scope Dagster's stale-status resolver batches its reads in (one per determination)."""

    def __init__(self, instance: DagsterInstance):
        self._instance, self._loaders = instance, {}

    @property
    def instance(self) -> DagsterInstance:
        return self._instance

    @property
    def loaders(self) -> dict:
        return self._loaders


def stale_status_resolver(instance: DagsterInstance, asset_graph) -> CachingStaleStatusResolver:
    """The resolver of `get_status(key, partition)` (MISSING, STALE, FRESH) and `get_stale_root_causes(key,
    partition)` over `asset_graph` (a job's `asset_layer.asset_graph`) and the instance's records."""
    return CachingStaleStatusResolver(instance, asset_graph, _Loading(instance))


POOL_CHECK_MAX_S = 2.0  # the longest a waiting step goes without asking for its pool slot again
INTERRUPT_POLL_S = 0.1  # how often a wait looks for a SIGINT or SIGTERM Dagster captured


def _interval_to_next_pending_claim_check(self: InstanceConcurrencyContext) -> float:
    """Seconds until the earliest pending claim may ask again (0 when one may now). Dagster 1.13's own takes
    `min([0, *waits])`, never above 0, so the in-process executor's wait for a pool slot never sleeps: a core
    spent for as long as the pool is full."""
    if not self.has_pending_claims() or not self._pending_timeouts:
        return 0.0
    return max(0.0, min(self._pending_timeouts.values()) - time.time())


@contextmanager
def interruptible_waits(on_interrupt: Callable[[], None]) -> Iterator[None]:
    """While in-process runs execute in this thread: a step waiting for a concurrency pool slot (or a retry)
    sleeps until its next claim check (at most POOL_CHECK_MAX_S), and a SIGINT or SIGTERM received meanwhile
    ends the run: `on_interrupt()` (which marks the run canceling, so Dagster records it canceled), then
    DagsterExecutionInterruptedError, as an interrupt inside a step does. Dagster captures both signals for the
    whole run but looks at them only when a step starts, which a step waiting for a slot never does."""
    sleep, interval = ActiveExecution.sleep_til_ready, InstanceConcurrencyContext.interval_to_next_pending_claim_check

    def sleep_til_ready(self: ActiveExecution) -> None:
        end = time.monotonic() + min(max(self.sleep_interval(), INTERRUPT_POLL_S / 2), POOL_CHECK_MAX_S)
        while True:
            if check_captured_interrupt():
                on_interrupt()
                raise DagsterExecutionInterruptedError("interrupted (SIGINT or SIGTERM) while waiting for a "
                                                       "concurrency pool slot")
            left = end - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, INTERRUPT_POLL_S))

    ActiveExecution.sleep_til_ready = sleep_til_ready
    InstanceConcurrencyContext.interval_to_next_pending_claim_check = _interval_to_next_pending_claim_check
    try:
        yield
    finally:
        ActiveExecution.sleep_til_ready = sleep
        InstanceConcurrencyContext.interval_to_next_pending_claim_check = interval
