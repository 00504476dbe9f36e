"""core/metrics.py: trec_eval measure names, the undefined-query rule, trec_eval's means, ranked lists as runs.
The measures themselves are trec_eval's (rag_ttc_assets_tests/adapters/test_trec_eval.py)."""

from __future__ import annotations

import math

import pytest

from rag_ttc_assets.core.metrics import (
    DEFAULT_MEASURES,
    MeasureError,
    QuerySplit,
    doc_ranking,
    parse_measures,
    ranked_run,
    split_queries,
    summarize,
)

SUPPORTED = {"map", "P", "recall", "ndcg_cut", "recip_rank", "iprec_at_recall", "Rprec_mult", "num_q", "success"}
NICKNAMES = {"official": ("map", "P", "num_q")}


def test_parse_measures_takes_trec_eval_spellings() -> None:
    assert parse_measures(["map", "P.5,10", "ndcg_cut.10"], SUPPORTED, NICKNAMES) == ("P.10,5", "map", "ndcg_cut.10")
    # Repeated -m of one measure unite their cutoffs; leading zeros are trec_eval's atol's business, not a new name.
    assert parse_measures(["P.5", "P.10", "P.05"], SUPPORTED, NICKNAMES) == ("P.10,5",)
    # trec_eval's own fraction spelling (its Makefile: -miprec_at_recall..10,.20) becomes one pytrec_eval reads.
    assert parse_measures(["iprec_at_recall..10,.5", "Rprec_mult.2."], SUPPORTED, NICKNAMES) == (
        "Rprec_mult.2.0", "iprec_at_recall.0.10,0.5")
    assert parse_measures(["official"], SUPPORTED, NICKNAMES) == ("P", "map", "num_q")
    # A bare name alongside cutoffs: the cutoffs.
    assert parse_measures(["official", "P.7"], SUPPORTED, NICKNAMES) == ("P.7", "map", "num_q")
    assert DEFAULT_MEASURES == ("num_q", "recip_rank", "recall.5,10,20,100", "ndcg_cut.5,10,20,100",
                                "success.5,10,20,100")


@pytest.mark.parametrize(("spec", "message"), [
    ("ndcg@10", r"^unknown measure 'ndcg@10'; supported: P, Rprec_mult, .*, success; sets: official$"),
    ("P_5", r"^unknown measure 'P_5'; supported: "),  # trec_eval's printed name, not its -m spelling
    ("bpref", r"^unknown measure 'bpref'"),
    ("P.0", r"^measure 'P.0': cutoffs must be positive integers, as in 'P.5,10'$"),
    ("P.5,", r"^measure 'P.5,': cutoffs must be positive integers"),
    ("recall.2.5", r"^measure 'recall.2.5': cutoffs must be positive integers"),
    ("iprec_at_recall.x", r"^measure 'iprec_at_recall.x': parameters must be decimal numbers"),
    ("iprec_at_recall..", r"^measure 'iprec_at_recall..': parameters must be decimal numbers"),
    ("map.5", r"^measure 'map.5': map takes no parameters here \(parameters apply to P, Rprec_mult, "),
])
def test_parse_measures_errors_name_the_measure(spec: str, message: str) -> None:
    with pytest.raises(MeasureError, match=message):
        parse_measures(["map", spec], SUPPORTED, NICKNAMES)


def test_parse_measures_needs_one() -> None:
    with pytest.raises(MeasureError, match="no measure given"):
        parse_measures([], SUPPORTED, NICKNAMES)


def test_split_queries_undefined_without_a_relevant_judgment_or_absent_from_qrels() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 0, "c": -1}, "q3": {"d": 2}, "q4": {}}
    split = split_queries(qrels, ["zz", "q1", "q2"])
    assert split == QuerySplit(evaluated=["q1"], undefined=["q2", "q4", "zz"])
    # -c: every defined qrels query, in the run or not; the undefined stay undefined.
    assert split_queries(qrels, ["zz", "q1", "q2"], complete=True) == QuerySplit(evaluated=["q1", "q3"],
                                                                                 undefined=["q2", "q4", "zz"])


def test_summarize_as_trec_eval_all_row() -> None:
    per_query = {"q1": {"num_q": 1.0, "map": 0.5, "gm_map": math.log(0.5), "num_ret": 3.0},
                 "q2": {"num_q": 1.0, "map": 0.0, "gm_map": math.log(1e-5), "num_ret": 0.0}}
    r = summarize(per_query, ["num_q", "map", "gm_map", "num_ret"], QuerySplit(evaluated=["q1", "q2"],
                                                                                 undefined=["u"]))
    assert r.measures == {"num_q": 2.0, "map": 0.25, "gm_map": pytest.approx(math.sqrt(0.5e-5)), "num_ret": 3.0}
    assert r.per_query == {"q1": {"map": 0.5, "num_ret": 3.0}, "q2": {"map": 0.0, "num_ret": 0.0}}
    assert (r.evaluated, r.undefined_query_ids) == (2, ["u"])
    empty = summarize({}, ["num_q", "map"], QuerySplit(evaluated=[], undefined=["u"]))
    assert empty.measures == {"num_q": 0.0, "map": 0.0} and empty.per_query == {} and empty.evaluated == 0


def test_ranked_run_has_strictly_decreasing_scores() -> None:
    assert ranked_run({"q": ["c", "a", "b"], "e": []}) == {"q": {"c": 3.0, "a": 2.0, "b": 1.0}, "e": {}}


def test_ranked_run_rejects_duplicates() -> None:
    with pytest.raises(ValueError, match=r"^ranked: query 'q', rank 3: duplicate document 'a'$"):
        ranked_run({"q": ["a", "b", "a"]})


def test_doc_ranking_keeps_each_document_at_its_first_rank() -> None:
    assert doc_ranking(["d2", "d1", "d2", "d3", "d1"]) == ["d2", "d1", "d3"]
    assert doc_ranking([]) == []
