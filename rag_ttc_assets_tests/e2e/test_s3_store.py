"""The store on S3-compatible object storage through the user's path: `rag-ttc run` with RAG_TTC_HOME=s3://...
against a real S3 API server on 127.0.0.1 (moto's, IAM authentication on), a generator behind a loopback OpenAI
server. The same arm in a local store gives the same rows; a second arm on another worker's local cache finds every
shared artifact a store hit; a truncated object is rebuilt; inspect, report, compare and runs read the bucket; a
store the run cannot use fails before any provider call."""

from __future__ import annotations

import json

import polars as pl
import pytest
from dagster import AssetKey, AssetRecordsFilter, DagsterInstance

from rag_ttc_assets.adapters.store import Table
from rag_ttc_assets.lab import Lab
from rag_ttc_assets_tests.support.openai_server import FakeOpenAIServer
from rag_ttc_assets_tests.support.reliability import (arms_text, cli, cli_error, fake_model, lab_env, materialize,
                                                      step_failures, synthetic_dataset)
from rag_ttc_assets_tests.support.s3_server import free_port

pytestmark = pytest.mark.slow

SHARED = ("chunks", "representations", "bm25_index", "vector_index")
ANSWER_COLUMNS = ["query_id", "model", "status", "raw_text", "admitted_chunk_ids", "messages_digests", "error"]


@pytest.fixture
def s3_lab(tmp_path, s3_server, s3_bucket):
    """Two arms sharing their upstream (`remote`, `remote-k3`: evidence_k 3), answered by a FakeOpenAIServer; the
    environments of two workers on the bucket (own local caches and Dagster homes) and of a local store."""
    synthetic_dataset(tmp_path / "datasets" / "rel", 8)
    with FakeOpenAIServer(fake_model) as server:
        (tmp_path / "arms.yaml").write_text(arms_text("rel", {"remote": {}, "remote-k3": {"evidence_k": 3}},
                                                      server.base_url))
        bucket_env = s3_server.env(s3_bucket)
        workers = [{**lab_env(tmp_path, DAGSTER_HOME=str(tmp_path / f"dh-{w}"),
                              RAG_TTC_LOCAL_CACHE=str(tmp_path / f"cache-{w}")), **bucket_env} for w in ("a", "b")]
        local = lab_env(tmp_path / "local-run", DAGSTER_HOME=str(tmp_path / "dh-local"))
        local.update(RAG_TTC_ARMS=str(tmp_path / "arms.yaml"), RAG_TTC_DATASETS=str(tmp_path / "datasets"))
        yield tmp_path, workers, local, server


def run(env: dict, *args: str) -> str:
    code, out, err = cli("run", *args, env=env)
    assert code == 0, err[-4000:]
    return out


def lab_of(env: dict, monkeypatch) -> Lab:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return Lab.from_env()


def shared_metadata(env: dict, arm: str) -> dict[str, dict]:
    """asset -> the metadata of its latest materialization for `arm`, from the worker's Dagster instance."""
    out = {}
    with DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        for asset in SHARED:
            records = instance.fetch_materializations(
                AssetRecordsFilter(asset_key=AssetKey(asset), asset_partitions=[arm]), limit=1).records
            out[asset] = {k: v.value for k, v in records[0].asset_materialization.metadata.items()}
    return out


def rows(lab: Lab, arm: str) -> dict[str, pl.DataFrame]:
    st = lab.store
    return {Table.RETRIEVAL_ROWS: st.read_table(arm, Table.RETRIEVAL_ROWS),
            Table.ADMITTED_CONTEXTS: st.read_table(arm, Table.ADMITTED_CONTEXTS),
            Table.ANSWERS: st.read_table(arm, Table.ANSWERS).select(ANSWER_COLUMNS)}


def test_arms_on_s3_equal_a_local_run_and_share_their_upstream(s3_lab, s3_server, s3_bucket, monkeypatch):
    root, (worker_a, worker_b), local, server = s3_lab
    run(worker_a, "remote", "--stage", "answers")
    after_first = server.request_count
    assert after_first == 8

    keys = bucket_keys(s3_server, s3_bucket)
    assert "lab/store/arms/remote/answers.parquet" in keys
    assert any(k.startswith("lab/provider_cache/") for k in keys)  # the provider cache is in the bucket too
    assert any(k.startswith("lab/runs/remote/") and k.endswith("/status.json") for k in keys)

    # The second arm on the other worker: another local cache, the bucket shared; every shared artifact a hit.
    run(worker_b, "remote-k3", "--stage", "answers")
    meta = shared_metadata(worker_b, "remote-k3")
    assert {a: m["cache_hit"] for a, m in meta.items()} == dict.fromkeys(SHARED, True)
    assert all(m["path"].startswith(f"s3://{s3_bucket}/lab/store/cache/") for m in meta.values())
    pulled = root / "cache-b" / "artifacts"
    assert list(pulled.glob("bm25_index/*/tantivy/meta.json")), "the Tantivy index is pulled into the local cache"
    assert not [p for p in pulled.rglob("*") if p.is_file() and ".lance" in str(p.relative_to(pulled))], \
        "the LanceDB table is read on s3://, never pulled"

    # The same arms in a local store: the same retrieval rows, admitted contexts and answers.
    run(local, "remote", "remote-k3", "--stage", "answers")
    s3 = lab_of(worker_a, monkeypatch)
    here = lab_of(local, monkeypatch)
    for arm in ("remote", "remote-k3"):
        got, want = rows(s3, arm), rows(here, arm)
        for name in want:
            assert got[name].equals(want[name]), (arm, name)

    # The commands that read the store read the bucket.
    code, out, err = cli("inspect", "remote", "q0001", "--json", env=worker_b)
    assert code == 0, err[-3000:]
    view = json.loads(out)
    assert json.dumps(view).count("q0001") >= 1 and "retrieval" in json.dumps(view)
    code, out, err = cli("runs", "remote", "--json", env=worker_a)
    assert code == 0, err[-3000:]
    assert [r["run_dir"].startswith(f"s3://{s3_bucket}/lab/runs/remote/") for r in json.loads(out)] == [True]


def test_report_and_compare_write_into_the_bucket(s3_lab, s3_server, s3_bucket):
    root, (worker_a, _), _, _ = s3_lab
    run(worker_a, "remote", "remote-k3", "--stage", "judge")
    code, out, err = cli("report", "remote", env=worker_a)
    assert code == 0, err[-3000:]
    assert f"report: s3://{s3_bucket}/lab/store/reports/remote.html" in out
    code, out, err = cli("report", "remote", "remote-k3", env=worker_a)
    assert code == 0, err[-3000:]
    code, out, err = cli("compare", "remote", "remote-k3", "--json", env=worker_a)
    assert code == 0, err[-3000:]
    rep = json.loads(out)
    assert rep["n"] == 8 and rep["plots"]
    assert all(p.startswith(f"s3://{s3_bucket}/lab/store/comparisons/") for p in rep["plots"].values())
    keys = bucket_keys(s3_server, s3_bucket)
    assert "lab/store/reports/remote.html" in keys
    page = client_body(s3_server, s3_bucket, "lab/store/reports/remote.html")
    assert b"data:image/png;base64," in page  # its failure-flow plot, read back from the bucket
    assert {"lab/store/comparisons/remote--remote-k3.html", "lab/store/comparisons/remote--remote-k3.json"} <= keys
    assert all(p.split(f"s3://{s3_bucket}/", 1)[1] in keys for p in rep["plots"].values())
    runs = [k for k in keys if k.startswith("lab/runs/remote/") and k.endswith("/summary.md")]
    assert runs, "the run record is written in the bucket"


def test_a_truncated_object_in_the_bucket_is_detected_and_rebuilt(s3_lab, s3_server, s3_bucket):
    root, (worker_a, _), _, server = s3_lab
    run(worker_a, "remote", "--stage", "retrieval")
    assert "remote: up to date, nothing to run" in run(worker_a, "remote", "--stage", "retrieval")
    client = s3_server.s3()
    chunks = [o["Key"] for o in client.list_objects_v2(Bucket=s3_bucket, Prefix="lab/store/cache/chunks/")["Contents"]
              if o["Key"].endswith("/chunks.parquet")]
    assert len(chunks) == 1
    body = client.get_object(Bucket=s3_bucket, Key=chunks[0])["Body"].read()
    client.put_object(Bucket=s3_bucket, Key=chunks[0], Body=body[: len(body) // 2])  # a truncated upload

    # Dagster calls the arm up to date; the store's check of the artifact in the bucket does not.
    code, out, err = cli("run", "remote", "--stage", "retrieval", env=worker_a)
    assert code == 0, err[-4000:]
    assert "is corrupt (object chunks.parquet:" in err and "rebuilding it" in err
    assert client.head_object(Bucket=s3_bucket, Key=chunks[0])["ContentLength"] == len(body)
    assert shared_metadata(worker_a, "remote")["chunks"]["cache_hit"] is False
    assert "remote: up to date, nothing to run" in run(worker_a, "remote", "--stage", "retrieval")
    assert server.request_count == 0


def bucket_keys(s3_server, bucket: str) -> set[str]:
    pages = s3_server.s3().get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return {o["Key"] for page in pages for o in page.get("Contents", [])}


def client_body(s3_server, bucket: str, key: str) -> bytes:
    return s3_server.s3().get_object(Bucket=bucket, Key=key)["Body"].read()


def bad_env(case: str, env: dict, s3_server, bucket: str) -> tuple[dict, str]:
    env = dict(env)
    if case == "unreachable-endpoint":
        env["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{free_port()}"
        return env, "cannot reach the object store at AWS_ENDPOINT_URL=http://127.0.0.1:"
    if case == "missing-credentials":
        env.pop("AWS_ACCESS_KEY_ID"), env.pop("AWS_SECRET_ACCESS_KEY")
        env.update(AWS_SHARED_CREDENTIALS_FILE="/nonexistent", AWS_CONFIG_FILE="/nonexistent")
        return env, "no AWS credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
    if case == "read-only-bucket":
        env.update(s3_server.env(bucket, readonly=True))
        return env, "may not write s3://"
    env["RAG_TTC_HOME"] = "s3://no-such-bucket-anywhere/lab"
    return env, "bucket 'no-such-bucket-anywhere' does not exist"


CASES = ["unreachable-endpoint", "missing-credentials", "read-only-bucket", "missing-bucket"]


@pytest.mark.parametrize("case", CASES)
def test_a_store_the_run_cannot_use_fails_before_any_provider_call(s3_lab, s3_server, s3_bucket, case, monkeypatch):
    root, (worker_a, _), _, server = s3_lab
    env, expected = bad_env(case, worker_a, s3_server, s3_bucket)
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):  # only `env`'s, in the CLI and in this process
        monkeypatch.delenv(k, raising=False)
    code, out, err = cli("run", "remote", "--stage", "answers", env=env)
    assert code == 1
    error = cli_error(err)
    assert "\n" not in error and error.startswith("RAG_TTC_HOME=s3://") and expected in error, error
    assert env.get("AWS_SECRET_ACCESS_KEY", "unset") not in err

    # The Dagster job (as the UI runs it): its first step fails with the same line.
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    from rag_ttc_assets_tests.support.s3_server import forget_clients

    forget_clients()
    result = materialize("remote", DagsterInstance.ephemeral())
    assert not result.success
    failures = step_failures(result)
    assert list(failures) == ["corpus_binding"], failures
    assert failures["corpus_binding"].split(": ", 1)[1] == error
    assert server.request_count == 0


def test_a_killed_run_on_s3_keeps_its_finished_rows_and_the_rerun_repeats_no_call(tmp_path, s3_server, s3_bucket):
    import time

    from rag_ttc_assets_tests.support.reliability import asked, cli_start, kill_group

    synthetic_dataset(tmp_path / "datasets" / "rel", 24)

    def slow_model(messages):
        time.sleep(0.3)
        return fake_model(messages)

    env = {**lab_env(tmp_path, RAG_TTC_LOCAL_CACHE=str(tmp_path / "cache")), **s3_server.env(s3_bucket)}
    client = s3_server.s3()

    def row_objects() -> list[str]:
        return [k for k in bucket_keys(s3_server, s3_bucket)
                if "/results/generated-answers.partial.jsonl.rows/" in k]

    with FakeOpenAIServer(slow_model) as server:
        (tmp_path / "arms.yaml").write_text(arms_text("rel", {"slow": {}}, server.base_url, generation_workers=2))
        proc = cli_start("run", "slow", "--stage", "answers", env=env, out=tmp_path / "killed")
        deadline = time.monotonic() + 400
        while len(row_objects()) < 4:
            assert proc.poll() is None, (tmp_path / "killed.stderr").read_text()[-3000:]
            assert time.monotonic() < deadline, "no finished rows appeared in the bucket"
            time.sleep(0.2)
        kill_group(proc)
        kept = row_objects()
        rows = [json.loads(client.get_object(Bucket=s3_bucket, Key=k)["Body"].read()) for k in kept]
        assert 4 <= len(rows) < 24 and all(r["status"] == "ok" for r in rows)
        finished = {r["query_id"] for r in rows}

        code, out, err = cli("runs", "slow", "--json", env=env)
        assert code == 0, err[-3000:]
        (killed,) = json.loads(out)
        assert killed["status"] == "interrupted"
        assert killed["partial_rows"]["results/generated-answers.partial.jsonl"] >= len(rows)

        since = server.request_count
        run(env, "slow", "--stage", "answers")
        again = asked(server, since)
        assert not finished & set(again), "a finished row was asked again"  # the provider cache is in the bucket
        assert again and all(n == 1 for n in again.values())  # the rest, each asked once
