"""Materializing arms through the Dagster definitions, as the UI does, recorded in DAGSTER_HOME."""

from __future__ import annotations

import os
import socket
import sys
import threading
import uuid
from contextlib import contextmanager
from pathlib import Path

from rag_ttc_assets.adapters.store import file_lock
from rag_ttc_assets.cli.common import CliError, dagster_home
from rag_ttc_assets.cli.executor_run import execute_with_executor
from rag_ttc_assets.core.roles import PROVIDER_POOL
from rag_ttc_assets.defs import executors
from rag_ttc_assets.defs.graph import STAGES
from rag_ttc_assets.defs.progress_reporter import reporting
from rag_ttc_assets.lab import Lab
from rag_ttc_assets.terminal import StepEvents, Terminal, direct_stream


def open_instance(home: Path):
    """The Dagster instance of `home`, its storages created one process at a time: two `rag-ttc run`s starting
    on a fresh DAGSTER_HOME could otherwise both stamp its sqlite schema, and alembic then finds two heads."""
    from dagster import DagsterInstance

    from rag_ttc_assets.cli.instance_check import check_postgres_storage  # late: yaml loads only when this runs

    check_postgres_storage(home)  # a Postgres that refuses: one line naming the setting, before any work
    with file_lock(home / ".rag_ttc-instance.lock"):
        return DagsterInstance.get()  # creates (and on a fresh home, stamps) every storage


def materialize_arms(arm_names: list[str], stage: str, force: bool = False, verbose: bool = False,
                     keep_going: bool = False) -> dict[str, dict]:
    """Materialize `stage` for each arm through the project's job, recorded in DAGSTER_HOME.

    Only what Dagster calls stale runs, with the reasons it does not see (see `defs.staleness.to_run`); `force`
    runs every asset of the stage. stderr gets one line per step as it finishes and the progress of long
    stages; `verbose` adds Dagster's own event log. A run that fails is recorded in the arm's run record
    (`stages.run_record.record_unfinished`); then CliError, or with `keep_going` the next arm, the failed arm's
    entry holding `failed` (`run_failure`). A run SIGINT or SIGTERM ended, also while it waited for a pool slot
    (`defs.dagster_private.interruptible_waits`), is recorded interrupted and raises RunInterrupted."""
    from dagster import AssetKey

    from rag_ttc_assets.defs.dagster_private import interruptible_waits  # late: dagster loads only when this runs
    from rag_ttc_assets.defs.arm_registry import CHECK_SPECS  # late: dagster loads only when this runs
    from rag_ttc_assets.defs.staleness import to_run  # late: dagster loads only when this runs
    from rag_ttc_assets.definitions import JOB, build_definitions  # late: dagster, polars load only when this runs
    from rag_ttc_assets.stages.run_record import FAILED, INTERRUPTED, record_unfinished  # late: polars

    home = dagster_home()
    lab = Lab.from_env()
    defs = build_definitions(lab)
    job = defs.resolve_job_def(JOB)
    steps = [*STAGES[stage], *(s.fn.__name__ for s in CHECK_SPECS)]
    # Dagster's lines share stderr with ours in verbose mode: no live bar to tear, progress as plain lines.
    # The step lines go to stderr itself, not through Dagster's compute-log capture (which points fd 2 at a file
    # while steps run and mirrors it back with `tail -F`, killed at the run's end: the last lines could be lost).
    with direct_stream(sys.stderr) as err:
        terminal = Terminal(err, live=False if verbose else None, arm_width=max(map(len, arm_names)),
                            step_width=max(map(len, steps)))
        out = {}
        with open_instance(home) as instance:
            reap_dead_runs(instance)
            for arm in arm_names:
                why = to_run(instance, lab, defs.resolve_asset_graph(), arm, STAGES[stage], force)
                todo = list(why)
                if not todo:
                    out[arm] = {"run_id": None, "ran": [], "why": {}}
                    continue
                # The run's id chosen here, so its events reach the terminal from the first one (RUN_START).
                run_id = str(uuid.uuid4())
                waited: dict[str, bool] = {}  # "interrupted": a signal ended the run's wait for a pool slot
                steps_told = StepEvents(terminal, arm, failed="FAILED" if verbose else
                                        "FAILED; rag-ttc run --verbose prints its traceback")
                if executors.chosen() != "default":  # RAG_TTC_EXECUTOR: the steps run in the executor's processes
                    with waking_pending_steps(instance):
                        result = execute_with_executor(job, instance, arm, [AssetKey(a) for a in todo], run_id,
                                                       _cli_tags(), _console_config(verbose), steps_told)
                else:
                    instance.add_event_listener(run_id, steps_told)
                    with reporting(run_id, terminal), waking_pending_steps(instance), \
                            interruptible_waits(lambda: _canceling(instance, run_id, waited)):
                        result = job.execute_in_process(partition_key=arm, instance=instance,
                                                        asset_selection=[AssetKey(a) for a in todo],
                                                        raise_on_error=False, tags=_cli_tags(), run_id=run_id,
                                                        run_config=_console_config(verbose))
                if not result.success and (where := interrupted(result, waited)):
                    # SIGINT or SIGTERM: no arm after this one starts.
                    record = record_unfinished(lab.runs, arm, result.run_id, stage, INTERRUPTED, {
                        **run_failure(result), "reason": f"interrupted (SIGINT or SIGTERM) {where}"})
                    rest = arm_names[arm_names.index(arm) + 1:]
                    raise RunInterrupted(f"arm {arm!r}: run {result.run_id} interrupted {where}; Dagster records it "
                                         f"{instance.get_run_by_id(result.run_id).status.value}, its run record "
                                         f"{record} says interrupted"
                                         + (f"; not started: {', '.join(rest)}" if rest else ""))
                if not result.success:
                    failure = run_failure(result)
                    failure["run_record"] = str(record_unfinished(lab.runs, arm, result.run_id, stage, FAILED, failure))
                    failure["text"] = failure_text(result)
                    if not keep_going:
                        raise CliError(f"arm {arm!r}: run {result.run_id} failed:\n{failure_text(result)}")
                    out[arm] = {"run_id": result.run_id, "ran": todo, "why": why, "failed": failure}
                    continue
                out[arm] = {"run_id": result.run_id, "ran": todo, "why": why}
        return out


def _console_config(verbose: bool) -> dict:
    """Dagster's console logger: every event (DEBUG) when verbose; else none. Its errors are a failing step's
    traceback through Dagster's frames and one line per step not executed after it; the step lines and the
    failure's message (`failure_text`) say what a user acts on, and the event log in DAGSTER_HOME, which the UI
    reads, keeps every event either way."""
    return {"loggers": {"console": {"config": {"log_level": "DEBUG" if verbose else "CRITICAL"}}}}


def _cli_tags() -> dict[str, str]:
    return {"rag_ttc/source": "cli", "rag_ttc/pid": str(os.getpid()), "rag_ttc/host": socket.gethostname()}


def reap_dead_runs(instance) -> list[str]:
    """Runs this CLI executed in a process that has since died (killed): nothing monitors an in-process
    run, so it stays STARTED for ever and keeps its `provider` pool slot, and every later provider-bound
    step would wait for that slot for ever. Mark them canceled and free their slots."""
    from dagster import DagsterRunStatus, RunsFilter

    from rag_ttc_assets.stages.run_record import _alive  # late: polars, pytrec_eval load only when this runs

    reaped = []
    for run in instance.get_runs(RunsFilter(statuses=[DagsterRunStatus.STARTED], tags={"rag_ttc/source": "cli"})):
        pid, host = run.tags.get("rag_ttc/pid"), run.tags.get("rag_ttc/host")
        if pid is None or host != socket.gethostname() or _alive(int(pid), host):
            continue
        instance.report_run_canceled(run, message=f"the rag-ttc process ({pid}) ended before the run did")
        if instance.event_log_storage.supports_global_concurrency_limits:
            instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        reaped.append(run.run_id)
    return reaped


POOL_WAKE_EVERY_S = 2.0


def wake_pending_steps(instance, pools) -> list[str]:
    """Assign a pool's longest-waiting step when the pool has a slot no step holds; return the pools looked at with
    such a slot. Dagster's op-pool claim can lose a wake-up: a step that finds no unassigned slot queues itself
    unassigned, and if the step holding the slot frees it between that check and the queueing, the free finds no one
    to assign and the queued step waits for ever beside a free slot (seen: two `rag-ttc run` processes on one
    DAGSTER_HOME, `representations` waiting 600 s on an empty pool). Assigning never exceeds the limit: the claim
    itself takes a slot row, and a step assigned without one is blocked until one frees."""
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return []
    free = [pool for pool in pools if storage.has_unassigned_slots(pool)]
    if free:
        storage.assign_pending_steps(free)
    return free


@contextmanager
def waking_pending_steps(instance, pools=(PROVIDER_POOL,), every_s: float = POOL_WAKE_EVERY_S):
    """While a run executes in this process, wake its pool's lost wake-ups every `every_s` (wake_pending_steps)."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every_s):
            wake_pending_steps(instance, pools)

    thread = threading.Thread(target=loop, name="rag-ttc-pool-wake", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


class RunInterrupted(CliError):
    """A run ended by SIGINT or SIGTERM: `rag-ttc` exits 130, as a shell does for an interrupted command."""

    exit_code = 130


def _canceling(instance, run_id: str, waited: dict[str, bool]) -> None:
    """Mark the run canceling, so that Dagster, ending it, records it canceled (not failed)."""
    waited["interrupted"] = True
    run = instance.get_run_by_id(run_id)
    if run is not None and not run.is_finished:
        instance.report_run_canceling(run, message="rag-ttc received SIGINT or SIGTERM while the run waited for "
                                                   "a concurrency pool slot")


def interrupted(result, waited: dict[str, bool]) -> str | None:
    """Where a failed run was interrupted (SIGINT, SIGTERM): `while waiting ...` or `in step ...`; None when it
    was not (a step raised)."""
    if waited.get("interrupted"):
        return f"while waiting for a `{PROVIDER_POOL}` pool slot (another run held it)"
    for ev in result.all_events:
        if ev.is_step_failure and getattr(ev.step_failure_data.error_source, "value", None) == "INTERRUPT":
            return f"in step {ev.step_key}"
    return None


def run_failure(result) -> dict:
    """A failed run's first failed step: its key, the exception's class and message (the user code's, not
    Dagster's wrapper); every failed step; the steps that succeeded before it."""
    failed, succeeded = [], []
    for ev in result.all_events:
        if ev.is_step_failure:
            err = ev.step_failure_data.error
            e = err.cause if err and err.cause else err
            failed.append({"step": ev.step_key, "exception": e.cls_name if e else None,
                           "error": (e.message if e else "").strip()})
        elif ev.is_step_success:
            succeeded.append(ev.step_key)
    first = failed[0] if failed else {"step": None, "exception": None, "error": failure_text(result).strip()}
    return {**first, "failed_steps": [f["step"] for f in failed], "steps_succeeded": succeeded}


def failure_text(result) -> str:
    lines = []
    for ev in result.all_events:
        if ev.is_step_failure:
            err = ev.step_failure_data.error
            msg = err.cause.message if err and err.cause else (err.message if err else "")
            lines.append(f"  step {ev.step_key}: {msg.strip()}")
    if not lines:  # the run failed outside its steps (the executor: a worker, the cluster's scheduler)
        lines = [f"  {ev.message}" + (f": {ev.event_specific_data.error.message.strip()}"
                                      if getattr(ev.event_specific_data, "error", None) else "")
                 for ev in result.all_events if ev.event_type_value in ("PIPELINE_FAILURE", "RUN_FAILURE")]
    return "\n".join(lines) or "  (no step failure recorded)"


def compare_all() -> dict:
    """Materialize `arm_comparisons` (every pair in `comparisons`, every family's sweep plot) in DAGSTER_HOME."""
    from rag_ttc_assets.definitions import build_definitions  # late: dagster, polars load only when this runs

    home = dagster_home()
    job = build_definitions().resolve_job_def("comparisons_job")
    with open_instance(home) as instance:
        result = job.execute_in_process(instance=instance, raise_on_error=False, tags={"rag_ttc/source": "cli"},
                                        run_config=_console_config(False))
        if not result.success:
            raise CliError(f"arm_comparisons: run {result.run_id} failed:\n{failure_text(result)}")
        meta = result.get_asset_materialization_events()[0].materialization.metadata
    return {k: getattr(v, "value", v) for k, v in meta.items() if not k.startswith("sweep_") or k == "sweep_plots"
            and k != "failure_flow_plot"} | {"run_id": result.run_id}


def materialize_diagnosis() -> str:
    """Materialize the `diagnosis` asset in DAGSTER_HOME; its run id."""
    from rag_ttc_assets.definitions import build_definitions  # late: dagster loads only when this runs

    home = dagster_home()
    job = build_definitions().resolve_job_def("diagnosis_job")
    with open_instance(home) as instance:
        result = job.execute_in_process(instance=instance, raise_on_error=False, tags={"rag_ttc/source": "cli"},
                                        run_config=_console_config(False))
        if not result.success:
            raise CliError(f"diagnosis: run {result.run_id} failed:\n{failure_text(result)}")
    return result.run_id
