"""Reliability 2: provider faults under load. 1,000 questions against a real loopback server that fails
20% of requests in every way it knows; no row is lost, retries stay bounded, a budget holds, and a
second run serves finished rows from the cache and re-tries only the failed ones."""

import json
import time
from collections import Counter

import polars as pl
from dagster import DagsterInstance

from rag_ttc_assets.defs.graph import stage_increments
from rag_ttc_assets_tests.support.openai_server import FAULT_KINDS, FakeOpenAIServer, FaultPlan
from rag_ttc_assets_tests.support.reliability import (ANSWERS_UPTO, arms_text, asked, fake_model, lab_env,
                                                      materialize, remote_model, synthetic_dataset)

N = 1000
MAX_RETRIES = 1
ANSWER_ASSETS = list(stage_increments()["answers"])  # what the answers stage adds to retrieval


def _tables(lab):
    answers = lab.store.read_table("load", "answers")
    contract = lab.store.read_table("load", "contract_results")
    return answers, contract


def _arms(base_url: str, **over) -> str:
    return arms_text("load", {"load": over}, base_url, generation_workers=8,
                     generator=remote_model(base_url, timeout_s=1, max_retries=MAX_RETRIES))


def test_a_thousand_questions_with_every_fault_lose_no_row(tmp_path, monkeypatch):
    synthetic_dataset(tmp_path / "datasets" / "load", N)
    for k, v in lab_env(tmp_path).items():
        monkeypatch.setenv(k, v)
    from rag_ttc_assets.lab import Lab

    plan = FaultPlan(rate=0.2, rate_kinds=FAULT_KINDS, seed=7, retry_after=0, timeout_sleep_s=1.5)
    instance = DagsterInstance.ephemeral()
    figures = {"questions": N}
    with FakeOpenAIServer(fake_model, plan) as server:
        arms_file = tmp_path / "arms.yaml"
        arms_file.write_text(_arms(server.base_url))

        # Run 1: the whole way to the contract (the judge is not part of this test).
        started = time.monotonic()
        assert materialize("load", instance, ANSWERS_UPTO).success
        figures["run1_wall_s"] = round(time.monotonic() - started, 1)
        answers, contract = _tables(Lab.from_env())
        assert answers.height == contract.height == N  # every row present ...
        assert answers["query_id"].n_unique() == N and set(contract["query_id"]) == set(answers["query_id"])
        assert answers["status"].null_count() == 0 and contract["status"].null_count() == 0  # ... with a status
        assert answers["attempts"].min() >= 1 and answers["attempts"].max() <= MAX_RETRIES + 1
        # Every request the server saw is an attempt the row counts. (An attempt can time out connecting
        # to the loaded server without reaching it, so attempts may exceed what the server saw.)
        seen = asked(server)
        attempts = dict(zip(answers["query_id"], answers["attempts"]))
        assert all(n <= attempts[q] for q, n in seen.items())
        assert len(seen) == N
        assert set(server.fault_counts) == set(FAULT_KINDS)  # every kind was injected
        summary = json.loads((tmp_path / "home/store/arms/load/contract_summary.json").read_text())
        assert summary["total"] == N and summary["sums_close"]
        failed1 = set(answers.filter(pl.col("status") != "ok")["query_id"])
        assert failed1 and len(failed1) < N
        figures.update(run1_requests=server.request_count, run1_attempts_sum=int(answers["attempts"].sum()),
                       run1_faults=dict(server.fault_counts),
                       run1_provider_statuses=dict(Counter(answers["status"])),
                       run1_contract_statuses=dict(Counter(contract["status"])),
                       run1_attempts=dict(Counter(answers["attempts"])))

        # Run 2: finished rows come from the cache; only the failed ones go to the provider again.
        before, faults_before = server.request_count, Counter(server.fault_counts)
        started = time.monotonic()
        assert materialize("load", instance, ANSWERS_UPTO).success
        figures["run2_wall_s"] = round(time.monotonic() - started, 1)
        answers2, contract2 = _tables(Lab.from_env())
        assert answers2.height == contract2.height == N
        hits = set(answers2.filter(pl.col("cache_hit"))["query_id"])
        assert hits == set(answers["query_id"]) - failed1
        retried = answers2.filter(~pl.col("cache_hit"))
        assert set(retried["query_id"]) == failed1
        asked2 = asked(server, before)
        assert set(asked2) <= failed1  # no request for a finished row
        attempts2 = dict(zip(retried["query_id"], retried["attempts"]))
        assert all(n <= attempts2[q] for q, n in asked2.items())
        assert retried["attempts"].max() <= MAX_RETRIES + 1
        figures.update(run2_cache_hits=len(hits), run2_retried_rows=retried.height,
                       run2_requests=server.request_count - before, run2_attempts_sum=int(retried["attempts"].sum()),
                       run2_faults=dict(Counter(server.fault_counts) - faults_before),
                       run2_provider_statuses=dict(Counter(answers2["status"])))

        # Run 3: a lower budget holds. A new prompt makes every request new; 100 calls, then clean stops.
        arms_file.write_text(_arms(server.base_url, prompt="grounded-answer-multipart-v2", generation_budget=100))
        before = server.request_count
        assert materialize("load", instance, ANSWER_ASSETS).success
        answers3, contract3 = _tables(Lab.from_env())
        assert answers3.height == contract3.height == N
        assert not answers3["cache_hit"].any()
        called = answers3.filter(pl.col("status") != "budget_exhausted")
        assert called.height == 100
        assert (contract3["status"] == "budget_exhausted").sum() == N - 100
        asked3 = asked(server, before)
        assert set(asked3) <= set(called["query_id"])  # a stopped row never reached the provider
        assert server.request_count - before <= called["attempts"].sum() <= 100 * (MAX_RETRIES + 1)
        figures.update(run3_budget=100, run3_requests=server.request_count - before,
                       run3_provider_statuses=dict(Counter(answers3["status"])))
        figures["faults_injected_total"] = dict(server.fault_counts)
    figures["rows_lost"] = 3 * N - answers.height - answers2.height - answers3.height
    assert figures["rows_lost"] == 0
    print("\nRELIABILITY-FIGURES faults " + json.dumps(figures, default=int))
