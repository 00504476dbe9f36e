"""Which PostgreSQL the cluster tests start (support/postgres_server.py): the system's binaries when it has them,
the `pgserver` wheel's otherwise, so `make test` on a machine with only Python runs the cluster tests for real."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from rag_ttc_assets_tests.conftest import REPO
from rag_ttc_assets_tests.support import postgres_server as pg


def _fake_bindir(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name in ("initdb", "postgres"):
        (folder / name).write_text("#!/bin/sh\nexit 0\n")
        (folder / name).chmod(0o755)
    return folder


def _query(server: pg.PostgresServer, sql: str):
    import psycopg2

    conn = psycopg2.connect(host=server.host, port=server.port, user=server.user, password=server.password,
                            dbname=server.db, connect_timeout=10)
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall()
    finally:
        conn.close()


def _owner_uid(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    raise AssertionError(f"no Uid in /proc/{pid}/status")


def test_system_lookup_takes_path_first_then_the_newest_debian_version(tmp_path):
    on_path = _fake_bindir(tmp_path / "path-bin")
    for version in ("9", "15", "13"):
        _fake_bindir(tmp_path / "debian" / version / "bin")
    (tmp_path / "debian" / "16" / "bin").mkdir(parents=True)  # a client-only install: no server binaries
    (tmp_path / "debian" / "16" / "bin" / "initdb").write_text("")
    debian = str(tmp_path / "debian" / "*" / "bin" / "initdb")
    assert pg.system_bindir(path=str(on_path), debian_glob=debian) == on_path
    assert pg.system_bindir(path=str(tmp_path / "empty"), debian_glob=debian) == tmp_path / "debian" / "15" / "bin"
    found = pg.find_binaries(path=str(tmp_path / "empty"), debian_glob=debian)
    assert found == pg.Binaries(tmp_path / "debian" / "15" / "bin", "system")


def test_without_system_binaries_the_pgserver_wheels_server_starts_and_answers(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    found = pg.find_binaries(path=str(empty), debian_glob=str(empty / "*" / "bin" / "initdb"))
    assert found is not None, pg.MISSING
    assert found.source == "pgserver" and found.bindir == pg.pgserver_bindir()
    assert "site-packages" in found.bindir.parts or "dist-packages" in found.bindir.parts
    server = pg.start(binaries=found)
    try:
        assert server.binaries == found
        (version,), = _query(server, "SHOW server_version")
        assert version.startswith("16.")  # pgserver 0.1.4 ships 16.2; the system's here is another major
        db = server.create_database("pgserver_check")
        assert db["DAGSTER_PG_DB"] == "pgserver_check"
        (n,), = _query(server, "SELECT count(*) FROM pg_database WHERE datname = 'pgserver_check'")
        assert n == 1
        expected_uid = pg.pwd.getpwnam(pg.SERVER_USER).pw_uid if os.geteuid() == 0 else os.geteuid()
        assert _owner_uid(server.process.pid) == expected_uid  # never root: postgres refuses it
    finally:
        stop_root = server.data_dir.parent
        pg.stop(server)
    assert not stop_root.exists()


def test_binaries_the_server_user_cannot_reach_are_copied_first(tmp_path):
    wheel = pg.pgserver_bindir()
    assert wheel is not None, pg.MISSING
    private = tmp_path / "private"  # pytest's tmp folders are 0700: as root, `nobody` cannot enter them
    private.mkdir(mode=0o700)
    site = wheel.parents[2]  # the wheel's layout: pgserver/pginstall/{bin,lib,share} and pgserver.libs
    for part in ("pgserver/pginstall/bin", "pgserver/pginstall/lib", "pgserver/pginstall/share", "pgserver.libs"):
        shutil.copytree(site / part, private / part, symlinks=True)
    assert stat.S_IMODE(tmp_path.stat().st_mode) & 0o077 == 0
    server = pg.start(binaries=pg.Binaries(private / "pgserver" / "pginstall" / "bin", "pgserver"))
    try:
        (one,), = _query(server, "SELECT 1")
        assert one == 1
        exe = Path(os.readlink(f"/proc/{server.process.pid}/exe"))
        if os.geteuid() == 0:
            assert exe.is_relative_to(server.data_dir.parent / "install"), exe  # the copy, as the server user
        else:
            assert exe.is_relative_to(private), exe
    finally:
        pg.stop(server)


def test_without_any_binaries_the_fixture_skips_naming_what_to_install(pytester, monkeypatch):
    """The session fixture's skip (and its failure under RAG_TTC_REQUIRE_ALL), with every lookup empty."""
    pytester.makeconftest("""
from rag_ttc_assets_tests.support import postgres_server as pg
from rag_ttc_assets_tests.support.required import (  # noqa: F401
    pytest_collection_modifyitems, pytest_configure, pytest_runtest_setup)
pg.find_binaries = lambda *a, **k: None
postgres_server = pg.postgres_fixture()
""")
    pytester.makepyfile(test_pg="def test_needs_a_server(postgres_server):\n    raise AssertionError('ran')\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    monkeypatch.delenv("RAG_TTC_REQUIRE_ALL", raising=False)
    skipped = pytester.runpytest_subprocess("-rs", "-p", "no:phoenix")
    skipped.assert_outcomes(skipped=1)
    skipped.stdout.fnmatch_lines(["*no PostgreSQL server binaries*pgserver*"])
    monkeypatch.setenv("RAG_TTC_REQUIRE_ALL", "1")
    failed = pytester.runpytest_subprocess("-rs", "-p", "no:phoenix")
    failed.assert_outcomes(errors=1)
    failed.stdout.fnmatch_lines(["*no PostgreSQL server binaries*pgserver*RAG_TTC_REQUIRE_ALL is set*"])


@pytest.mark.parametrize("extra", ["test", "cluster"])
def test_pgserver_is_in_the_extras_and_pinned(extra):
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "pgserver==0.1.4" in extras[extra]
    assert "pgserver==0.1.4" in (REPO / "constraints.txt").read_text().splitlines()
