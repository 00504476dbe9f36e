"""trec_eval-compatible retrieval measures: recip_rank, recall_k, ndcg_cut_k, success_k.

Definitions follow trec_eval 9.0.8 (usnistgov/trec_eval: form_res_rels.c, m_recip_rank.c,
m_recall.c, m_ndcg_cut.c, m_success.c, trec_eval.c) at the default relevance level 1, and are
checked against pytrec_eval (pytrec-eval-terrier) in the tests:

- ranking: score descending, equal scores broken by docno DESCENDING (form_res_rels.c
  comp_sim_docno returns ``strcmp(p2->docno, p1->docno)``); a run file's rank column is never used.
- relevant: judged relevance >= 1.  R = number of relevant judged documents of the query.
- recip_rank = 1 / rank of the first relevant document, 0 if none is retrieved.
- recall_k = |relevant in top k| / R, 0 when R = 0.
- success_k = 1 if a relevant document is in the top k, else 0.
- ndcg_cut_k = DCG_k / IDCG_k, DCG_k = sum_{i=1..k} gain_i / log2(i + 1), gain = judged relevance
  (linear; unjudged and negative judgments gain 0), IDCG_k = DCG_k of all judged documents sorted
  by relevance descending; 0 when IDCG_k = 0.

Query set: a query is evaluated when it is in both qrels and run (an empty run entry counts: it
retrieved nothing); run-only queries are skipped.  A qrels query without any relevant document is
still evaluated, every measure 0, and counts toward num_q, as trec_eval and pytrec_eval do.
complete=True is ``trec_eval -c``: qrels queries missing from the run score 0 on every measure and
the means divide by the number of qrels queries.  With no evaluated query every mean is 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

METRIC_DEFINITIONS_VERSION = "trec_eval-9.0.8-compatible/1"
DEFAULT_KS: tuple[int, ...] = (5, 10, 20, 100)


class MetricsResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    measures: dict[str, float]
    per_query: dict[str, dict[str, float]]


def measure_names(ks: Sequence[int] = DEFAULT_KS) -> list[str]:
    """Per-query measure keys, spelled as pytrec_eval spells them ('recall_5', 'ndcg_cut_10')."""
    return ["recip_rank"] + [f"{m}_{k}" for m in ("recall", "ndcg_cut", "success") for k in ks]


def _check_ks(ks: Sequence[int]) -> tuple[int, ...]:
    ks = tuple(ks)
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"ks: cutoff {k!r} is not a positive integer")
    if len(set(ks)) != len(ks):
        raise ValueError(f"ks: duplicate cutoff in {ks!r}")
    return ks


def _rank(qid: str, scores: Mapping[str, float]) -> list[str]:
    for doc_id, score in scores.items():
        if math.isnan(score):
            raise ValueError(f"run: query {qid!r}, document {doc_id!r}: score is NaN")
    # reverse=True on (score, docno) is trec_eval's order: score desc, then docno desc.
    return [doc_id for doc_id, _ in sorted(scores.items(), key=lambda x: (x[1], x[0]), reverse=True)]


def _dcg(gains: Sequence[int]) -> float:
    return sum(max(g, 0) / math.log2(i + 1) for i, g in enumerate(gains, start=1))


def _query_measures(judged: Mapping[str, int], ranking: list[str], ks: tuple[int, ...]) -> dict[str, float]:
    rels = [judged.get(doc_id, 0) for doc_id in ranking]
    num_rel = sum(1 for r in judged.values() if r >= 1)
    first = next((i for i, r in enumerate(rels, start=1) if r >= 1), None)
    ideal = sorted((max(r, 0) for r in judged.values()), reverse=True)
    out = {"recip_rank": 1.0 / first if first else 0.0}
    for k in ks:
        hits = sum(1 for r in rels[:k] if r >= 1)
        out[f"recall_{k}"] = hits / num_rel if num_rel else 0.0
    for k in ks:
        idcg = _dcg(ideal[:k])
        out[f"ndcg_cut_{k}"] = _dcg(rels[:k]) / idcg if idcg > 0 else 0.0
    for k in ks:
        out[f"success_{k}"] = 1.0 if any(r >= 1 for r in rels[:k]) else 0.0
    return out


def evaluate(
    qrels: dict[str, dict[str, int]],
    run: dict[str, dict[str, float]],
    ks: Sequence[int] = DEFAULT_KS,
    complete: bool = False,
) -> MetricsResult:
    """Per-query measures and their means (plus num_q) over the evaluated query set."""
    ks = _check_ks(ks)
    per_query: dict[str, dict[str, float]] = {}
    for qid in sorted(qrels):
        if qid in run:
            per_query[qid] = _query_measures(qrels[qid], _rank(qid, run[qid]), ks)
        elif complete:
            per_query[qid] = _query_measures(qrels[qid], [], ks)
    n = len(per_query)
    measures = {
        name: (sum(q[name] for q in per_query.values()) / n if n else 0.0) for name in measure_names(ks)
    }
    measures["num_q"] = float(n)
    return MetricsResult(measures=measures, per_query=per_query)


def evaluate_ranked(
    qrels: dict[str, dict[str, int]],
    ranked: dict[str, list[str]],
    ks: Sequence[int] = DEFAULT_KS,
    complete: bool = False,
) -> MetricsResult:
    """evaluate() for ranked doc lists (best first, no duplicates)."""
    run: dict[str, dict[str, float]] = {}
    for qid, docs in ranked.items():
        seen: set[str] = set()
        for rank, doc_id in enumerate(docs, start=1):
            if doc_id in seen:
                raise ValueError(f"ranked: query {qid!r}, rank {rank}: duplicate document {doc_id!r}")
            seen.add(doc_id)
        # Strictly decreasing scores leave trec_eval's docno tie-break nothing to decide,
        # so the caller's list order is the evaluated order.
        run[qid] = {doc_id: float(len(docs) - i) for i, doc_id in enumerate(docs)}
    return evaluate(qrels, run, ks=ks, complete=complete)


def doc_ranking(ranked_chunk_doc_ids: list[str]) -> list[str]:
    """Document ranking from the doc IDs of ranked chunks: a document ranks at its best chunk."""
    return list(dict.fromkeys(ranked_chunk_doc_ids))
