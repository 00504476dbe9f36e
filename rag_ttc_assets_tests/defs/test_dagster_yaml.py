"""The project's dagster.yaml loads as an instance, with the run queue and pool limits it states."""

import shutil
import time

import yaml
from dagster import DagsterInstance

from rag_ttc_assets_tests.conftest import REPO


def test_instance_from_dagster_yaml_has_its_run_and_pool_limits(tmp_path):
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    stated = yaml.safe_load((REPO / "dagster.yaml").read_text())["concurrency"]

    with DagsterInstance.from_config(str(home)) as instance:  # validates the file against 1.13's schema
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
        config = instance.get_concurrency_config()
        # What the run queue daemon of `dagster dev` enforces.
        assert config.run_queue_config.max_concurrent_runs == stated["runs"]["max_concurrent_runs"] == 2
        assert config.pool_config.pool_granularity.value == stated["pools"]["granularity"] == "op"
        assert config.pool_config.default_pool_limit == stated["pools"]["default_limit"]
        # An unconfigured pool gets the default limit; "provider" has none of its own yet.
        info = instance.event_log_storage.get_concurrency_info("provider")
        assert info.limit == stated["pools"]["default_limit"]
        assert info.using_default_limit

        # Raising it for one provider, as the file's comment says (`dagster instance concurrency set`).
        instance.event_log_storage.set_concurrency_slots("provider", 4)
        info = instance.event_log_storage.get_concurrency_info("provider")
        assert (info.limit, info.using_default_limit) == (4, False)


def test_provider_is_the_only_pool_and_holds_the_provider_bound_assets():
    """So `pools.default_limit` is the provider limit, and nothing else is limited by it."""
    import rag_ttc_assets.definitions  # noqa: F401  (registers the per-arm assets)
    from rag_ttc_assets.defs.arm_registry import SPECS

    pools = {s.fn.__name__: s.pool for s in SPECS if s.pool}
    # representations: a contextual arm's builder model is called there (a template arm's step takes a slot briefly).
    assert pools == {"representations": "provider", "answers": "provider", "judge_verdicts": "provider",
                     "request_judgments": "provider"}


def test_a_lost_wake_up_of_the_provider_pool_is_woken_and_the_limit_still_holds(tmp_path):
    """Dagster's lost wake-up, on the project's instance: the holder frees the pool's one slot between a waiting
    step's look for a free slot (none) and its queueing, so the queued step is never assigned. `rag-ttc run`'s
    watcher (cli.materialize.wake_pending_steps) assigns it; with the slot held, it assigns nothing."""
    from rag_ttc_assets.cli.materialize import waking_pending_steps, wake_pending_steps

    home = tmp_path / "dh"
    home.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    with DagsterInstance.from_config(str(home)) as instance:
        storage = instance.event_log_storage
        storage.initialize_concurrency_limit_to_default("provider")  # as a step's first claim does: one slot
        assert storage.claim_concurrency_slot("provider", "run-a", "answers").is_claimed  # run a holds the slot
        assert not storage.claim_concurrency_slot("provider", "run-b", "answers").is_claimed  # b queued behind it
        assert wake_pending_steps(instance, ["provider"]) == []  # held: nothing to wake, b stays unassigned
        assert storage.check_concurrency_claim("provider", "run-b", "answers").assigned_timestamp is None
        storage.free_concurrency_slot_for_step("run-a", "answers")  # the normal wake-up: b is assigned
        assert storage.claim_concurrency_slot("provider", "run-b", "answers").is_claimed
        storage.free_concurrency_slot_for_step("run-b", "answers")

        # The lost one: c queued unassigned beside a free slot (what the race leaves), as Dagster would write it.
        storage.add_pending_step("provider", "run-c", "representations", should_assign=False)
        for _ in range(3):
            assert not storage.claim_concurrency_slot("provider", "run-c", "representations").is_claimed
        with waking_pending_steps(instance, every_s=0.05):
            deadline = time.monotonic() + 10
            while not storage.claim_concurrency_slot("provider", "run-c", "representations").is_claimed:
                assert time.monotonic() < deadline, "the queued step was never woken"
                time.sleep(0.05)
        # The limit holds: a fourth step waits while c holds the slot, and a wake-up does not assign it.
        assert not storage.claim_concurrency_slot("provider", "run-d", "answers").is_claimed
        assert wake_pending_steps(instance, ["provider"]) == []
        assert not storage.claim_concurrency_slot("provider", "run-d", "answers").is_claimed
