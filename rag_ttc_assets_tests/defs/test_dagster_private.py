"""What this project relies on from Dagster's private modules, pinned (defs/dagster_private.py is the one place that
imports them): an upgrade that changes any of it fails here, not in a user's run."""

import ast
import sys
import textwrap
from pathlib import Path

from dagster import (AssetKey, AssetObservation, AssetSpec, DagsterEventType, DagsterInstance, DagsterRunStatus,
                     Definitions, Executor, StaticPartitionsDefinition, asset, define_asset_job, in_process_executor,
                     materialize)

from rag_ttc_assets.defs import dagster_private
from rag_ttc_assets.defs.dagster_private import (ReconstructableRepository, RetryMode, execute_run_iterator,
                                                 stale_status_resolver)

PACKAGE = Path(dagster_private.__file__).resolve().parents[1]
PARTS = StaticPartitionsDefinition(["a"])


def test_only_dagster_private_imports_dagsters_private_modules() -> None:
    hits = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom) else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            if any(n.startswith("dagster._") for n in names) and path.name != "dagster_private.py":
                hits.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert hits == []


def _observe(instance, version: str) -> None:
    """The observed source's data version, recorded as defs/staleness.py records an arm's configuration."""
    instance.report_runless_asset_event(AssetObservation("cfg", partition="a",
                                                         tags={"dagster/data_version": version}))


def test_the_stale_status_resolver_says_missing_fresh_and_stale_with_the_root_cause() -> None:
    """`rag-ttc run` reads Dagster's status per asset partition, and the root cause of a stale one: an asset reading
    an observed source (an arm's configuration) is stale, for that partition, once the source's version changes."""
    source = AssetSpec("cfg", partitions_def=PARTS)

    @asset(partitions_def=PARTS, code_version="1", deps=[source])
    def down():
        return 2

    graph = Definitions(assets=[source, down]).resolve_asset_graph()
    with DagsterInstance.ephemeral() as instance:
        _observe(instance, "v1")
        assert stale_status_resolver(instance, graph).get_status(AssetKey("down"), "a").value == "MISSING"
        assert materialize([down], partition_key="a", instance=instance).success
        assert stale_status_resolver(instance, graph).get_status(AssetKey("down"), "a").value == "FRESH"
        _observe(instance, "v2")
        resolver = stale_status_resolver(instance, graph)
        assert resolver.get_status(AssetKey("down"), "a").value == "STALE"
        causes = resolver.get_stale_root_causes(AssetKey("down"), "a")
        assert [(c.asset_key, c.partition_key) for c in causes] == [(AssetKey("cfg"), "a")]
        assert "data version" in causes[0].reason


def test_an_executor_subclass_reports_disabled_retries() -> None:
    """The dask executor subclasses the public Executor and answers `retries` with RetryMode.DISABLED."""

    class Probe(Executor):
        @property
        def retries(self):
            return RetryMode.DISABLED

        def execute(self, plan_context, execution_plan):
            return iter(())

    assert Probe().retries == RetryMode.DISABLED and RetryMode.DISABLED.value == "disabled"


def test_a_created_run_executes_in_this_process_through_a_reconstructable_repository(tmp_path, monkeypatch) -> None:
    """cli/executor_run.py: the repository reconstructed from a module's `defs`, the run created with its job's
    origin, `execute_run_iterator` yielding the run's events as they happen, ending in RUN_SUCCESS."""
    (tmp_path / "probe_defs.py").write_text(textwrap.dedent("""
        from dagster import Definitions, asset, define_asset_job, in_process_executor

        @asset
        def one():
            return 1

        defs = Definitions(assets=[one], jobs=[define_asset_job("probe_job")], executor=in_process_executor)
        """), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "probe_defs", raising=False)
    recon = ReconstructableRepository.for_module("probe_defs", "defs", working_directory=str(tmp_path))
    recon_job = recon.get_reconstructable_job("probe_job")
    job = Definitions(assets=[asset(name="one")(lambda: 1)], jobs=[define_asset_job("probe_job")],
                      executor=in_process_executor).resolve_job_def("probe_job")
    with DagsterInstance.ephemeral() as instance:
        run = instance.create_run_for_job(job_def=job, job_code_origin=recon_job.get_python_origin())
        kinds = [e.event_type for e in execute_run_iterator(recon_job, run, instance)]
        assert DagsterEventType.ASSET_MATERIALIZATION in kinds and kinds[-1] == DagsterEventType.RUN_SUCCESS
        assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.SUCCESS


def test_the_dask_executor_waits_for_each_result_with_interrupts_raised() -> None:
    """What replaced `dagster._utils.iterate_with_context`: every item through, each awaited inside the public
    `raise_execution_interrupts` context."""
    from rag_ttc_assets.defs.dask_steps import _interruptible

    assert list(_interruptible(iter([(1, "a"), (2, "b")]))) == [(1, "a"), (2, "b")]
    assert list(_interruptible(iter(()))) == []


def test_a_step_waiting_for_a_pool_slot_sleeps_and_a_sigint_ends_its_run(tmp_path) -> None:
    """The in-process executor's wait for a pool slot, within `interruptible_waits`: it sleeps between claim checks
    (Dagster 1.13's own interval is never above 0), and a SIGINT received while it waits ends the run at once
    (Dagster 1.13 looks at the signal only when a step starts). The patched methods are Dagster's again after."""
    import os
    import signal
    import threading
    import time

    from dagster._core.execution.plan.active import ActiveExecution

    (tmp_path / "dagster.yaml").write_text("concurrency:\n  pools:\n    granularity: op\n    default_limit: 1\n")

    @asset(pool="p")
    def slot_user() -> int:
        return 1

    original = ActiveExecution.sleep_til_ready
    job = Definitions(assets=[slot_user], jobs=[define_asset_job("j")]).resolve_job_def("j")
    with DagsterInstance.from_config(str(tmp_path)) as instance:
        storage = instance.event_log_storage
        storage.set_concurrency_slots("p", 1)
        assert storage.claim_concurrency_slot("p", "holder", "x").is_claimed
        waited: dict[str, float] = {}

        def interrupt_once_waiting() -> None:
            while not [s for s in storage.get_concurrency_info("p").pending_steps if s.run_id != "holder"]:
                time.sleep(0.05)
            cpu = time.process_time()
            time.sleep(1.5)
            waited["cpu"] = time.process_time() - cpu
            waited["sent"] = time.monotonic()
            os.kill(os.getpid(), signal.SIGINT)

        calls = []
        thread = threading.Thread(target=interrupt_once_waiting, daemon=True)
        thread.start()
        with dagster_private.interruptible_waits(lambda: calls.append("interrupted")):
            assert ActiveExecution.sleep_til_ready is not original
            result = job.execute_in_process(instance=instance, raise_on_error=False)
        took = time.monotonic() - waited["sent"]
        thread.join()
        assert not result.success and calls == ["interrupted"]
        assert took < 3, took
        assert waited["cpu"] < 0.3, waited  # a busy wait spends a core: about 1.5 s
        assert not [s for s in storage.get_concurrency_info("p").pending_steps if s.run_id != "holder"]
    assert ActiveExecution.sleep_til_ready is original
