"""No silent denominators, through an arm whose gold judge is a real OpenAI-compatible server on 127.0.0.1: judge
faults, an unparseable reply, an answer without statements and a budget stop are rows that are not measured, each
counted under its reason, and every printed or stored mean says over how many rows of how many it was taken."""

import json
import re

import pytest
from dagster import DagsterInstance

from rag_ttc_assets_tests.conftest import MINI_DEFAULTS, write_mini_lab
from rag_ttc_assets_tests.support.openai_server import FakeOpenAIServer, FaultPlan

ARM = "judged-remotely"
ARMS = MINI_DEFAULTS + """  allow_unpriced_provider: true
  generation_workers: 1
arms:
  judged-remotely:
    judge: {{model: openai/judge, api_base: "{base}", api_key_env: RAG_TTC_TEST_KEY, timeout_s: 5, max_retries: 0}}
    judge_budget: 9
"""

# The markers reach every judge prompt through the question text (the generator and the request judge are local).
MARKS = {"mini-01": " FAULT:rate_limited", "mini-02": " FAULT:non_json", "mini-03": " HALF", "mini-04": " NOTHING"}


def judge(messages):
    """Two statements; both supported (relevance 1), or for a HALF question only the first (relevance 0.5); none
    for a NOTHING question."""
    prompt = messages[-1]["content"]
    half = "HALF" in prompt
    if "<task>extract_statements</task>" in prompt:
        return json.dumps({"statements": [] if "NOTHING" in prompt else ["first claim", "second claim"]})
    gold = "<task>verify_against_gold</task>" in prompt
    verdicts = [{"statement": n, "text": "claim", "supported": not (half and n == 2), "evidence": [1],
                 "reason": "fake", **({"contradicts_gold": False} if gold else {})} for n in (1, 2)]
    return json.dumps({"verdicts": verdicts, **({} if gold else {"answer_relevance": 0.5 if half else 1.0})})


@pytest.fixture
def lab_dir(tmp_path, monkeypatch):
    return write_mini_lab(tmp_path, monkeypatch, MARKS)


def test_every_mean_carries_its_denominator_and_the_reasons(lab_dir):
    with FakeOpenAIServer(judge, FaultPlan(retry_after=0)) as server:
        (lab_dir / "arms.yaml").write_text(ARMS.format(base=server.base_url))
        from rag_ttc_assets.definitions import build_definitions
        from rag_ttc_assets.lab import Lab

        result = build_definitions().resolve_job_def("arm_job").execute_in_process(
            partition_key=ARM, instance=DagsterInstance.ephemeral(), raise_on_error=True)
    lab = Lab.from_env()
    store = lab.store
    rows = {r["query_id"]: r for r in store.read_table(ARM, "judge_verdicts").to_dicts()}
    contract = {r["query_id"]: r["status"] for r in store.read_table(ARM, "contract_results").to_dicts()}
    # The extractive generator abstains on mini-06 (its admitted chunks do not hold the answer) and on the
    # unanswerable mini-99, and answers the rest.
    assert contract == {**{f"mini-0{i}": "valid" for i in range(1, 8)}, "mini-06": "abstained", "mini-99": "abstained"}
    # Judge calls in question order (one worker), 9 allowed: mini-01 1 (429), mini-02 1 (prose), mini-03 3
    # (statements, verdicts, gold), mini-04 1 (no statements), mini-05 3 = 9 (abstentions are not judged); mini-07
    # is stopped by the budget at its first call.
    assert {q: r["status"] for q, r in rows.items()} == {
        "mini-01": "judge_rate_limited", "mini-02": "judge_parse_failure", "mini-03": "judged",
        "mini-04": "no_statements", "mini-05": "judged", "mini-06": "abstained", "mini-07": "judge_budget_exhausted",
        "mini-99": "abstained"}
    assert {q: r["faithfulness"] for q, r in rows.items() if r["faithfulness"] is not None} == {
        "mini-03": 0.5, "mini-05": 1.0}

    # judge_summary: (0.5 + 1) / 2 over 2 of 8 rows; the 6 others: 2 abstentions, 2 judge errors, 1 budget stop,
    # 1 answer without statements.
    s = store.read_arm_json(ARM, "judge_summary.json")
    reasons = {"abstained": 2, "budget": 1, "judge_error": 2, "no_statements": 1}
    assert s["mean_faithfulness"] == 0.75 and s["mean_relevance"] == 0.75
    assert (s["faithfulness_measured"], s["faithfulness_of"], s["faithfulness_not_measured"]) == (2, 8, reasons)
    assert (s["relevance_measured"], s["relevance_of"], s["relevance_not_measured"]) == (2, 8, reasons)
    # Gold verdicts for the same two rows (mini-03 half supported).
    assert s["mean_gold_supported"] == 0.75
    assert (s["gold_supported_measured"], s["gold_supported_of"], s["gold_supported_not_measured"]) == (2, 8, reasons)

    # The asset's metadata says the same.
    meta = {e.asset_key.path[-1]: e.materialization.metadata for e in result.get_asset_materialization_events()}
    assert meta["judge_summary"]["faithfulness/measured"].value == \
        "2 measured of 8 (not measured: abstained 2, judge_error 2, budget 1, no_statements 1)"
    assert meta["judge_summary"]["mean_faithfulness"].value == 0.75
    # Retrieval: mini-99 has no targets; every case counts in the hit rate.
    assert meta["retrieval_summary"]["measured"].value == "7 measured of 8 (not measured: no_targets 1) questions"
    flow = store.read_arm_json(ARM, "failure_flow.json")["hit_rate"]
    assert (flow["measured"], flow["of"], flow["not_measured"]) == (7, 7, {})
    assert meta["failure_flow"]["hit_rate/measured"].value == "7 measured of 7 questions"

    # The printed run table: the means with "measured/of" and the reasons.
    from rag_ttc_assets.cli.run import run_tables
    from rag_ttc_assets.defs.graph import STAGES
    from rag_ttc_assets.stages.reports import arm_report

    table = run_tables({ARM: arm_report(lab.store, ARM, lab.arms[ARM], STAGES["all"]).to_json()})
    judge_line = next(line for line in table.splitlines() if line.startswith(ARM) and "openai/judge" in line)
    assert re.search(r"0\.7500\s+2/8\s+0\.7500\s+2/8\s+abstained 2, judge_error 2, budget 1, no_statements 1",
                     judge_line), \
        judge_line

    # The run record: summary.md and the JSON copy.
    (run_dir,) = [p for p in (lab.home / "runs" / ARM).iterdir() if (p / "summary.md").is_file()]
    md = (run_dir / "summary.md").read_text()
    assert ("| faithfulness | 0.75 | 2 measured of 8 (not measured: abstained 2, judge_error 2, budget 1, "
            "no_statements 1) |") in md
    assert "means over 7 measured of 8 (not measured: no_targets 1) questions" in md
    stored = json.loads((run_dir / "results" / "judge-summary.json").read_text())
    assert stored["faithfulness_not_measured"] == reasons

    # The comparison report: faithfulness paired over 2 of 8 cases, the 6 others undefined in both arms, and why.
    from rag_ttc_assets.stages.arm_comparisons import compare_two, read_pair

    rep = compare_two(read_pair(lab.store, lab.arms, ARM, ARM))
    f = rep.metrics["faithfulness"]
    assert (f.n, f.of, f.undefined_a, f.undefined_b, f.undefined_both) == (2, 8, 0, 0, 6)
    assert f.not_measured.model_dump() == {"a": reasons, "b": reasons}
    r = rep.metrics["recip_rank"]
    assert (r.n, r.of, r.not_measured.model_dump()) == (7, 8, {"a": {"no_targets": 1}, "b": {"no_targets": 1}})
