"""The dask executor (RAG_TTC_EXECUTOR=dask, defs/executors.py): every step of a run one task on an existing
dask.distributed cluster, executed by dagster-dask's worker function on whichever worker dask picks. dask and
dagster-dask are imported only when a run executes, so loading the definitions never needs them."""

from __future__ import annotations

from dagster import (DagsterInvariantViolationError, Executor, StringSource, executor,
                     multiple_process_executor_requirements, raise_execution_interrupts)

from rag_ttc_assets.defs.dagster_private import RetryMode


def dask_executor(address_env: str):
    """The executor definition, its scheduler's address read from `address_env` when a run starts."""

    @executor(name="dask", requirements=multiple_process_executor_requirements(),
              config_schema={"address": StringSource})
    def dask(init_context):
        """Each step a task on the dask.distributed cluster at `address`, run by dagster-dask's worker function."""
        return DaskStepsExecutor(init_context.executor_config["address"])

    return dask.configured({"address": {"env": address_env}}, name="dask")


class _Sealed:
    """Carries the step's arguments through dask untouched. dask looks for futures inside every tuple it is
    handed, and a DagsterRun is a tuple whose `run_op_concurrency` record (set when steps have pools, as
    this project's `provider` steps do) refuses iteration: dagster-dask 0.29.27's own executor fails there."""

    def __init__(self, value):
        self.value = value


def _step_on_worker(dependencies, sealed: _Sealed):
    from dagster_dask.executor import query_on_dask_worker

    return query_on_dask_worker(dependencies, *sealed.value)


class DaskStepsExecutor(Executor):
    """dagster-dask's executor for an existing scheduler, its arguments sealed (see _Sealed): every step one
    dask task, submitted after the tasks of its upstream steps, its events stored by the worker that ran it."""

    def __init__(self, address: str):
        self.address = address

    @property
    def retries(self):
        return RetryMode.DISABLED

    def execute(self, plan_context, execution_plan):
        import dask.distributed
        from dagster_dask.executor import get_dask_resource_requirements

        if not plan_context.instance.is_persistent:
            raise DagsterInvariantViolationError("the dask executor needs a persistent Dagster instance (DAGSTER_HOME)")
        ref = plan_context.instance.get_ref()
        futures = {}
        with dask.distributed.Client(self.address) as client:
            for level in execution_plan.get_steps_to_execute_by_level():
                for step in level:
                    upstream = [futures[k] for inp in step.step_inputs for k in inp.dependency_keys]
                    args = (plan_context.reconstructable_job, plan_context.dagster_run, plan_context.run_config,
                            [step.key], ref, execution_plan.known_state)
                    futures[step.key] = client.submit(_step_on_worker, upstream, _Sealed(args),
                                                      key=f"{plan_context.job_name}.{step.key}",
                                                      resources=get_dask_resource_requirements(step.tags))
            done = dask.distributed.as_completed(list(futures.values()), with_results=True)
            for _, events in _interruptible(done):
                yield from events


def _interruptible(results):
    """Each next result awaited with interrupts raised (a run's termination stops the wait), yielded outside."""
    while True:
        with raise_execution_interrupts():
            try:
                item = next(results)
            except StopIteration:
                return
        yield item
