"""Every use of Dagster's private modules (`dagster._core`, `dagster._utils`), in one place: each name below has
no public API in Dagster 1.13, and defs/test_dagster_private.py pins the behaviour this project relies on, so an
upgrade that changes it fails there first.

- `stale_status_resolver`: Dagster's own stale status of an asset partition and its root causes, what the UI's
  partition view shows, read by `rag-ttc run` to say why it runs an asset (defs/staleness.py).
- `RetryMode`: what an `Executor`'s `retries` returns (the dask executor, defs/dask_steps.py).
- `ReconstructableRepository`, `execute_run_iterator`: a created run executed in this process as its run worker,
  its steps in the executor's processes (`rag-ttc run` with RAG_TTC_EXECUTOR, cli/executor_run.py).
"""

from __future__ import annotations

from dagster import DagsterInstance
from dagster._core.definitions.data_version import CachingStaleStatusResolver
from dagster._core.definitions.reconstruct import ReconstructableRepository
from dagster._core.execution.api import execute_run_iterator
from dagster._core.execution.retries import RetryMode
from dagster._core.loader import LoadingContext

__all__ = ["ReconstructableRepository", "RetryMode", "execute_run_iterator", "stale_status_resolver"]


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
