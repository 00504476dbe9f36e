"""Reliability 3: a `rag-ttc run` killed mid-generation keeps its finished rows, is reported interrupted,
and a rerun resumes from the per-row cache with a new run record and the same result as an uninterrupted run."""

import contextlib
import json
import time

import polars as pl
from dagster import DagsterInstance

from rag_ttc_assets_tests.e2e.conftest import REL_N
from rag_ttc_assets_tests.support.openai_server import FakeOpenAIServer
from rag_ttc_assets_tests.support.reliability import (ANSWERS_UPTO, arms_text, asked, cli, cli_start, fake_model,
                                                      kill_group, lab_env, materialize, synthetic_dataset)

PARTIAL = "results/generated-answers.partial.jsonl"
COUNTS = ("total", "valid", "parse_failures", "contract_failures", "abstentions", "provider_faults")


@contextlib.contextmanager
def _instance(env, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", env["DAGSTER_HOME"])
    try:
        with DagsterInstance.get() as instance:
            yield instance
    finally:
        monkeypatch.delenv("DAGSTER_HOME")


def _wait_for_rows(proc, runs_dir, at_least: int, timeout: float = 240):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the run ended before it could be interrupted"
        for p in runs_dir.glob(f"*/{PARTIAL}"):
            if p.read_bytes().count(b"\n") >= at_least:
                return p
        time.sleep(0.05)
    raise AssertionError("no partial rows appeared")


def test_killed_run_keeps_rows_and_a_rerun_resumes_from_them(rel_lab, tmp_path, monkeypatch):
    env = lab_env(rel_lab)
    delay = {"s": 0.2}

    def slow_model(messages):
        time.sleep(delay["s"])
        return fake_model(messages)

    with FakeOpenAIServer(slow_model) as server:
        arms = arms_text("rel", {"slow": {}}, server.base_url, generation_workers=2)
        (rel_lab / "arms.yaml").write_text(arms)
        proc = cli_start("run", "slow", "--stage", "answers", env=env, out=tmp_path / "killed")
        partial = _wait_for_rows(proc, rel_lab / "home" / "runs" / "slow", at_least=4)
        kill_group(proc)
        assert proc.returncode == -9
        killed_dir = partial.parent.parent

        # The rows finished before the kill are on disk, each a complete JSON line.
        data = partial.read_bytes()
        assert data.endswith(b"\n")
        rows = [json.loads(line) for line in data.decode().splitlines()]
        assert 4 <= len(rows) < REL_N
        finished = {r["query_id"] for r in rows if r["status"] == "ok"}
        assert len(finished) == len(rows) and not any(r["cache_hit"] for r in rows)

        killed_id = json.loads((killed_dir / "status.json").read_text())["dagster_run_id"]
        with _instance(env, monkeypatch) as instance:  # the kill left the run started, holding its pool slot
            assert instance.get_run_by_id(killed_id).status.value == "STARTED"
            assert instance.event_log_storage.get_concurrency_info("provider").active_run_ids == {killed_id}

        code, out, err = cli("runs", "slow", "--json", env=env)
        assert code == 0, err[-3000:]
        (killed,) = [r for r in json.loads(out) if r["run_dir"] == str(killed_dir)]
        assert killed["status"] == "interrupted", killed
        assert killed["partial_rows"][PARTIAL] == len(rows) > 0
        # Dagster agrees (the run no longer shows as started), and the run's `provider` pool slot is free
        # again: otherwise the rerun's answers step would wait for it for ever.
        with _instance(env, monkeypatch) as instance:
            assert instance.get_run_by_id(killed_id).status.value == "CANCELED"
            assert not instance.event_log_storage.get_concurrency_info("provider").claimed_slots

        delay["s"] = 0.0
        before = server.request_count
        code, out, err = cli("run", "slow", "--stage", "answers", "--json", env=env, timeout=300)
        assert code == 0, err[-3000:]
        rerun = json.loads(out)["arms"]["slow"]
        assert rerun["ran"] == ["answers", "contract_results", "contract_summary"]  # retrieval was kept
        assert not set(asked(server, before)) & finished  # no provider call for a finished row
        assert server.request_count - before == rerun["calls"]["answers"]["provider_calls"] <= REL_N - len(finished)
        answers = pl.read_parquet(rel_lab / "home/store/arms/slow/answers.parquet")
        assert finished <= set(answers.filter(pl.col("cache_hit"))["query_id"])
        assert answers.height == REL_N
        run_dirs = sorted((rel_lab / "home" / "runs" / "slow").iterdir())
        assert len(run_dirs) == 2 and killed_dir in run_dirs  # the rerun wrote a new run record
        new_dir = next(d for d in run_dirs if d != killed_dir)
        assert json.loads((new_dir / "status.json").read_text())["dagster_run_id"] == rerun["run_id"]
        code, out, err = cli("runs", "slow", "--json", env=env)
        assert code == 0, err[-3000:]
        statuses = {r["run_dir"]: r["status"] for r in json.loads(out)}
        # The killed run stays interrupted; the rerun ran the stages it was asked for (no run record).
        assert statuses == {str(killed_dir): "interrupted", str(new_dir): "partial"}
        resumed = json.loads((rel_lab / "home/store/arms/slow/contract_summary.json").read_text())
        print(f"\nRELIABILITY-FIGURES interruption: {len(rows)} rows on disk at the kill, "
              f"{before} requests by then; rerun: {server.request_count - before} requests, "
              f"{int(answers['cache_hit'].sum())} cache hits")

        # The same arm, uninterrupted, in a fresh home.
        fresh = tmp_path / "fresh"
        synthetic_dataset(fresh / "datasets" / "rel", REL_N)
        (fresh / "arms.yaml").write_text(arms)
        for k, v in lab_env(fresh).items():
            monkeypatch.setenv(k, v)
        assert materialize("slow", DagsterInstance.ephemeral(), ANSWERS_UPTO).success
    straight = json.loads((fresh / "home/store/arms/slow/contract_summary.json").read_text())
    assert {k: resumed[k] for k in COUNTS} == {k: straight[k] for k in COUNTS}
    assert resumed["total"] == REL_N and resumed["valid"] == REL_N
