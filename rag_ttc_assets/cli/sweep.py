"""`rag-ttc sweep FAMILY`: every arm of a sweep family as one Dagster partition backfill.

By default the backfill is launched on a running `dagster dev` (`make dev`) through its GraphQL
endpoint, exactly as *Launch backfill* in an asset's partition dialog does: one asset backfill of
the stage's assets over the family's partitions (arm names). The daemon queues its runs through
the QueuedRunCoordinator, so `concurrency.runs.max_concurrent_runs` and the `provider` pool limit
of dagster.yaml apply. `--wait` follows it until every partition has finished. `--in-process`
gives the runs the in_process executor (one process per arm instead of one per step).

`--local` runs the family in this process instead, arm after arm, through the same job as
`rag-ttc run` (only stale assets run there).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rag_ttc_assets.adapters.input_files import load_arms
from rag_ttc_assets.cli.common import CliError, lab_from_args
from rag_ttc_assets.cli.materialize import materialize_arms
from rag_ttc_assets.core.arms_file import ArmsError
from rag_ttc_assets.defs.graph import STAGES

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

DEFAULT_URL = "http://127.0.0.1:3000"
POLL_S = 2.0  # --wait polls the backfill this often
SWEEP_TAG = "rag_ttc/sweep"
RUN_FINISHED = ("SUCCESS", "FAILURE", "CANCELED")
# Run config of the project's default executor: every step of a run in the run's own process.
IN_PROCESS = {"execution": {"config": {"in_process": {}}}}
BACKFILL_FINISHED = ("COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED")

LAUNCH = """
mutation LaunchSweep($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message stack }
    ... on Error { message }
  }
}"""

BACKFILL = """
query SweepBackfill($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill {
      id status partitionNames
      error { message }
      runs(limit: 1000) { runId status tags { key value } assetSelection { path } }
    }
    ... on PythonError { message }
    ... on Error { message }
  }
}"""


STEP_FAILURES = """
query SweepRunFailures($id: ID!) {
  logsForRun(runId: $id) {
    __typename
    ... on EventConnection {
      events { __typename ... on ExecutionStepFailureEvent { stepKey error { message cause { message } } } }
    }
  }
}"""


class SweepError(Exception):
    pass


class _Answer(BaseModel):
    """A part of dagster dev's GraphQL answer, as the queries above ask for it (fields they do not use ignored)."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)


class _OrError(_Answer):
    """A `...OrError` union: its type, and the message an error type carries."""

    typename: str = Field(alias="__typename")
    message: str | None = None


class _Launched(_OrError):
    backfill_id: str | None = Field(default=None, alias="backfillId")


class _Error(_Answer):
    """An error's message, and the error that caused it (a failed step's)."""

    message: str | None = None
    cause: _Error | None = None


class _Tag(_Answer):
    key: str
    value: str


class _AssetKey(_Answer):
    path: list[str]


class BackfillRun(_Answer):
    """One run of the backfill: its id, status, tags (the partition is one) and asset selection."""

    run_id: str = Field(alias="runId")
    status: str
    tags: list[_Tag]
    asset_selection: list[_AssetKey] | None = Field(default=None, alias="assetSelection")


class Backfill(_Answer):
    """`partitionBackfillOrError` when it is a PartitionBackfill."""

    id: str
    status: str
    error: _Error | None = None
    runs: list[BackfillRun]




class _Event(_OrError):
    step_key: str | None = Field(default=None, alias="stepKey")
    error: _Error | None = None


class _RunLogs(_Answer):
    events: list[_Event] = []


class _GraphQLError(_Answer):
    """One of a GraphQL answer's `errors`: its message, or (without one) the error as the server sent it."""

    model_config = ConfigDict(frozen=True, extra="allow")

    message: Any = None

    def text(self) -> str:
        return self.message if self.has_message() else str(self.model_dump(exclude_unset=True))

    def has_message(self) -> bool:
        return "message" in self.model_fields_set


class _Envelope(_Answer):
    """A GraphQL answer: its `data`, and the `errors` that make it fail."""

    data: Any = None
    errors: list[_GraphQLError] | None = None


class _LaunchData(_Answer):
    launched: dict[str, Any] = Field(alias="launchPartitionBackfill")


class _BackfillData(_Answer):
    backfill: dict[str, Any] = Field(alias="partitionBackfillOrError")


class _LogsData(_Answer):
    logs: dict[str, Any] = Field(alias="logsForRun")


class _Failed(_Answer):
    """cli.materialize.materialize_arms's `failed` of an arm: the step that failed (None: outside the steps) and the
    run record written."""

    step: str | None = None
    run_record: str


class _ArmRun(_Answer):
    """cli.materialize.materialize_arms's result for one arm: its run (None: nothing to run), the assets it ran, and
    what failed."""

    run_id: str | None
    ran: list[str]
    failed: _Failed | None = None


@dataclass(frozen=True)
class Waited:
    """A finished backfill and each arm's status (`partition_statuses`)."""

    backfill: Backfill
    partition_status: dict[str, str]


@dataclass(frozen=True)
class RunReport:
    """A run of the sweep as `--json` reports it; `failed_steps` only for a failed run."""

    run_id: str
    arm: str | None
    status: str
    failed_steps: list[str] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "arm": self.arm, "status": self.status,
                **({} if self.failed_steps is None else {"failed_steps": self.failed_steps})}


class GraphQLClient:
    """POSTs to `<url>/graphql`; SweepError when dagster dev is not there or reports errors."""

    def __init__(self, url: str, timeout_s: float = 60.0):
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def __call__(self, query: str, variables: dict[str, Any] | None = None) -> dict:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        req = urllib.request.Request(self.url + "/graphql", data=body, method="POST",
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                answer = json.loads(resp.read())
        except urllib.error.HTTPError as e:
            body = e.read()[:500].decode(errors="replace")
            raise SweepError(f"{self.url}/graphql answered HTTP {e.code}: {body}") from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise SweepError(f"dagster dev is not reachable at {self.url} ({reason}); start it with `make dev`, "
                             f"or pass --url, or run the sweep in this process with --local") from None
        except json.JSONDecodeError:
            raise SweepError(f"{self.url}/graphql did not answer JSON: is this the Dagster webserver?") from None
        envelope = _Envelope.model_validate(answer)
        if envelope.errors:
            raise SweepError("GraphQL error: " + "; ".join(e.text() for e in envelope.errors))
        return envelope.data


def family_arms(args, local: bool) -> list[str]:
    lab = lab_from_args(args)
    if local:
        return lab.arms.family(args.family)  # full check: datasets and prompts must exist here

    # Only the names are needed: dagster dev checks the partitions against its own arms file.
    return load_arms(lab.arms_file).family(args.family)


def backfill_params(family: str, arms: list[str], stage: str, in_process: bool = False) -> dict:
    """The `LaunchBackfillParams` of an asset backfill: the stage's assets over the family's arms."""
    return {
        "partitionNames": arms,
        "assetSelection": [{"path": [name]} for name in STAGES[stage]],
        "title": f"sweep {family} ({stage})",
        "description": f"rag-ttc sweep {family} --stage {stage}: arms {', '.join(arms)}",
        "tags": [{"key": SWEEP_TAG, "value": family}, {"key": "rag_ttc/stage", "value": stage}],
        **({"runConfigData": IN_PROCESS} if in_process else {}),
    }


def launch_backfill(gql: GraphQLClient, family: str, arms: list[str], stage: str, in_process: bool = False) -> str:
    answer = _LaunchData.model_validate(gql(LAUNCH, {"params": backfill_params(family, arms, stage,
                                                                                in_process)})).launched
    result = _Launched.model_validate(answer)
    if result.typename != "LaunchBackfillSuccess" or result.backfill_id is None:
        said = answer if result.message is None else result.message
        raise SweepError(f"the backfill was not launched ({result.typename}): {said}")
    return result.backfill_id


def backfill_state(gql: GraphQLClient, backfill_id: str) -> Backfill:
    answer = _BackfillData.model_validate(gql(BACKFILL, {"id": backfill_id})).backfill
    kind = _OrError.model_validate(answer)
    if kind.typename != "PartitionBackfill":
        raise SweepError(f"backfill {backfill_id}: {kind.typename}: {answer if kind.message is None else kind.message}")
    return Backfill.model_validate(answer)


def _partition(run: BackfillRun) -> str | None:
    return next((t.value for t in run.tags if t.key == "dagster/partition"), None)


def partition_statuses(arms: list[str], runs: list[BackfillRun], assets: list[str],
                       backfill_done: bool) -> dict[str, str]:
    """Per arm: FAILURE or CANCELED once one of its runs ended so; the status of its unfinished run
    (QUEUED, STARTED...); SUCCESS once successful runs have materialized every asset of the stage;
    else PENDING, or NOT_LAUNCHED / INCOMPLETE when the backfill has finished without that."""
    out = {}
    for arm in arms:
        mine = [r for r in runs if _partition(r) == arm]
        bad = [r.status for r in mine if r.status in ("FAILURE", "CANCELED")]
        unfinished = [r.status for r in mine if r.status not in RUN_FINISHED]
        done_assets: set[str] = set()
        for r in mine:
            if r.status == "SUCCESS":
                # A run without an asset selection ran its whole job.
                done_assets.update(k.path[-1] for k in r.asset_selection) if r.asset_selection \
                    else done_assets.update(assets)
        if bad:
            out[arm] = bad[0]
        elif unfinished:
            out[arm] = unfinished[0]
        elif mine and done_assets >= set(assets):
            out[arm] = "SUCCESS"
        elif backfill_done:
            out[arm] = "INCOMPLETE" if mine else "NOT_LAUNCHED"
        else:
            out[arm] = "PENDING"
    return out


def wait_for_backfill(gql: GraphQLClient, backfill_id: str, arms: list[str], assets: list[str], out,
                      poll_s: float | None = None, timeout_s: float | None = None) -> Waited:
    """Poll until every arm has finished, writing `arm -> STATUS (run …)` to `out` as runs finish.

    Finished means: the backfill says so, or every arm has failed or has all of `assets`
    materialized by successful runs (the daemon marks the backfill completed on its next tick,
    up to half a minute later; nothing is left for it to launch by then)."""
    seen: set[str] = set()
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        b = backfill_state(gql, backfill_id)
        for run in sorted(b.runs, key=lambda r: r.run_id):
            if run.status in RUN_FINISHED and run.run_id not in seen:
                seen.add(run.run_id)
                print(f"{_partition(run)} -> {run.status} (run {run.run_id})", file=out, flush=True)
        backfill_done = b.status in BACKFILL_FINISHED
        statuses = partition_statuses(arms, b.runs, assets, backfill_done)
        settled = all(s in ("SUCCESS", "FAILURE", "CANCELED", "NOT_LAUNCHED", "INCOMPLETE") for s in statuses.values())
        if settled or (backfill_done and all(r.status in RUN_FINISHED for r in b.runs)):
            return Waited(b, statuses)
        if deadline is not None and time.monotonic() > deadline:
            now = ", ".join(f"{a} {s}" for a, s in statuses.items())
            raise SweepError(f"backfill {backfill_id} still {b.status} after {timeout_s:.0f} s "
                             f"(it keeps running in dagster dev): {now}")
        time.sleep(POLL_S if poll_s is None else poll_s)


def run_failures(gql: GraphQLClient, run_id: str) -> list[str]:
    """`step KEY: message` for each failed step of a run (the cause's message when there is one)."""
    logs = _RunLogs.model_validate(_LogsData.model_validate(gql(STEP_FAILURES, {"id": run_id})).logs)
    out = []
    for ev in logs.events:
        if ev.typename == "ExecutionStepFailureEvent":
            err = ev.error or _Error()
            msg = ((err.cause or _Error()).message or err.message or "").strip()
            out.append(f"step {ev.step_key}: {msg}")
    return out


def cmd_sweep(args) -> int:
    """Errors are reported here, not by the caller's main: under `python -m rag_ttc_assets.cli` that
    module is `__main__`, whose CliError is not the one `rag_ttc_assets.cli` raises."""
    try:
        return _sweep(args)
    except (SweepError, CliError, ArmsError, FileNotFoundError) as e:
        print(f"rag-ttc: error: {e}", file=sys.stderr)
        return getattr(e, "exit_code", 1)  # 130: interrupted (cli.materialize.RunInterrupted)


def _sweep(args) -> int:
    if args.local:
        return _sweep_local(args)
    arms = family_arms(args, local=False)
    gql = GraphQLClient(args.url)
    gql("{ version }")  # fails early and clearly when dagster dev is not there
    backfill_id = launch_backfill(gql, args.family, arms, args.stage, args.in_process)
    link = f"{gql.url}/runs/b/{backfill_id}"  # the backfill's page in the 1.13 UI (Runs > Backfills)
    report: dict[str, Any] = {"family": args.family, "stage": args.stage, "arms": arms,
                              "backfill_id": backfill_id, "url": link}
    # With --json the progress goes to stderr and stdout holds one JSON document.
    progress = sys.stderr if args.json else sys.stdout
    print(f"launched backfill {backfill_id}: {args.family} ({len(arms)} arms: {', '.join(arms)}), stage "
          f"{args.stage}\n{link}", file=progress, flush=True)
    if not args.wait:
        if args.json:
            print(json.dumps(report, indent=2))
        return 0
    try:
        waited = wait_for_backfill(gql, backfill_id, arms, STAGES[args.stage], progress, timeout_s=args.timeout)
    except KeyboardInterrupt:
        print(f"\nstopped waiting; backfill {backfill_id} keeps running: {link}", file=sys.stderr)
        return 130
    b, partitions = waited.backfill, waited.partition_status
    failed = {a: s for a, s in partitions.items() if s != "SUCCESS"}
    status = "FAILURE" if failed or b.error else "SUCCESS"
    runs = [RunReport(r.run_id, _partition(r), r.status,
                      run_failures(gql, r.run_id) if r.status == "FAILURE" else None) for r in b.runs]
    report.update(status=status, partitions=partitions, runs=[r.to_json() for r in runs])
    if b.error:
        report["error"] = b.error.message
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"sweep {args.family} {status}: " + ", ".join(f"{a} {s}" for a, s in partitions.items()))
    if status == "SUCCESS":
        return 0
    msg = f"backfill {backfill_id}: " + (", ".join(f"{a} {s}" for a, s in failed.items()) or b.status)
    if b.error:
        msg += f"\n{(b.error.message or '').strip()}"
    for r in runs:
        msg += "".join(f"\n  {r.arm} (run {r.run_id}) {line}" for line in r.failed_steps or [])
    print(f"rag-ttc: error: {msg}\nsee {link}", file=sys.stderr)
    return 1


def _sweep_local(args) -> int:
    """Arm after arm in this process; an arm whose run fails is recorded (its run record says the step and the
    error), the sweep goes on, and the failed arms are named at the end (exit 1), as `rag-ttc run A B C` does."""
    from rag_ttc_assets.cli.run import not_finished_text  # late: the run command's tables load only when this runs

    arms = family_arms(args, local=True)
    progress = sys.stderr if args.json else sys.stdout
    print(f"sweep {args.family} in this process ({len(arms)} arms), stage {args.stage}", file=progress, flush=True)
    report, runs, failed = {}, {}, {}
    for n, arm in enumerate(arms, 1):
        print(f"[{n}/{len(arms)}] {arm} ...", file=progress, flush=True)
        started = time.monotonic()
        r = runs[arm] = materialize_arms([arm], args.stage, keep_going=True)[arm]
        run = _ArmRun.model_validate(r)
        seconds = round(time.monotonic() - started, 1)
        if run.failed is not None:
            failed[arm] = r["failed"]  # as materialize_arms gave it: cli.run.not_finished_text reads it
            report[arm] = {**r, "status": "FAILURE", "seconds": seconds}
            where = f"at step {run.failed.step}" if run.failed.step else "outside its steps"
            print(f"[{n}/{len(arms)}] {arm} -> FAILURE {where} in run {run.run_id} (run record "
                  f"{run.failed.run_record}; {seconds} s)", file=progress, flush=True)
            continue
        report[arm] = {**r, "status": "SUCCESS", "seconds": seconds}
        what = f"ran {len(run.ran)} asset(s) in run {run.run_id}" if run.ran else "up to date, nothing to run"
        print(f"[{n}/{len(arms)}] {arm} -> SUCCESS: {what} ({seconds} s)", file=progress, flush=True)
    if args.json:
        print(json.dumps({"family": args.family, "stage": args.stage, "local": True, "arms": report}, indent=2,
                         default=str))
    if failed:
        raise CliError(not_finished_text(failed, runs, len(arms), args.stage))
    return 0


def _configure(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("family", help="a sweep family of the arms file (`rag-ttc arms` lists them)")
    p.add_argument("--url", default=DEFAULT_URL, help=f"the dagster dev webserver (default: {DEFAULT_URL})")
    p.add_argument("--local", action="store_true",
                   help="run the family's arms in this process instead of a backfill on dagster dev")
    p.add_argument("--stage", choices=list(STAGES), default="all")
    p.add_argument("--wait", action="store_true",
                   help="follow the backfill, printing each arm's status as its run finishes; exit 1 if one fails")
    p.add_argument("--in-process", action="store_true",
                   help="run each arm's steps in its run's process (Dagster's in_process executor) instead of a "
                        "process per step: no process start per step, no parallel steps within an arm")
    p.add_argument("--timeout", type=float, help="with --wait: give up waiting after this many seconds")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout, progress on stderr")
    p.add_argument("--arms-file", help="arms file (default: $RAG_TTC_ARMS or ./arms.yaml)")
    p.add_argument("--datasets-dir", help="datasets folder, with --local (default: $RAG_TTC_DATASETS or ./datasets)")
    p.add_argument("--home", help="artifact store folder, with --local (default: $RAG_TTC_HOME or ./.rag_ttc)")
    p.set_defaults(fn=cmd_sweep)
    return p


DESCRIPTION = ("Run every arm of a sweep family: by default as one partition backfill on a running "
               "`dagster dev` (`make dev`; its runs are queued and obey dagster.yaml's concurrency limits), "
               "or with --local in this process.")


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add `sweep` to the `rag-ttc` subcommands."""
    return _configure(subparsers.add_parser("sweep", help="run a sweep family as a Dagster partition backfill",
                                            description=DESCRIPTION))


def main(argv: list[str] | None = None) -> int:
    """`python -m rag_ttc_assets.cli.sweep FAMILY ...`, the same as `rag-ttc sweep FAMILY ...`."""
    args = _configure(argparse.ArgumentParser(prog="rag-ttc sweep", description=DESCRIPTION)).parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
