"""trec_eval's measures through pytrec_eval (pytrec-eval-terrier, which embeds trec_eval 9.0.8).

The one place the lab computes trec_eval measures: `rag-ttc metrics`, the retrieval_summary asset and
`rag-ttc bench --only metrics` all call `evaluate`.  Names, the undefined-query rule and the means are
core/metrics.py's (pure); this module only runs `pytrec_eval.RelevanceEvaluator`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from types import ModuleType
from typing import Any

from rag_ttc_assets.core import metrics

# trec_eval prints text for these two (the run tag, a relevance string); pytrec_eval returns 0.0 for them.
TEXT_MEASURES = frozenset({"runid", "relstring"})


def _pytrec_eval() -> ModuleType:
    import pytrec_eval  # late: it loads numpy, which importing the code location does not need

    return pytrec_eval


@cache
def _tables() -> dict[str, Any]:
    """SUPPORTED (trec_eval's numeric measures), NICKNAMES (its measure sets that need only ordinary qrels:
    all_prefs and qrels_jg read other file formats) and DEFINITIONS (what computed them), read from pytrec_eval
    when first asked for."""
    pe = _pytrec_eval()
    supported = tuple(sorted(set(pe.supported_measures) - TEXT_MEASURES))
    nicknames = {nick: tuple(sorted(set(names) - TEXT_MEASURES)) for nick, names in pe.supported_nicknames.items()
                 if set(names) - TEXT_MEASURES <= set(supported)}
    return {"SUPPORTED": supported, "NICKNAMES": nicknames,
            "DEFINITIONS": f"trec_eval-9.0.8/pytrec_eval-terrier-{pe.__version__}"}


def __getattr__(name: str) -> Any:
    """`SUPPORTED`, `NICKNAMES` and `DEFINITIONS` as module attributes, computed on first use (PEP 562)."""
    if name in ("SUPPORTED", "NICKNAMES", "DEFINITIONS"):
        return _tables()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def per_query(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
              specs: Iterable[str]) -> dict[str, dict[str, float]]:
    """pytrec_eval's values for every query in both `qrels` and `run` (specs as `parse_measures` returns)."""
    if not qrels or not run:
        return {}
    out = _pytrec_eval().RelevanceEvaluator(qrels, set(specs), relevance_level=metrics.RELEVANCE_LEVEL).evaluate(run)
    # pytrec_eval 0.5.11 divides 0 by 0 for a query that retrieved nothing (iprec_at_recall_0.00, 11pt_avg);
    # trec_eval -c counts such a query 0 (test/out.test.aqc of trec_eval 9.0.8, query 302).
    for qid in [q for q, docs in run.items() if not docs and q in out]:
        values = out[qid]
        for name, value in values.items():
            if math.isnan(value):
                values[name] = 0.0
    return out


def measure_names(specs: Sequence[str]) -> list[str]:
    """The names pytrec_eval reports for `specs` (``P.5,10`` -> P_5, P_10), in its order."""
    return list(per_query({"q": {"d": 1}}, {"q": {"d": 1.0}}, specs)["q"])


def evaluate(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
             measures: Iterable[str] = metrics.DEFAULT_MEASURES, complete: bool = False) -> metrics.MetricsResult:
    """trec_eval's measures of `run` (qid -> docno -> score) against `qrels`, over the evaluated queries."""
    tables = _tables()
    specs = metrics.parse_measures(measures, tables["SUPPORTED"], tables["NICKNAMES"])
    split = metrics.split_queries(qrels, run, complete)
    # The inputs themselves when they hold exactly the evaluated queries in that order (the usual case), else copies.
    judged = qrels if list(qrels) == split.evaluated else {q: qrels[q] for q in split.evaluated}
    scored = run if list(run) == split.evaluated else {q: run.get(q, {}) for q in split.evaluated}
    values = per_query(judged, scored, specs)
    names = list(next(iter(values.values()))) if values else measure_names(specs)
    return metrics.summarize(values, names, split)


def evaluate_ranked(qrels: Mapping[str, Mapping[str, int]], ranked: Mapping[str, Sequence[str]],
                    measures: Iterable[str] = metrics.DEFAULT_MEASURES,
                    complete: bool = False) -> metrics.MetricsResult:
    """`evaluate` for ranked doc lists (best first, no duplicates): trec_eval sees exactly their order."""
    return evaluate(qrels, metrics.ranked_run(ranked), measures, complete)
