"""Pure helpers around trec_eval's measures: measure names, undefined queries, means, ranked lists as runs.

The measures themselves are trec_eval's own, computed by ``adapters/trec_eval.py`` (pytrec_eval-terrier,
which embeds trec_eval 9.0.8); nothing here computes one. What trec_eval has no measure for stays in core
elsewhere: admission coverage (core/admission.py) and hit rates over all cases and at each boundary
(diagnosis/flow.py, core/supply.py).

Names.  A measure is asked for as trec_eval's ``-m`` spells it, ``name`` or ``name.k1,k2`` (``P.5,10``,
``ndcg_cut.10``, ``iprec_at_recall.0.25``), or as one of trec_eval's sets (``official``, ``all_trec``); a
bare name means trec_eval's default cutoffs unless the same measure is also given with cutoffs (then those
cutoffs only, as pytrec_eval combines them).  Values are reported as trec_eval prints them: ``recall_10`` is
our flattening of ``recall.10`` (``P_5``, ``ndcg_cut_10``, ``success_10``), and those flattened names are the
summary keys everywhere (JSON, metadata, run tables).

Query set (relevance level 1, trec_eval's default ``-l 1``):

- undefined: a qrels query without any judgment >= 1, and a run query absent from the qrels.  They are
  listed (``undefined_query_ids``), never scored: trec_eval would average the first in as 0 and skip the
  second silently; the lab never turns "no judged target" into a 0.
- evaluated: every other qrels query that is in the run (an empty run entry counts: it retrieved nothing).
  ``complete`` is ``trec_eval -c``: every defined qrels query is evaluated, one missing from the run as an
  empty ranking (every measure 0; num_rel still counts its relevant documents, as trec_eval's).
- means, as trec_eval's ``all`` row: ``num_*`` summed, ``gm_*`` the geometric mean (pytrec_eval returns the
  per-query log), every other measure the arithmetic mean over the evaluated queries; 0 when none is
  evaluated.  Per query, ``num_q`` and ``gm_*`` are left out, as trec_eval ``-q`` prints them only in ``all``.

Ties: trec_eval ranks by score, equal scores by docno descending, never by a run's rank column.  A ranked
list (our retrieval output) becomes a run with strictly decreasing scores (`ranked_run`), so trec_eval sees
exactly our order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import partial
from operator import itemgetter, le

from pydantic import BaseModel, ConfigDict

RELEVANCE_LEVEL = 1
DEFAULT_KS: tuple[int, ...] = (5, 10, 20, 100)
_KS = ",".join(map(str, DEFAULT_KS))
# The lab's default set (`rag-ttc metrics` without -m), as it was before trec_eval computed it.
DEFAULT_MEASURES: tuple[str, ...] = ("num_q", "recip_rank", f"recall.{_KS}", f"ndcg_cut.{_KS}", f"success.{_KS}")
# trec_eval measures whose parameters are integer cutoffs, and those whose parameters are fractions.
CUTOFF_MEASURES = frozenset({"P", "recall", "ndcg_cut", "success", "map_cut", "relative_P"})
FRACTION_MEASURES = frozenset({"iprec_at_recall", "Rprec_mult"})
_SPEC = re.compile(r"([A-Za-z0-9_]+?)(?:\.(.*))?")
_INT = re.compile(r"[0-9]+")
_FRACTION = re.compile(r"[0-9]*\.?[0-9]*")


class MeasureError(ValueError):
    """A measure name trec_eval (through pytrec_eval) does not compute, or a malformed cutoff list."""


class MetricsResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    measures: dict[str, float]
    per_query: dict[str, dict[str, float]]
    evaluated: int
    undefined_query_ids: list[str]


class QuerySplit(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    evaluated: list[str]
    undefined: list[str]


def _fraction(value: str) -> str:
    # trec_eval reads ".25" with atof; pytrec_eval's name check wants a digit on both sides of the point.
    return ("0" if value.startswith(".") else "") + value + ("0" if value.endswith(".") else "")


def parse_measures(specs: Iterable[str], supported: Collection[str],
                   nicknames: Mapping[str, Collection[str]]) -> tuple[str, ...]:
    """trec_eval ``-m`` arguments as the measure specs pytrec_eval takes (``P.10,5``), sorted.

    `supported` and `nicknames` are what the engine computes (adapters/trec_eval.py passes pytrec_eval's)."""
    params: dict[str, set[str]] = {}
    for spec in specs:
        if spec in nicknames:
            for name in nicknames[spec]:
                params.setdefault(name, set())
            continue
        m = _SPEC.fullmatch(spec)
        name, args = (m.group(1), m.group(2)) if m else (spec, None)
        if name not in supported:
            raise MeasureError(f"unknown measure {spec!r}; supported: {', '.join(sorted(supported))}; "
                               f"sets: {', '.join(sorted(nicknames))}")
        if args is None:
            params.setdefault(name, set())
            continue
        values = args.split(",")
        if name in CUTOFF_MEASURES:
            if not all(_INT.fullmatch(v) and int(v) >= 1 for v in values):
                raise MeasureError(f"measure {spec!r}: cutoffs must be positive integers, as in '{name}.5,10'")
            values = [str(int(v)) for v in values]
        elif name in FRACTION_MEASURES:
            if not all(_FRACTION.fullmatch(v) and v.strip(".") for v in values):
                raise MeasureError(f"measure {spec!r}: parameters must be decimal numbers, as in '{name}.0.2,0.5'")
            values = [_fraction(v) for v in values]
        else:
            takes = ", ".join(sorted(CUTOFF_MEASURES | FRACTION_MEASURES))
            raise MeasureError(f"measure {spec!r}: {name} takes no parameters here (parameters apply to {takes})")
        params.setdefault(name, set()).update(values)
    if not params:
        raise MeasureError("no measure given")
    return tuple(sorted(f"{n}.{','.join(sorted(p))}" if p else n for n, p in params.items()))


def split_queries(qrels: Mapping[str, Mapping[str, int]], run_query_ids: Iterable[str],
                  complete: bool = False) -> QuerySplit:
    """The evaluated and the undefined queries (see the module docstring), each in qrels then run order."""
    run_ids = list(run_query_ids)
    in_run = set(run_ids)
    # any() over map() runs in C and stops at the first relevant document: the generator it replaces cost a tenth
    # of trec_eval's own time on 10,000 queries (rag-ttc bench --only metrics).
    relevant = partial(le, RELEVANCE_LEVEL)
    defined = [q for q, judged in qrels.items() if any(map(relevant, judged.values()))]
    defined_set = set(defined)
    undefined = [q for q in qrels if q not in defined_set] + [q for q in run_ids if q not in qrels]
    evaluated = defined if complete else [q for q in defined if q in in_run]
    return QuerySplit(evaluated=evaluated, undefined=undefined)


def summarize(per_query: dict[str, dict[str, float]], names: Sequence[str], split: QuerySplit) -> MetricsResult:
    """trec_eval's ``all`` row over `per_query` (mutated: num_q and gm_* leave the per-query values)."""
    n = len(per_query)
    rows = list(per_query.values())
    measures: dict[str, float] = {}
    for name in names:
        # map(itemgetter) sums in the same order as a generator, in C: the same float, a fraction of the time.
        total = sum(map(itemgetter(name), rows)) if n else 0.0
        if n == 0:
            measures[name] = 0.0
        elif name.startswith("num_"):
            measures[name] = float(total)
        elif name.startswith("gm_"):
            measures[name] = math.exp(total / n)
        else:
            measures[name] = total / n
    dropped = [name for name in names if name == "num_q" or name.startswith("gm_")]
    if dropped:
        for values in per_query.values():
            for name in dropped:
                del values[name]
    # Built by this module from the engine's floats: validating 10,000 x N values again would be pure cost.
    return MetricsResult.model_construct(measures=measures, per_query=per_query, evaluated=n,
                                         undefined_query_ids=list(split.undefined))


def ranked_run(ranked: Mapping[str, Sequence[str]]) -> dict[str, dict[str, float]]:
    """Ranked doc lists (best first, no duplicates) as a run trec_eval orders exactly so: score = len - rank + 1."""
    run: dict[str, dict[str, float]] = {}
    for qid, docs in ranked.items():
        scores = {doc_id: float(len(docs) - i) for i, doc_id in enumerate(docs)}
        if len(scores) != len(docs):
            seen: set[str] = set()
            for rank, doc_id in enumerate(docs, start=1):
                if doc_id in seen:
                    raise ValueError(f"ranked: query {qid!r}, rank {rank}: duplicate document {doc_id!r}")
                seen.add(doc_id)
        # Strictly decreasing scores leave trec_eval's docno tie-break nothing to decide.
        run[qid] = scores
    return run


def doc_ranking(ranked_chunk_doc_ids: list[str]) -> list[str]:
    """Document ranking from the doc IDs of ranked chunks: a document counts once, at its best chunk's rank."""
    return list(dict.fromkeys(ranked_chunk_doc_ids))
