"""One arm's run through the executor of the definitions (RAG_TTC_EXECUTOR: multiprocess, or dask on a
cluster), for `rag-ttc run`: the same run an in-process one is, in the same instance, with its steps
executed where the executor puts them."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

DEFINITIONS_MODULE = "rag_ttc_assets.definitions"


@dataclass
class ExecutorRunResult:
    run_id: str
    success: bool
    all_events: list = field(default_factory=list)


@dataclass
class _Entry:
    """What an instance event listener is handed (EventLogEntry's dagster_event and timestamp): the steps'
    events are stored by the processes that ran them, and reach this process as the executor yields them."""

    dagster_event: object
    timestamp: float


def execute_with_executor(job, instance, arm: str, asset_keys, run_id: str, tags: dict, run_config: dict,
                          listener) -> ExecutorRunResult:
    """Create the run (partition `arm`, the selected assets and their checks) and execute it in this process
    as a run worker: the executor hands the steps to its processes (a subprocess each; dask workers)."""
    from dagster import DagsterRunStatus

    # late: dagster, when a run executes (the CLI's parser imports no dagster)
    from rag_ttc_assets.defs.dagster_private import ReconstructableRepository, execute_run_iterator

    recon = ReconstructableRepository.for_module(DEFINITIONS_MODULE, "defs", working_directory=os.getcwd())
    recon_job = recon.get_reconstructable_job(job.name)
    run = instance.create_run_for_job(job_def=job, run_id=run_id, run_config=run_config,
                                      tags={**tags, "dagster/partition": arm},
                                      asset_selection=frozenset(asset_keys),
                                      job_code_origin=recon_job.get_python_origin())
    events = []
    for event in execute_run_iterator(recon_job, run, instance):
        events.append(event)
        listener(_Entry(event, time.time()))
    status = instance.get_run_by_id(run_id).status
    return ExecutorRunResult(run_id, status == DagsterRunStatus.SUCCESS, events)
