"""Reliability 6: an API key given through the environment never lands anywhere: not in config copies, run
records, Dagster metadata or event logs, CLI output or error text, across a whole successful run and a
run whose every provider call is refused with a 401 that echoes the key back."""

import json
import os

import polars as pl
from dagster import DagsterInstance, serialize_value

from rag_ttc_assets_tests.e2e.conftest import REL_N
from rag_ttc_assets_tests.support.openai_server import FakeOpenAIServer
from rag_ttc_assets_tests.support.reliability import (KEY_ENV, arms_text, cli, fake_model, files_containing, lab_env,
                                                      remote_model)

SENTINEL = "sk-SENTINEL-9f8e7d"


def test_the_api_key_never_appears_in_any_output(rel_lab, monkeypatch):
    env = lab_env(rel_lab, **{KEY_ENV: SENTINEL})
    with FakeOpenAIServer(fake_model, expected_key=SENTINEL) as good, \
            FakeOpenAIServer(fake_model, expected_key="sk-the-one-the-provider-wanted") as refusing:
        bad = {"generator": remote_model(refusing.base_url), "judge": remote_model(refusing.base_url)}
        (rel_lab / "arms.yaml").write_text(arms_text("rel", {"good": {}, "bad": bad}, good.base_url,
                                                     judge_remote=True))
        code, out, err = cli("run", "good", "bad", "--json", env=env)  # every stage, the judge included
        assert code == 0, err[-3000:]
        assert good.request_count > REL_N and all(r["auth_present"] for r in good.requests)
        assert refusing.request_count == REL_N  # one refused call per question, not retried
        code2, out2, err2 = cli("runs", "--json", env=env)
        assert code2 == 0, err2[-3000:]

    # Both runs did what they should, so every path that could carry the key was taken.
    arms = json.loads(out)["arms"]
    assert arms["good"]["contract"]["valid"] == REL_N and arms["good"]["judge"]["judged"] == REL_N
    assert arms["bad"]["contract"]["provider_faults"] == {"auth_error": REL_N}
    bad_answers = pl.read_parquet(rel_lab / "home/store/arms/bad/answers.parquet")
    assert set(bad_answers["status"]) == {"auth_error"}
    assert all("Incorrect API key provided: ***" in e for e in bad_answers["error"])  # echoed, then scrubbed
    assert {r["status"] for r in json.loads(out2)} == {"complete"}

    needle = SENTINEL.encode()
    for text in (out, err, out2, err2):
        assert SENTINEL not in text
    assert files_containing(rel_lab / "home", needle) == []  # store, run records, config and input copies
    assert files_containing(rel_lab / "dh", needle) == []  # Dagster's sqlite storage, logs, everything

    os.environ["DAGSTER_HOME"] = env["DAGSTER_HOME"]
    try:
        with DagsterInstance.get() as instance:
            runs = instance.get_runs()
            assert len(runs) == 2
            for run in runs:
                assert SENTINEL not in repr(run) and SENTINEL not in serialize_value(run)
                events = instance.all_logs(run.run_id)
                assert len(events) > 50
                for ev in events:
                    assert SENTINEL not in repr(ev) and SENTINEL not in serialize_value(ev)
    finally:
        monkeypatch.delenv("DAGSTER_HOME", raising=False)
