"""check_postgres_storage: the instance's Postgres settings named in one line when they cannot work. (A
refused connection through `rag-ttc run`, with a real server elsewhere, is in e2e/test_cluster.py.)"""

import shutil

import pytest

from rag_ttc_assets.cli.common import CliError
from rag_ttc_assets.cli.instance_check import check_postgres_storage
from rag_ttc_assets_tests.conftest import REPO


def test_sqlite_instances_are_not_checked(tmp_path):
    shutil.copy(REPO / "dagster.yaml", tmp_path / "dagster.yaml")
    check_postgres_storage(tmp_path)
    check_postgres_storage(tmp_path / "no-such-home")


def test_an_unset_variable_is_named_with_its_key(tmp_path, monkeypatch):
    shutil.copy(REPO / "docs" / "cluster" / "postgres.dagster.yaml", tmp_path / "dagster.yaml")
    for v in ("DAGSTER_PG_HOST", "DAGSTER_PG_PORT", "DAGSTER_PG_DB", "DAGSTER_PG_USERNAME", "DAGSTER_PG_PASSWORD"):
        monkeypatch.setenv(v, "x")
    monkeypatch.delenv("DAGSTER_PG_PASSWORD")
    with pytest.raises(CliError) as e:
        check_postgres_storage(tmp_path)
    assert str(e.value) == (f"{tmp_path / 'dagster.yaml'}: storage.postgres.postgres_db.password reads the "
                            "environment variable DAGSTER_PG_PASSWORD, which is not set: export it")
