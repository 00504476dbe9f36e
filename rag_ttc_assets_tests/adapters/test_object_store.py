"""The artifact store on a real S3 API server (moto's, on 127.0.0.1, IAM authentication on): shared artifacts
committed by their manifest, pulled into a worker's local cache, damaged objects rebuilt, concurrent builders,
LanceDB in place, per-row logs, and the pre-flight's one-line errors."""

from __future__ import annotations

import hashlib
import json
import os
import threading

import numpy as np
import polars as pl
import pytest

from rag_ttc_assets.adapters.object_store import ObjectArtifactStore, remote_root
from rag_ttc_assets.adapters.store import StoreError, Table
from rag_ttc_assets_tests.support.s3_server import free_port, forget_clients


def store(bucket: str, cache) -> ObjectArtifactStore:
    return ObjectArtifactStore(remote_root(f"s3://{bucket}/lab/store"), cache)


def objects(s3_server, bucket: str) -> dict[str, int]:
    pages = s3_server.s3().get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return {o["Key"]: o["Size"] for page in pages for o in page.get("Contents", [])}


def two_files(calls: list):
    def builder(tmp):
        calls.append(tmp)
        (tmp / "chunks.parquet").write_bytes(b"parquet bytes " * 100)
        (tmp / "sub").mkdir()
        (tmp / "sub" / "ids.txt").write_text("a\nb\n")
        return {"documents": 2}
    return builder


def test_build_uploads_files_then_manifest_and_another_worker_pulls_it(s3_server, s3_bucket, tmp_path):
    calls = []
    built = store(s3_bucket, tmp_path / "w1").build_once("chunks", {"k": 1}, two_files(calls))
    assert not built.cache_hit and len(calls) == 1
    keys = objects(s3_server, s3_bucket)
    prefix = built.uri.split(f"{s3_bucket}/", 1)[1]
    manifest = json.loads(s3_server.s3().get_object(Bucket=s3_bucket, Key=f"{prefix}/manifest.json")["Body"].read())
    data = (b"parquet bytes " * 100)
    assert manifest["files"]["chunks.parquet"] == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                                                   "md5": hashlib.md5(data).hexdigest()}
    assert keys[f"{prefix}/{manifest['objects']}/chunks.parquet"] == len(data)
    assert keys[f"{prefix}/{manifest['objects']}/sub/ids.txt"] == 4
    assert built.content_digest == manifest["content_digest"] and built.path.is_relative_to(tmp_path / "w1")

    # A second worker with its own local cache: a store hit, the files pulled into its cache and checked.
    other = store(s3_bucket, tmp_path / "w2").build_once("chunks", {"k": 1}, two_files(calls))
    assert other.cache_hit and len(calls) == 1
    assert other.path.is_relative_to(tmp_path / "w2") and (other.path / "chunks.parquet").read_bytes() == data
    assert other.content_digest == built.content_digest
    assert store(s3_bucket, tmp_path / "w2").intact(other.uri)


def test_a_truncated_object_is_detected_and_rebuilt(s3_server, s3_bucket, tmp_path):
    calls = []
    built = store(s3_bucket, tmp_path / "w1").build_once("chunks", {"k": 1}, two_files(calls))
    prefix = built.uri.split(f"{s3_bucket}/", 1)[1]
    key = f"{prefix}/{built.manifest['objects']}/chunks.parquet"
    s3_server.s3().put_object(Bucket=s3_bucket, Key=key, Body=b"parquet by")  # a truncated upload
    with pytest.warns(UserWarning, match=r"corrupt \(object chunks.parquet: 10 bytes, the manifest says 1400\)"):
        again = store(s3_bucket, tmp_path / "w2").build_once("chunks", {"k": 1}, two_files(calls))
    assert not again.cache_hit and len(calls) == 2
    assert objects(s3_server, s3_bucket)[key] == 1400
    assert store(s3_bucket, tmp_path / "w3").build_once("chunks", {"k": 1}, two_files(calls)).cache_hit


def test_an_object_of_the_right_size_but_other_bytes_fails_its_digest(s3_server, s3_bucket, tmp_path):
    calls = []
    built = store(s3_bucket, tmp_path / "w1").build_once("chunks", {"k": 1}, two_files(calls))
    key = f"{built.uri.split(f'{s3_bucket}/', 1)[1]}/{built.manifest['objects']}/sub/ids.txt"
    s3_server.s3().put_object(Bucket=s3_bucket, Key=key, Body=b"x\ny\n")
    with pytest.warns(UserWarning, match="ETag is not the md5"):
        assert not store(s3_bucket, tmp_path / "w2").build_once("chunks", {"k": 1}, two_files(calls)).cache_hit
    assert (store(s3_bucket, tmp_path / "w3").build_once("chunks", {"k": 1}, two_files(calls)).path
            / "sub" / "ids.txt").read_text() == "a\nb\n"


def test_a_damaged_local_copy_is_pulled_again(s3_bucket, tmp_path):
    calls = []
    built = store(s3_bucket, tmp_path / "w1").build_once("chunks", {"k": 1}, two_files(calls))
    (built.path / "chunks.parquet").write_bytes(b"damaged")
    again = store(s3_bucket, tmp_path / "w1").build_once("chunks", {"k": 1}, two_files(calls))
    assert again.cache_hit and len(calls) == 1
    assert (again.path / "chunks.parquet").read_bytes() == b"parquet bytes " * 100


def test_two_machines_building_at_once_agree_on_the_first_manifest(s3_server, s3_bucket, tmp_path):
    both_building = threading.Barrier(2)

    def builder(tmp):
        both_building.wait(timeout=30)  # neither finds a manifest: both build
        (tmp / "out.bin").write_bytes(os.urandom(64))  # and their contents differ
        return {}

    results = {}

    def run(name):
        results[name] = store(s3_bucket, tmp_path / name).build_once("representations", {"k": 2}, builder)

    threads = [threading.Thread(target=run, args=(n,)) for n in ("m1", "m2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    a, b = results["m1"], results["m2"]
    assert a.content_digest == b.content_digest  # one committed artifact, adopted by the loser
    assert (a.path / "out.bin").read_bytes() == (b.path / "out.bin").read_bytes()
    files = [k for k in objects(s3_server, s3_bucket) if "/representations/" in k and k.endswith("out.bin")]
    assert len(files) == 1  # the loser removed its own upload


def test_lancedb_table_is_read_in_place_on_s3_not_pulled(s3_bucket, tmp_path):
    from rag_ttc_assets.adapters import vectors

    vecs = np.eye(3, dtype=np.float32)

    def builder(tmp):
        vectors.build_table(tmp / "lancedb", ["c1", "c2", "c3"], vecs)
        np.save(tmp / "embeddings.npy", vecs)
        return {}

    built = store(s3_bucket, tmp_path / "w1").build_once("vector_index", {"k": 3}, builder)
    assert built.manifest["remote"] and all(r.startswith("lancedb/chunks.lance/") for r in built.manifest["remote"])
    other = store(s3_bucket, tmp_path / "w2").build_once("vector_index", {"k": 3}, builder)
    assert other.cache_hit and (other.path / "embeddings.npy").is_file()
    assert not [p for p in other.path.rglob("*") if p.is_file() and ".lance" in str(p.relative_to(other.path))]
    where = other.location("lancedb")
    assert isinstance(where, str) and where.startswith(f"s3://{s3_bucket}/lab/store/cache/vector_index/")
    index = vectors.VectorIndex(where)
    assert index.count() == 3 and index.search(vecs[1], 1)[0][0] == "c2"


def test_tables_json_and_message_archive_are_objects(s3_server, s3_bucket, tmp_path):
    st = store(s3_bucket, tmp_path / "w1")
    df = pl.DataFrame({"query_id": ["q1", "q2"], "abstained": [True, False], "correct_abstention": [True, False],
                       "answered_anyway": [False, False]})
    st.write_table("baseline", Table.ABSTENTION_OUTCOMES, df)
    binding = {"dataset": "mini", "corpus_digest": "sha256:00", "corpus_file": "corpus.jsonl",
               "evaluation_file": "evaluation.json"}  # a Binding (core.arm_summaries): the store checks it
    st.write_arm_json("baseline", "binding.json", binding)
    digest = st.messages.put([{"role": "user", "content": "hi"}])
    keys = objects(s3_server, s3_bucket)
    assert "lab/store/arms/baseline/abstention_outcomes.parquet" in keys and "lab/store/arms/baseline/binding.json" in keys
    assert any(k.startswith("lab/store/messages/") for k in keys)
    again = store(s3_bucket, tmp_path / "w2")
    assert again.read_table("baseline", Table.ABSTENTION_OUTCOMES).equals(df)
    assert again.read_arm_json("baseline", "binding.json") == binding
    assert again.messages.get(digest)["messages"][0]["content"] == "hi"
    with pytest.raises(FileNotFoundError, match="has not been materialized"):
        again.read_table("other", Table.ABSTENTION_OUTCOMES)


def test_row_log_keeps_each_finished_row_as_an_object(s3_bucket):
    from rag_ttc_assets.stages.row_log import RowLog, count_rows, remove_rows

    path = remote_root(f"s3://{s3_bucket}/lab/runs/a/r1") / "results" / "answers.partial.jsonl"
    log = RowLog(path)
    log.write({"query_id": "q1"})
    log.write({"query_id": "q2"})
    # No close: a killed worker's rows are already in the bucket.
    assert count_rows(path) == 2
    RowLog(path).write({"query_id": "q3"})  # a retry's writer adds beside them
    assert count_rows(path) == 3
    remove_rows(path)
    assert count_rows(path) == 0


# --- the pre-flight: one line naming the setting and what to do ---------------------------------------------------
def preflight_error(bucket: str, tmp_path) -> str:
    forget_clients()
    with pytest.raises(StoreError) as e:
        store(bucket, tmp_path / "w").check_writable()
    text = str(e.value)
    assert "\n" not in text and text.startswith(f"RAG_TTC_HOME=s3://{bucket}/lab:")
    return text


def test_preflight_passes_with_write_access(s3_bucket, tmp_path):
    store(s3_bucket, tmp_path / "w").check_writable()


def test_preflight_unreachable_endpoint(s3_bucket, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")  # nothing listens there
    assert "cannot reach the object store at AWS_ENDPOINT_URL=http://127.0.0.1:" in preflight_error(s3_bucket, tmp_path)


def test_preflight_missing_credentials(s3_bucket, tmp_path, monkeypatch):
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(k)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    text = preflight_error(s3_bucket, tmp_path)
    assert "no AWS credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in text


def test_preflight_read_only_credentials(s3_server, s3_bucket, tmp_path, monkeypatch):
    for k, v in s3_server.env(s3_bucket, readonly=True).items():
        monkeypatch.setenv(k, v)
    text = preflight_error(s3_bucket, tmp_path)
    assert "may not write" in text and "PutObject: AccessDenied" in text
    assert s3_server.env(s3_bucket, readonly=True)["AWS_SECRET_ACCESS_KEY"] not in text


def test_preflight_bucket_that_does_not_exist(s3_server, s3_bucket, tmp_path, monkeypatch):
    text = preflight_error("no-such-bucket-here", tmp_path)
    assert "bucket 'no-such-bucket-here' does not exist" in text


def test_preflight_unknown_credentials(s3_bucket, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    text = preflight_error(s3_bucket, tmp_path)
    assert "rejects the credentials" in text and "not-the-secret" not in text


def test_preflight_http_endpoint_needs_allow_http(s3_bucket, tmp_path, monkeypatch):
    monkeypatch.delenv("AWS_ALLOW_HTTP")
    assert "AWS_ALLOW_HTTP=true" in preflight_error(s3_bucket, tmp_path)

