"""Beyond one machine, for real: `rag-ttc run` against a Dagster instance on a real PostgreSQL server
(docs/cluster/postgres.dagster.yaml) with its steps on a dask.distributed cluster of separate worker
processes (RAG_TTC_EXECUTOR=dask), each worker with its own environment; the generator a loopback
OpenAI-compatible server. Two arms that share their upstream, a worker killed mid-answers, and the same
arms run locally (SQLite instance, local store, multiprocess executor) give the same rows."""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from rag_ttc_assets.adapters.store import Table
from rag_ttc_assets_tests.conftest import REPO
from rag_ttc_assets_tests.support.dask_cluster import DaskCluster
from rag_ttc_assets_tests.support.openai_server import FakeOpenAIServer
from rag_ttc_assets_tests.support.reliability import (KEY, KEY_ENV, arms_text, cli, cli_error, cli_start,
                                                      fake_model, kill_group, synthetic_dataset)

pytestmark = pytest.mark.slow

N = 12  # questions: each its own provider request
HELD_AFTER = 4  # the answers held at the server once this many are answered, while a worker is killed
ARMS = {"cl-a": {}, "cl-b": {"evidence_k": 1}}  # cl-b shares every artifact up to retrieval_rows
TABLES = (Table.RETRIEVAL_ROWS, Table.ADMITTED_CONTEXTS, Table.ANSWERS)
# Columns that say how a row was obtained, not what it is.
HOW = {"cache_hit", "latency_s", "attempts", "started_at", "finished_at", "provider_calls"}


class Gate:
    """The model behind the loopback server: answers as fake_model does, but once `hold_after` requests are
    answered, holds the next ones until `release()`; `answered` counts the replies handed to the server."""

    def __init__(self):
        self.hold_after: int | None = None
        self.answered = 0
        self.holding = 0
        self._open = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, messages):
        with self._lock:
            hold = self.hold_after is not None and self.answered >= self.hold_after
            self.holding += hold
        if hold:
            self._open.wait(120)
        reply = fake_model(messages)
        with self._lock:
            self.answered += 1
        return reply

    def release(self):
        self.hold_after = None
        self._open.set()


@pytest.fixture(scope="module")
def model():
    gate = Gate()
    with FakeOpenAIServer(gate) as server:
        yield server, gate


def _lab(root: Path, base_url: str) -> Path:
    synthetic_dataset(root / "datasets" / "cl", N)
    (root / "arms.yaml").write_text(arms_text("cl", ARMS, base_url, generation_workers=1))
    return root


def _offline() -> dict[str, str]:
    return {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "HF_HUB_DISABLE_PROGRESS_BARS": "1", "LANCEDB_LOG": "error", KEY_ENV: KEY}


@pytest.fixture(scope="module")
def cluster(model, postgres_server, s3_server, tmp_path_factory):
    """The cluster lab: a Postgres instance, the store in a bucket, a scheduler and two workers that share
    nothing else; the CLI's environment (the run worker's)."""
    server, _ = model
    root = _lab(tmp_path_factory.mktemp("cluster"), server.base_url)
    pg = postgres_server.create_database("cluster_e2e")
    store = s3_server.env(s3_server.create_bucket("cluster-e2e"))  # RAG_TTC_HOME=s3://cluster-e2e/lab, AWS_*
    lab = {"RAG_TTC_ARMS": str(root / "arms.yaml"), "RAG_TTC_DATASETS": str(root / "datasets"),
           "RAG_TTC_EXECUTOR": "dask", **store, **pg, **_offline()}
    # Each worker, and the run worker: its own local cache and temporary folder; no DAGSTER_HOME on the workers
    # (the instance comes with each step, its storage in Postgres).
    workers = [{"RAG_TTC_LOCAL_CACHE": str(root / f"w{i}" / "cache"), "TMPDIR": str(root / f"w{i}" / "tmp")}
               for i in (0, 1, 2)]
    run_worker = workers.pop(0)
    for w in [run_worker, *workers]:
        for p in w.values():
            Path(p).mkdir(parents=True)
    dask = DaskCluster(lab, workers, address_env="RAG_TTC_DASK_SCHEDULER").start()
    home = root / "dh"
    home.mkdir()
    shutil.copy(REPO / "docs" / "cluster" / "postgres.dagster.yaml", home / "dagster.yaml")
    env = {**lab, **run_worker, "DAGSTER_HOME": str(home), "RAG_TTC_DASK_SCHEDULER": dask.address}
    try:
        yield root, env, dask
    finally:
        dask.stop()


def _hold_then_kill(proc, gate: Gate, dask: DaskCluster, server, timeout: float = 300) -> dict:
    """Wait until answers are held at the server, kill the worker running the answers step (SIGKILL, as a
    machine lost), then let the server answer again."""
    deadline = time.monotonic() + timeout
    while not gate.holding:
        assert proc.poll() is None, "the run ended before its answers step could be interrupted"
        assert time.monotonic() < deadline, "the answers step never reached the server"
        time.sleep(0.1)
    time.sleep(1.5)  # the last answered row reaches the provider cache
    running = {name: keys for name, keys in dask.processing().items() if "arm_job.answers" in keys}
    assert len(running) == 1, dask.processing()
    (name,) = running
    pid = dask.workers()[name]["pid"]
    answered, asked = gate.answered, server.request_count
    os.kill(pid, signal.SIGKILL)
    gate.release()
    return {"worker": name, "pid": pid, "answered": answered, "asked": asked}


def _bodies(server, since: int = 0) -> list[str]:
    return [json.dumps(r["body"]["messages"], sort_keys=True) for r in server.requests[since:]]


def _events(env: dict, run_id: str):
    from dagster import DagsterInstance

    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        with DagsterInstance.get() as instance:
            assert type(instance.run_storage).__name__ == "PostgresRunStorage"
            return [e for e in instance.all_logs(run_id)]


def _tables(env: dict, arm: str) -> dict[str, pl.DataFrame]:
    out = {}
    for t in TABLES:
        df = _raw(env, arm, t)
        out[t] = df.drop([c for c in df.columns if c in HOW]).sort("query_id")
    return out


def test_two_arms_on_postgres_and_dask_workers_equal_a_local_run(cluster, model, tmp_path):
    root, env, dask = cluster
    server, gate = model
    started = time.monotonic()
    before_pids = {w["pid"] for w in dask.workers().values()}

    # Arm cl-a to the answers stage, a worker killed while it answers.
    gate.hold_after = HELD_AFTER
    proc = cli_start("run", "cl-a", "--stage", "answers", "--json", env=env, out=tmp_path / "cl-a")
    try:
        kill = _hold_then_kill(proc, gate, dask, server)
        proc.wait(timeout=300)
    finally:
        gate.release()
        if proc.poll() is None:
            kill_group(proc)
    err = Path(f"{tmp_path / 'cl-a'}.stderr").read_text()
    assert proc.returncode == 0, err[-5000:]
    report = json.loads(Path(f"{tmp_path / 'cl-a'}.stdout").read_text())["arms"]["cl-a"]

    # The dask scheduler gave the killed step to a worker again, in the same run; the finished rows were kept:
    # no request answered before the kill was sent again, only the one held at the server.
    bodies = _bodies(server)
    assert kill["answered"] == HELD_AFTER and kill["asked"] == HELD_AFTER + 1
    assert len(bodies) == N + 1 and len(set(bodies)) == N
    assert all(bodies.count(b) == 1 for b in bodies[:HELD_AFTER]) and bodies.count(bodies[HELD_AFTER]) == 2
    answers = _tables(env, "cl-a")[Table.ANSWERS]
    store_answers = _raw(env, "cl-a", Table.ANSWERS)
    assert answers.height == N and int(store_answers["cache_hit"].sum()) == HELD_AFTER
    assert report["calls"]["answers"]["cache_hits"] == HELD_AFTER

    # Steps of this one run executed in more than one worker process, none in the CLI's: the pids Dagster
    # recorded with each step's start (Postgres event log).
    events = _events(env, report["run_id"])
    starts = [(e.dagster_event.step_key, e.dagster_event.pid) for e in events
              if e.dagster_event and e.dagster_event.event_type_value == "STEP_START"]
    worker_pids = before_pids | {w["pid"] for w in dask.workers().values()}
    assert {pid for _, pid in starts} <= worker_pids and proc.pid not in {pid for _, pid in starts}
    assert len({pid for _, pid in starts}) >= 2, starts
    answers_starts = [pid for key, pid in starts if key == "answers"]
    assert len(answers_starts) == 2 and answers_starts[0] == kill["pid"] != answers_starts[1]

    # Arm cl-b: its shared artifacts all store hits, built by nobody in this run.
    code, out, err = cli("run", "cl-b", "--stage", "answers", "--json", env=env, timeout=300)
    assert code == 0, err[-5000:]
    run_b = json.loads(out)["arms"]["cl-b"]["run_id"]
    hits = {e.dagster_event.asset_key.to_user_string(): e.dagster_event.event_specific_data.materialization.metadata
            for e in _events(env, run_b) if e.dagster_event and e.dagster_event.event_type_value == "ASSET_MATERIALIZATION"}
    shared = {a: m["cache_hit"].value for a, m in hits.items() if "cache_hit" in m}
    assert {"chunks", "representations", "bm25_index", "vector_index"} <= set(shared)
    assert all(shared.values()), shared
    cluster_s = time.monotonic() - started

    # The same two arms locally: SQLite instance, local store, multiprocess executor.
    local = _lab(tmp_path / "local", server.base_url)
    local_env = {"RAG_TTC_ARMS": str(local / "arms.yaml"), "RAG_TTC_DATASETS": str(local / "datasets"),
                 "RAG_TTC_HOME": str(local / "home"), "DAGSTER_HOME": str(local / "dh"),
                 "RAG_TTC_EXECUTOR": "multiprocess", **_offline()}
    code, out, err = cli("run", "cl-a", "cl-b", "--stage", "answers", "--json", env=local_env, timeout=600)
    assert code == 0, err[-5000:]
    for arm in ARMS:
        ours, theirs = _tables(env, arm), _tables(local_env, arm)
        for t in TABLES:
            # Exact in every ID, text and count; the float32 similarity scores only to their precision: the question
            # embeddings are computed in another process (a worker, not the local run's step), whose BLAS may sum in
            # another order (seen: 0.5790846943855286 against 0.5790846347808838, the same ranked IDs).
            try:
                assert_frame_equal(ours[t], theirs[t], check_exact=False, rel_tol=1e-5, abs_tol=1e-6)
            except AssertionError as e:
                raise AssertionError(f"{arm} {t}: {e}") from None
    print(f"\nCLUSTER-FIGURES: cluster part {cluster_s:.0f}s, local reference {time.monotonic() - started - cluster_s:.0f}s; "
          f"killed {kill['worker']} (pid {kill['pid']}) after {kill['answered']} answers; "
          f"step pids {sorted({pid for _, pid in starts})}")


def _raw(env: dict, arm: str, table: str) -> pl.DataFrame:
    """A table as the lab of `env` reads it (from the bucket for the cluster's)."""
    from rag_ttc_assets.lab import Lab
    from rag_ttc_assets_tests.support.s3_server import forget_clients

    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        forget_clients()
        try:
            return Lab.from_env().store.read_table(arm, table)
        finally:
            forget_clients()


def test_a_postgres_that_refuses_the_connection_fails_before_any_provider_call(model, tmp_path, postgres_server):
    server, _ = model
    root = _lab(tmp_path, server.base_url)
    home = root / "dh"
    home.mkdir()
    shutil.copy(REPO / "docs" / "cluster" / "postgres.dagster.yaml", home / "dagster.yaml")
    from rag_ttc_assets_tests.support.s3_server import free_port

    port = free_port()  # nothing listens there
    env = {"RAG_TTC_ARMS": str(root / "arms.yaml"), "RAG_TTC_DATASETS": str(root / "datasets"),
           "RAG_TTC_HOME": str(root / "home"), "DAGSTER_HOME": str(home), **postgres_server.env(),
           "DAGSTER_PG_PORT": str(port), **_offline()}
    before = server.request_count
    code, out, err = cli("run", "cl-a", "--stage", "answers", env=env, timeout=120)
    assert code == 1, err[-3000:]
    message = cli_error(err)
    assert "\n" not in message
    assert f"127.0.0.1:{port}" in message and "storage.postgres.postgres_db" in message
    assert "DAGSTER_PG_PORT" in message and str(home / "dagster.yaml") in message
    assert server.request_count == before
    assert not (root / "home").exists() or not any((root / "home").rglob("*.parquet"))
