"""adapters.provider_cache: content-addressed keys, atomic writes, self-checking entries."""

from __future__ import annotations

import hashlib
import json
import os
import re

import pytest

from rag_ttc_assets.adapters import provider_cache
from rag_ttc_assets.adapters.provider_cache import CorruptCacheEntryWarning, ProviderCache

MODEL = "openai/gpt-4o-mini"
MESSAGES = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Capital of France?"}]
PARAMS = {"temperature": 0.0, "max_tokens": 64}
RECORD = {
    "status": "ok",
    "raw_text": '{"answer": "Paris"}',
    "input_tokens": 8,
    "output_tokens": 2,
    "cost_usd": 2.4e-06,
    "attempts": 1,
    "latency_s": 0.125,
    "error": None,
}


@pytest.fixture
def cache(tmp_path):
    return ProviderCache(tmp_path, "generation")


def all_files(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_round_trip_and_layout(cache, tmp_path):
    key = cache.key(MODEL, MESSAGES, PARAMS)
    assert cache.get(key) is None
    path = cache.put(key, RECORD)

    assert path == tmp_path / "generation" / key[:2] / f"{key}.json"
    assert cache.get(key) == RECORD
    stored = json.loads(path.read_text())
    assert stored["key"] == key
    assert stored["record"] == RECORD
    assert stored["digest"] == "sha256:" + hashlib.sha256(
        json.dumps(RECORD, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()


def test_key_is_pinned_sha256_of_canonical_request(cache):
    key = cache.key(MODEL, MESSAGES, PARAMS)
    canonical = (
        '{"api_base":null,"messages":[{"content":"Answer briefly.","role":"system"},'
        '{"content":"Capital of France?","role":"user"}],"model":"openai/gpt-4o-mini",'
        '"params":{"max_tokens":64,"temperature":0.0},"sample_index":0,"v":1}'
    )
    assert key == hashlib.sha256(canonical.encode()).hexdigest()
    # Pinned so that an accidental change of the key format (which orphans every entry) fails here.
    assert key == "be85d19838147ad3f8d0e47426e408f5ac717638959889b5135bdcbf402ab494"


def test_key_stability_and_what_it_covers(cache):
    key = cache.key(MODEL, MESSAGES, PARAMS)
    assert key == cache.key(MODEL, [dict(m) for m in MESSAGES], {"max_tokens": 64, "temperature": 0.0})
    assert key == cache.key(MODEL, MESSAGES, PARAMS, sample_index=0, api_base=None)
    assert key == ProviderCache(cache.root, "judging").key(MODEL, MESSAGES, PARAMS)  # namespace is the folder
    different = {
        "sample_index": cache.key(MODEL, MESSAGES, PARAMS, sample_index=1),
        "api_base": cache.key(MODEL, MESSAGES, PARAMS, api_base="http://127.0.0.1:9/v1"),
        "model": cache.key("openai/gpt-4o", MESSAGES, PARAMS),
        "params": cache.key(MODEL, MESSAGES, {**PARAMS, "temperature": 0.7}),
        "messages": cache.key(MODEL, MESSAGES[1:], PARAMS),
        "rules": cache.key(MODEL, MESSAGES, PARAMS, rules="request-judge-rules/2"),
    }
    assert key not in different.values()
    assert len(set(different.values())) == len(different)
    # An offline baseline's rules version is in the key only when set: no other model's keys move.
    assert key == cache.key(MODEL, MESSAGES, PARAMS, rules=None)


def test_a_changed_offline_rule_never_serves_the_old_rules_replies(tmp_path):
    """The Caller folds the offline request judges' rules version (judging.request_judge.RULES) into its keys."""
    from rag_ttc_assets.core.arms import ModelConfig
    from rag_ttc_assets.judging.request_judge import RULES
    from rag_ttc_assets.stages.calls import Caller

    lexical = Caller(ModelConfig(model="local/lexical"), tmp_path, "request_judging", 10)
    extractive = Caller(ModelConfig(model="local/extractive"), tmp_path, "generation", 10)
    assert (lexical.rules, extractive.rules) == (RULES, None)
    first = lexical.call(MESSAGES)
    assert (first.cache_hit, lexical.call(MESSAGES).cache_hit) == (False, True)
    lexical.rules = "request-judge-rules/1"  # what a store written under the earlier rules holds
    assert lexical.call(MESSAGES).cache_hit is False


def test_namespaces_are_separate_folders(tmp_path):
    generation, judging = ProviderCache(tmp_path, "generation"), ProviderCache(tmp_path, "judging")
    key = generation.key(MODEL, MESSAGES, PARAMS)
    generation.put(key, RECORD)
    assert judging.get(key) is None
    assert all_files(tmp_path) == [f"generation/{key[:2]}/{key}.json"]


@pytest.mark.parametrize(
    ("corrupt", "reason"),
    [
        (lambda text: text[: len(text) // 2], "not JSON (Unterminated string"),
        (lambda text: "", "not JSON (Expecting value"),
        (lambda text: text.replace('"input_tokens":8', '"input_tokens":9'), "record does not match its digest"),
        (
            lambda text: json.dumps({**json.loads(text), "key": "0" * 64}),
            f"stored key '{'0' * 64}' is not its file name",
        ),
        (lambda text: json.dumps({"key": json.loads(text)["key"], "digest": "x"}), "missing its record"),
    ],
    ids=["truncated", "empty", "edited", "wrong-key", "no-record"],
)
def test_corrupt_entry_warns_is_deleted_and_rebuilt(cache, corrupt, reason):
    key = cache.key(MODEL, MESSAGES, PARAMS)
    path = cache.put(key, RECORD)
    path.write_text(corrupt(path.read_text()))

    with pytest.warns(CorruptCacheEntryWarning, match=re.escape(f"corrupt entry {path}: {reason}")):
        assert cache.get(key) is None
    assert not path.exists()
    assert cache.get(key) is None  # already gone: no second warning

    cache.put(key, RECORD)
    assert cache.get(key) == RECORD


def test_writes_leave_no_temp_files(cache, tmp_path):
    keys = [cache.key(MODEL, MESSAGES, PARAMS, sample_index=i) for i in range(5)]
    for key in keys:
        cache.put(key, RECORD)
    cache.put(keys[0], {**RECORD, "raw_text": "overwritten"})

    assert all_files(tmp_path) == sorted(f"generation/{k[:2]}/{k}.json" for k in keys)
    assert cache.get(keys[0])["raw_text"] == "overwritten"


def test_failed_write_keeps_old_entry_and_removes_temp_file(cache, tmp_path, monkeypatch):
    key = cache.key(MODEL, MESSAGES, PARAMS)
    cache.put(key, RECORD)

    def failing_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(provider_cache.os, "replace", failing_replace)
    with pytest.raises(OSError, match="No space left"):
        cache.put(key, {**RECORD, "raw_text": "never lands"})
    monkeypatch.setattr(provider_cache.os, "replace", os.replace)

    assert cache.get(key) == RECORD
    assert all_files(tmp_path) == [f"generation/{key[:2]}/{key}.json"]


def test_rejects_bad_namespace_key_and_non_json(cache, tmp_path):
    with pytest.raises(ValueError, match="namespace '../up'"):
        ProviderCache(tmp_path, "../up")
    with pytest.raises(ValueError, match="'abc' is not a 64-hex-digit key"):
        cache.get("abc")
    with pytest.raises(TypeError, match="record is not plain JSON"):
        cache.put(cache.key(MODEL, MESSAGES, PARAMS), {"latency_s": float("nan")})
    with pytest.raises(TypeError, match="request for 'm' is not plain JSON"):
        cache.key("m", MESSAGES, {"stop": {"a", "set"}})


# --- URI roots (RAG_TTC_PROVIDER_CACHE): fsspec filesystems, one whole object per entry ----------------

@pytest.fixture
def memory_root():
    """A fresh folder of fsspec's in-memory filesystem (global to the process, so removed afterwards)."""
    import uuid

    import fsspec

    root = f"memory://rag-ttc-test-{uuid.uuid4().hex[:8]}/cache"
    yield root
    fs, path = fsspec.core.url_to_fs(root)
    if fs.exists(path):
        fs.rm(path, recursive=True)


def test_fsspec_root_round_trip_layout_and_sharing(memory_root):
    import fsspec

    fs = fsspec.filesystem("memory")
    a = ProviderCache(memory_root, "generation")
    key = a.key(MODEL, MESSAGES, PARAMS)
    assert a.get(key) is None
    path = a.put(key, RECORD)
    base = fsspec.core.url_to_fs(memory_root)[1]
    assert path == f"{base}/generation/{key[:2]}/{key}.json"
    stored = json.loads(fs.cat_file(path))
    assert stored["key"] == key and stored["record"] == RECORD
    assert stored["digest"] == "sha256:" + hashlib.sha256(
        json.dumps(RECORD, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    # Another cache object (another store, another process on a shared bucket) on the same URI sees the entry.
    assert ProviderCache(memory_root, "generation").get(key) == RECORD
    assert ProviderCache(memory_root, "judging").get(key) is None
    assert fs.find(base) == [path]  # one object per entry, nothing beside it


@pytest.mark.parametrize("corrupt, reason", [
    (b"{not json", "not JSON"),
    (b"\xff\xfe\x00", "not JSON"),
    (json.dumps({"key": "0" * 64, "digest": "sha256:x", "record": RECORD}).encode(), "is not its file name"),
])
def test_fsspec_root_corrupt_entry_is_deleted_and_rebuilt(memory_root, corrupt, reason):
    import fsspec

    fs = fsspec.filesystem("memory")
    cache = ProviderCache(memory_root, "generation")
    key = cache.key(MODEL, MESSAGES, PARAMS)
    path = cache.put(key, RECORD)
    fs.pipe_file(path, corrupt)
    with pytest.warns(CorruptCacheEntryWarning, match=reason):
        assert cache.get(key) is None
    assert not fs.exists(path)
    cache.put(key, RECORD)
    assert cache.get(key) == RECORD


def test_file_uri_root_is_the_local_folder_with_atomic_writes(tmp_path):
    cache = ProviderCache(f"file://{tmp_path}/shared", "generation")
    assert cache.fs is None and cache.root == tmp_path / "shared"
    key = cache.key(MODEL, MESSAGES, PARAMS)
    path = cache.put(key, RECORD)
    assert path == tmp_path / "shared" / "generation" / key[:2] / f"{key}.json"
    assert ProviderCache(tmp_path / "shared", "generation").get(key) == RECORD


def test_unknown_protocol_is_refused_naming_the_uri():
    with pytest.raises(ValueError, match=r"'nosuchfs://bucket/cache': no fsspec filesystem for protocol 'nosuchfs'"):
        ProviderCache("nosuchfs://bucket/cache", "generation")
