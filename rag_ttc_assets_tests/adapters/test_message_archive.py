"""adapters.message_archive: the requests sent to providers, content-addressed; and the digest every Call keeps."""

from __future__ import annotations

import gzip
import hashlib
import json

import pytest

from rag_ttc_assets.adapters import llm
from rag_ttc_assets.adapters.message_archive import MessageArchive, MessageArchiveError, digest_of
from rag_ttc_assets.adapters.provider_cache import ProviderCache
from rag_ttc_assets.adapters.store import ArtifactStore
from rag_ttc_assets.core.arms import ModelConfig
from rag_ttc_assets.stages.calls import BUDGET_EXHAUSTED, Caller

MESSAGES = [{"role": "user", "content": "<question>What does the assert statement do?</question> é"}]
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def all_files(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_put_get_round_trip_one_gzip_file_per_digest(tmp_path):
    archive = ArtifactStore(tmp_path / "store").messages
    assert archive.root == tmp_path / "store" / "messages"
    d = archive.put(MESSAGES)
    body = json.dumps({"messages": MESSAGES, "tools": None}, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode("utf-8")
    assert d == "sha256:" + hashlib.sha256(body).hexdigest() == digest_of(MESSAGES)
    hexdigest = d.split(":")[1]
    assert all_files(archive.root) == [f"{hexdigest[:2]}/{hexdigest}.json.gz"]
    assert gzip.decompress(archive.path_for(d).read_bytes()) == body
    assert archive.get(d) == {"messages": MESSAGES, "tools": None}

    # The same request (keys in another order) is the same digest and the same one file, written once.
    before = archive.path_for(d).stat().st_mtime_ns
    assert archive.put([{"content": MESSAGES[0]["content"], "role": "user"}], tools=[]) == d
    assert all_files(archive.root) == [f"{hexdigest[:2]}/{hexdigest}.json.gz"]
    assert archive.path_for(d).stat().st_mtime_ns == before

    # Offering tools is another request.
    t = archive.put(MESSAGES, TOOLS)
    assert t != d and len(all_files(archive.root)) == 2
    assert archive.get(t) == {"messages": MESSAGES, "tools": TOOLS}
    assert not [p for p in archive.root.rglob("*.tmp")]


def test_missing_corrupt_and_malformed_digests_name_the_file(tmp_path):
    archive = MessageArchive(tmp_path)
    d = archive.put(MESSAGES)
    other = digest_of([{"role": "user", "content": "never sent"}])
    with pytest.raises(MessageArchiveError, match=f"{archive.path_for(other)}: no archived request {other}"):
        archive.get(other)
    archive.path_for(d).write_bytes(gzip.compress(b'{"messages":[],"tools":null}'))
    with pytest.raises(MessageArchiveError, match=f"{archive.path_for(d)}: archived request does not match"):
        archive.get(d)
    archive.path_for(d).write_bytes(b"not gzip")
    with pytest.raises(MessageArchiveError, match="is not readable gzip"):
        archive.get(d)
    with pytest.raises(ValueError, match="'abc' is not a sha256"):
        archive.get("abc")


@pytest.fixture
def provider(monkeypatch):
    """llm.complete replaced by an ok answer; the list holds the messages of every provider call."""
    sent: list[list[dict]] = []

    def complete(spec, messages, tools=None, response_format=None):
        sent.append(json.loads(json.dumps(messages)))
        return llm.CallResult("ok", '{"answer": "It checks."}', 12, 3, 0.01, None, 1, None)

    monkeypatch.setattr(llm, "complete", complete)
    return sent


def test_a_cached_call_records_the_digest_of_the_provider_call(tmp_path, provider):
    cfg = ModelConfig(model="openai/fake-model")
    archive = MessageArchive(tmp_path / "messages")
    first = Caller(cfg, tmp_path / "cache", "generation", 5, archive=archive).call(MESSAGES)
    assert (first.status, first.cache_hit, len(provider)) == ("ok", False, 1)
    assert first.messages_digest == digest_of(MESSAGES)
    assert archive.get(first.messages_digest) == {"messages": MESSAGES, "tools": None}

    # The cache entry is where it always was (the digest is not in the key) and holds no digest.
    cache = ProviderCache(tmp_path / "cache", "generation")
    entry = json.loads(cache.path_for(cache.key(cfg.model, MESSAGES, {})).read_text())
    assert "messages_digest" not in entry["record"] and entry["record"]["raw_text"] == '{"answer": "It checks."}'

    # A second Caller over the same cache, with no budget left: served from the cache, the same digest.
    again = Caller(cfg, tmp_path / "cache", "generation", 0, archive=archive)
    second = again.call(MESSAGES)
    assert (second.status, second.cache_hit, len(provider)) == ("ok", True, 1)
    assert second.messages_digest == first.messages_digest
    assert second.as_row("judge_")["judge_messages_digest"] == first.messages_digest
    assert len(all_files(archive.root)) == 1

    # A budget-stopped call prepared its messages: they are archived and the Call names them.
    stopped = again.call(MESSAGES, tools=TOOLS)
    assert (stopped.status, len(provider)) == (BUDGET_EXHAUSTED, 1)
    assert archive.get(stopped.messages_digest) == {"messages": MESSAGES, "tools": TOOLS}


def test_the_archive_keeps_each_turn_as_it_was_sent(tmp_path, provider):
    """A tool conversation appends to its message list after each call: the archive has the list at call time."""
    archive = MessageArchive(tmp_path / "messages")
    caller = Caller(ModelConfig(model="openai/fake-model"), tmp_path / "cache", "generation", 5, archive=archive)
    messages = list(MESSAGES)
    one = caller.call(messages, tools=TOOLS)
    messages.append({"role": "tool", "tool_call_id": "call_1", "content": "No results."})
    two = caller.call(messages)
    assert [len(archive.get(c.messages_digest)["messages"]) for c in (one, two)] == [1, 2]
    assert [archive.get(c.messages_digest)["messages"] for c in (one, two)] == provider


def test_without_an_archive_the_call_still_names_its_request(tmp_path, provider):
    call = Caller(ModelConfig(model="openai/fake-model"), tmp_path / "cache", "judging", 5).call(MESSAGES)
    assert call.messages_digest == digest_of(MESSAGES)
    assert not (tmp_path / "messages").exists()
