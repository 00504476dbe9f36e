"""Requests derived from gold answers, through the user's path: `rag-ttc derive-requests` (the derived_requests
asset), the offline rule and a litellm model on a loopback OpenAI-compatible server, then arms judged against the
derived requests, every table naming the derivation, and `compare` refusing two derivations."""

import json
import os

from rag_ttc_assets_tests.conftest import MINI_DEFAULTS, mini_corpus, mini_questions, write_dataset
from rag_ttc_assets_tests.e2e.test_cli import rag_ttc
from rag_ttc_assets_tests.support.openai_server import FakeOpenAIServer, FaultPlan

GOLD = {  # question -> gold answer of one, two and three claims
    "mini-01": "Assert statements insert debugging assertions into a program.",
    "mini-02": "Break terminates the nearest enclosing loop, and continue continues with the next cycle of the "
               "nearest enclosing loop.",
    "mini-03": "The with statement wraps the execution of a block with methods of a context manager; yield is used "
               "in a generator function. A yield expression suspends the generator.",
}


def _lab(tmp_path, marks=None):
    corpus = mini_corpus()
    qs = mini_questions(corpus)
    for q in qs:
        if q["id"] in GOLD:
            q["gold_answer"] = GOLD[q["id"]]
            q["requests"] = []
            q["text"] += (marks or {}).get(q["id"], "")
    write_dataset(tmp_path / "datasets" / "mini", corpus, qs)
    (tmp_path / "arms.yaml").write_text(MINI_DEFAULTS + "arms:\n  baseline: {}\n  k5: {evidence_k: 5}\n"
                                        "comparisons:\n  - [baseline, k5]\n", encoding="utf-8")
    return {"RAG_TTC_DATASETS": str(tmp_path / "datasets"), "RAG_TTC_ARMS": str(tmp_path / "arms.yaml"),
            "RAG_TTC_HOME": str(tmp_path / "home"), "DAGSTER_HOME": str(tmp_path / "dagster_home")}


def _claims(messages):
    gold = messages[-1]["content"].split("<gold_answer>")[1].split("</gold_answer>")[0].strip()
    # A model that splits at sentences only (fewer claims than the rule on the two-clause answer).
    return json.dumps({"claims": [s.strip() + "." for s in gold.split(". ") if s.strip(". ")]})


def test_derive_offline_then_by_a_model_judge_both_and_compare_refuses_the_mix(tmp_path):
    env = _lab(tmp_path)
    os.makedirs(env["DAGSTER_HOME"])
    code, out, err = rag_ttc("derive-requests", "mini", "--json", env=env)
    assert code == 0, err
    got = json.loads(out)
    assert got["derived_by"] == "rule local/claims-v1" and got["questions"] == 3
    assert got["requests"] == 1 + 2 + 3 and got["provider_calls"] == 0
    written = json.loads((tmp_path / "datasets" / "mini" / "derived_requests.json").read_text())
    by_q = {q["id"]: [r["text"] for r in q["requests"]] for q in written["questions"]}
    assert by_q["mini-02"] == ["Break terminates the nearest enclosing loop",
                               "continue continues with the next cycle of the nearest enclosing loop"]
    assert len(by_q["mini-01"]) == 1 and len(by_q["mini-03"]) == 3
    assert all(r["derived"]["method"] == "rule" for q in written["questions"] for r in q["requests"])

    code, out, err = rag_ttc("run", "baseline", "k5", env=env)
    assert code == 0, err
    assert "baseline (requests derived: rule local/claims-v1)" in out
    assert "k5 (requests derived: rule local/claims-v1)" in out
    code, out, err = rag_ttc("compare", "baseline", "k5", env=env)
    assert code == 0, err
    assert "requests: derived from gold answers by rule local/claims-v1, the same for both arms (6 requests of 3" in out
    # The written diagnosis names the derivation as a limit, and no decision rests on derived requests.
    code, out, err = rag_ttc("diagnose", "baseline", "k5", env=env)
    assert code == 0, err
    written = (tmp_path / "home" / "store" / "comparisons" / "diagnosis--baseline-k5.md").read_text()
    assert "Derived requests (from gold answers, not annotated by people) in baseline, k5." in written
    assert "the requests were derived, not annotated" in written

    # A model derives them anew (one question's call fails: its status is kept, the others are written).
    with FakeOpenAIServer(_claims, FaultPlan(by_index={0: "bad_request"})) as server:
        args = ["derive-requests", "mini", "--model", "openai/deriver", "--api-base", server.base_url,
                "--api-key-env", "RAG_TTC_TEST_KEY", "--json"]
        env_k = {**env, "RAG_TTC_TEST_KEY": "sk-test-0123456789"}
        code, out, err = rag_ttc(*args, env=env_k)
        assert code == 0, err
        first = json.loads(out)
        assert first["statuses"] == {"derived": 2, "bad_request": 1} and len(first["not_derived"]) == 1
        # The dataset now names the question whose derivation did not finish.
        code, _, err = rag_ttc("run", "k5", env=env)
        assert code == 1 and "derived_requests.json" in err and "status: derivation did not finish" in err
        code, out, err = rag_ttc(*args, env=env_k)  # a rerun: the two finished ones from the provider cache
        assert code == 0, err
        again = json.loads(out)
        assert again["statuses"] == {"derived": 3} and again["cache_hits"] == 2 and again["provider_calls"] == 1
        assert "<task>derive_requests</task>" in server.requests[-1]["body"]["messages"][-1]["content"]
    assert again["derived"]["prompt_digest"].startswith("sha256:") and again["requests"] == 1 + 1 + 2

    code, out, err = rag_ttc("run", "k5", env=env)  # k5 is stale: its labels changed
    assert code == 0, err
    assert "k5 (requests derived: model openai/deriver (prompt sha256:" in out
    code, out, err = rag_ttc("compare", "baseline", "k5", env=env)
    assert code == 1
    assert ("requests derived differently: arm baseline was measured against requests derived by rule "
            "local/claims-v1, arm k5 against requests derived by model openai/deriver") in err
