"""A dask.distributed cluster of separate processes on 127.0.0.1 for tests: one `dask scheduler` and
workers started with `dask worker` (each under its own nanny, which restarts it if it dies), every worker
with an environment of its own, as separate machines would have.

`DaskCluster(common_env, [worker_env, ...], address_env=NAME)`: `start()` waits until every worker has joined
(the workers get the scheduler's address in NAME); `stop()` ends the processes it started (each by its own
process group) and removes its folder.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


class DaskCluster:
    def __init__(self, common_env: dict[str, str], worker_envs: list[dict[str, str]], address_env: str | None = None):
        self.common_env = common_env
        self.address_env = address_env
        self.worker_envs = worker_envs
        self.root = Path(tempfile.mkdtemp(prefix="rag-ttc-dask-"))
        self.scheduler_file = self.root / "scheduler.json"
        self.procs: list[subprocess.Popen] = []
        self.names = [f"worker-{i + 1}" for i in range(len(worker_envs))]

    @property
    def address(self) -> str:
        return json.loads(self.scheduler_file.read_text())["address"]

    def _written(self) -> bool:
        try:
            return bool(self.address)
        except (OSError, ValueError, KeyError):
            return False

    def _start(self, args: list[str], env: dict[str, str], log: str) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-m", *args], env=env, stdout=open(self.root / log, "w"),
                                stderr=subprocess.STDOUT, start_new_session=True, cwd=self.root)
        self.procs.append(proc)
        return proc

    def start(self, timeout: float = 120.0) -> DaskCluster:
        try:
            return self._start_all(timeout)
        except BaseException:
            self.stop()  # nothing left running when it could not start
            raise

    def _start_all(self, timeout: float) -> DaskCluster:
        base = {**os.environ, **self.common_env}
        self._start(["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", str(self.scheduler_file)], base, "scheduler.log")
        self._wait(self._written, timeout, "the scheduler to write its address")
        if self.address_env:
            base[self.address_env] = self.address
        for name, env in zip(self.names, self.worker_envs):
            # One process, one thread: a worker runs one Dagster step at a time, like a step pod.
            self._start(["distributed.cli.dask_worker", "--scheduler-file", str(self.scheduler_file),
                         "--name", name, "--nworkers", "1", "--nthreads", "1", "--no-dashboard",
                         "--memory-limit", "0", "--local-directory", str(self.root / name)],
                        {**base, **env}, f"{name}.log")
        self._wait(lambda: len(self.workers()) == len(self.names), timeout, "every worker to join")
        return self

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            dead = [p.args for p in self.procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                logs = "\n".join(f"--- {p.name}\n{p.read_text()[-1500:]}" for p in self.root.glob("*.log"))
                raise RuntimeError(f"dask cluster: gave up waiting for {what} (exited: {dead})\n{logs}")
            time.sleep(0.2)

    def client(self):
        from dask.distributed import Client

        return Client(self.address, timeout=30)

    def workers(self) -> dict[str, dict]:
        """worker name -> {address, pid} as the scheduler sees them now."""
        if not self._written():
            return {}
        try:
            with self.client() as c:
                info = c.scheduler_info(n_workers=-1)["workers"]
                pids = c.run(os.getpid)
        except OSError:
            return {}
        return {w["name"]: {"address": addr, "pid": pids[addr]} for addr, w in info.items() if addr in pids}

    def processing(self) -> dict[str, list[str]]:
        """worker name -> the task keys it is running now."""
        with self.client() as c:
            by_addr = c.processing()
            names = {addr: w["name"] for addr, w in c.scheduler_info(n_workers=-1)["workers"].items()}
        return {names.get(addr, addr): list(keys) for addr, keys in by_addr.items()}

    def worker_log(self, name: str) -> str:
        return (self.root / f"{name}.log").read_text()

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        shutil.rmtree(self.root, ignore_errors=True)
