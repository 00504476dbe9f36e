"""From a symptom to a boundary: completeness, failure flow, inspect, compare and run records."""

import json
import re
from pathlib import Path

from dagster import DagsterInstance

from rag_ttc_assets_tests.e2e.test_cli import rag_ttc

BRANCHES = ["not_retrieved", "cut_by_evidence_k", "omitted_by_context", "contract_failure", "not_measured",
            "not_addressed", "admitted_not_cited", "judged_unsupported", "ok"]


def test_run_diagnose_inspect_compare_and_validate_run_records(mini_lab, tmp_path):
    env = {"DAGSTER_HOME": str(tmp_path / "dh")}
    code, out, err = rag_ttc("run", "baseline", "tight", "evidence-k-5", "--json", env=env)
    assert code == 0, err
    store = mini_lab.store

    # Failure flow: every request in exactly one branch, branches add to the total.
    tight = store.read_arm_json("tight", "failure_flow.json")
    base = store.read_arm_json("baseline", "failure_flow.json")
    for flow in (tight, base):
        assert sum(flow[b] for b in BRANCHES) == flow["total"] == 11 and flow["closes"]
        for b in BRANCHES:
            assert sum(flow["accounting"][b].values()) == flow[b]
    # The tight budget (700 runes) omits chunks the baseline (2000) admits: the omission shows up as a branch.
    assert tight["omitted_by_context"] > base["omitted_by_context"]
    comp_tight = store.read_arm_json("tight", "request_completeness.json")
    comp_base = store.read_arm_json("baseline", "request_completeness.json")
    assert comp_tight["requests_total"] == comp_base["requests_total"] == 11
    assert comp_tight["requests_supported"] <= comp_base["requests_supported"]
    assert comp_base["unanswerable_questions"] == 1

    # inspect: the seed's reading order, in the terminal and as JSON.
    omitted_q = next(r["query_id"] for r in store.read_table("tight", "failure_flow").to_dicts()
                     if r["branch"] == "omitted_by_context")
    code, out, err = rag_ttc("inspect", "tight", omitted_q, env=env)
    assert code == 0, err
    order = [out.index(s) for s in ("**Requests**", "**Evidence**", "| rank |", "**Answer**", "**Contract**")]
    assert order == sorted(order)
    assert "omitted_by_context" in out and "omitted" in out and "used_runes" in out
    code, out, err = rag_ttc("inspect", "tight", omitted_q, "--json", env=env)
    view = json.loads(out)
    assert view["omitted_chunk_ids"] and view["max_runes"] == 700
    assert {r["state"] for r in view["ranked"]} >= {"admitted", "omitted"}
    code, _, err = rag_ttc("inspect", "tight", "no-such-question", env=env)
    assert code == 1 and "no-such-question" in err

    # compare: paired deltas, buckets, catastrophic cases, p-values, attribution.
    code, out, err = rag_ttc("compare", "baseline", "tight", "--json", env=env)
    assert code == 0, err
    rep = json.loads(out)
    assert rep["n"] == 7 and set(rep["metrics"]) >= {"valid", "completeness", "faithfulness", "recall_10"}
    for m in rep["metrics"].values():
        assert set(m) >= {"mean_a", "mean_b", "mean_delta", "ci_low", "ci_high", "p_value", "gains", "losses",
                          "ties"}
    assert rep["metrics"]["recall_10"]["mean_delta"] == 0  # admission does not move retrieval
    # Holm over the report's 9 metrics (graded completeness beside completeness): the smallest p times 9, capped at
    # 1; significant only on the adjusted value.
    assert rep["p_adjust"]["method"] == "holm" and rep["p_adjust"]["m"] == len(rep["metrics"]) == 9
    smallest = min(rep["metrics"].values(), key=lambda m: m["p_value"])
    assert smallest["p_adjusted"] == min(1.0, 9 * smallest["p_value"])
    assert all(m["significant"] == (m["p_adjusted"] <= 0.05) for m in rep["metrics"].values())
    # n paired of the cases of either arm; the unanswerable mini-99 has no completeness in either.
    c = rep["metrics"]["completeness"]
    assert (c["n"], c["of"], c["undefined_both"]) == (7, 8, 1) and c["not_measured"]["a"] == {"unanswerable": 1}
    assert sum(b["count"] for b in rep["buckets"]) == rep["n"]
    assert rep["changed_parameters"] == {"context_runes": [2000, 700]}
    assert Path(rep["plots"]["delta_histogram"]).read_bytes()[:4] == b"\x89PNG"
    code, out, err = rag_ttc("compare", "baseline", "tight", env=env)
    assert code == 0 and "How the completeness mean is made" in out and "Catastrophic cases" in out
    assert "p_adj" in out and "p-values adjusted by holm: Holm step-down (Holm 1979)" in out
    assert "7 of 8 (a: unanswerable 1; b: unanswerable 1)" in out

    # Label drift is refused, naming both digests and the labels that differ (baseline's version read from its run
    # record's copy: the evaluation was edited by hand, no labels/ version kept it).
    ev = mini_lab.datasets_dir / "mini" / "evaluation.json"
    data = json.loads(ev.read_text())
    data["questions"][0]["targets"].append({"doc_id": "pass", "relevance": 1})
    ev.write_text(json.dumps(data))
    code, out, err = rag_ttc("run", "tight", "--stage", "judge", env=env)
    assert code == 0, err
    code, _, err = rag_ttc("compare", "baseline", "tight", env=env)
    assert code == 1 and "--allow-label-drift" in err and err.count("sha256:") >= 2
    qid = data["questions"][0]["id"]
    assert "labels that differ (1; a: baseline's version, b: tight's):\n" in err, err
    assert re.search(rf"^  question '{qid}' targets: \[[^\]]*\] -> \[.*, pass\]$", err, re.M), err
    code, out, err = rag_ttc("compare", "baseline", "tight", "--allow-label-drift", env=env)
    assert code == 0, err
    assert "LABEL DRIFT allowed (--allow-label-drift): baseline and tight were measured on different labels" in out

    # Run records: one per materialization, complete, passing the post-run validation sequence.
    code, out, err = rag_ttc("runs", "--json", env=env)
    runs = json.loads(out)
    assert [r["arm"] for r in runs].count("tight") == 2  # the relabelled rerun wrote a new record
    assert all(r["status"] == "complete" for r in runs)
    run_dir = Path(runs[0]["run_dir"])
    for rel in ("config.json", "inputs/corpus.json", "inputs/evaluation.json", "inputs/prompt.txt",
                "preparation/chunks.json", "preparation/representations.json", "indexes/manifest.json",
                "results/per-query.jsonl", "results/generated-answers.json", "results/answer-contract-summary.json",
                "results/retrieval-summary.json", "results/judge-per-query.jsonl", "results/judge-summary.json",
                "results/provider-provenance.json", "summary.md", "status.json"):
        assert (run_dir / rel).is_file(), rel
    row = json.loads((run_dir / "results" / "per-query.jsonl").read_text().splitlines()[0])
    assert set(row["generated_answer"]["context"]) == {"evidence", "omitted_chunk_ids", "used_runes", "max_runes"}
    assert "ranked_chunk_ids" in row["retrieval"] and "contract" in row["generated_answer"]

    import os

    os.environ["DAGSTER_HOME"] = env["DAGSTER_HOME"]
    try:
        with DagsterInstance.get() as instance:
            from dagster import AssetCheckKey, AssetKey

            for name in ("post_run_validation", "flow_closes", "contract_sums_close", "digest_binding"):
                asset = {"post_run_validation": "run_record", "flow_closes": "failure_flow",
                         "contract_sums_close": "contract_summary", "digest_binding": "labels"}[name]
                rec = instance.event_log_storage.get_latest_asset_check_execution_by_key(
                    [AssetCheckKey(AssetKey(asset), name)])
                evaluation = list(rec.values())[0].event.dagster_event.event_specific_data
                assert evaluation.passed, name
    finally:
        del os.environ["DAGSTER_HOME"]


def test_inspect_shows_the_messages_sent_for_the_answer_and_the_judge(mini_lab, tmp_path):
    """Through a real materialization: the answer's request holds the question and its admitted chunks, the
    judge's first request holds the answer it judged; the terminal view names them by short digest."""
    from rag_ttc_assets_tests.support.reliability import materialize

    assert materialize("baseline", DagsterInstance.ephemeral(), raise_on_error=True).success
    env = {"DAGSTER_HOME": str(tmp_path / "dh")}
    code, out, err = rag_ttc("inspect", "baseline", "mini-01", "--json", env=env)
    assert code == 0, err
    view = json.loads(out)
    answer, judge = view["answer"], view["judge"]
    assert view["question"]["text"] == "What does the assert statement do and what does the raise statement do?"
    assert view["admitted_chunk_ids"] == ["assert#chunk-0", "assert#chunk-1", "raise#chunk-0"]

    # One call for a retrieval arm without the citation check: its messages, no tools, archived under its digest.
    (digest,) = answer["messages_digests"]
    (sent,) = answer["messages_sent"]
    assert sent["tools"] is None and [m["role"] for m in sent["messages"]] == ["user"]
    content = sent["messages"][0]["content"]
    assert f"<question>\n{view['question']['text']}\n</question>" in content
    assert all(f'<chunk id="{c}">' in content for c in view["admitted_chunk_ids"])
    assert '<chunk id="raise#chunk-6">' not in content  # ranked, not admitted
    hexdigest = digest.split(":")[1]
    assert (mini_lab.store.root / "messages" / hexdigest[:2] / f"{hexdigest}.json.gz").is_file()
    assert mini_lab.store.messages.get(digest) == sent

    # The judge: statements, verdicts, gold; the statements request is sent the contract's answer.
    assert judge["status"] == "judged" and len(judge["messages_digests"]) == len(judge["messages_sent"]) == 3
    assert len(set(judge["messages_digests"])) == 3
    assert view["contract"]["answer"].startswith("1. Assert statements are a convenient way")
    assert view["contract"]["answer"] in judge["messages_sent"][0]["messages"][0]["content"]
    assert judge["statements"][0] in judge["messages_sent"][1]["messages"][0]["content"]

    code, out, err = rag_ttc("inspect", "baseline", "mini-01", env=env)
    assert code == 0, err
    assert f"Sent: 1 request(s), 1 message(s) kept: `{hexdigest[:12]}`" in out
    assert "Sent: 3 request(s), 3 message(s) kept: " + ", ".join(
        f"`{d.split(':')[1][:12]}`" for d in judge["messages_digests"]) in out
    assert content[:200] not in out  # the terminal view names the requests, it does not dump them
