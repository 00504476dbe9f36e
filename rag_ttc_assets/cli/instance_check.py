"""Before a command opens its Dagster instance: a Postgres storage (`storage: postgres:` in DAGSTER_HOME's
dagster.yaml) that cannot be reached is one line naming the setting and what to do, not dagster-postgres's
retries and traceback, and nothing has been built or asked of a provider yet."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from rag_ttc_assets.cli.common import CliError

CONNECT_TIMEOUT_S = 5


def _value(section: dict, key: str, where: str, default=None):
    """A setting's value and how it was given: `{env: NAME}` is read from the environment."""
    v = section.get(key, default)
    if isinstance(v, dict) and "env" in v:
        name = v["env"]
        if name not in os.environ:
            raise CliError(f"{where}.{key} reads the environment variable {name}, which is not set: export it")
        return os.environ[name], f"{key} from {name}"
    return v, f"{key} in the file"


def check_postgres_storage(home: Path) -> None:
    """Connect once to the Postgres of `home`'s instance, if it has one; CliError if that fails."""
    path = home / "dagster.yaml"
    if not path.is_file():
        return
    storage = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("storage") or {}
    pg = storage.get("postgres")
    if not isinstance(pg, dict):
        return
    try:
        _connect(pg)
    except CliError as e:
        raise CliError(f"{path}: {e}") from None


def _connect(pg: dict) -> None:
    where = "storage.postgres"
    if "postgres_url" in pg:
        url, said = _value(pg, "postgres_url", where)
        parts = urlsplit(url)
        target, settings, kwargs = f"{parts.hostname}:{parts.port or 5432}", [said], {"dsn": url}
    else:
        db = pg.get("postgres_db") or {}
        where = f"{where}.postgres_db"
        (host, h), (port, p) = _value(db, "hostname", where), _value(db, "port", where, 5432)
        (name, n), (user, u), (password, _) = (_value(db, "db_name", where), _value(db, "username", where),
                                               _value(db, "password", where))
        target, settings = f"{host}:{port}", [h, p, n, u]
        kwargs = {"host": host, "port": int(port), "dbname": name, "user": user, "password": password}
    try:
        import psycopg2
    except ImportError:
        raise CliError(f"{where}: Postgres storage needs dagster-postgres: "
                       "pip install -c constraints.txt '.[cluster]'") from None
    try:
        psycopg2.connect(connect_timeout=CONNECT_TIMEOUT_S, **kwargs).close()
    except psycopg2.OperationalError as e:
        reason = str(e).split("failed:", 1)[-1].strip().splitlines()[0].strip()
        raise CliError(f"cannot connect to the instance's Postgres at {target} ({reason}); {where} "
                       f"({', '.join(settings)}): start the server, or fix these settings") from None
