"""`metrics`: the lab's trec_eval wrapper against pytrec_eval called directly, on seeded synthetic queries."""

from __future__ import annotations

import random
from pathlib import Path

from rag_ttc_assets.bench.harness import Target, alternate, item, timed
from rag_ttc_assets.bench.labs import LabSpec
from rag_ttc_assets.bench.bench_registry import measurement
from rag_ttc_assets.core.metrics import DEFAULT_MEASURES, MetricsResult

METRIC_QUERIES, METRIC_DOCS, METRIC_SEED = 10_000, 100, 20_251_129
# Each timed side evaluates the case this many times (about 1.5 s a side here): a half-second side swung the ratio
# by 0.2 with the machine's load; both sides do the same work, so the ratio is the wrapper's cost only.
METRIC_PASSES = 3


def synthetic_metrics_case(n_queries: int = METRIC_QUERIES, n_docs: int = METRIC_DOCS, seed: int = METRIC_SEED):
    """Seeded qrels (graded 0-3, some judged documents not retrieved, every query with a relevant document,
    so the lab's undefined-query rule and trec_eval evaluate the same queries) and a run of `n_docs` per query
    (coarse scores on a third of the queries, so the docno tie-break matters)."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(n_queries):
        qid = f"q{q:05d}"
        pool = [f"d{n}" for n in rng.sample(range(5000), n_docs + 20)]
        coarse = rng.random() < 1 / 3
        run[qid] = {d: (rng.randint(0, 9) / 9 if coarse else rng.random()) for d in pool[:n_docs]}
        judged = rng.sample(pool, rng.randint(5, 30))
        qrels[qid] = {d: rng.choice((0, 0, 1, 1, 2, 3)) for d in judged}
        qrels[qid][judged[0]] = rng.choice((1, 2, 3))
    return qrels, run


@measurement("metrics")
def bench_metrics(spec: LabSpec, base: Path, repeat: int) -> dict:
    import pytrec_eval

    from rag_ttc_assets.adapters.trec_eval import evaluate  # late: pytrec_eval loads only when this runs

    qrels, run = synthetic_metrics_case()
    ours: MetricsResult | None = None  # the product's result (adapters.trec_eval), from the last pass
    theirs: dict[str, float] = {}  # pytrec_eval's means, from the last pass

    def product():
        nonlocal ours
        for _ in range(METRIC_PASSES):
            ours = evaluate(qrels, run)

    def reference():
        nonlocal theirs
        for _ in range(METRIC_PASSES):
            # pytrec_eval called directly, its means taken as its own docs show (compute_aggregated_measure).
            per_query = pytrec_eval.RelevanceEvaluator(qrels, set(DEFAULT_MEASURES)).evaluate(run)
            names = next(iter(per_query.values()))
            theirs = {m: pytrec_eval.compute_aggregated_measure(m, [v[m] for v in per_query.values()])
                                for m in names}

    product(), reference()  # warm-up: the first evaluator of a process pays pytrec_eval's set-up
    prod, ref = alternate("metrics", timed(product), timed(reference), repeat)
    assert ours is not None  # product() ran: the warm-up
    measures = ours.measures
    if set(measures) != set(theirs):
        raise RuntimeError(f"metrics: the product reports {sorted(measures)}, pytrec_eval {sorted(theirs)}")
    diff = max(abs(theirs[m] - measures[m]) for m in theirs)
    return item("metrics", prod, ref, "cost", Target("<=", 1.1),
                f"adapters.trec_eval.evaluate ({METRIC_QUERIES} queries x {METRIC_DOCS} docs, graded qrels; "
                f"{METRIC_PASSES} passes)",
                "pytrec_eval.RelevanceEvaluator + compute_aggregated_measure (same data, same measures, passes)",
                queries=METRIC_QUERIES, passes=METRIC_PASSES, evaluated=ours.evaluated,
                max_mean_abs_diff=diff,
                detail=f"{ours.evaluated} queries x {METRIC_PASSES} passes; max |mean diff| vs pytrec_eval "
                       f"{diff:.1e}")
