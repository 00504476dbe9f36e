"""An arm pointed at a real OpenAI-compatible server on 127.0.0.1: statuses, budget, no lost rows, cache."""

import json
import re

import pytest
from dagster import DagsterInstance

from rag_ttc_assets_tests.conftest import mini_corpus, write_dataset
from rag_ttc_assets_tests.support.openai_server import FakeOpenAIServer, FaultPlan

CASES = {  # question id -> (fault marker, expected contract status)
    "q-ok": ("", "valid"),
    "q-429": ("FAULT:rate_limited", "rate_limited"),
    "q-prose": ("FAULT:non_json", "parse_failure"),
    "q-cut": ("FAULT:truncated", "truncated"),
    "q-flaky": ("FAULT:server_error_once", "valid"),
    "q-empty": ("FAULT:empty", "empty_response"),
    "q-reset": ("FAULT:connection_reset", "connection_error"),
    "q-500": ("FAULT:server_error", "server_error"),
}

ARMS = """
defaults:
  dataset: http
  chunk_runes: 600
  overlap_runes: 60
  retrieve_k: 5
  evidence_k: 2
  context_runes: 4000
  generator:
    model: openai/fake-model
    api_base: {base}
    api_key_env: RAG_TTC_TEST_KEY
    timeout_s: 5
    max_retries: 1
  allow_unpriced_provider: true
  generation_workers: 1
arms:
  remote: {{}}
  remote-budget: {{generation_budget: 3}}
"""


def answer_from_prompt(messages):
    """A well-behaved model: cite the first admitted chunk, answer with its first line."""
    prompt = messages[-1]["content"]
    first = re.search(r'<chunk id="([^"]+)">\n([^\n]*)', prompt)
    return json.dumps({"answer": first.group(2) or "see chunk", "citation_chunk_ids": [first.group(1)],
                       "abstained": False})


@pytest.fixture
def http_lab(tmp_path, monkeypatch):
    corpus = mini_corpus()
    questions = [{"id": qid, "text": f"What does the assert statement do? {marker}".strip(), "answerable": True,
                  "targets": [{"doc_id": "assert", "relevance": 1}],
                  "requests": [{"id": f"{qid}.r1", "text": "What does the assert statement do?",
                                "evidence": [{"doc_id": "assert", "quote": "Assert statements"}]}]}
                 for qid, (marker, _) in CASES.items()]
    write_dataset(tmp_path / "datasets" / "http", corpus, questions)
    monkeypatch.setenv("RAG_TTC_DATASETS", str(tmp_path / "datasets"))
    monkeypatch.setenv("RAG_TTC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RAG_TTC_TEST_KEY", "sk-test-sentinel-0123456789")
    monkeypatch.setenv("RAG_TTC_ARMS", str(tmp_path / "arms.yaml"))
    return tmp_path


def _run(tmp_path, server, arm, instance):
    (tmp_path / "arms.yaml").write_text(ARMS.format(base=server.base_url))
    from rag_ttc_assets.definitions import build_definitions
    from rag_ttc_assets.lab import Lab

    result = build_definitions().resolve_job_def("arm_job").execute_in_process(
        partition_key=arm, instance=instance, raise_on_error=True)
    assert result.success
    lab = Lab.from_env()
    return lab.store.read_table(arm, "answers"), lab.store.read_table(arm, "contract_results")


def test_provider_faults_become_row_statuses_and_a_rerun_retries_only_failures(http_lab, monkeypatch):
    instance = DagsterInstance.ephemeral()
    with FakeOpenAIServer(answer_from_prompt, FaultPlan(retry_after=0)) as server:
        answers, contract = _run(http_lab, server, "remote", instance)
        statuses = dict(zip(contract["query_id"], contract["status"]))
        assert statuses == {q: expected for q, (_, expected) in CASES.items()}
        assert answers.height == len(CASES)  # no row lost
        # bounded retries: max_retries 1 -> at most 2 attempts per question
        attempts = dict(zip(answers["query_id"], answers["attempts"]))
        assert attempts["q-ok"] == 1 and attempts["q-flaky"] == 2 and attempts["q-500"] == 2
        assert attempts["q-prose"] == 1 and attempts["q-cut"] == 1  # not retryable
        first_requests = server.request_count
        assert first_requests == sum(attempts.values())
        assert not answers["cache_hit"].any()

        # Second materialization: the two valid rows come from the cache; only failures are re-tried.
        answers2, contract2 = _run(http_lab, server, "remote", instance)
        hits = dict(zip(answers2["query_id"], answers2["cache_hit"]))
        assert {q for q, h in hits.items() if h} == {"q-ok", "q-flaky", "q-prose"}
        assert dict(zip(contract2["query_id"], contract2["status"]))["q-flaky"] == "valid"
        retried = server.request_count - first_requests
        assert retried == sum(a for q, a in zip(answers2["query_id"], answers2["attempts"]) if not hits[q])


def test_generation_budget_stops_cleanly_and_keeps_every_row(http_lab, monkeypatch):
    with FakeOpenAIServer(answer_from_prompt) as server:
        answers, contract = _run(http_lab, server, "remote-budget", DagsterInstance.ephemeral())
        called = answers.filter(answers["status"] != "budget_exhausted")
        # The budget counts provider calls (one per row); each call may retry within max_retries.
        assert called.height == 3
        assert server.request_count == called["attempts"].sum() <= 3 * 2
    assert answers.height == len(CASES)
    assert (answers["status"] == "budget_exhausted").sum() == len(CASES) - 3
    assert (contract["status"] == "budget_exhausted").sum() == len(CASES) - 3


def test_the_api_key_never_reaches_the_store(http_lab, monkeypatch):
    with FakeOpenAIServer(answer_from_prompt) as server:
        _run(http_lab, server, "remote", DagsterInstance.ephemeral())
        assert all(r["auth_present"] for r in server.requests)
    for path in (http_lab / "home").rglob("*"):
        if path.is_file():
            assert b"sk-test-sentinel-0123456789" not in path.read_bytes(), path
