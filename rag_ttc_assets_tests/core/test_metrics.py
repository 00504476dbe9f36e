from __future__ import annotations

import math
import random

import pytest
import pytrec_eval

from rag_ttc_assets.core.metrics import (
    METRIC_DEFINITIONS_VERSION,
    doc_ranking,
    evaluate,
    evaluate_ranked,
    measure_names,
)

KS = (5, 10, 20, 100)
PYTREC_MEASURES = {"recip_rank", "recall.5,10,20,100", "ndcg_cut.5,10,20,100", "success.5,10,20,100"}
# Mixed-length and non-ASCII ids, so a tie-break on numeric or code-unit order would show up.
DOC_IDS = [f"d{i}" for i in range(120)] + [f"D{i}" for i in range(20)] + ["doc-\u00e9", "doc-\u03b2", "doc-z"]


def _random_case(seed: int, graded: bool) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(40):
        qid = f"q{q}"
        if rng.random() < 0.85:
            levels = [-1, 0, 0, 1, 2, 3] if graded else [0, 0, 1]
            judged = rng.sample(DOC_IDS, rng.randint(1, 40))
            no_relevant = rng.random() < 0.1
            qrels[qid] = {d: (0 if no_relevant else rng.choice(levels)) for d in judged}
        if rng.random() < 0.8:
            retrieved = rng.sample(DOC_IDS, rng.randint(0, 130))
            coarse = rng.random() < 0.5  # few distinct scores -> many ties
            run[qid] = {d: (rng.randint(0, 4) / 4 if coarse else rng.random()) for d in retrieved}
    run["only-in-run"] = {"d1": 1.0}
    return qrels, run


@pytest.mark.parametrize("graded", [False, True])
@pytest.mark.parametrize("seed", range(8))
def test_matches_pytrec_eval_on_random_runs(seed: int, graded: bool) -> None:
    qrels, run = _random_case(seed, graded)
    assert set(qrels) - set(run), "case must have qrels queries missing from the run"
    reference = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES).evaluate(run)
    names = measure_names(KS)

    result = evaluate(qrels, run, ks=KS)
    assert set(result.per_query) == set(reference)
    for qid, ref in reference.items():
        assert set(ref) == set(names)
        for name in names:
            assert result.per_query[qid][name] == pytest.approx(ref[name], abs=1e-9), (qid, name)
    assert result.measures["num_q"] == len(reference)
    for name in names:
        mean = sum(ref[name] for ref in reference.values()) / len(reference)
        assert result.measures[name] == pytest.approx(mean, abs=1e-9), name

    complete = evaluate(qrels, run, ks=KS, complete=True)
    assert set(complete.per_query) == set(qrels)
    assert complete.measures["num_q"] == len(qrels)
    for qid in set(qrels) - set(run):
        assert complete.per_query[qid] == dict.fromkeys(names, 0.0)
    for name in names:
        total = sum(ref[name] for ref in reference.values())
        assert complete.measures[name] == pytest.approx(total / len(qrels), abs=1e-9), name


def test_score_ties_break_by_docno_descending() -> None:
    result = evaluate({"q": {"a": 1}}, {"q": {"a": 1.0, "b": 1.0, "c": 1.0}}, ks=(1,))
    assert result.per_query["q"]["recip_rank"] == 1 / 3  # order c, b, a
    # String order, not numeric: "d9" > "d10", so d9 ranks first.
    result = evaluate({"q": {"d10": 1}}, {"q": {"d9": 0.5, "d10": 0.5}}, ks=(1,))
    assert result.per_query["q"]["recip_rank"] == 1 / 2


def test_graded_hand_computed() -> None:
    qrels = {"q": {"a": 2, "b": 1, "c": 0, "x": 3}}
    run = {"q": {"c": 0.9, "a": 0.8, "b": 0.7}}  # relevances by rank: 0, 2, 1
    q = evaluate(qrels, run, ks=(2, 5)).per_query["q"]
    assert q["recip_rank"] == pytest.approx(1 / 2)
    assert q["recall_2"] == pytest.approx(1 / 3)
    assert q["recall_5"] == pytest.approx(2 / 3)
    assert q["success_2"] == 1.0
    assert q["ndcg_cut_2"] == pytest.approx((2 / math.log2(3)) / (3 + 2 / math.log2(3)))
    assert q["ndcg_cut_5"] == pytest.approx(
        (2 / math.log2(3) + 1 / math.log2(4)) / (3 + 2 / math.log2(3) + 1 / math.log2(4))
    )


def test_first_relevant_beyond_cutoff() -> None:
    qrels = {"q": {"r1": 1, "r2": 1, "r3": 1}}
    ranked = {"q": ["n1", "r1", "n2", "n3", "n4", "r2"]}
    q = evaluate_ranked(qrels, ranked, ks=(1, 5, 10)).per_query["q"]
    assert q["recip_rank"] == 1 / 2
    assert (q["success_1"], q["success_5"]) == (0.0, 1.0)
    assert (q["recall_1"], q["recall_5"], q["recall_10"]) == (0.0, pytest.approx(1 / 3), pytest.approx(2 / 3))


def test_negative_judgment_is_not_relevant_and_gains_nothing() -> None:
    q = evaluate({"q": {"a": -1, "b": 1}}, {"q": {"a": 2.0, "b": 1.0}}, ks=(5,)).per_query["q"]
    assert q["recip_rank"] == 1 / 2
    assert q["ndcg_cut_5"] == pytest.approx((1 / math.log2(3)) / 1)


def test_query_without_relevant_docs_counts_with_zeros() -> None:
    result = evaluate({"q1": {"a": 1}, "q2": {"b": 0}}, {"q1": {"a": 1.0}, "q2": {"b": 1.0}}, ks=(5,))
    assert result.per_query["q2"] == {"recip_rank": 0.0, "recall_5": 0.0, "ndcg_cut_5": 0.0, "success_5": 0.0}
    assert result.measures["num_q"] == 2
    assert result.measures["recip_rank"] == (1 + 0) / 2


def test_run_only_queries_skipped_and_missing_queries_counted_when_complete() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": {"a": 1.0}, "zz": {"a": 1.0}}
    partial = evaluate(qrels, run, ks=(5,))
    assert set(partial.per_query) == {"q1"}
    assert (partial.measures["num_q"], partial.measures["recip_rank"]) == (1, 1.0)
    complete = evaluate(qrels, run, ks=(5,), complete=True)
    assert set(complete.per_query) == {"q1", "q2"}
    assert complete.per_query["q2"]["recall_5"] == 0.0
    assert (complete.measures["num_q"], complete.measures["recip_rank"]) == (2, (1 + 0) / 2)


def test_no_evaluated_query_gives_zero_means() -> None:
    result = evaluate({}, {"q": {"a": 1.0}}, ks=(5,))
    assert result.per_query == {}
    assert result.measures == {"recip_rank": 0.0, "recall_5": 0.0, "ndcg_cut_5": 0.0, "success_5": 0.0, "num_q": 0.0}


def test_evaluate_ranked_keeps_list_order_over_docno() -> None:
    # Equal scores would put "b" first; a ranked list must not be re-ordered.
    assert evaluate_ranked({"q": {"a": 1}}, {"q": ["a", "b"]}, ks=(1,)).per_query["q"]["recip_rank"] == 1.0
    explicit = evaluate({"q": {"a": 1, "c": 2}}, {"q": {"c": 3.0, "b": 2.0, "a": 1.0}}, ks=KS)
    assert evaluate_ranked({"q": {"a": 1, "c": 2}}, {"q": ["c", "b", "a"]}, ks=KS) == explicit


def test_evaluate_ranked_rejects_duplicates() -> None:
    with pytest.raises(ValueError, match=r"query 'q', rank 3: duplicate document 'a'"):
        evaluate_ranked({"q": {"a": 1}}, {"q": ["a", "b", "a"]})


def test_doc_ranking_keeps_best_chunk_rank() -> None:
    assert doc_ranking(["d2", "d1", "d2", "d3", "d1"]) == ["d2", "d1", "d3"]
    assert doc_ranking([]) == []


def test_invalid_inputs() -> None:
    with pytest.raises(ValueError, match="duplicate cutoff"):
        evaluate({}, {}, ks=(5, 5))
    with pytest.raises(ValueError, match="not a positive integer"):
        evaluate({}, {}, ks=(0,))
    with pytest.raises(ValueError, match=r"query 'q', document 'a': score is NaN"):
        evaluate({"q": {"a": 1}}, {"q": {"a": float("nan")}})


def test_default_measure_names_and_version() -> None:
    assert measure_names()[:3] == ["recip_rank", "recall_5", "recall_10"]
    assert len(measure_names()) == 1 + 3 * 4
    assert METRIC_DEFINITIONS_VERSION == "trec_eval-9.0.8-compatible/1"
