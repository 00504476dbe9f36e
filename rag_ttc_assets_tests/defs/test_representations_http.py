"""Contextual representations built by a model behind a real OpenAI-compatible server on 127.0.0.1: a malformed reply
and a 429 are row statuses, every chunk keeps its row, the next materialization calls the builder again for the
429's row only (the malformed reply is the builder's own, replayed from the cache), and the generator is shown the
chunk text, never the representation."""

import json
import re

import polars as pl
import pytest
from dagster import DagsterInstance

from rag_ttc_assets_tests.conftest import MINI_DEFAULTS, write_mini_lab
from rag_ttc_assets_tests.support.openai_server import FakeOpenAIServer, FaultPlan
from rag_ttc_assets_tests.support.reliability import materialize

MARK = "CTXMARK"
MALFORMED = "break#chunk-0"  # its reply is prose, not the JSON object the prompt asks for
RATE_LIMITED = 3  # the 4th request (one worker, chunks in corpus order) gets a 429

ARMS = MINI_DEFAULTS + """  allow_unpriced_provider: true
  generation_workers: 1
arms:
  remote-context:
    representation: contextual
    representation_builder: {{model: openai/ctx-builder, api_base: "{base}", api_key_env: RAG_TTC_TEST_KEY,
                              timeout_s: 5, max_retries: 0}}
    representation_era: loopback-2026
    generator: {{model: openai/generator, api_base: "{base}", api_key_env: RAG_TTC_TEST_KEY, timeout_s: 5,
                max_retries: 0}}
"""


def replies(messages):
    """The builder's replies (a context naming its chunk, except for MALFORMED) and the generator's (a content-free
    answer citing the first chunk it was shown)."""
    prompt = messages[-1]["content"]
    chunk_ids = re.findall(r'<chunk id="([^"]+)">', prompt)
    if "<document>" in prompt:
        if chunk_ids[-1] == MALFORMED:
            return "Here is some context for the chunk: it is about loops."
        return json.dumps({"context": f"{MARK} {chunk_ids[-1]}: situated by the loopback builder."})
    return json.dumps({"answer": "The cited chunk says so.", "citation_chunk_ids": chunk_ids[:1], "abstained": False})


def _built(store_root, kind):
    """The one shared artifact of `kind` in the store (the test's lab builds each once)."""
    dirs = sorted((store_root / "cache" / kind).iterdir(), key=lambda p: p.stat().st_mtime)
    return dirs[-1]


def _incomplete(result) -> int:
    return result.asset_materializations_for_node("representations")[0].metadata["incomplete_rows"].value


@pytest.fixture
def lab_dir(tmp_path, monkeypatch):
    return write_mini_lab(tmp_path, monkeypatch)


def test_a_malformed_reply_and_a_429_are_row_statuses_and_a_rerun_retries_only_them(lab_dir):
    from rag_ttc_assets.lab import Lab

    with FakeOpenAIServer(replies, FaultPlan(by_index={RATE_LIMITED: "rate_limited"})) as server:
        (lab_dir / "arms.yaml").write_text(ARMS.format(base=server.base_url))
        instance = DagsterInstance.ephemeral()
        first = materialize("remote-context", instance, ["corpus_binding", "chunks", "representations"])
        assert first.success
        store = Lab.from_env().store
        chunks = pl.read_parquet(_built(store.root, "chunks") / "chunks.parquet")
        reps = pl.read_parquet(_built(store.root, "representations") / "representations.parquet")
        builder_requests = server.request_count

        # Every chunk has exactly one row, with its builder, model, prompt digest, era and status.
        assert reps["chunk_id"].to_list() == chunks["chunk_id"].to_list() and builder_requests == chunks.height
        statuses = dict(zip(reps["chunk_id"], reps["status"]))
        limited = chunks["chunk_id"][RATE_LIMITED]
        assert statuses.pop(MALFORMED) == "parse_failure" and statuses.pop(limited) == "rate_limited"
        assert set(statuses.values()) == {"built"}
        assert set(reps["builder_model"]) == {"openai/ctx-builder"} and set(reps["era"]) == {"loopback-2026"}
        assert set(reps["builder"]) == {"contextual/1"} and reps["prompt_digest"].str.starts_with("sha256:").all()
        assert not reps["offline_baseline"].any()
        by_id = {r["chunk_id"]: r for r in reps.iter_rows(named=True)}
        text = dict(zip(chunks["chunk_id"], chunks["text"]))
        # A row without a context is indexed as its chunk alone; the malformed reply is kept, unrepaired.
        assert by_id[MALFORMED]["text"] == text[MALFORMED] and by_id[MALFORMED]["context"] is None
        assert by_id[MALFORMED]["raw_text"].startswith("Here is some context") and "JSON" in by_id[MALFORMED]["error"]
        assert by_id[limited]["text"] == text[limited] and "RateLimit" in by_id[limited]["error"]
        ok = next(c for c in text if c not in (MALFORMED, limited))
        assert by_id[ok]["text"] == f"{MARK} {ok}: situated by the loopback builder.\n\n{text[ok]}"
        record = store.read_arm_json("remote-context", "representations.json")
        assert record["statuses"] == {"built": chunks.height - 2, "parse_failure": 1, "rate_limited": 1}
        assert record["not_built"] == 2 and record["retryable"] == 1 and record["provider_calls"] == chunks.height
        assert record["era"] == "loopback-2026" and record["builder_model"] == "openai/ctx-builder"

        # `rag-ttc run` re-runs the asset while rows are incomplete (its stale check reads incomplete_rows).
        assert _incomplete(first) == 1
        # The next materialization calls the builder again for the 429's row only; the cache serves every reply.
        second = materialize("remote-context", instance, ["representations"])
        assert second.success and _incomplete(second) == 0
        assert server.request_count - builder_requests == 1
        record = store.read_arm_json("remote-context", "representations.json")
        assert record["statuses"] == {"built": chunks.height - 1, "parse_failure": 1} and record["retryable"] == 0
        assert record["provider_calls"] == 1 and record["cache_hits"] == chunks.height - 1
        # Nothing left to retry: a third materialization reuses the artifact without a call.
        assert materialize("remote-context", instance, ["representations"]).success
        assert server.request_count - builder_requests == 1

        # The rest of the arm: the indexes hold the contexts, the generator is shown the chunk text alone.
        before = server.request_count
        assert materialize("remote-context", instance).success
        generation = [r for r in server.requests[before:] if "<document>" not in r["body"]["messages"][-1]["content"]]
    assert generation, "the generator was called"
    shown = 0
    for r in generation:
        prompt = r["body"]["messages"][-1]["content"]
        assert MARK not in prompt
        for cid, body in re.findall(r'<chunk id="([^"]+)">\n(.*?)\n</chunk>', prompt, re.DOTALL):
            assert body == text[cid]
            shown += 1
    assert shown >= len(generation)
    assert store.read_table("remote-context", "contract_results").height == 8
