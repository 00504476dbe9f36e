"""The user's path for the one-instrument rule: `rag-ttc run baseline prompt-multipart prompt-multipart-oracle`.
No label reaches a non-oracle generator (read back through `inspect --json`); every arm's completeness comes from
one request judge; a comparison across request judges is refused unless allowed, and then says so."""

import json
import shutil

from rag_ttc_assets_tests.conftest import MINI_DEFAULTS, REPO, mini_corpus, mini_questions, write_dataset
from rag_ttc_assets_tests.e2e.test_cli import rag_ttc
from rag_ttc_assets_tests.support.reliability import cli_in_process

ARMS = MINI_DEFAULTS + """arms:
  baseline: {}
  prompt-multipart: {prompt: grounded-answer-multipart-v2}
  prompt-multipart-oracle: {prompt: grounded-answer-multipart-v1, requests_in_prompt: oracle}
  other-judge: {judge_requests_prompt: judge-requests-copy}
  judge-params: {request_judge: {model: local/lexical, params: {temperature: 0}}}
"""


def _label_texts(questions):
    """Annotations worded unlike their questions, so a leak is visible: 'Annotated request 3 of mini-02: ...'."""
    for q in questions:
        for i, r in enumerate(q["requests"], 1):
            r["text"] = f"Annotated request {i} of {q['id']}: {r['text'].lower()}"
    return questions


def _sent_text(view):
    return "\n".join(m.get("content") or "" for sent in view["answer"]["messages_sent"] for m in sent["messages"])


def test_labels_stay_out_of_generation_and_one_judge_measures_every_arm(tmp_path, capsys):
    corpus = mini_corpus()
    questions = _label_texts(mini_questions(corpus))
    write_dataset(tmp_path / "datasets" / "mini", corpus, questions)
    prompts = tmp_path / "prompts"
    shutil.copytree(REPO / "prompts", prompts)
    (prompts / "judge-requests-copy.txt").write_text((prompts / "judge-requests-v1.txt").read_text() + "\n")
    (tmp_path / "arms.yaml").write_text(ARMS)
    env = {"RAG_TTC_ARMS": str(tmp_path / "arms.yaml"), "RAG_TTC_DATASETS": str(tmp_path / "datasets"),
           "RAG_TTC_PROMPTS": str(prompts), "RAG_TTC_HOME": str(tmp_path / "home"),
           "DAGSTER_HOME": str(tmp_path / "dh")}
    arms = ["baseline", "prompt-multipart", "prompt-multipart-oracle"]
    code, out, err = rag_ttc("run", *arms, "--stage", "all", "--json", env=env)
    assert code == 0, err
    reports = json.loads(out)["arms"]
    code, text, err = rag_ttc("run", *arms, env=env)
    assert code == 0, err
    assert "prompt-multipart-oracle (oracle)" in text and "baseline (oracle)" not in text

    # What each generator saw, as sent: the annotation only in the oracle arm's messages. Each arm's first question
    # through `rag-ttc inspect` in its own process; the others through the same command's entry point in this one.
    for arm in arms:
        for q in questions:
            if q is questions[0]:
                code, out, err = rag_ttc("inspect", arm, q["id"], "--json", env=env)
            else:
                code, out, err = cli_in_process("inspect", arm, q["id"], "--json", env=env, capsys=capsys)
            assert code == 0, err
            view = json.loads(out)
            sent = _sent_text(view)
            assert q["text"] in sent
            leaked = [r["id"] for r in q["requests"] if r["text"] in sent or r["id"] in sent]
            if arm == "prompt-multipart-oracle":
                assert leaked == [r["id"] for r in q["requests"]], (arm, q["id"])
                assert view["label_use"] == "oracle"
            else:
                assert leaked == [], (arm, q["id"], leaked)
            judged = [r["request_judge"] for r in view["requests"]] if q["answerable"] else []
            assert all(j is not None and j["request_judge_model"] == "local/lexical" for j in judged)

    # One instrument: the same request judge and prompt digest behind every arm's completeness.
    instruments = {json.dumps(reports[a]["completeness"]["request_judge"], sort_keys=True) for a in arms}
    assert len(instruments) == 1
    for arm in arms:
        c, flow = reports[arm]["completeness"], reports[arm]["flow"]
        assert c["requests_total"] == c["requests_measured"] == 11
        assert {"self_reported_answered", "overclaimed", "underclaimed"} <= set(c)
        assert flow["closes"] and flow["accounting_closes"] and flow["total"] == 11
        assert reports[arm]["label_use"] == ("oracle" if arm.endswith("oracle") else "none")
    # The oracle's request items are keyed to the labels; the others' claims are read as a whole.
    assert reports["prompt-multipart-oracle"]["completeness"]["self_reported_answered"] <= 11

    # The UI's metadata names the oracle arm as such, partition by partition.
    import os

    from dagster import AssetKey, AssetRecordsFilter, DagsterInstance

    os.environ["DAGSTER_HOME"] = env["DAGSTER_HOME"]
    try:
        with DagsterInstance.get() as instance:
            for asset in ("answers", "request_judgments", "judge_summary", "request_completeness"):
                for arm in arms:
                    rec = instance.fetch_materializations(AssetRecordsFilter(
                        asset_key=AssetKey(asset), asset_partitions=[arm]), limit=1).records[0]
                    use = rec.asset_materialization.metadata["label_use"].value
                    assert use == ("oracle" if arm.endswith("oracle") else "none"), (asset, arm, use)
    finally:
        del os.environ["DAGSTER_HOME"]

    code, out, err = rag_ttc("compare", "prompt-multipart", "prompt-multipart-oracle", env=env)
    assert code == 0, err
    assert "prompt-multipart-oracle is an ORACLE arm" in out and "the same for both arms" in out
    assert "11 of 11 requests" in out

    # Another request-judge prompt is another instrument: refused, naming both, unless allowed.
    code, out, err = rag_ttc("run", "other-judge", env=env)
    assert code == 0, err
    code, _, err = rag_ttc("compare", "baseline", "other-judge", env=env)
    assert code == 1 and "instrument drift" in err and "baseline" in err and "other-judge" in err
    assert "--allow-instrument-drift" in err and err.count("sha256:") >= 2
    code, out, err = rag_ttc("compare", "baseline", "other-judge", "--allow-instrument-drift", "--json", env=env)
    assert code == 0, err
    assert json.loads(out)["instrument_drift"] == ["prompt_digest"]

    # The same judge called with other parameters (an LLM judge's temperature changes its verdicts) is another
    # instrument too: the run's summary says so, and compare refuses it naming the parameters.
    code, out, err = rag_ttc("run", "baseline", "judge-params", env=env)
    assert code == 0, err
    assert 'local/lexical (prompt sha256:' in out
    assert '…, params {"temperature": 0}, rules request-judge-rules/5)' in out  # the offline judge's rules too
    assert "[instrument differs between arms: not comparable]" in out
    code, _, err = rag_ttc("compare", "baseline", "judge-params", env=env)
    assert code == 1 and "instrument drift" in err and "params: baseline None, judge-params {'temperature': 0}" in err
    code, out, err = rag_ttc("compare", "baseline", "judge-params", "--allow-instrument-drift", "--json", env=env)
    assert code == 0, err
    assert json.loads(out)["instrument_drift"] == ["params"]
