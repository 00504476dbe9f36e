"""The cluster fragments of docs/cluster/ load as Dagster 1.13 instance configs.

What is checked here, for every fragment:
  - Dagster's own instance loader (`dagster_instance_config`, what `DagsterInstance.from_config`
    runs first) accepts the file: every top-level key, the `concurrency` section, the
    `run_coordinator` (QueuedRunCoordinator, whose class config is validated too) and the whole
    `storage: postgres:` section (its schema, `pg_config`, is part of dagster itself);
  - the module/class/config shape of `run_launcher`.
What needs a package that is not a dependency of this project (dagster-k8s, dagster-celery-k8s) is
checked only when that package is importable: the launcher's own config against its `config_type()`.
Without it that part is skipped, with the reason in the skip message. dagster-postgres is a test
dependency: without it the check skips, and fails under RAG_TTC_REQUIRE_ALL (.ci/run). An instance
with Postgres storage is never opened here (e2e/test_cluster.py does, on a real server).
"""

from __future__ import annotations

import importlib
import shutil

import pytest
import yaml

from rag_ttc_assets_tests.conftest import REPO
from rag_ttc_assets_tests.support.required import skip_or_fail

CLUSTER = REPO / "docs" / "cluster"
FRAGMENTS = {
    "postgres.dagster.yaml": "dagster._core.launcher",
    "k8s.dagster.yaml": "dagster_k8s",
    "celery.dagster.yaml": "dagster_celery_k8s",
}


def _load(tmp_path, name):
    from dagster._core.instance.config import dagster_instance_config

    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(CLUSTER / name, home / "dagster.yaml")
    return dagster_instance_config(str(home))[0]


def test_every_fragment_is_listed():
    assert sorted(p.name for p in CLUSTER.glob("*.dagster.yaml")) == sorted(FRAGMENTS)


@pytest.mark.parametrize("name", sorted(FRAGMENTS))
def test_fragment_passes_dagsters_instance_schema(tmp_path, name, monkeypatch):
    from dagster._config import validate_config
    from dagster._core.instance.config import ConcurrencyConfig
    from dagster._core.run_coordinator.queued_run_coordinator import QueuedRunCoordinator

    for var in ("DAGSTER_PG_HOST", "DAGSTER_PG_DB", "DAGSTER_PG_USERNAME", "DAGSTER_PG_PASSWORD",
                "DAGSTER_CELERY_BROKER_URL"):
        monkeypatch.setenv(var, "x")
    monkeypatch.setenv("DAGSTER_PG_PORT", "5432")
    config = _load(tmp_path, name)
    raw = yaml.safe_load((CLUSTER / name).read_text())

    # Postgres storage for runs, events and schedules, validated by dagster's pg_config schema.
    pg = config["storage"]["postgres"]["postgres_db"]
    assert set(pg) >= {"hostname", "db_name", "username", "password"} and pg["port"] in (5432, {"env": "DAGSTER_PG_PORT"})
    assert pg["scheme"] == "postgresql+psycopg2"  # SQLAlchemy 2.1's bare postgresql:// means psycopg 3
    # The queue of the project's dagster.yaml, with a run limit.
    assert config["run_coordinator"]["class"] == "QueuedRunCoordinator"
    assert validate_config(QueuedRunCoordinator.config_type(), config["run_coordinator"].get("config") or {}).success
    runs = config["concurrency"]["runs"]["max_concurrent_runs"]
    assert runs == raw["concurrency"]["runs"]["max_concurrent_runs"] >= 2
    pools = ConcurrencyConfig.from_concurrency_settings(config["concurrency"], None).pool_config
    assert pools.default_pool_limit == 1  # the provider pool stays one step at a time

    launcher = config["run_launcher"]
    assert launcher["module"] == FRAGMENTS[name]


@pytest.mark.parametrize("name", ["k8s.dagster.yaml", "celery.dagster.yaml"])
def test_launcher_config_passes_the_launchers_own_schema(tmp_path, name, monkeypatch):
    from dagster._config import validate_config

    monkeypatch.setenv("DAGSTER_CELERY_BROKER_URL", "pyamqp://guest@localhost//")
    launcher = yaml.safe_load((CLUSTER / name).read_text())["run_launcher"]
    try:
        module = importlib.import_module(launcher["module"])
    except ImportError as e:
        pytest.skip(f"{launcher['module']} is not installed ({e}); only Dagster's instance schema checked "
                    f"{name} (test_fragment_passes_dagsters_instance_schema), not the launcher's own fields")
    cls = getattr(module, launcher["class"])
    result = validate_config(cls.config_type(), launcher["config"])
    assert result.success, [e.message for e in result.errors]
    env = launcher["config"]["env_vars"]
    assert {"RAG_TTC_HOME=/lab/home", "RAG_TTC_DATASETS=/lab/datasets", "RAG_TTC_ARMS=/lab/arms.yaml"} <= set(env)


def test_postgres_storage_class_resolves_when_dagster_postgres_is_installed():
    try:
        from dagster_postgres import PostgresEventLogStorage, PostgresRunStorage, PostgresScheduleStorage
    except ImportError as e:
        skip_or_fail(f"dagster-postgres is not installed ({e}); the storage section was checked against "
                     "dagster's own pg_config schema only, and no Postgres server was contacted")
    assert PostgresRunStorage and PostgresEventLogStorage and PostgresScheduleStorage
