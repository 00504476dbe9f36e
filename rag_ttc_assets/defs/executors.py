"""Which executor runs the steps of an arm's run, chosen by RAG_TTC_EXECUTOR when the definitions load:
Dagster's default, `multiprocess`, or `dask` (steps on the dask.distributed cluster at RAG_TTC_DASK_SCHEDULER).
The cluster packages are imported only when asked for, so the default path never needs them."""

from __future__ import annotations

import os
from collections.abc import Mapping

EXECUTOR_ENV = "RAG_TTC_EXECUTOR"
SCHEDULER_ENV = "RAG_TTC_DASK_SCHEDULER"
CHOICES = ("default", "multiprocess", "dask")


class ExecutorError(ValueError):
    pass


def chosen(env: Mapping[str, str] = os.environ) -> str:
    name = (env.get(EXECUTOR_ENV) or "default").strip()
    if name not in CHOICES:
        raise ExecutorError(f"{EXECUTOR_ENV}={name!r}: unknown executor; use one of {', '.join(CHOICES)} "
                            "(unset: Dagster's default, in-process or multiprocess by run config)")
    return name


def executor_from_env(env: Mapping[str, str] = os.environ):
    """The executor definition for `Definitions(executor=...)`, or None for Dagster's default."""
    name = chosen(env)
    if name == "default":
        return None
    if name == "multiprocess":
        from dagster import multiprocess_executor

        # Each step a fork of one server process that imported the code location once, not a fresh
        # interpreter paying the imports (torch, lancedb, litellm) per step.
        return multiprocess_executor.configured(
            {"start_method": {"forkserver": {"preload_modules": ["rag_ttc_assets.definitions"]}}}, name="multiprocess")
    if not env.get(SCHEDULER_ENV):
        raise ExecutorError(f"{EXECUTOR_ENV}=dask needs {SCHEDULER_ENV}, the scheduler's address "
                            "(tcp://host:8786, what `dask scheduler` prints)")
    try:
        import dagster_dask  # noqa: F401  (its worker function runs every step)
    except ImportError as e:
        raise ExecutorError(f"{EXECUTOR_ENV}=dask needs dagster-dask ({e}); "
                            "pip install -c constraints.txt '.[cluster]'") from None
    from rag_ttc_assets.defs.dask_steps import dask_executor  # late: dagster loads only when this runs

    return dask_executor(SCHEDULER_ENV)
