"""The request judge as an instrument, against a real OpenAI-compatible server on 127.0.0.1: a content-free answerer
scores nothing, and request-judge faults are rows that are not measured, never "not addressed"."""

import json
import re

import pytest
from dagster import DagsterInstance

from rag_ttc_assets_tests.conftest import MINI_DEFAULTS, write_mini_lab
from rag_ttc_assets_tests.support.openai_server import FakeOpenAIServer, FaultPlan

CONTENT_FREE = "According to the evidence, the requested behaviour is described in the cited chunk."

ARMS = MINI_DEFAULTS + """  allow_unpriced_provider: true
  generation_workers: 1
arms:
  content-free:
    generator: {{model: openai/content-free, api_base: "{base}", api_key_env: RAG_TTC_TEST_KEY,
                timeout_s: 5, max_retries: 0}}
  judged-remotely:
    request_judge: {{model: openai/request-judge, api_base: "{base}", api_key_env: RAG_TTC_TEST_KEY,
                timeout_s: 5, max_retries: 0}}
"""


def content_free(messages):
    """Every question gets one sentence that says nothing, citing the first admitted chunk."""
    first = re.search(r'<chunk id="([^"]+)">', messages[-1]["content"])
    return json.dumps({"answer": CONTENT_FREE, "citation_chunk_ids": [first.group(1)] if first else [],
                       "abstained": False})


def request_judge(messages):
    """A request judge that calls every request addressed; for a question marked OMIT it leaves the last one out."""
    prompt = messages[-1]["content"]
    ids = re.findall(r'<request id="([^"]+)">', prompt)
    if "OMIT" in prompt:
        ids = ids[:-1]
    return json.dumps({"requests": [{"request": r, "addressed": True, "excerpt": "", "cited_chunk_ids": [],
                                     "verdict": "consistent", "reason": "the fake judge agrees"} for r in ids]})


# Question texts reach every prompt, so the fault markers go only where the request judge is the remote model.
JUDGE_FAULTS = {"mini-01": " FAULT:rate_limited", "mini-02": " FAULT:non_json", "mini-03": " OMIT"}


@pytest.fixture
def lab_dir(tmp_path, monkeypatch, request):
    return write_mini_lab(tmp_path, monkeypatch, JUDGE_FAULTS if "faults" in request.node.name else {})


def _materialize(lab_dir, server, arm, instance):
    (lab_dir / "arms.yaml").write_text(ARMS.format(base=server.base_url))
    from rag_ttc_assets.definitions import build_definitions
    from rag_ttc_assets.lab import Lab

    result = build_definitions().resolve_job_def("arm_job").execute_in_process(
        partition_key=arm, instance=instance, raise_on_error=True)
    assert result.success
    return Lab.from_env().store


def test_a_content_free_answer_answers_nothing_and_overclaims_everything(lab_dir):
    with FakeOpenAIServer(content_free) as server:
        store = _materialize(lab_dir, server, "content-free", DagsterInstance.ephemeral())
    contract = store.read_table("content-free", "contract_results")
    assert set(contract["status"]) == {"valid"}  # the contract is a gate: a citation passes it
    c = store.read_arm_json("content-free", "request_completeness.json")
    assert c["requests_total"] == c["requests_measured"] == 11
    assert c["requests_answered"] == 0 and c["requests_supported"] == 0 and c["questions_complete"] == 0
    # It claimed every request (a non-abstaining answer claims the question); the judge found none addressed.
    assert c["self_reported_answered"] == 11 and c["overclaimed"] == 11 and c["underclaimed"] == 0
    assert c["request_judge"]["model"] == "local/lexical" and c["request_judge"]["offline_baseline"] is True
    judged = store.read_table("content-free", "request_judgments")
    assert judged.height == 11 and set(judged["status"]) == {"judged"} and set(judged["verdict"]) == {"not_addressed"}
    flow = store.read_arm_json("content-free", "failure_flow.json")
    assert flow["ok"] == 0 and flow["closes"] and flow["accounting_closes"]
    assert flow["accounting"]["ok"]["acceptable"] == 0


def test_request_judge_faults_are_not_measured_and_a_rerun_resends_only_them(lab_dir):
    instance = DagsterInstance.ephemeral()
    with FakeOpenAIServer(request_judge, FaultPlan(retry_after=0)) as server:
        store = _materialize(lab_dir, server, "judged-remotely", instance)
        judge_calls = [r for r in server.requests if "<task>judge_requests</task>" in
                       r["body"]["messages"][-1]["content"]]
        first = len(judge_calls)
        rows = {r["request_id"]: r for r in store.read_table("judged-remotely", "request_judgments").to_dicts()}
        assert {rows[r]["status"] for r in ("mini-01.r1", "mini-01.r2")} == {"judge_rate_limited"}
        assert {rows[r]["status"] for r in ("mini-02.r1", "mini-02.r2")} == {"judge_parse_failure"}
        assert {rows[r]["status"] for r in ("mini-03.r1", "mini-03.r2")} == {"judge_parse_failure"}
        assert "omits request(s) ['mini-03.r2']" in rows["mini-03.r1"]["judge_error"]
        assert rows["mini-04.r1"]["status"] == "judged" and rows["mini-04.r1"]["addressed"] is True
        # The judge is given the labelled requests and the answer text, never the generator's request items.
        for call in judge_calls:
            content = call["body"]["messages"][-1]["content"]
            assert '"supported"' not in content and "<gold_requests>" in content
        c = store.read_arm_json("judged-remotely", "request_completeness.json")
        assert c["requests_total"] == 11 and c["requests_measured"] == 11 - 6
        assert c["not_measured"] == 6 and c["request_judge"]["model"] == "openai/request-judge"
        # Why: the 429 and the two unparseable replies are judge errors, for 6 requests and their 3 questions; the
        # mean completeness is over the 4 other answerable questions.
        assert c["requests_not_measured"] == {"judge_error": 6}
        assert (c["completeness_measured"], c["completeness_of"], c["completeness_not_measured"]) == (
            4, 7, {"judge_error": 3})
        questions = store.read_table("judged-remotely", "question_completeness").to_dicts()
        measured = [q["supported"] / q["requests"] for q in questions if q["measured"] == q["requests"]]
        assert len(measured) == 4 and c["mean_completeness"] == pytest.approx(sum(measured) / 4)
        outcomes = {r["request_id"]: r for r in store.read_table("judged-remotely", "request_outcomes").to_dicts()}
        assert outcomes["mini-01.r1"]["answered"] is None and outcomes["mini-01.r1"]["case"] == "not_measured"
        flow = {r["request_id"]: r for r in store.read_table("judged-remotely", "failure_flow").to_dicts()}
        assert {flow[r]["quality"] for r in ("mini-01.r1", "mini-02.r1", "mini-03.r2")} == {"not_measured"}
        # An LLM judge reports no coverage: completeness read graded is not measured (never 0), beside the share
        # addressed of the 5 measured requests (by hand from request_outcomes), in run's table, the asset's metadata,
        # the diagnosis sentence and compare's per-question values.
        measured = [o for o in outcomes.values() if o["measured"]]
        share = sum(o["answered"] is True for o in measured) / len(measured)
        assert all(o["coverage"] is None for o in outcomes.values() if o["judge_status"] == "judged")
        assert len(measured) == 5 and any(o["coverage"] == 0.0 for o in measured)  # an undelivered answer's 0.0
        assert (c["graded_completeness"], c["requests_graded"], c["requests_answered_share"]) == (None, 0, share)
        from rag_ttc_assets.cli.run import run_tables
        table = next(t for t in run_tables({"judged-remotely": {"completeness": c}}).split("\n\n")
                     if t.startswith("request completeness")).splitlines()
        row = re.split(r"\s{2,}", next(line for line in table if line.startswith("judged-remotely")).strip())
        assert row[1:5] == ["not measured (no coverage)", "0/5", f"{share:.4f}", "5/11"], row
        from dagster import AssetKey, AssetRecordsFilter
        meta = instance.fetch_materializations(AssetRecordsFilter(
            asset_key=AssetKey("request_completeness"), asset_partitions=["judged-remotely"]),
            limit=1).records[0].asset_materialization.metadata
        assert meta["completeness/graded"].value == "not measured (no coverage) (0 of 5 measured requests graded)"
        assert meta["completeness/addressed"].value == f"{share:.4f} (5 of 11 requests measured)"
        from rag_ttc_assets.core.compare_metrics import question_graded
        from rag_ttc_assets.diagnosis.diagnosis_decisions import rule_completeness_readings
        from rag_ttc_assets.adapters.input_files import load_arms
        from rag_ttc_assets.diagnosis.diagnosis_inputs_stage import arm_record
        record = arm_record(store, load_arms(lab_dir / "arms.yaml")["judged-remotely"], "judged-remotely")
        assert record.requests_graded == 0 and record.graded_completeness is None
        text = rule_completeness_readings("judged-remotely", record).done("x")["text"]
        assert text.startswith("judged-remotely: completeness graded: not measured (no coverage; 0 of 5 measured")
        assert f"share of requests addressed {share:.3f} (5 of 11 requests measured)" in text
        graded, why = question_graded(list(outcomes.values()))
        assert graded == {} and why["mini-04"] == "no_coverage" and why["mini-01"] == "judge_error"

        # A rerun: successful replies (the prose and the omission included) come from the cache; only the
        # rate-limited question is sent again.
        store = _materialize(lab_dir, server, "judged-remotely", instance)
        again = [r for r in server.requests if "<task>judge_requests</task>" in r["body"]["messages"][-1]["content"]]
        assert len(again) - first == 1
        assert "FAULT:rate_limited" in again[-1]["body"]["messages"][-1]["content"]
