"""A real `dagster dev` for end-to-end tests: a subprocess on 127.0.0.1 with its own DAGSTER_HOME.

    with DagsterDev(REPO, env={"RAG_TTC_ARMS": ..., "RAG_TTC_DATASETS": ..., "RAG_TTC_HOME": ...}) as dev:
        dev.url                                   # "http://127.0.0.1:<port>"
        data = dev.graphql("{ version }")         # the `data` of a GraphQL answer; raises DagsterDevError on errors
        status = dev.wait_for_run(run_id)         # "SUCCESS", "FAILURE" or "CANCELED"
        dev.log_text()                            # everything dagster dev printed so far (also after exit)
        dev.dagster_home                          # the instance's folder, e.g. for DagsterInstance.from_config

Entering starts `dagster dev -m rag_ttc_assets.definitions` (as `make dev` does) in its own
process group, with a fresh DAGSTER_HOME holding a copy of the project's `dagster.yaml`, on a free
port, and returns once the webserver answers and the code location is LOADED (DagsterDevError with
the captured log otherwise, after `timeout_s`). Leaving stops the whole process group (webserver,
daemon, code server, run workers): SIGTERM, which dagster turns into a clean shutdown, then SIGKILL
for whatever is left after the grace period; then the temporary DAGSTER_HOME is removed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

MODULE = "rag_ttc_assets.definitions"
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
FINISHED = ("SUCCESS", "FAILURE", "CANCELED")

_WORKSPACE = """{ workspaceOrError { __typename
  ... on Workspace { locationEntries { name loadStatus
      locationOrLoadError { __typename ... on PythonError { message stack } } } }
  ... on PythonError { message } } }"""


# `python -m dagster ARGS` with SIGINT back to its default first. A process started in the background
# by a non-interactive shell inherits SIGINT ignored, and dagster maps SIGTERM to the SIGINT handler,
# so without this it would ignore SIGTERM too and only SIGKILL would stop it (no clean shutdown).
_EXEC_WITH_SIGINT = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                     "os.execv(sys.executable, [sys.executable, '-m', 'dagster', *sys.argv[1:]])")


class DagsterDevError(RuntimeError):
    """dagster dev did not start, a GraphQL call failed, or a run did not finish in time."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0 and let the OS choose)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DagsterDev:
    """`dagster dev` for the project in `project_dir`, as a context manager.

    `env` is laid over this process's environment (and the offline defaults of the Makefile); pass
    RAG_TTC_ARMS, RAG_TTC_DATASETS and RAG_TTC_HOME there to point the code location at a lab.
    `timeout_s` bounds the wait for a loaded code location; `grace_s` is how long SIGTERM gets
    (for the leader, then again for the rest of the group) before SIGKILL on exit.
    """

    def __init__(self, project_dir: str | Path, env: dict[str, str] | None = None, *, module: str = MODULE,
                 timeout_s: float = 120.0, grace_s: float = 15.0):
        self.project_dir = Path(project_dir).resolve()
        self.env = dict(env or {})
        self.module = module
        self.timeout_s = timeout_s
        self.grace_s = grace_s
        self.port: int | None = None
        self.dagster_home: Path | None = None  # DAGSTER_HOME, a temporary folder removed on exit
        self._tmp: Path | None = None
        self._proc: subprocess.Popen | None = None
        self._log_path: Path | None = None
        self._log_after_exit: str | None = None

    # -- public API -------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The webserver's base URL, e.g. http://127.0.0.1:40123 (no trailing slash)."""
        if self.port is None:
            raise DagsterDevError("dagster dev is not running")
        return f"http://127.0.0.1:{self.port}"

    def graphql(self, query: str, variables: dict[str, Any] | None = None, timeout_s: float = 30.0) -> dict:
        """POST a GraphQL query to /graphql and return its `data`; DagsterDevError if it reports errors."""
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        req = urllib.request.Request(self.url + "/graphql", data=body, method="POST",
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as resp:
                answer = json.loads(resp.read())
        except urllib.error.HTTPError as e:
            raise DagsterDevError(f"GraphQL HTTP {e.code}: {e.read()[:2000]!r}") from None
        if answer.get("errors"):
            raise DagsterDevError(f"GraphQL errors: {json.dumps(answer['errors'])[:2000]}")
        return answer["data"]

    def wait_for_run(self, run_id: str, timeout_s: float = 180.0) -> str:
        """Poll the run until it finishes; its final status (SUCCESS, FAILURE, CANCELED)."""
        deadline = time.monotonic() + timeout_s
        status = None
        while time.monotonic() < deadline:
            run = self.graphql("query($id: ID!) { runOrError(runId: $id) { __typename ... on Run { status } } }",
                               {"id": run_id})["runOrError"]
            status = run.get("status")
            if status in FINISHED:
                return status
            self._check_alive()
            time.sleep(1.0)
        raise DagsterDevError(f"run {run_id} still {status} after {timeout_s:.0f} s\n{self._tail()}")

    def log_text(self) -> str:
        """Everything dagster dev (webserver, daemon, code server, runs) wrote to stdout and stderr."""
        if self._log_after_exit is not None:
            return self._log_after_exit
        if self._log_path and self._log_path.exists():
            return self._log_path.read_text(encoding="utf-8", errors="replace")
        return ""

    # -- lifecycle --------------------------------------------------------------------------------

    def __enter__(self) -> DagsterDev:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Start dagster dev and wait until its code location is loaded."""
        self._tmp = Path(tempfile.mkdtemp(prefix="dagster-dev-"))
        self.dagster_home = self._tmp / "dagster_home"
        self.dagster_home.mkdir()
        shutil.copy(self.project_dir / "dagster.yaml", self.dagster_home / "dagster.yaml")
        self._log_path = self._tmp / "dagster_dev.log"
        self.port = free_port()
        env = {**OFFLINE, **os.environ, **self.env, "DAGSTER_HOME": str(self.dagster_home)}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(self.project_dir), env.get("PYTHONPATH")) if p)
        cmd = [sys.executable, "-c", _EXEC_WITH_SIGINT, "dev", "-h", "127.0.0.1", "-p", str(self.port),
               "-m", self.module, "-d", str(self.project_dir)]
        with open(self._log_path, "wb") as log:
            # cwd outside the project: dagster dev warns about a dagster.yaml in its cwd that is not DAGSTER_HOME's.
            self._proc = subprocess.Popen(cmd, cwd=self._tmp, env=env, stdin=subprocess.DEVNULL,
                                          stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_until_loaded()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop the whole process group (SIGTERM, then SIGKILL), keep the log, remove DAGSTER_HOME."""
        proc, self._proc = self._proc, None
        if proc is not None:
            pgid = proc.pid  # start_new_session: the leader's pid is the group id
            _signal_group(pgid, signal.SIGTERM)
            try:
                proc.wait(timeout=self.grace_s)
            except subprocess.TimeoutExpired:
                pass
            # Children (daemon, code server, run workers) may outlive the leader; wait for the group.
            deadline = time.monotonic() + self.grace_s
            while _group_alive(pgid) and time.monotonic() < deadline:
                time.sleep(0.2)
            _signal_group(pgid, signal.SIGKILL)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if self._tmp is not None:
            self._log_after_exit = self.log_text()
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        self.port = None

    # -- internals --------------------------------------------------------------------------------

    def _tail(self, chars: int = 12000) -> str:
        text = self.log_text()
        return "--- dagster dev log (tail) ---\n" + text[-chars:]

    def _check_alive(self) -> None:
        if self._proc is not None and self._proc.poll() is not None:
            raise DagsterDevError(f"dagster dev exited with code {self._proc.returncode}\n{self._tail()}")

    def _wait_until_loaded(self) -> None:
        deadline = time.monotonic() + self.timeout_s
        last = "webserver not answering"
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                with urllib.request.urlopen(self.url + "/server_info", timeout=5):
                    pass
                ws = self.graphql(_WORKSPACE, timeout_s=10)["workspaceOrError"]
            except (OSError, DagsterDevError) as e:  # connection refused, reset, 5xx while starting
                last = f"webserver not ready: {e}"
                time.sleep(1.0)
                continue
            if ws["__typename"] != "Workspace":
                raise DagsterDevError(f"workspace failed to load: {ws.get('message')}\n{self._tail()}")
            entries = ws["locationEntries"]
            last = f"code locations: {[(e['name'], e['loadStatus']) for e in entries]}"
            loaded = [e for e in entries if e["loadStatus"] == "LOADED"]
            for e in loaded:
                err = e.get("locationOrLoadError") or {}
                if err.get("__typename") == "PythonError":
                    raise DagsterDevError(f"code location {e['name']} failed to load: {err['message']}\n"
                                          f"{''.join(err.get('stack') or [])}\n{self._tail()}")
            if entries and len(loaded) == len(entries):
                return
            time.sleep(1.0)
        raise DagsterDevError(f"dagster dev not ready after {self.timeout_s:.0f} s ({last})\n{self._tail()}")


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(pgid: int) -> bool:
    """Whether a process of the group still runs (zombies waiting for a reaper do not count)."""
    proc = Path("/proc")
    if proc.is_dir():
        for stat in proc.glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":  # fields: state, ppid, pgrp, ...
                return True
        return False
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False
