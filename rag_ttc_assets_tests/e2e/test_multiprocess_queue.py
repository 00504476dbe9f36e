"""Beyond one process: the project's definitions under the multiprocess executor and the queued run
coordinator of the project's dagster.yaml (max_concurrent_runs 2), two arms at once.

A real `dagster dev` (webserver, daemon with its run queue, code server) in a fresh DAGSTER_HOME holding
a copy of dagster.yaml; two runs of the retrieval stage, one per arm partition, are submitted through
GraphQL `launchRun` with the multiprocess executor (each step its own process) and left QUEUED for the
daemon. Both must succeed, must have been in flight together (each started before the other ended),
and must leave a materialization of every stage asset for their own partition. The two arms share every
shared artifact, so their step processes race for the same store entries (build_once's file lock).
"""

from __future__ import annotations

import time

import pytest

from rag_ttc_assets.cli import STAGES
from rag_ttc_assets_tests.conftest import REPO
from rag_ttc_assets_tests.e2e.test_sweep import lab_env
from rag_ttc_assets_tests.support.dagster_dev import FINISHED, DagsterDev

ARMS = ["baseline", "evidence-k-5"]
STAGE = list(STAGES["retrieval"])  # what `rag-ttc run --stage retrieval` and `rag-ttc sweep` select
MULTIPROCESS = {"execution": {"config": {"multiprocess": {"max_concurrent": 2}}}}

LOCATIONS = "{ workspaceOrError { ... on Workspace { locationEntries { name } } } }"
LAUNCH = """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename
  ... on LaunchRunSuccess { run { runId status } }
  ... on PythonError { message } ... on InvalidSubsetError { message }
  ... on RunConfigValidationInvalid { errors { message } } } }"""
RUN = """query($id: ID!) { runOrError(runId: $id) { __typename
  ... on Run { status startTime endTime tags { key value } } } }"""
LOGS = """query($id: ID!) { logsForRun(runId: $id) { __typename
  ... on EventConnection { events { __typename ... on MessageEvent { message } } } } }"""
MATERIALIZATIONS = """query($path: [String!]!, $partitions: [String!]) { assetOrError(assetKey: {path: $path}) {
  ... on Asset { assetMaterializations(partitions: $partitions) { partition runId } } } }"""


def launch(dev: DagsterDev, location: str, arm: str) -> str:
    params = {"selector": {"repositoryLocationName": location, "repositoryName": "__repository__",
                           "jobName": "arm_job", "assetSelection": [{"path": [a]} for a in STAGE]},
              "runConfigData": MULTIPROCESS,
              "executionMetadata": {"tags": [{"key": "dagster/partition", "value": arm}]}}
    result = dev.graphql(LAUNCH, {"p": params})["launchRun"]
    assert result["__typename"] == "LaunchRunSuccess", result
    assert result["run"]["status"] == "QUEUED"  # the QueuedRunCoordinator holds it for the daemon
    return result["run"]["runId"]


@pytest.mark.slow
def test_two_arms_run_concurrently_with_the_multiprocess_executor_and_the_run_queue(mini_lab):
    with DagsterDev(REPO, env=lab_env(), timeout_s=240) as dev:
        location = dev.graphql(LOCATIONS)["workspaceOrError"]["locationEntries"][0]["name"]
        runs = {arm: launch(dev, location, arm) for arm in ARMS}

        # Poll both until they finish, watching for a moment when both are STARTED at once.
        both_in_flight = False
        deadline = time.monotonic() + 900
        status: dict[str, dict] = {}
        while time.monotonic() < deadline:
            status = {arm: dev.graphql(RUN, {"id": rid})["runOrError"] for arm, rid in runs.items()}
            both_in_flight |= all(s["status"] == "STARTED" for s in status.values())
            if all(s["status"] in FINISHED for s in status.values()):
                break
            time.sleep(1.0)
        assert {arm: s["status"] for arm, s in status.items()} == dict.fromkeys(ARMS, "SUCCESS"), \
            dev.log_text()[-8000:]

        # In flight together: each run started before the other ended (run stats, seconds since the epoch).
        a, b = (status[arm] for arm in ARMS)
        assert a["startTime"] < b["endTime"] and b["startTime"] < a["endTime"], (a, b)
        print(f"both STARTED seen by polling: {both_in_flight}; "
              f"{ARMS[0]} {a['startTime']:.1f}-{a['endTime']:.1f}, {ARMS[1]} {b['startTime']:.1f}-{b['endTime']:.1f}")

        for arm, rid in runs.items():
            assert {"key": "dagster/partition", "value": arm} in status[arm]["tags"]
            events = dev.graphql(LOGS, {"id": rid})["logsForRun"]["events"]
            kinds = {e["__typename"] for e in events}
            # Queued by the QueuedRunCoordinator, then launched by the daemon's run queue.
            assert {"RunEnqueuedEvent", "RunStartEvent", "RunSuccessEvent"} <= kinds, kinds
            assert kinds & {"RunDequeuedEvent", "RunStartingEvent"}, kinds
            messages = " ".join(e.get("message") or "" for e in events)
            assert "Executing steps using multiprocess executor" in messages, messages[:3000]
            for asset in STAGE:  # every step in a process of its own
                assert f'Launching subprocess for "{asset}".' in messages, (arm, asset)

        # One materialization of every stage asset per partition, each from that partition's run.
        for asset in STAGE:
            mats = dev.graphql(MATERIALIZATIONS, {"path": [asset], "partitions": ARMS})["assetOrError"]
            got = {(m["partition"], m["runId"]) for m in mats["assetMaterializations"]}
            assert got == {(arm, runs[arm]) for arm in ARMS}, (asset, got)
        for arm in ARMS:
            assert mini_lab.store.arm_path(arm, "admitted_contexts.parquet").is_file()
