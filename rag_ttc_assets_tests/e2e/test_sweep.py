"""`rag-ttc sweep FAMILY`: a family's arms as one partition backfill on a real `dagster dev`, and --local.

The mini lab's `context` family is context-700 and context-4000. Runs use `--in-process` (one
process per run, not per step): a step process costs 20-30 s to start on this 2-core machine.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest
import yaml

from rag_ttc_assets_tests.conftest import REPO
from rag_ttc_assets_tests.support.dagster_dev import DagsterDev, free_port

FAMILY = ["context-700", "context-4000"]
PASSED = ("RAG_TTC_ARMS", "RAG_TTC_DATASETS", "RAG_TTC_HOME")


def lab_env() -> dict[str, str]:
    return {k: os.environ[k] for k in PASSED}


def run(module: str, *args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, **(env or {})}, timeout=timeout)


def cli_has_sweep() -> bool:
    """The other half of the issue: `sweep` wired into `rag-ttc` (cli.py) with `sweep.add_parser`."""
    return "sweep" in run("rag_ttc_assets.cli", "--help").stdout


INSTANCE = """{ instance { runQueueConfig { maxConcurrentRuns } poolConfig { poolGranularity defaultPoolLimit }
                concurrencyLimit(concurrencyKey: "provider") { limit usingDefaultLimit } } }"""
BACKFILL = """query($id: String!) { partitionBackfillOrError(backfillId: $id) { __typename
  ... on PartitionBackfill { isAssetBackfill partitionNames title assetSelection { path } tags { key value }
                             runs { runId status tags { key value } } } } }"""
EVENTS = """query($id: ID!) { logsForRun(runId: $id) { __typename
  ... on EventConnection { events { __typename } } } }"""


def assert_sweep_succeeded(dev: DagsterDev, proc: subprocess.CompletedProcess, lab) -> dict:
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n{dev.log_text()[-6000:]}"
    report = json.loads(proc.stdout)
    backfill_id = report["backfill_id"]
    assert re.fullmatch(r"[a-z0-9]{6,}", backfill_id), report
    assert f"launched backfill {backfill_id}" in proc.stderr
    assert f"{dev.url}/runs/b/{backfill_id}" in proc.stderr and report["url"].endswith(backfill_id)
    assert report["partitions"] == {arm: "SUCCESS" for arm in FAMILY}, proc.stderr
    assert report["status"] == "SUCCESS"
    # Progress as runs finish, one line per partition.
    for arm in FAMILY:
        assert re.search(rf"^{re.escape(arm)} -> SUCCESS \(run [0-9a-f-]{{36}}\)$", proc.stderr, re.M), proc.stderr
    for arm in FAMILY:
        assert lab.store.arm_path(arm, "admitted_contexts.parquet").is_file(), arm

    # What dagster dev holds: one asset backfill of the retrieval stage over the family's partitions,
    # whose runs were queued by the QueuedRunCoordinator (and started by its daemon).
    b = dev.graphql(BACKFILL, {"id": backfill_id})["partitionBackfillOrError"]
    assert b["isAssetBackfill"] and sorted(b["partitionNames"]) == sorted(FAMILY)
    assert {k["path"][-1] for k in b["assetSelection"]} >= {"corpus_binding", "admitted_contexts", "retrieval_summary"}
    assert "answers" not in {k["path"][-1] for k in b["assetSelection"]}
    assert {"key": "rag_ttc/sweep", "value": "context"} in b["tags"]
    runs = b["runs"]
    partitions = [next(t["value"] for t in r["tags"] if t["key"] == "dagster/partition") for r in runs]
    assert sorted(partitions) == sorted(FAMILY)
    for r in runs:
        assert r["status"] == "SUCCESS"
        events = {e["__typename"] for e in dev.graphql(EVENTS, {"id": r["runId"]})["logsForRun"]["events"]}
        assert {"RunEnqueuedEvent", "RunSuccessEvent"} <= events, events
    return report


@pytest.mark.slow
def test_sweep_launches_a_backfill_on_dagster_dev_and_waits(mini_lab, tmp_path):
    started = time.monotonic()
    stated = yaml.safe_load((REPO / "dagster.yaml").read_text())["concurrency"]
    with DagsterDev(REPO, env=lab_env()) as dev:
        # dagster dev runs with the project's dagster.yaml: the queue and the provider pool limit.
        inst = dev.graphql(INSTANCE)["instance"]
        assert inst["runQueueConfig"]["maxConcurrentRuns"] == stated["runs"]["max_concurrent_runs"]
        assert inst["poolConfig"] == {"poolGranularity": "op", "defaultPoolLimit": stated["pools"]["default_limit"]}
        assert inst["concurrencyLimit"]["limit"] == stated["pools"]["default_limit"]

        args = ["context", "--stage", "retrieval", "--url", dev.url, "--wait", "--json", "--in-process",
                "--timeout", "240"]
        proc = run("rag_ttc_assets.cli.sweep", *args)
        first = assert_sweep_succeeded(dev, proc, mini_lab)
        print(proc.stderr, proc.stdout, sep="\n")  # the README's example output (pytest -s)

        if cli_has_sweep():
            proc = run("rag_ttc_assets.cli", "sweep", *args)
            assert assert_sweep_succeeded(dev, proc, mini_lab)["backfill_id"] != first["backfill_id"]

        # A launch dagster dev refuses: the GraphQL error, exit 1, no backfill.
        other = tmp_path / "other-arms.yaml"
        other.write_text((tmp_path / "arms.yaml").read_text().replace("values: [700, 4000]", "values: [700, 999]"))
        proc = run("rag_ttc_assets.cli.sweep", "context", "--arms-file", str(other), "--url", dev.url, "--wait")
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "rag-ttc: error: the backfill was not launched" in proc.stderr and "context-999" in proc.stderr, \
            proc.stderr
        assert "launched backfill" not in proc.stdout
    print(f"e2e sweep test: {time.monotonic() - started:.0f} s")


def test_sweep_without_dagster_dev_says_how_to_start_it(tmp_path):
    proc = run("rag_ttc_assets.cli.sweep", "context", "--url", f"http://127.0.0.1:{free_port()}", "--wait")
    assert proc.returncode == 1
    assert "dagster dev is not reachable at http://127.0.0.1:" in proc.stderr
    assert "start it with `make dev`" in proc.stderr


def test_unknown_family_names_the_known_ones(mini_lab):
    proc = run("rag_ttc_assets.cli.sweep", "nope", "--url", "http://127.0.0.1:9")
    assert proc.returncode == 1
    assert "unknown family 'nope'; known families: context" in proc.stderr


@pytest.mark.slow
def test_sweep_local_runs_the_family_in_process(mini_lab, tmp_path, monkeypatch, capsys):
    """In this process (as `python -m rag_ttc_assets.cli.sweep` would), saving a second interpreter's imports."""
    from dagster import DagsterInstance

    from rag_ttc_assets.cli.sweep import main

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    assert main(["context", "--stage", "retrieval", "--local", "--json"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report["local"] is True and list(report["arms"]) == FAMILY
    for n, arm in enumerate(FAMILY, 1):
        assert report["arms"][arm]["status"] == "SUCCESS" and "admitted_contexts" in report["arms"][arm]["ran"]
        assert f"[{n}/2] {arm} -> SUCCESS: ran " in err
        assert mini_lab.store.arm_path(arm, "admitted_contexts.parquet").is_file()
    # The runs are recorded in DAGSTER_HOME, as `rag-ttc run` records them.
    with DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
        for arm in FAMILY:
            assert instance.get_run_by_id(report["arms"][arm]["run_id"]).tags["dagster/partition"] == arm

    # Up to date now: a second local sweep runs nothing.
    assert main(["context", "--stage", "retrieval", "--local"]) == 0
    assert capsys.readouterr().out.count("up to date, nothing to run") == 2


class ScriptedDagster:
    """Stands in for dagster dev's GraphQL endpoint: the backfill goes through `states`, one per poll."""

    def __init__(self, states: list[list[dict]], failures: dict[str, list[dict]] | None = None):
        self.states, self.failures, self.launched = list(states), failures or {}, []

    def answer(self, query: str, variables: dict | None = None) -> dict:
        if "launchPartitionBackfill" in query:
            self.launched.append(variables["params"])
            return {"launchPartitionBackfill": {"__typename": "LaunchBackfillSuccess", "backfillId": "abcdefgh"}}
        if "partitionBackfillOrError" in query:
            runs = self.states.pop(0) if len(self.states) > 1 else self.states[0]
            return {"partitionBackfillOrError": {"__typename": "PartitionBackfill", "id": "abcdefgh",
                                                 "status": "REQUESTED", "partitionNames": FAMILY, "error": None,
                                                 "runs": runs}}
        if "logsForRun" in query:
            return {"logsForRun": {"__typename": "EventConnection", "events": self.failures.get(variables["id"], [])}}
        return {"version": "1.13.27"}


def _run(run_id, arm, status, assets=("corpus_binding", "admitted_contexts")):
    return {"runId": run_id, "status": status, "tags": [{"key": "dagster/partition", "value": arm}],
            "assetSelection": [{"path": [a]} for a in assets]}


def _fake(monkeypatch, fake):
    import rag_ttc_assets.cli.sweep as sweep

    class Client:
        def __init__(self, url):
            self.url = url.rstrip("/")

        def __call__(self, query, variables=None):
            return fake.answer(query, variables)

    monkeypatch.setattr(sweep, "GraphQLClient", Client)
    monkeypatch.setattr(sweep, "POLL_S", 0.0)
    return sweep


def test_wait_reports_each_partition_and_exits_1_with_the_failed_step(mini_lab, monkeypatch, capsys):
    from rag_ttc_assets.cli import STAGES

    stage = list(STAGES["retrieval"])
    fake = ScriptedDagster(
        [[_run("r1", "context-700", "QUEUED", stage), _run("r2", "context-4000", "QUEUED", stage)],
         [_run("r1", "context-700", "STARTED", stage), _run("r2", "context-4000", "FAILURE", stage)],
         [_run("r1", "context-700", "SUCCESS", stage), _run("r2", "context-4000", "FAILURE", stage)]],
        {"r2": [{"__typename": "ExecutionStepFailureEvent", "stepKey": "chunks",
                 "error": {"message": "wrapper", "cause": {"message": "ValueError: overlap >= chunk size"}}}]})
    sweep = _fake(monkeypatch, fake)
    assert sweep.main(["context", "--stage", "retrieval", "--url", "http://x:1/", "--wait"]) == 1
    out, err = capsys.readouterr()
    params = fake.launched[0]
    assert params["partitionNames"] == FAMILY and [k["path"] for k in params["assetSelection"]] == [[a] for a in stage]
    assert "runConfigData" not in params  # the default executor unless --in-process
    assert out.splitlines()[:2] == ["launched backfill abcdefgh: context (2 arms: context-700, context-4000), "
                                    "stage retrieval", "http://x:1/runs/b/abcdefgh"]
    assert out.index("context-4000 -> FAILURE (run r2)") < out.index("context-700 -> SUCCESS (run r1)")
    assert "sweep context FAILURE: context-700 SUCCESS, context-4000 FAILURE" in out
    assert "rag-ttc: error: backfill abcdefgh: context-4000 FAILURE" in err
    assert "context-4000 (run r2) step chunks: ValueError: overlap >= chunk size" in err


def test_a_partition_is_done_only_when_every_asset_of_the_stage_is(monkeypatch, capsys, mini_lab):
    """An asset backfill may split an arm over several runs: one successful run of part of the stage is not done."""
    from rag_ttc_assets.cli import STAGES

    stage = list(STAGES["retrieval"])
    fake = ScriptedDagster(
        [[_run("r1", "context-700", "SUCCESS", stage[:3]), _run("r2", "context-4000", "SUCCESS", stage)],
         [_run("r1", "context-700", "SUCCESS", stage[:3]), _run("r2", "context-4000", "SUCCESS", stage),
          _run("r3", "context-700", "SUCCESS", stage[3:])]])
    sweep = _fake(monkeypatch, fake)
    assert sweep.main(["context", "--stage", "retrieval", "--wait", "--json", "--in-process"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report["partitions"] == {"context-700": "SUCCESS", "context-4000": "SUCCESS"}
    assert [r["run_id"] for r in report["runs"]] == ["r1", "r2", "r3"]  # it waited for r3
    assert fake.launched[0]["runConfigData"] == {"execution": {"config": {"in_process": {}}}}
    assert "context-700 -> SUCCESS (run r3)" in err
