"""A real PostgreSQL server on 127.0.0.1 for tests: the system's server binaries when it has them, else the ones
the `pgserver` wheel ships (a test dependency), a free port, a temporary data directory, password
authentication, removed on exit.

`initdb` and `postgres` refuse to run as root; as root (the sessions and CI) the server runs as `nobody`
through `setpriv` (which execs, so the process started is the postmaster itself and stops on its signal). When
`nobody` cannot run the binaries where they are (a virtualenv under a private home), they are copied first.
"""

from __future__ import annotations

import glob
import importlib.util
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
DEBIAN_GLOB = "/usr/lib/postgresql/*/bin/initdb"  # Debian's and Ubuntu's postgresql-<version> packages
MISSING = ("no PostgreSQL server binaries (initdb, postgres) on PATH, in /usr/lib/postgresql/*/bin or from the "
           "`pgserver` wheel: pip install -c constraints.txt -e '.[test]' (or install Debian's `postgresql`)")


@dataclass(frozen=True)
class Binaries:
    bindir: Path  # holds initdb and postgres
    source: str  # "system" or "pgserver"


def _complete(bindir: Path) -> bool:
    return all(os.access(bindir / name, os.X_OK) for name in ("initdb", "postgres"))


def system_bindir(path: str | None = None, debian_glob: str = DEBIAN_GLOB) -> Path | None:
    """The system's folder of `initdb` and `postgres`: `path` (default $PATH) first, then the newest
    `debian_glob` match (/usr/lib/postgresql/<version>/bin)."""
    found = shutil.which("initdb", path=path)
    if found and _complete(Path(found).parent):
        return Path(found).parent
    versions = [Path(p).parent for p in glob.glob(debian_glob) if _complete(Path(p).parent)]
    versions.sort(key=lambda p: int(p.parts[-2]) if p.parts[-2].isdigit() else -1)
    return versions[-1] if versions else None


def pgserver_bindir() -> Path | None:
    """The `pgserver` wheel's bin folder, found without importing the package (its import sets up runtime
    folders this code does not use)."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        return None
    bindir = Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin"
    return bindir if _complete(bindir) else None


def find_binaries(path: str | None = None, debian_glob: str = DEBIAN_GLOB) -> Binaries | None:
    """The system's binaries when it has them (system_bindir(path, debian_glob)), else pgserver's, else None."""
    system = system_bindir(path, debian_glob)
    if system is not None:
        return Binaries(system, "system")
    wheel = pgserver_bindir()
    return Binaries(wheel, "pgserver") if wheel is not None else None


@dataclass
class PostgresServer:
    host: str
    port: int
    user: str
    password: str
    db: str
    data_dir: Path
    process: subprocess.Popen
    binaries: Binaries

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


def _runs_as_server_user(bindir: Path) -> bool:
    """Whether the server user can reach the binaries, their share/ folder and their libraries. Checked by a
    shell and `initdb --version` running as that user (an exec through a folder the user cannot enter may still
    succeed; the files the server opens afterwards would not)."""
    drop = _as_server_user()
    if not drop:
        return True
    share = bindir.parent / "share"
    script = ('test -x "$1/initdb" && test -x "$1/postgres" && { test -z "$2" || { test -r "$2" && test -x "$2"; }; }'
              ' && "$1/initdb" --version >/dev/null')
    try:
        return subprocess.run([*drop, "sh", "-c", script, "sh", str(bindir), str(share) if share.is_dir() else ""],
                              capture_output=True, timeout=60).returncode == 0
    except OSError:
        return False


def _copy_install(bindir: Path, dest: Path) -> Path:
    """A copy of the installation under dest, in the same layout (PostgreSQL finds its share/ and lib/ folders
    relative to its binaries): bin/, lib/ and share/, and for pgserver's wheel the libraries auditwheel moved
    beside the package (site-packages/pgserver.libs, which the binaries' rpath names as $ORIGIN/../../../pgserver.libs).
    Returns the copy's bin folder."""
    install = bindir.parent
    top = install.parents[1]
    new = dest / install.relative_to(top)
    for part in ("bin", "lib", "share"):
        if (install / part).is_dir():
            shutil.copytree(install / part, new / part, symlinks=True)
    wheel_libs = top / f"{install.parent.name}.libs"
    if wheel_libs.is_dir():
        shutil.copytree(wheel_libs, dest / wheel_libs.name, symlinks=True)
    return new / "bin"


def start(timeout: float = 60.0, binaries: Binaries | None = None) -> PostgresServer:
    """initdb into a new temporary folder, start `postgres` on a free port, wait until it accepts logins.
    `binaries`: which server to run (default find_binaries())."""
    binaries = binaries or find_binaries()
    if binaries is None:
        raise RuntimeError(MISSING)
    # Not under pytest's tmp_path: its folders are 0700 root, which the server user cannot enter.
    root = Path(tempfile.mkdtemp(prefix="rag-ttc-pg-"))
    os.chmod(root, 0o700)
    bindir = binaries.bindir
    if not _runs_as_server_user(bindir):
        bindir = _copy_install(bindir, root / "install")
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
        raise RuntimeError(f"initdb ({bindir}) failed ({init.returncode}):\n{init.stdout[-2000:]}\n"
                           f"{init.stderr[-2000:]}")
    port = free_port()
    log = open(root / "server.log", "w")
    proc = subprocess.Popen([*drop, str(bindir / "postgres"), "-D", str(data), "-h", "127.0.0.1", "-p", str(port),
                             "-k", str(root), "-c", "fsync=off", "-c", "max_connections=200"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    server = PostgresServer("127.0.0.1", port, "lab", password, "postgres", data, proc, binaries)
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
    """The session fixture (imported by e2e/conftest.py): one server for every test of the session. Without any
    server binaries it skips, naming what to install, and fails under RAG_TTC_REQUIRE_ALL (.ci/run sets it)."""
    import pytest

    from rag_ttc_assets_tests.support.required import skip_or_fail

    @pytest.fixture(scope="session")
    def postgres_server():
        binaries = find_binaries()
        if binaries is None:
            skip_or_fail(MISSING)
        server = start(binaries=binaries)
        try:
            yield server
        finally:
            stop(server)

    return postgres_server
