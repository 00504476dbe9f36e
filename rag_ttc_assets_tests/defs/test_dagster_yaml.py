"""The project's dagster.yaml loads as an instance, with the run queue and pool limits it states."""

import shutil

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
    from rag_ttc_assets.defs.registry import SPECS

    pools = {s.fn.__name__: s.pool for s in SPECS if s.pool}
    # representations: a contextual arm's builder model is called there (a template arm's step takes a slot briefly).
    assert pools == {"representations": "provider", "answers": "provider", "judge_verdicts": "provider",
                     "request_judgments": "provider"}
