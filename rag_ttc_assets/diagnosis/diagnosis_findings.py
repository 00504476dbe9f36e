"""The findings of the written diagnosis (diagnosis.diagnosis), each a named rule that builds one sentence
(diagnosis.diagnosis_sentences.Sentence) or none: the executive summary (the baseline's failure flow, the parameter
changes with a significant paired effect, the strongest demonstrated cause), each compared pair (its effects, a
trade-off against a cost, valid answers without completeness, the largest transitions between flow branches) and
each sweep family (its members, trends, retrieval against admission, the admission mechanism, its power).

An effect is stated only when its adjusted p-value is at most alpha (core.case_comparison's `significant`) over enough
paired cases (MIN_PAIRED). Pure: records (diagnosis.diagnosis_inputs, core.compare_records) in, sentences out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rag_ttc_assets.core.compare_metrics import COSTS, DIRECTIONS
from rag_ttc_assets.core.compare_records import PairReport
from rag_ttc_assets.diagnosis.diagnosis_inputs import ArmRecords, DiagnosisInputs, Family
from rag_ttc_assets.diagnosis.diagnosis_sentences import (MIN_PAIRED, QUALITY, Sentence, arm_link, branch_counts,
                                                          changed_text, delta_kind, headline_n, label_kind, oracle_arm,
                                                          outcome, pair_link, significant_quality, tested_enough,
                                                          unmeasurable)
from rag_ttc_assets.diagnosis.flow import FLOW_BRANCHES

TOP_CELLS = 3
LOSING = tuple(b for b in FLOW_BRANCHES if b != "ok")
TREND_QUANTITIES = (  # (name, unit, where in an arm record)
    ("omitted_by_context", "requests", "omitted_by_context"),
    ("valid", "answers", "valid"),
    ("requests_supported", "requests", "requests_supported"),
    ("admission_coverage", "", "admission_coverage"),
    ("recall_10", "", "recall_10"),
)


# -- the rules ----------------------------------------------------------------------------------------------------

def rule_baseline_flow(sweep: DiagnosisInputs) -> Sentence | None:
    arm = sweep.baseline
    rec = sweep.arms.get(arm)
    if rec is None:
        return None
    flow, total = rec.flow, rec.flow_total
    lost = sum(flow[b] for b in LOSING)
    s = Sentence("exec.baseline_flow", {"arm": arm, "flow": flow, "flow_total": total})
    s.t(f"{arm} loses ").n("lost", lost, "count").t(" of ").n("total", total, "count")
    s.t(" requests before a supported answer (the failure flow: the first boundary at which each request's support "
        "disappeared)")
    largest = sorted((b for b in LOSING if flow[b]), key=lambda b: (-flow[b], FLOW_BRANCHES.index(b)))
    if largest:
        s.t("; the largest branches: ")
        for i, b in enumerate(largest[:3]):
            s.t(", " if i else "").t(f"{b} ").n(f"branch.{b}", flow[b], "count", arm_link(arm, sweep.pages,
                                                                                          branch=b))
            s.about(rec.flow_cases.get(b, []), rec.flow_requests.get(b, []))
    rest = [b for b in FLOW_BRANCHES if b not in largest[:3]]
    s.t(". All branches: " if rest else ".")
    for i, b in enumerate(rest):
        s.t(", " if i else "").t(f"{b} ").n(f"branch.{b}", flow[b], "count",
                                            arm_link(arm, sweep.pages, branch=b) if flow[b] else None)
    if rest:
        s.t(".")
    return s


def moved_branch(rep: PairReport) -> tuple[str, int, int] | None:
    """The branch whose request count changes most between a and b (ties: the flow's order)."""
    ca, cb = branch_counts(rep)
    moves = [(abs(cb[b] - ca[b]), -FLOW_BRANCHES.index(b), b) for b in FLOW_BRANCHES if cb[b] != ca[b]]
    if not moves:
        return None
    b = max(moves)[2]
    return b, ca[b], cb[b]


def _effect(s: Sentence, rep: PairReport, metric: str, pages: Mapping[str, str]) -> Sentence:
    m = rep.metrics[metric]
    s.t(f"{metric} ").n(f"{metric}.delta", m.mean_delta, delta_kind(metric), pair_link(rep, pages))
    s.t(f" ({m.test}, p ").n(f"{metric}.p", m.p_value, "p").t(", adjusted ").n(
        f"{metric}.p_adjusted", m.p_adjusted, "p").t(", over ").n(f"{metric}.n", m.n, "count").t(
        " paired cases)")
    return s.tested(m)


def rule_moves(rep: PairReport, sweep: DiagnosisInputs, rule: str = "exec.moves_branch") -> Sentence | None:
    """A parameter change whose paired effect on a quality metric is significant after adjustment, and the branch
    its requests move out of or into."""
    sig = [m for m in significant_quality(rep) if tested_enough(rep, m)]
    if not sig:
        return None
    metric = sig[0]
    arms = sweep.arms
    s = Sentence(rule, {"a": rep.a, "b": rep.b, "changed": rep.changed_parameters, "metric": metric,
                        "label_use": {rep.a: label_kind(arms, rep.a), rep.b: label_kind(arms, rep.b)}})
    s.t(f"Changing {changed_text(rep)} ({rep.a} -> {rep.b}) moves ")
    _effect(s, rep, metric, sweep.pages)
    moved = moved_branch(rep)
    if moved:
        b, na, nb = moved
        cells = [c for c in rep.transitions.cells if (c.a == b) != (c.b == b)]
        moving = sorted({q for c in cells for q in c.cases})
        s.t(f"; {b} goes from ").n("branch.a", na, "count").t(" to ").n(
            "branch.b", nb, "count", pair_link(rep, sweep.pages, cases=",".join(moving))).t(" requests")
        for c in cells:
            s.about(c.cases, c.requests)
    kinds = {label_kind(arms, rep.a), label_kind(arms, rep.b)}
    if "oracle" in kinds:
        s.t(f". {oracle_arm(rep, arms)} is an oracle arm: this is an upper bound on what knowing the requests is "
            "worth, not a recommendation")
    elif "counterfactual" in kinds:
        s.t(". The counterfactual arm edits the evidence on purpose: this tests the system, it is not a value to "
            "choose")
    return s.t(".")


def headline_delta(rep: PairReport) -> float:
    m = rep.headline_metric()
    return abs((m.mean_delta if m is not None else None) or 0.0)


def rule_strongest(sweep: DiagnosisInputs) -> Sentence:
    arms = sweep.arms
    causes = [r for r in sweep.comparisons if significant_quality(r)
              and any(tested_enough(r, m) for m in significant_quality(r))
              and label_kind(arms, r.a) == label_kind(arms, r.b) == "none"]
    m_tests = sweep.comparisons[0].p_adjust.m if sweep.comparisons else 0
    if not causes:
        s = Sentence("exec.no_demonstrated_cause", {"pairs": [[r.a, r.b] for r in sweep.comparisons]})
        s.t("No parameter change has a paired effect on completeness, valid answers or faithfulness that is "
            "significant after the adjustment (").n("m", m_tests, "count").t(
            f" p-values, {sweep.p_adjust}, alpha ").n("alpha", sweep.alpha, "value").t(
            "): no cause is demonstrated by this sweep.")
        return s
    best = max(causes, key=lambda r: (headline_delta(r), r.a, r.b))
    metric = next(m for m in significant_quality(best) if tested_enough(best, m))
    s = Sentence("exec.strongest_cause", {"a": best.a, "b": best.b, "changed": best.changed_parameters,
                                          "metric": metric, "candidates": [[r.a, r.b] for r in causes]})
    s.t(f"The strongest demonstrated cause: {changed_text(best)} ({best.a} -> {best.b}), ")
    _effect(s, best, metric, sweep.pages)
    moved = moved_branch(best)
    if moved:
        s.t(f", through {moved[0]}")
        for c in best.transitions.cells:
            if (c.a == moved[0]) != (c.b == moved[0]):
                s.about(c.cases, c.requests)
    return s.t(".")


def rule_pair_effects(rep: PairReport, sweep: DiagnosisInputs) -> list[Sentence]:
    """Each compared metric's paired delta: significant ones as gains or losses by direction, the rest as no
    significant difference; a pair with too few paired cases says so and states nothing else."""
    out = []
    pages = sweep.pages
    head, headline, n = rep.headline_metric(), rep.headline, headline_n(rep)
    if n < MIN_PAIRED and (why := unmeasurable(rep, headline)):
        s = Sentence("pair.not_measured", {"a": rep.a, "b": rep.b, "metric": headline,
                                           "not_measured": head.not_measured.model_dump() if head else None})
        s.t(f"{rep.b} against {rep.a}: {headline} is {why} (").n("n", n, "count").t(
            " paired cases), so no difference in it is claimed either way.")
        return [s]
    if n < MIN_PAIRED:
        s = Sentence("pair.too_few_cases", {"a": rep.a, "b": rep.b, "min_paired": MIN_PAIRED})
        s.t(f"{rep.b} against {rep.a}: only ").n("n", n, "count").t(
            " paired cases (fewer than ").n("min", MIN_PAIRED, "count").t(
            "): too few to test, so no difference is claimed either way.")
        return [s]
    sig = {m: v for m, v in rep.metrics.items() if v.significant}
    for m, v in sorted(sig.items(), key=lambda mv: (mv[0] not in QUALITY, mv[0])):
        s = Sentence("pair.significant", {"a": rep.a, "b": rep.b, "metric": m, "direction": DIRECTIONS[m]})
        s.t(f"{rep.b} against {rep.a}: {m} ").n("delta", v.mean_delta, delta_kind(m), pair_link(rep, pages))
        s.t(f", a {outcome(m, v.mean_delta)}" + (" (a cost: a rise is a loss)" if m in COSTS else "")
            + f" ({v.test}, p ").n("p", v.p_value, "p").t(", adjusted ").n("p_adjusted", v.p_adjusted, "p").t(
            ", ").n("n", v.n, "count").t(" paired cases; ").n("gains", v.gains, "count").t(" up, ").n(
            "losses", v.losses, "count").t(" down).")
        out.append(s.tested(v))
    flat = [m for m in QUALITY if m in rep.metrics and m not in sig and rep.metrics[m].p_value is not None]
    if flat:
        s = Sentence("pair.no_significant_difference", {"a": rep.a, "b": rep.b, "metrics": flat})
        s.t(f"{rep.b} against {rep.a}: no significant difference after adjustment in ")
        for i, m in enumerate(flat):
            v = rep.metrics[m]
            s.t("; " if i else "").t(f"{m} (").n(f"{m}.delta", v.mean_delta, "delta", pair_link(rep, pages)).t(
                " over ").n(f"{m}.n", v.n, "count").t(" paired cases, adjusted p ").n(
                f"{m}.p_adjusted", v.p_adjusted, "p").t(")")
        out.append(s.t("."))
    return out


def rule_trade_off(rep: PairReport, sweep: DiagnosisInputs) -> Sentence | None:
    """A quality gain bought with a cost: "K=8: +0.031 valid at +465 input tokens a question"."""
    gains = [m for m in QUALITY if m in rep.metrics and outcome(m, rep.metrics[m].mean_delta) == "gain"]
    costs = [m for m in COSTS if m in rep.metrics and outcome(m, rep.metrics[m].mean_delta) == "loss"]
    if not gains or not costs:
        return None
    g = gains[0]
    v = rep.metrics[g]
    s = Sentence("pair.trade_off", {"a": rep.a, "b": rep.b, "gain": g, "costs": costs})
    s.t(f"Trade-off, {rep.b} against {rep.a}: ").n("gain", v.mean_delta, "delta", pair_link(rep, sweep.pages))
    s.t(f" {g} at ").n(f"{costs[0]}", rep.metrics[costs[0]].mean_delta, delta_kind(costs[0]))
    s.t(" input tokens a question" if costs[0] == "input_tokens" else " s a question")
    for c in costs[1:]:
        s.t(" and ").n(c, rep.metrics[c].mean_delta, delta_kind(c)).t(
            " s latency" if c == "latency_s" else f" {c}")
    s.t(f"; the {g} gain is " + ("significant after adjustment (adjusted p " if v.significant
                                 else "not significant after adjustment (adjusted p "))
    s.n("p_adjusted", v.p_adjusted, "p").t(").")
    return s.tested(v)


def rule_valid_not_complete(rep: PairReport, sweep: DiagnosisInputs) -> Sentence | None:
    """More valid answers with completeness flat (the seed's K=8 reading)."""
    valid, comp = rep.metrics.get("valid"), rep.metrics.get("completeness")
    if not valid or not comp or outcome("valid", valid.mean_delta) != "gain" or comp.significant:
        return None
    s = Sentence("pair.valid_not_complete", {"a": rep.a, "b": rep.b})
    s.t(f"{rep.b} has more valid answers than {rep.a} (").n("valid", valid.mean_delta, "delta").t(
        ") while completeness does not move significantly (").n("completeness", comp.mean_delta, "delta").t(
        ", adjusted p ").n("p_adjusted", comp.p_adjusted, "p").t(
        "): more answers pass the contract, not more requests answered.")
    return s.tested(comp)


def rule_transitions(rep: PairReport, sweep: DiagnosisInputs) -> Sentence | None:
    t = rep.transitions
    off = sorted((c for c in t.cells if c.a != c.b), key=lambda c: (-c.count, c.key))[:TOP_CELLS]
    if not off:
        s = Sentence("pair.no_transitions", {"a": rep.a, "b": rep.b})
        return s.t(f"No request changes branch between {rep.a} and {rep.b} (").n(
            "total", t.total, "count").t(" requests).")
    s = Sentence("pair.largest_transitions", {"a": rep.a, "b": rep.b, "cells": [c.key for c in off]})
    s.t(f"Between {rep.a} and {rep.b}, ").n("changed", t.changed, "count").t(" of ").n(
        "total", t.total, "count").t(" requests change branch; the largest moves: ")
    for i, c in enumerate(off):
        s.t(", " if i else "").t(f"{c.key} ").n(f"cell.{c.key}", c.count, "count",
                                                pair_link(rep, sweep.pages, transition=c.key))
        s.t(" (cases " + ", ".join(c.cases[:5]) + (", …" if len(c.cases) > 5 else "") + ")")
        s.about(c.cases, c.requests)
    return s.t(".")


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def rule_family_members(name: str, fam: Family) -> Sentence:
    s = Sentence("family.members", {"family": name, "parameter": fam.parameter, "members": fam.members,
                                    "missing": fam.missing})
    s.t(f"Family {name} sweeps {fam.parameter}: ").n("measured", len(fam.members), "count").t(" of ").n(
        "of", len(fam.members) + len(fam.missing), "count").t(" members measured")
    if fam.missing:
        s.t(" (not materialized: " + ", ".join(fam.missing) + ")")
    return s.t(".")


def rule_family_trend(name: str, fam: Family, arms: ArmRecords, quantity: str, unit: str, key: str,
                      pages: Mapping[str, str]) -> Sentence | None:
    members = [a for a in fam.members if getattr(arms[a], key) is not None]
    if len(members) < 2:
        return None
    xs = [fam.value_of[a] for a in members]
    ys = [getattr(arms[a], key) for a in members]
    kind = "count" if all(isinstance(y, int) for y in ys) else "rate"
    s = Sentence("family.trend", {"family": name, "parameter": fam.parameter, "quantity": quantity,
                                  "members": members})
    s.t(f"{quantity}: ")
    for i, (a, x, y) in enumerate(zip(members, xs, ys)):
        link = arm_link(a, pages, branch=quantity) if quantity in FLOW_BRANCHES else None
        s.t(", " if i else "").n(f"{a}", y, kind, link).t(f" at {x}")
        if quantity in FLOW_BRANCHES:
            s.about(arms[a].flow_cases.get(quantity, []), arms[a].flow_requests.get(quantity, []))
    s.t(f" {unit}".rstrip())
    if not _numeric(xs) or len(set(xs)) != len(xs):
        return s.t(".")
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ys_sorted = [ys[i] for i in order]
    if all(math.isclose(y, ys_sorted[0], abs_tol=1e-12) for y in ys_sorted):
        s.inputs["trend"] = "constant"
        return s.t(f"; the same at every {fam.parameter}.")
    if all(b <= a + 1e-12 for a, b in zip(ys_sorted, ys_sorted[1:])):
        s.inputs["trend"] = "falls"
        s.t(f"; it falls as {fam.parameter} grows")
        zero = next((i for i in order if ys[i] == 0), None)
        if zero is not None and ys_sorted[-1] == 0:
            s.t(f", reaching zero at {fam.parameter} ").n("zero_at", xs[zero], "value")
            s.inputs["zero_at"] = xs[zero]
        return s.t(".")
    if all(b + 1e-12 >= a for a, b in zip(ys_sorted, ys_sorted[1:])):
        s.inputs["trend"] = "rises"
        return s.t(f"; it rises as {fam.parameter} grows.")
    s.inputs["trend"] = "not monotone"
    return s.t(f"; not monotone in {fam.parameter}.")


def rule_retrieval_vs_admission(name: str, fam: Family, arms: ArmRecords) -> Sentence | None:
    """The seed's metric point: retrieval measured before evidence_k and admission, so a family that changes only
    what is admitted leaves retrieval unchanged while admission coverage moves."""
    measured = {a: (r, c) for a in fam.members
                if (r := arms[a].recall_10) is not None and (c := arms[a].admission_coverage) is not None}
    members = list(measured)
    if len(members) < 2:
        return None
    recall = [measured[a][0] for a in members]
    cov = {a: measured[a][1] for a in members}
    if max(recall) - min(recall) > 1e-12 or max(cov.values()) - min(cov.values()) <= 1e-12:
        return None
    lo, hi = min(members, key=lambda a: cov[a]), max(members, key=lambda a: cov[a])
    s = Sentence("family.retrieval_vs_admission", {"family": name, "members": members})
    s.t("Retrieval is the same at every value (recall_10 ").n("recall_10", recall[0], "rate").t(
        ") while admission coverage moves from ").n("coverage_low", cov[lo], "rate").t(
        f" ({lo}) to ").n("coverage_high", cov[hi], "rate").t(
        f" ({hi}): the family changes what is admitted to the answer generator, not what is retrieved.")
    return s


def rule_admission_mechanism(name: str, fam: Family, arms: ArmRecords, pages: Mapping[str, str]) -> Sentence | None:
    """The seed's strongest mechanism, stated when the family's data show it: retrieval unchanged, requests lost at
    admission (omitted_by_context) under the tight budgets, none once the budget stops binding."""
    measured = {a: r for a in fam.members if (r := arms[a].recall_10) is not None}
    members = list(measured)
    if len(members) < 2 or not _numeric([fam.value_of[a] for a in members]):
        return None
    recall = list(measured.values())
    omitted = {a: arms[a].omitted_by_context for a in members}
    if max(recall) - min(recall) > 1e-12 or not any(omitted.values()):
        return None
    tight = max(members, key=lambda a: (omitted[a], -fam.value_of[a]))
    free = sorted((a for a in members if omitted[a] == 0), key=lambda a: fam.value_of[a])
    s = Sentence("family.admission_mechanism", {"family": name, "parameter": fam.parameter, "tight": tight,
                                                 "non_binding": free[:1]})
    s.t(f"Admission mechanism: retrieval returns the same ranked lists at every {fam.parameter}, but at "
        f"{fam.value_of[tight]} the context policy admits fewer complete chunks and ").n(
        "omitted", omitted[tight], "count", arm_link(tight, pages, branch="omitted_by_context")).t(
        " requests lose their only supporting chunk at admission (omitted_by_context)")
    s.about(arms[tight].flow_cases.get("omitted_by_context", []),
            arms[tight].flow_requests.get("omitted_by_context", []))
    if free:
        s.t(f"; from {fam.value_of[free[0]]} on, no request is lost there: the budget no longer binds")
    return s.t(".")


def rule_family_power(name: str, fam: Family, pairs: Sequence[PairReport]) -> Sentence | None:
    if pairs:
        small = [r for r in pairs if headline_n(r) < MIN_PAIRED]
        if len(small) < len(pairs):
            return None
        s = Sentence("family.too_few_cases", {"family": name, "pairs": [[r.a, r.b] for r in pairs]})
        return s.t(f"Family {name}: its compared pairs have at most ").n(
            "n", max(headline_n(r) for r in pairs),
            "count").t(" paired cases, fewer than ").n("min", MIN_PAIRED, "count").t(
            ": too few to test, so its trends above are descriptive, not demonstrated effects.")
    s = Sentence("family.no_pairs", {"family": name})
    return s.t(f"Family {name}: no pair of its members is compared case by case (add one to `comparisons`), so "
               "its trends above are descriptive, not tested effects.")
