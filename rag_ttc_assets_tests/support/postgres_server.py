"""A real PostgreSQL server on 127.0.0.1 for tests: Debian's server binaries, a free port, a temporary data
directory, password authentication, removed on exit.

`initdb` and `postgres` refuse to run as root; as root (the sessions and CI) the server runs as `nobody`
through `setpriv` (which execs, so the process started is the postmaster itself and stops on its signal).
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rag_ttc_assets_tests.support.s3_server import free_port

SERVER_USER = "nobody"


def server_bindir() -> Path | None:
    """The folder of `initdb` and `postgres`: PATH first, then Debian's /usr/lib/postgresql/<version>/bin."""
    found = shutil.which("initdb")
    if found and shutil.which("postgres", path=str(Path(found).parent)):
        return Path(found).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    return Path(versions[-1]).parent if versions else None


@dataclass
class PostgresServer:
    host: str
    port: int
    user: str
    password: str
    db: str
    data_dir: Path
    process: subprocess.Popen

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}:{self.password}@{self.host}:{self.port}/{self.db}"

    def env(self) -> dict[str, str]:
        """The variables docs/cluster/postgres.dagster.yaml reads."""
        return {"DAGSTER_PG_HOST": self.host, "DAGSTER_PG_PORT": str(self.port), "DAGSTER_PG_DB": self.db,
                "DAGSTER_PG_USERNAME": self.user, "DAGSTER_PG_PASSWORD": self.password}

    def create_database(self, name: str) -> dict[str, str]:
        """A fresh database on this server (one per test that needs an empty instance); its env()."""
        import psycopg2

        conn = psycopg2.connect(host=self.host, port=self.port, user=self.user, password=self.password,
                                dbname=self.db)
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(f'CREATE DATABASE "{name}"')
        conn.close()
        return {**self.env(), "DAGSTER_PG_DB": name}


def _as_server_user() -> list[str]:
    if os.geteuid() != 0:
        return []
    pw = pwd.getpwnam(SERVER_USER)
    return ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups", "--"]


def _chown_tree(path: Path) -> None:
    if os.geteuid() != 0:
        return
    pw = pwd.getpwnam(SERVER_USER)
    for root, dirs, files in os.walk(path):
        for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
            os.chown(name, pw.pw_uid, pw.pw_gid)


def start(timeout: float = 60.0) -> PostgresServer:
    """initdb into a new temporary folder, start `postgres` on a free port, wait until it accepts logins."""
    bindir = server_bindir()
    if bindir is None:
        raise RuntimeError("no PostgreSQL server binaries (initdb, postgres): install Debian's `postgresql` "
                           "package (.ci/run does)")
    # Not under pytest's tmp_path: its folders are 0700 root, which the server user cannot enter.
    root = Path(tempfile.mkdtemp(prefix="rag-ttc-pg-"))
    os.chmod(root, 0o700)
    data = root / "data"
    password = secrets.token_hex(12)
    (root / "pwfile").write_text(password + "\n")
    _chown_tree(root)
    drop = _as_server_user()
    init = subprocess.run([*drop, str(bindir / "initdb"), "-D", str(data), "-U", "lab", "--auth=scram-sha-256",
                           f"--pwfile={root / 'pwfile'}", "-E", "UTF8", "--locale=C"],
                          capture_output=True, text=True, timeout=120)
    if init.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"initdb failed ({init.returncode}):\n{init.stdout[-2000:]}\n{init.stderr[-2000:]}")
    port = free_port()
    log = open(root / "server.log", "w")
    proc = subprocess.Popen([*drop, str(bindir / "postgres"), "-D", str(data), "-h", "127.0.0.1", "-p", str(port),
                             "-k", str(root), "-c", "fsync=off", "-c", "max_connections=200"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    server = PostgresServer("127.0.0.1", port, "lab", password, "postgres", data, proc)
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            shutil.rmtree(root, ignore_errors=True)
            raise RuntimeError(f"postgres exited ({proc.returncode}): {(root / 'server.log').read_text()[-2000:]}")
        try:
            import psycopg2

            psycopg2.connect(host=server.host, port=port, user="lab", password=password, dbname="postgres",
                             connect_timeout=2).close()
            return server
        except psycopg2.OperationalError:
            if time.monotonic() > deadline:
                stop(server)
                raise
            time.sleep(0.2)


def stop(server: PostgresServer) -> None:
    """Fast shutdown (SIGINT to the postmaster), then remove the data folder."""
    proc = server.process
    if proc.poll() is None:
        proc.send_signal(2)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    shutil.rmtree(server.data_dir.parent, ignore_errors=True)


def postgres_fixture():
    """The session fixture (imported by e2e/conftest.py): one server for every test of the session. Without
    the server binaries it fails (start() says what to install): a skipped cluster test would pass CI unseen."""
    import pytest

    @pytest.fixture(scope="session")
    def postgres_server():
        server = start()
        try:
            yield server
        finally:
            stop(server)

    return postgres_server
