"""Judges measured against people: each judge's agreement with the human labels (read and checked by
labelling.human_labels) beside the annotators' agreement with each other (the ceiling).

  per-request  Cohen's kappa, accuracy and the confusion matrix of the judge's `addressed` against each human label
               (sklearn.metrics), with the disagreeing requests listed; the same for `verdict` where labels give one.
  pairwise     Pearson and Spearman (scipy.stats) between the judge's score difference, score(b) - score(a), and the
               human label, with percentile bootstrap intervals (scipy.stats.bootstrap, paired, fixed seed; the
               percentiles over the resamples whose correlation is defined, the others counted).
  ceiling      the same statistics between every two annotators, over the items both labelled (a pair read with
               the a and b of whichever of the two labels comes first in the file, never a sort of the arms' names).
  majority     per-request items with two or more labels: each judge against the items' majority label (ties
               skipped, counted); and, like for like, each human label against the majority of the item's other
               labels (the ceiling: one annotator against the rest) beside the judge against that same majority
               (the judge standing in for that annotator), over the same (label, rest) instances.
  completeness per-request labels lifted to the lab's completeness (the share of an answer's labelled requests found
               addressed), per answer row and per arm (the mean over its rows): Pearson and Spearman of each judge's
               completeness against the majority's; the ceiling, one annotator's completeness against the majority
               of the others' over the same items, beside each judge's against that same majority.
  reference    beside the judges, a scorer that is no judge: the plain content-word recall of the question's gold
               answer by the whole answer (REFERENCE, `gold_answer_recall`), in the completeness and pairwise
               `completeness` tables (kind `reference`). A request judge that does not beat it adds nothing a bag of
               words does not give.

Per-claim support labels are measured by judging.claim_agreement, with the statistics of this module.

Pure: the caller hands in the labels and each judge's scores.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from typing import Any, SupportsFloat, TypeVar

from rag_ttc_assets.labelling.human_labels import VERDICTS, Item, Labelled, PairLabel, RequestLabel, Row
from rag_ttc_assets.judging.panel import AGGREGATIONS
from rag_ttc_assets.core.text import content_words, stem, term_recall

T = TypeVar("T")
K = TypeVar("K")
# A JSON object: a judge's judgment as its stage parsed it ({"addressed", "verdict", "reason", "coverage"}), a row of
# the agreement report as it is written; its values are whatever JSON holds.
JsonObject = dict[str, Any]


BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95


def _quiet(fn: Callable[..., T], *args: object, **kwargs: object) -> T:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _finite(x: SupportsFloat) -> float | None:
    v = float(x)
    return v if math.isfinite(v) else None


def categorical_agreement(human: Sequence[object], judge: Sequence[object], labels: Sequence[object]) -> JsonObject:
    """Cohen's kappa, accuracy and the confusion matrix (rows: human, columns: judge) of two raters' labels."""
    from sklearn.metrics import (  # type: ignore[import-untyped]  # scikit-learn ships no type stubs
        accuracy_score, cohen_kappa_score, confusion_matrix)

    n = len(human)
    if not n:
        return {"n": 0, "kappa": None, "accuracy": None, "confusion": None}
    kappa = _quiet(cohen_kappa_score, human, judge, labels=list(labels))
    matrix = confusion_matrix(human, judge, labels=list(labels))
    return {"n": n, "kappa": _finite(kappa), "accuracy": float(accuracy_score(human, judge)),
            "confusion": {str(h): {str(j): int(matrix[i][k]) for k, j in enumerate(labels)}
                          for i, h in enumerate(labels)}}


def correlation(x: Sequence[float], y: Sequence[float], seed: int = 0) -> JsonObject:
    """Pearson and Spearman of paired values with percentile bootstrap intervals; None where undefined (fewer than
    three pairs, or a constant side)."""
    import numpy as np
    from scipy import stats  # type: ignore[import-untyped]  # scipy ships no type stubs (scipy-stubs: no dependency)

    n = len(x)
    out: JsonObject = {"n": n}
    constant = n < 3 or len(set(x)) < 2 or len(set(y)) < 2
    for name, fn in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr)):
        if constant:
            out[name] = {"r": None, "ci_low": None, "ci_high": None,
                         "why": "fewer than 3 pairs" if n < 3 else "one side is constant"}
            continue
        r = _finite(fn(x, y).statistic)

        def stat(a: Sequence[float], b: Sequence[float], fn: Callable[..., Any] = fn) -> Any:
            return fn(a, b).statistic

        boot = _quiet(stats.bootstrap, (list(x), list(y)), stat, paired=True, vectorized=False,
                      n_resamples=BOOTSTRAP_RESAMPLES, confidence_level=CONFIDENCE, method="percentile",
                      rng=seed)
        # A resample with a constant side has no correlation (NaN): the interval is over the others, and says so.
        dist = np.asarray(boot.bootstrap_distribution, dtype=float)
        ok = dist[np.isfinite(dist)]
        tail = (1 - CONFIDENCE) / 2 * 100
        lo, hi = (np.percentile(ok, [tail, 100 - tail]) if ok.size else (math.nan, math.nan))
        out[name] = {"r": r, "ci_low": _finite(lo), "ci_high": _finite(hi),
                     "degenerate_resamples": int(dist.size - ok.size)}
    return out


def _annotator_pairs(labels: Sequence[Labelled], value: Callable[[Any], T]) -> dict[tuple[str, str], list[tuple[T, T]]]:
    """For every two annotators, the (value by the first, value by the second) of the items both labelled; `value`
    reads a label of `labels` (their own type: ClaimLabel.support, say)."""
    by_annotator: dict[str, dict[Item, T]] = {}
    for lab in labels:
        by_annotator.setdefault(lab.annotator, {})[lab.item] = value(lab)
    out: dict[tuple[str, str], list[tuple[T, T]]] = {}
    for x, y in combinations(sorted(by_annotator), 2):
        shared = sorted(by_annotator[x].keys() & by_annotator[y].keys())
        if shared:  # two annotators who labelled nothing in common measure nothing (counted: _unshared_pairs)
            out[(x, y)] = [(by_annotator[x][i], by_annotator[y][i]) for i in shared]
    return out


def _unshared_pairs(labels: Sequence[Labelled] | Sequence[PairLabel], measured: int) -> int:
    """How many pairs of annotators labelled no item in common (no ceiling row of theirs): one expert per item, as
    sets with many annotators have it, gives no ceiling at all."""
    n = len({lab.annotator for lab in labels})
    return n * (n - 1) // 2 - measured


def request_agreement(labels: Sequence[RequestLabel], judges: Mapping[str, Mapping[Item, JsonObject]]) -> JsonObject:
    """Per judge (name -> item -> {"addressed", "verdict", "reason"} of the items it measured), agreement with every
    human per-request label; then the annotators with each other."""
    rows: list[JsonObject] = []
    for name, scored in judges.items():
        human: list[bool] = []
        judge: list[bool] = []
        v_human: list[str] = []
        v_judge: list[str] = []
        disagree: list[JsonObject] = []
        unmeasured = 0
        for lab in labels:
            s = scored.get(lab.item)
            if s is None or s.get("addressed") is None:
                unmeasured += 1
                continue
            human.append(lab.addressed)
            judge.append(bool(s["addressed"]))
            if lab.verdict is not None and s.get("verdict") is not None:
                v_human.append(lab.verdict)
                v_judge.append(s["verdict"])
            if lab.addressed != bool(s["addressed"]):
                disagree.append({"arm": lab.arm, "question": lab.question, "request": lab.request,
                                 "annotator": lab.annotator, "human": lab.addressed, "judge": bool(s["addressed"]),
                                 "judge_reason": s.get("reason"), "line": lab.line})
        rows.append({"rater": name, "kind": "judge", **categorical_agreement(human, judge, (True, False)),
                     "not_measured": unmeasured, "disagreements": disagree,
                     "verdict": categorical_agreement(v_human, v_judge, VERDICTS) if v_human else None})
    pairs = _annotator_pairs(labels, lambda lab: lab.addressed)
    for (x, y), both in pairs.items():
        a, b = [p[0] for p in both], [p[1] for p in both]
        rows.append({"rater": f"{x} vs {y}", "kind": "ceiling", **categorical_agreement(a, b, (True, False)),
                     "not_measured": 0, "disagreements": [], "verdict": None})
    return {"labels": len(labels), "annotators": sorted({lab.annotator for lab in labels}), "rows": rows,
            "annotator_pairs_sharing_no_item": _unshared_pairs(labels, len(pairs)),
            "majority": majority_agreement(labels, judges)}


def _share(values: Sequence[bool]) -> float:
    return sum(1 for v in values if v) / len(values)


REFERENCE = "reference: content-word recall of the gold answer"
# A judge that reports each request's coverage (judging.request_judge: the share of its gold material the answer carries)
# is read twice: by the share of requests it found addressed, and graded, by the mean of their coverage.
GRADED = " (graded)"


# A panel's candidate aggregations (judging.panel.AGGREGATIONS), each recombined from its jurors' kept verdicts, are
# raters named with this prefix (judging.judge_agreement_stage): aggregation_choice reads their rows.
AGGREGATION = "aggregation "
# The measures aggregation_choice compares the candidates on, each from a table of the report.
AGGREGATION_MEASURES = ("kappa", "kappa vs the majority", "pearson per answer", "pearson over pairs")


def aggregation_choice(report: Mapping[str, Any]) -> list[JsonObject]:
    """Per panel (its jurors and prompt), each candidate aggregation's agreement with people on these labels, by
    the measures the report already prints for judges: Cohen's kappa of `addressed` against every human label and
    against the majority label (per-request labels), Pearson of completeness per answer against the majority's, and
    Pearson over pairwise `completeness` labels; the panel's graded reading (the calibrated mean coverage: the same
    whatever the aggregation) beside them where it was measured; per measure the candidate that agrees best, and
    `best`: the candidate best on most measures (ties to the earlier of judging.panel's order), None when no measure
    was defined. The choice is for these labels only: a default is chosen across sets (docs/judges.md)."""
    values: dict[str, dict[str, dict[str, float | None]]] = {}  # panel -> aggregation -> measure -> value

    def put(rater: str, measure: str, value: float | None) -> None:
        if not rater.startswith(AGGREGATION) or rater.endswith(" vs the others"):
            return
        name = rater[len(AGGREGATION):]
        agg, panel = name[len("panel["):].split("]", 1)
        values.setdefault(panel.lstrip(": "), {}).setdefault(agg, {})[measure] = value

    rl = report.get("request_labels") or {}
    for r in rl.get("rows", []):
        put(r["rater"], "kappa", r["kappa"])
    for r in (rl.get("majority") or {}).get("rows", []):
        if r["against"] == "the majority label":
            put(r["rater"], "kappa vs the majority", r["kappa"])
    for r in ((report.get("request_completeness") or {}).get("levels") or {}).get("answer", []):
        if r["against"] == "the majority":
            put(r["rater"], "pearson per answer", r["pearson"]["r"])
    for r in ((report.get("pair_labels") or {}).get("completeness") or {}).get("rows", []):
        put(r["rater"], "pearson over pairs", r["pearson"]["r"])

    def graded(panel: str, measure: str) -> float | None:
        rows = ([r for r in ((report.get("request_completeness") or {}).get("levels") or {}).get("answer", [])
                 if r["against"] == "the majority"] if measure == "pearson per answer" else
                ((report.get("pair_labels") or {}).get("completeness") or {}).get("rows", [])
                if measure == "pearson over pairs" else [])
        suffix = f"]: {panel}{GRADED}"
        got: list[float | None] = [r["pearson"]["r"] for r in rows if r["rater"].startswith("request judge panel[")
               and r["rater"].endswith(suffix)]
        return got[0] if got else None

    out: list[JsonObject] = []
    for panel, by_agg in values.items():
        measures = [m for m in AGGREGATION_MEASURES if any(v.get(m) is not None for v in by_agg.values())]
        order = [a for a in AGGREGATIONS if a in by_agg]
        best = {m: max(order, key=lambda a: _rank(by_agg[a].get(m), a, order)) for m in measures}
        wins = {a: sum(1 for m in measures if best[m] == a) for a in order}
        chosen = max(order, key=lambda a: (wins[a], -order.index(a))) if measures else None
        out.append({"panel": panel, "measures": measures,
                    "rows": [{"aggregation": a, **{m: by_agg[a].get(m) for m in measures}, "best_on": wins[a]}
                             for a in order],
                    "graded": {m: graded(panel, m) for m in measures},
                    "best_by_measure": best, "best": chosen})
    return out


def _rank(value: float | None, aggregation: str, order: list[str]) -> tuple[float, int]:
    """aggregation_choice's order of the candidates on one measure: the higher value, then the earlier candidate."""
    return (value if value is not None else -math.inf, -order.index(aggregation))


def graded_share(judgments: Sequence[JsonObject | None]) -> float | None:
    """The mean coverage of a row's requests (each a judgment dict), None when any of them has none."""
    covered: list[float | None] = [None if j is None else j.get("coverage") for j in judgments]
    got = [c for c in covered if c is not None]
    if not covered or len(got) < len(covered):
        return None
    return sum(got) / len(got)


def gold_answer_recall(gold_answer: str | None, answer: str | None) -> float | None:
    """The share of the gold answer's content-word stems that occur anywhere in the answer (None without a gold
    answer or an answer): the plain reference scorer the judges are read beside."""
    if not gold_answer or answer is None:
        return None
    return term_recall({stem(w) for w in content_words(gold_answer)}, answer)


def completeness_agreement(labels: Sequence[RequestLabel], judges: Mapping[str, Mapping[Item, JsonObject]],
                           seed: int = 0, references: Mapping[str, Mapping[Row, float | None]] | None = None
                           ) -> JsonObject:
    """Completeness (the share of a row's labelled requests addressed) by each judge against the people's, per answer
    row (arm, question) and per arm (the mean over its rows), Pearson and Spearman with bootstrap intervals.

    `judge vs the majority`: over each row's items whose majority label is defined (ties left out of both sides).
    `annotator vs the others`: for every annotator of a row, their completeness against the majority of the others'
    labels, over the row's items they labelled where that majority is defined (items with three or more labels);
    per arm, an annotator's mean over the rows they labelled. Beside it each judge's completeness over the same items
    against the same majority. A row the judge did not measure whole is counted in `not_measured`.

    A judge that reports coverage is read a second time, graded (name + GRADED): the mean coverage of the same
    requests (graded_share).

    `references` (name -> (arm, question) -> score, None where it has none): scorers of a whole answer, not of its
    requests (gold_answer_recall), in the same rows as the judges with kind `reference`."""
    by_row: dict[Row, dict[str, list[tuple[str, bool]]]] = {}
    for lab in labels:
        by_row.setdefault((lab.arm, lab.question), {}).setdefault(lab.request, []).append(
            (lab.annotator, lab.addressed))

    def judge_share(scored: Mapping[Item, JsonObject], row: Row, requests: list[str]) -> float | None:
        got = [scored.get((*row, r)) for r in requests]
        known = [g for g in got if g is not None and g.get("addressed") is not None]
        if len(known) < len(got):
            return None
        return _share([bool(g["addressed"]) for g in known])

    # (row, annotator) -> (requests, the annotator's labels, the others' majority), the leave-one-out points.
    loo: dict[tuple[Row, str], tuple[list[str], list[bool], list[bool]]] = {}
    full: dict[Row, tuple[list[str], list[bool]]] = {}
    for row, items in by_row.items():
        reqs: list[str] = []
        maj: list[bool] = []
        for r, labs in items.items():
            m = majority([v for _, v in labs])
            if m is not None:
                reqs.append(r)
                maj.append(m)
        if reqs:
            full[row] = (reqs, maj)
        for r, labs in items.items():
            if len(labs) < 3:
                continue
            for i, (ann, v) in enumerate(labs):
                m = majority([x for _, x in labs[:i] + labs[i + 1:]])
                if m is not None:
                    point = loo.setdefault((row, ann), ([], [], []))
                    point[0].append(r)
                    point[1].append(v)
                    point[2].append(m)

    def per_arm(points: Mapping[K, tuple[float, float]], key: Callable[[K], object]) -> tuple[list[float], list[float]]:
        groups: dict[object, list[tuple[float, float]]] = {}
        for k, (x, y) in points.items():
            groups.setdefault(key(k), []).append((x, y))
        xs = [sum(p[0] for p in g) / len(g) for g in groups.values()]
        ys = [sum(p[1] for p in g) / len(g) for g in groups.values()]
        return xs, ys

    # Every scorer as (name, kind, score of a row given the requests scored): the judges by their share of those
    # requests addressed, the references by their score of the whole answer.
    scorers: list[tuple[str, str, Callable[[Row, list[str]], float | None]]] = [
        *((name, "judge", lambda row, reqs, scored=scored: judge_share(scored, row, reqs))
          for name, scored in judges.items()),
        *((name + GRADED, "judge", lambda row, reqs, scored=scored: graded_share([scored.get((*row, r)) for r in reqs]))
          for name, scored in judges.items() if any(j.get("coverage") is not None for j in scored.values())),
        *((name, "reference", lambda row, reqs, by_row=by_row_score: by_row.get(row))
          for name, by_row_score in (references or {}).items())]
    levels: dict[str, list[JsonObject]] = {"answer": [], "arm": []}
    for name, kind, score in scorers:
        points: dict[Row, tuple[float, float]] = {}
        unmeasured = 0
        for row, (reqs, maj) in full.items():
            x = score(row, reqs)
            if x is None:
                unmeasured += 1
                continue
            points[row] = (x, _share(maj))
        for level, (xs, ys) in (("answer", ([p[0] for p in points.values()], [p[1] for p in points.values()])),
                                ("arm", per_arm(points, lambda row: row[0]))):
            levels[level].append({"rater": name, "kind": kind, "against": "the majority",
                                  **correlation(xs, ys, seed), "not_measured": unmeasured})
    if loo:
        ceiling = {k: (_share(v), _share(m)) for k, (_, v, m) in loo.items()}
        for level, (xs, ys) in (("answer", ([p[0] for p in ceiling.values()], [p[1] for p in ceiling.values()])),
                                ("arm", per_arm(ceiling, lambda k: (k[0][0], k[1])))):
            levels[level].append({"rater": "an annotator vs the others", "kind": "ceiling",
                                  "against": "the majority of the others", **correlation(xs, ys, seed),
                                  "not_measured": 0})
        for name, kind, score in scorers:
            loo_points: dict[tuple[Row, str], tuple[float, float]] = {}
            unmeasured = 0
            for (row, ann), (reqs, _, maj) in loo.items():
                x = score(row, reqs)
                if x is None:
                    unmeasured += 1
                    continue
                loo_points[(row, ann)] = (x, _share(maj))
            for level, (xs, ys) in (("answer", ([p[0] for p in loo_points.values()],
                                                [p[1] for p in loo_points.values()])),
                                    ("arm", per_arm(loo_points, lambda k: (k[0][0], k[1])))):
                levels[level].append({"rater": f"{name} vs the others", "kind": kind,
                                      "against": "the majority of the others", **correlation(xs, ys, seed),
                                      "not_measured": unmeasured})
    return {"rows": len(by_row), "arms": len({row[0] for row in by_row}), "levels": levels}


def majority(values: Sequence[bool]) -> bool | None:
    """The label more than half of `values` give; None on a tie (or no values)."""
    yes = sum(1 for v in values if v)
    return True if 2 * yes > len(values) else False if 2 * (len(values) - yes) > len(values) else None


def _judge_against(scored: Mapping[Item, JsonObject], majorities: Sequence[tuple[Item, bool]]) -> JsonObject:
    """A judge's `addressed` against the majority label of each (item, majority); an item the judge did not
    measure is counted in `not_measured`, never scored."""
    human: list[bool] = []
    judge: list[bool] = []
    unmeasured = 0
    for item, m in majorities:
        s = scored.get(item)
        if s is None or s.get("addressed") is None:
            unmeasured += 1
            continue
        human.append(m)
        judge.append(bool(s["addressed"]))
    return {**categorical_agreement(human, judge, (True, False)), "not_measured": unmeasured}


def majority_agreement(labels: Sequence[Labelled], judges: Mapping[str, Mapping[Item, JsonObject]]) -> JsonObject:
    """Against the majority of people, on the items two or more annotators labelled.

    `judge vs majority`: each judge's `addressed` against the item's majority label (ties skipped, counted).
    `annotator vs the others`: every human label against the majority of the item's other labels (items with three
    or more labels; a tie among the others skipped, counted): the ceiling, one person against the rest; beside it
    each judge against that same majority of the others, over the same instances (`judge vs the others`), so the
    two rows differ only in who stands in for the left-out annotator."""
    items: dict[Item, list[bool]] = {}
    for lab in labels:
        items.setdefault(lab.item, []).append(lab.addressed)
    multi = {k: v for k, v in items.items() if len(v) >= 2}
    full = {k: majority(v) for k, v in multi.items()}
    ties = sum(1 for m in full.values() if m is None)
    rows: list[JsonObject] = []
    decided = [(item, m) for item, m in full.items() if m is not None]
    for name, scored in judges.items():
        rows.append({"rater": name, "kind": "judge", "against": "the majority label",
                     **_judge_against(scored, decided), "ties_skipped": ties})
    # Leave one out: (item, the left-out label, the others' majority) for every label of an item with 3+ labels.
    loo: list[tuple[Item, bool, bool]] = []
    loo_ties = 0
    for item, values in items.items():
        if len(values) < 3:
            continue
        for i, v in enumerate(values):
            m = majority(values[:i] + values[i + 1:])
            if m is None:
                loo_ties += 1
            else:
                loo.append((item, v, m))
    if loo or loo_ties:
        rows.append({"rater": "an annotator vs the others", "kind": "ceiling",
                     "against": "the majority of the item's other labels",
                     **categorical_agreement([m for _, _, m in loo], [v for _, v, _ in loo], (True, False)),
                     "not_measured": 0, "ties_skipped": loo_ties})
        for name, scored in judges.items():
            rows.append({"rater": f"{name} vs the others", "kind": "judge",
                         "against": "the majority of the item's other labels",
                         **_judge_against(scored, [(item, m) for item, _, m in loo]), "ties_skipped": loo_ties})
    return {"items": len(items), "items_with_two_or_more_labels": len(multi), "rows": rows}


def _pair_ceiling(labels: Sequence[PairLabel], aspect: str) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """For every two annotators, (the first's label, the second's) on each pair both labelled, both read with the a
    and b of whichever of the two labels comes first in the file (PairLabel.toward), in the order of those labels:
    never a sort of the arms' names, so renaming an arm, or writing every label of the file with its a and b
    swapped, leaves every figure as it was."""
    by_annotator: dict[str, dict[tuple[str, frozenset[tuple[str, str]]], PairLabel]] = {}
    for lab in labels:
        by_annotator.setdefault(lab.annotator, {})[lab.item] = lab
    out: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for x, y in combinations(sorted(by_annotator), 2):
        points: list[tuple[int, int, int]] = []
        for item in by_annotator[x].keys() & by_annotator[y].keys():
            lx, ly = by_annotator[x][item], by_annotator[y][item]
            first = lx if lx.line <= ly.line else ly
            points.append((first.line, lx.toward(first, aspect), ly.toward(first, aspect)))
        if points:
            out[(x, y)] = [(px, py) for _, px, py in sorted(points)]
    return out


def pair_agreement(labels: Sequence[PairLabel],
                   judges: Mapping[str, Mapping[str, Mapping[tuple[str, str], float | None]]], seed: int = 0,
                   references: Mapping[str, Mapping[str, Mapping[tuple[str, str], float | None]]] | None = None
                   ) -> dict[str, JsonObject]:
    """Per aspect: per judge (name -> aspect -> (arm, row) -> score, None where not measured) the correlation of
    score(b) - score(a) with the human label; the references (the same shape, kind `reference`) likewise; then the
    annotators with each other (the ceiling)."""
    aspects = sorted({a for lab in labels for a in lab.labels})
    out: dict[str, JsonObject] = {}
    for aspect in aspects:
        mine = [lab for lab in labels if aspect in lab.labels]
        rows: list[JsonObject] = []
        for name, kind, by_aspect in [*((n, "judge", j) for n, j in judges.items()),
                                      *((n, "reference", r) for n, r in (references or {}).items())]:
            scores = by_aspect.get(aspect)
            if scores is None:
                continue
            x: list[float] = []
            y: list[float] = []
            unmeasured = 0
            for lab in mine:
                sa, sb = scores.get(lab.a), scores.get(lab.b)
                if sa is None or sb is None:
                    unmeasured += 1
                    continue
                x.append(sb - sa)
                y.append(lab.labels[aspect])
            rows.append({"rater": name, "kind": kind, **correlation(x, y, seed), "not_measured": unmeasured})
        ceiling = _pair_ceiling(mine, aspect)
        for (p, q), both in ceiling.items():
            rows.append({"rater": f"{p} vs {q}", "kind": "ceiling",
                         **correlation([v[0] for v in both], [v[1] for v in both], seed), "not_measured": 0})
        out[aspect] = {"labels": len(mine), "annotators": sorted({lab.annotator for lab in mine}), "rows": rows,
                       "annotator_pairs_sharing_no_item": _unshared_pairs(mine, len(ceiling)),
                       "judged": any(r["kind"] == "judge" for r in rows)}
    return out
