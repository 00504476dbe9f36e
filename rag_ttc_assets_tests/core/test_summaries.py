"""core.summaries: an arm's contract, judge and request-judge summaries from plain rows."""

from rag_ttc_assets.core.arms import ArmConfig, ModelConfig
from rag_ttc_assets.core.summaries import contract_summary, is_offline_baseline, judge_summary, request_judge_summary


def _contract(status, reason="", chars=0, cited=()):
    return {"status": status, "reason": reason, "answer_chars": chars, "citation_chunk_ids": list(cited)}


def test_contract_summary_counts_each_status_and_closes():
    rows = [_contract("valid", chars=10, cited=["a", "b"]), _contract("valid", chars=20, cited=["a"]),
            _contract("parse_failure", "not JSON"), _contract("abstained")]
    s = contract_summary(rows)
    assert (s["total"], s["valid"], s["parse_failures"], s["abstentions"]) == (4, 2, 1, 1)
    assert (s["mean_answer_chars"], s["mean_cited_chunks"], s["sums_close"]) == (15.0, 1.5, True)
    assert contract_summary([])["mean_answer_chars"] == 0.0


def _verdict(qid, status, faith=None, rel=None, gold=None, contradicts=None, calls=1):
    return {"query_id": qid, "status": status, "judged": status == "judged", "faithfulness": faith,
            "answer_relevance": rel, "gold_supported": gold, "contradicts_gold": contradicts, "judge_error": None,
            "judge_provider_calls": calls, "judge_cache_hits": 0}


def test_judge_summary_means_over_measured_rows_with_their_denominators():
    cfg = ArmConfig(judge=ModelConfig(model="openai/judge"))
    rows = [_verdict("q1", "judged", 1.0, 0.5, 1.0, False), _verdict("q2", "judged", 0.0, 1.0, 0.0, True),
            _verdict("q3", "abstained", calls=0), _verdict("q4", "judge_rate_limited", calls=0)]
    s = judge_summary(cfg, rows, ["local/extractive"])
    assert (s["answer_rows"], s["judged"], s["abstained"], s["judge_failures"], s["invalid"]) == (4, 2, 1, 1, 0)
    assert (s["mean_faithfulness"], s["faithfulness_measured"], s["faithfulness_of"]) == (0.5, 2, 4)
    assert (s["gold_judged"], s["contradicts_gold"], s["provider_calls"]) == (2, 1, 2)
    assert (s["judge_model"], s["same_model_as_generator"], s["offline_baseline_judge"]) == (
        "openai/judge", False, False)


def test_request_judge_summary_counts_verdicts_and_unmeasured():
    rows = [{"status": "judged", "verdict": "consistent", "judge_provider_calls": 1, "judge_cache_hits": 0},
            {"status": "judged", "verdict": "contradicts", "judge_provider_calls": 0, "judge_cache_hits": 1},
            {"status": "judge_parse_failure", "verdict": None, "judge_provider_calls": 1, "judge_cache_hits": 0}]
    s = request_judge_summary(rows)
    assert (s["requests"], s["judged"], s["not_measured"], s["provider_calls"], s["cache_hits"]) == (3, 2, 1, 2, 1)
    assert s["verdicts"] == {"consistent": 1, "contradicts": 1, "not_addressed": 0, "not_verifiable": 0}
    assert request_judge_summary([])["requests"] == 0


def test_offline_baselines_are_named():
    assert is_offline_baseline("local/extractive") and is_offline_baseline("local/lexical")
    assert not is_offline_baseline("local/smollm2")
