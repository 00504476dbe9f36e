"""Both local-LLM arms as a user runs them: `rag-ttc run` against llama.cpp's server with SmolLM2-135M-Instruct,
then `rag-ttc inspect` on a row. Skipped, naming `make install-local-llm`, when the server is not built."""

from __future__ import annotations

import json

import polars as pl
import pytest
import yaml

from rag_ttc_assets.adapters.store import ArmJson, Table
from rag_ttc_assets.core.contract import CONTRACT_STATUSES, PARSED_FROM
from rag_ttc_assets_tests.conftest import MINI_DEFAULTS, mini_corpus, mini_questions, write_dataset
from rag_ttc_assets_tests.support.local_llm import TEST_KEY, arm_model
from rag_ttc_assets_tests.support.reliability import cli

PROVIDER_STATUSES = {"truncated", "timeout", "server_error", "connection_error", "empty_response"}


@pytest.fixture(scope="module")
def ran(llama_server, tmp_path_factory):
    """One `rag-ttc run` of a constrained and a free arm over the mini dataset's two pilot questions."""
    from rag_ttc_assets.adapters import llama_server as ls

    root = tmp_path_factory.mktemp("local-llm")
    corpus = mini_corpus()
    write_dataset(root / "datasets" / "mini", corpus, mini_questions(corpus))
    model = arm_model(llama_server.base_url, max_tokens=160)
    arm = {"question_set": "pilot", "generator": model, "judge": model, "request_judge": model,
           "allow_unpriced_provider": True, "generation_workers": 1}
    (root / "arms.yaml").write_text(MINI_DEFAULTS + yaml.safe_dump(
        {"arms": {"llm": arm, "llm-free": {**arm, "response_format": "none"}}}), encoding="utf-8")
    env = {"RAG_TTC_ARMS": str(root / "arms.yaml"), "RAG_TTC_DATASETS": str(root / "datasets"),
           "RAG_TTC_HOME": str(root / "home"), "DAGSTER_HOME": str(root / "dh"), ls.KEY_ENV: TEST_KEY,
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    (root / "dh").mkdir()
    code, out, err = cli("run", "llm", "llm-free", env=env, timeout=1500)
    assert code == 0, err[-3000:]
    code, js, err = cli("run", "llm", "llm-free", "--json", env=env)
    assert code == 0, err[-3000:]
    return root, env, out, json.loads(js)["arms"]


@pytest.fixture(scope="module")
def ran_again(ran, tmp_path_factory):
    """The same arms on the same questions again, into a fresh store and Dagster home (so every reply is asked of
    the server again: no call cache) and in the other order, on the same server after other requests. Its home."""
    _, env, _, _ = ran
    again = tmp_path_factory.mktemp("local-llm-again")
    (again / "dh").mkdir()
    env = {**env, "RAG_TTC_HOME": str(again / "home"), "DAGSTER_HOME": str(again / "dh")}
    code, _, err = cli("run", "llm-free", "llm", env=env, timeout=1500)
    assert code == 0, err[-3000:]
    return again / "home"


def _lab(root, home=None):
    from rag_ttc_assets.lab import Lab

    return Lab.from_env(arms_file=root / "arms.yaml", datasets_dir=root / "datasets", home=home or root / "home")


def _table(root, arm: str, name: str, home=None) -> pl.DataFrame:
    return _lab(root, home).store.read_table(arm, name)


def test_both_arms_reach_the_server_as_openai_models_and_every_row_has_one_status(ran) -> None:
    root, _, _, arms = ran
    for arm in ("llm", "llm-free"):
        answers = _table(root, arm, Table.ANSWERS)
        assert answers["model"].unique().to_list() == ["openai/smollm2-135m-instruct"]
        assert not answers["offline_baseline"].any()
        assert (answers["input_tokens"] > 100).all()  # the model's own token counts, through litellm
        contract = _table(root, arm, Table.CONTRACT_RESULTS)
        assert set(contract["status"]) <= CONTRACT_STATUSES | PROVIDER_STATUSES
        assert set(contract["parsed_from"].drop_nulls()) <= set(PARSED_FROM)
        c = arms[arm]["contract"]
        assert c["total"] == 2 == c["valid"] + c["parse_failures"] + c["contract_failures"] + c["abstentions"] + sum(
            c["provider_faults"].values())


def test_constrained_decoding_gives_whole_json_replies(ran) -> None:
    root, _, _, _ = ran
    answers = _table(root, "llm", Table.ANSWERS)
    contract = _table(root, "llm", Table.CONTRACT_RESULTS).join(answers.select("query_id", "status", "raw_text"),
                                                            on="query_id", suffix="_provider")
    finished = contract.filter(pl.col("status_provider") == "ok")
    # The grammar allows one object and nothing around it: every finished reply parses from the whole text.
    assert finished["parsed_from"].to_list() == ["json"] * finished.height
    for raw in finished["raw_text"]:
        assert isinstance(json.loads(raw), dict)


def test_the_tables_say_generator_and_judges_are_one_model(ran) -> None:
    root, _, out, arms = ran
    for arm in ("llm", "llm-free"):
        assert arms[arm]["judge"]["same_model_as_generator"] is True
        assert arms[arm]["request_judge"]["same_model_as_generator"] is True
        assert arms[arm]["response_format"] == ("json_schema" if arm == "llm" else "none")
        judge = _lab(root).store.read_arm_json(arm, ArmJson.JUDGE_SUMMARY)
        assert sum(judge["statuses"].values()) == judge["answer_rows"] == 2
    assert "answers: where each reply's JSON object was found" in out
    assert "judge_same_model" in out and "request_judge_same_model" in out
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("answers: where each reply"))
    rows = {line.split()[0]: line.split() for line in lines[start + 3:start + 5]}
    assert (rows["llm"][1], rows["llm-free"][1]) == ("json_schema", "none")


def test_a_row_reads_back_with_inspect(ran) -> None:
    _, env, _, _ = ran
    code, out, err = cli("inspect", "llm", "mini-01", env=env)
    assert code == 0, err
    assert "openai/smollm2-135m-instruct" in out and "**Contract**:" in out


# Columns that say how or when a row was obtained, not what it says.
HOW = {"cache_hit", "cache_hits", "latency_s", "attempts", "started_at", "finished_at", "provider_calls",
       "judge_provider_calls", "judge_cache_hits", "dagster_run_id", "detected_at", "updated_at"}


def _rows(df: pl.DataFrame) -> list[str]:
    kept = df.drop([c for c in df.columns if c in HOW or c.endswith("latency_s")])
    return sorted(json.dumps(row, sort_keys=True, default=str) for row in kept.to_dicts())


def test_two_runs_on_fresh_stores_give_the_same_replies(ran, ran_again) -> None:
    """At temperature 0 the served model's reply depends on its prompt only (adapters/llama_server.py pins what
    else could change it): the second run, asked of the server again after other requests, replies alike."""
    root = ran[0]
    for arm in ("llm", "llm-free"):
        first = _table(root, arm, Table.ANSWERS).sort("query_id")
        second = _table(root, arm, Table.ANSWERS, ran_again).sort("query_id")
        assert not second["cache_hit"].any() and (second["output_tokens"] > 0).all()  # asked again, answered
        assert second["query_id"].to_list() == first["query_id"].to_list()
        assert second["raw_text"].to_list() == first["raw_text"].to_list(), arm
        for name in (Table.ANSWERS, Table.CONTRACT_RESULTS, Table.JUDGE_VERDICTS, Table.REQUEST_JUDGMENTS):
            assert _rows(_table(root, arm, name, ran_again)) == _rows(_table(root, arm, name)), (arm, name)
