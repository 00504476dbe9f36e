"""The closing sections of the written diagnosis (diagnosis.diagnosis), each a named rule that builds sentences
(diagnosis.diagnosis_sentences.Sentence): the decision table (per changed parameter, recommend a value or say why not),
the limitations (offline baselines, same-model judging, oracle and counterfactual arms, derived or unmeasured
requests, each arm's completeness readings, the human labels' correction of the judge's difference, pilots,
instrument drift, small or unmeasurable pairs, skipped pairs) and the next experiments (combinations the sweep's
findings point to, with their arms-file snippets).

Pure: records (diagnosis.diagnosis_inputs, core.compare_records) in, sentences and text out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rag_ttc_assets.core.compare_records import PairReport, TransitionCell
from rag_ttc_assets.diagnosis.diagnosis_inputs import ArmRecord, DiagnosisInputs, HumanCorrection, Interval
from rag_ttc_assets.diagnosis.diagnosis_sentences import (MIN_PAIRED, QUALITY, Sentence, delta_kind, headline_n,
                                                          label_kind, outcome, pair_link, paired_n, shown, unmeasurable)

MAX_UNMEASURED = 0.1  # more than this share of requests not measured by the request judge: no decision
UPSTREAM = ("not_retrieved", "cut_by_evidence_k", "omitted_by_context")  # support lost before the generator


# -- decisions -----------------------------------------------------------------------------------------------------

def _decide(rep: PairReport, sweep: DiagnosisInputs) -> tuple[str | None, list[str], str]:
    """(the favoured arm or None, the reasons it is not a recommendation, the metric read)."""
    arms = sweep.arms
    metric = rep.headline
    m = rep.headline_metric()
    n = paired_n(m)
    reasons = []
    favoured = None
    if n < MIN_PAIRED and (why := unmeasurable(rep, metric)):
        reasons.append(f"{metric} {why}")
    elif n < MIN_PAIRED:
        reasons.append(f"too few paired cases ({n} < {MIN_PAIRED})")
    elif m is None or not m.significant:
        reasons.append(f"no significant difference in {metric} over {n} paired cases "
                       f"(adjusted p {shown('p', m.p_adjusted if m else None)})")
    else:
        favoured = rep.b if outcome(metric, m.mean_delta) == "gain" else rep.a
        other = rep.a if favoured == rep.b else rep.b
        sign = 1 if favoured == rep.b else -1
        lost = [q for q in QUALITY if q != metric and (v := rep.metrics.get(q)) is not None and v.significant
                and outcome(q, _times(sign, v.mean_delta)) == "loss"]
        if lost:
            reasons.append(f"{favoured} also loses significantly in {', '.join(lost)} against {other}")
        if label_kind(arms, favoured) == "oracle":
            reasons.append(f"the better arm, {favoured}, is an oracle (an upper bound, never a recommendation)")
        if label_kind(arms, favoured) == "counterfactual":
            reasons.append(f"the better arm, {favoured}, is counterfactual (a test, not a value to choose)")
    recs = [(arm, arms[arm]) for arm in (rep.a, rep.b) if arm in arms]
    for arm, rec in recs:
        if rec.offline_generator or rec.offline_judge:
            reasons.append(f"the instrument is an offline baseline ({arm}: answers {rec.generator_model}, "
                           f"request judge {rec.request_judge_model})")
            break
    for arm, rec in recs:
        if rec.same_model and not rec.offline_generator:
            reasons.append(f"the judge is the generator's model ({arm}: {rec.generator_model})")
            break
    for arm, rec in recs:
        if rec.requests_derived:
            reasons.append(f"the requests were derived, not annotated ({arm})")
            break
    for arm, rec in recs:
        total = rec.requests_total
        if total and (total - rec.requests_measured) / total > MAX_UNMEASURED:
            reasons.append(f"too many requests not measured ({arm}: {rec.requests_measured} measured of {total})")
            break
    return favoured, reasons, metric


def _times(sign: int, delta: float | None) -> float | None:
    return None if delta is None else sign * delta


def rule_decision(parameter: str, rep: PairReport, sweep: DiagnosisInputs) -> Sentence:
    favoured, reasons, metric = _decide(rep, sweep)
    m = rep.metrics.get(metric)
    value: Any = None
    if favoured:
        value = rep.changed_parameters[parameter][1 if favoured == rep.b else 0] \
            if parameter in rep.changed_parameters else favoured
    s = Sentence("decision.recommend" if favoured and not reasons else "decision.not_decided",
                 {"parameter": parameter, "a": rep.a, "b": rep.b, "metric": metric, "favoured": favoured,
                  "value": value, "reasons": reasons})
    if favoured and not reasons:
        s.t(f"{parameter}: recommend {value} ({favoured}): {metric} ")
    else:
        s.t(f"{parameter}: not decided" + (f" (the data favour {value}, {favoured})" if favoured else "") + ": "
            + "; ".join(reasons) + f". Evidence: {rep.b} against {rep.a}, {metric} ")
    s.n("delta", m.mean_delta if m else None, delta_kind(metric), pair_link(rep, sweep.pages)).t(" over ").n(
        "n", paired_n(m), "count").t(" paired cases, adjusted p ").n("p_adjusted", m.p_adjusted if m else None,
                                                                    "p").t(".")
    return s.tested(m)


def rule_decision_untested(parameter: str, family: str) -> Sentence:
    s = Sentence("decision.not_decided", {"parameter": parameter, "family": family,
                                          "reasons": ["no pair of its members compared case by case"]})
    return s.t(f"{parameter}: not decided: no pair of family {family}'s members is compared case by case.")


# -- limitations ---------------------------------------------------------------------------------------------------

def limitations(sweep: DiagnosisInputs) -> list[Sentence]:
    arms = sweep.arms
    out = []
    offline = sorted(a for a, r in arms.items() if r.offline_generator or r.offline_judge)
    if offline:
        s = Sentence("limit.offline_baseline", {"arms": offline})
        models = sorted({arms[a].generator_model for a in offline if arms[a].offline_generator}
                        | {arms[a].request_judge_model for a in offline if arms[a].offline_judge})
        answered = [a for a in offline if arms[a].offline_generator]
        # The offline answerer runs in the lab's own process: its latency is that process's compute, which an arm run
        # before it changes (the sentence embeddings it left cached), never a provider's.
        latency = ("; an offline answerer's latency is the lab process's own compute, which the arms run before it "
                   "change (the embeddings they left cached), so no latency difference among " + ", ".join(answered)
                   + " is a parameter's effect") if answered else ""
        s.t("Offline baselines, not language models: ").n("arms", len(offline), "count").t(
            " arms (" + ", ".join(offline) + ") were answered or judged by " + ", ".join(models)
            + "; their numbers measure the harness and these baselines, not a deployed model" + latency + ".")
        out.append(s)
    same = sorted(a for a, r in arms.items() if r.same_model and not r.offline_generator)
    if same:
        s = Sentence("limit.same_model_judge", {"arms": same})
        out.append(s.t("Same-model judging: in " + ", ".join(same) + " the judge is the answer generator's model, "
                       "so its verdicts are diagnostic, not independent validation."))
    for kind, text in (("oracle", "an upper bound (the generator saw the evaluation's request annotation), never "
                                  "a deployable configuration"),
                       ("counterfactual", "edits of the evidence made on purpose from the labels; they test the "
                                          "system and are never a value to choose")):
        names = sorted(a for a in arms if label_kind(arms, a) == kind)
        if names:
            out.append(Sentence(f"limit.{kind}", {"arms": names}).t(", ".join(names) + f": {text}."))
    derived = sorted(a for a, r in arms.items() if r.requests_derived)
    if derived:
        out.append(Sentence("limit.derived_requests", {"arms": derived}).t(
            "Derived requests (from gold answers, not annotated by people) in " + ", ".join(derived) + "."))
    for a in sorted(arms):
        r = arms[a]
        if r.requests_total and r.requests_measured < r.requests_total:
            s = Sentence("limit.not_measured", {"arm": a})
            out.append(s.t(f"{a}: completeness measured on ").n("measured", r.requests_measured, "count").t(
                " of ").n("total", r.requests_total, "count").t(" requests; the rest are undefined, not zero."))
    for a in sorted(arms):
        r = arms[a]
        if r.requests_measured:
            out.append(rule_completeness_readings(a, r))
    for c in sweep.human_corrections:
        out.append(rule_human_correction(c))
    pilots = sorted(a for a, r in arms.items() if r.question_set == "pilot")
    if pilots:
        s = Sentence("limit.pilot", {"arms": pilots})
        out.append(s.t("Pilot question sets (" + ", ".join(pilots) + "): for finding mechanisms, too small for "
                       "estimates."))
    for rep in sweep.comparisons:
        if rep.instrument_drift or rep.label_drift:
            s = Sentence("limit.instrument_drift", {"a": rep.a, "b": rep.b, "instrument_drift": rep.instrument_drift,
                                                    "label_drift": rep.label_drift})
            out.append(s.t(f"{rep.a} vs {rep.b} was compared across instruments or label versions (allowed): its "
                           "differences may be the instrument's."))
    for rep in (r for r in sweep.comparisons if headline_n(r) < MIN_PAIRED):
        if why := unmeasurable(rep, rep.headline):
            s = Sentence("limit.unmeasurable", {"a": rep.a, "b": rep.b, "metric": rep.headline})
            out.append(s.t(f"{rep.a} vs {rep.b}: {rep.headline} {why}."))
            continue
        s = Sentence("limit.small_n", {"a": rep.a, "b": rep.b})
        out.append(s.t(f"{rep.a} vs {rep.b}: ").n("n", headline_n(rep), "count").t(" paired cases, too few to test."))
    if sweep.skipped:
        s = Sentence("limit.skipped_pairs", {"skipped": list(sweep.skipped)})
        out.append(s.n("skipped", len(sweep.skipped), "count").t(
            " pairs of `comparisons` were not compared (not materialized, or refused): " +
            "; ".join(x.split(":")[0] for x in sweep.skipped) + "."))
    return out


def rule_completeness_readings(arm: str, r: ArmRecord) -> Sentence:
    """An arm's completeness read two ways, graded first (docs/judges.md: it agrees with people best), each with its
    N of M; a judge that reports no coverage (an LLM's) reads "graded: not measured (no coverage)", never 0."""
    s = Sentence("limit.completeness_readings", {"arm": arm})
    if r.graded_completeness is None:
        s.t(f"{arm}: completeness graded: not measured (no coverage; ").n(
            "graded_n", r.requests_graded or 0, "count").t(" of ")
    else:
        s.t(f"{arm}: completeness graded ").n("graded", r.graded_completeness, "rate").t(" (mean coverage, ").n(
            "graded_n", r.requests_graded, "count").t(" of ")
    s.n("graded_of", r.requests_measured, "count").t(" measured requests graded); share of requests addressed ")
    return s.n("addressed", r.requests_answered_share, "rate").t(" (").n(
        "measured", r.requests_measured, "count").t(" of ").n("total", r.requests_total, "count").t(
        " requests measured).")


def correction_outcome(judge: Interval | None, corrected: Interval | None) -> str:
    """What the people's labels do to the judge's conclusion on a difference b - a: `removed` (the judge's interval
    excludes 0, the corrected one spans it), `reversed` (the corrected one excludes 0 on the other side), `holds`
    (same side), `drawn` (the judge's spans 0, the corrected one excludes it), `none` (both span 0), or
    `not_estimable` (either difference undefined)."""
    if not judge or not corrected:
        return "not_estimable"
    j, c = _side(judge), _side(corrected)
    if j == 0:
        return "drawn" if c else "none"
    return "removed" if c == 0 else ("holds" if c == j else "reversed")


def _side(d: Interval) -> int:
    """1: the interval lies above 0, -1: below, 0: it spans 0."""
    return 1 if d.low > 0 else (-1 if d.high < 0 else 0)


OUTCOME_TEXT = {"removed": "the conclusion is removed (the corrected interval spans 0)",
                "reversed": "the conclusion is reversed (the sign flips and the corrected interval excludes 0)",
                "holds": "the conclusion holds (the corrected interval excludes 0 on the same side)",
                "drawn": "the labels draw a conclusion the judge alone did not (the corrected interval excludes 0)",
                "none": "no conclusion either way (both intervals span 0)"}


def rule_human_correction(c: HumanCorrection) -> Sentence:
    """A compared pair whose two arms both carry per-request human labels: the judge's own completeness difference
    over all its rows against the difference corrected by the labels (prediction-powered, labelling.ppi), and what the
    correction does to the judge's conclusion (correction_outcome). Differences read toward the arm the judge
    alone finds more complete."""
    a, b, judge, corr = c.a, c.b, c.judge_difference, c.corrected
    outcome = correction_outcome(judge, corr)
    flip = judge.mean < 0 if judge else False  # read toward the more complete arm: x - y
    x, y = (a, b) if flip else (b, a)
    k = -1 if flip else 1

    def toward(d: Interval | None) -> Interval | None:
        if d is None:
            return None
        lo, hi = sorted((k * d.low, k * d.high))
        return Interval(mean=k * d.mean, low=lo, high=hi)

    jd, cd = toward(judge), toward(corr)
    s = Sentence("limit.human_correction", {"a": a, "b": b, "judge": c.judge, "outcome": outcome,
                                            "labelled": c.labelled, "rows": c.rows, "weighting": c.weighting,
                                            "estimator": c.estimator})
    if jd is None:
        s.t(f"{a} vs {b}: the judge ({c.judge}) measured too few rows of one arm whole to difference its "
            "completeness; ")
    else:
        verb = (f"finds {x} more complete than {y}" if jd.low > 0 or jd.high < 0 else
                f"finds no difference in completeness between {x} and {y}")
        s.t(f"The judge alone ({c.judge}) {verb} ({x} minus {y}: ").n("judge_d", jd.mean, "delta").t(" [").n(
            "judge_low", jd.low, "delta").t(", ").n("judge_high", jd.high, "delta").t("], over ").n(
            "rows", sum(c.rows.values()), "count").t(" rows); ")
    s.t("corrected by ").n("labels", c.labels, "count").t(" human labels (").n(
        "labelled_a", c.labelled.get(a, 0), "count").t(f" rows of {a} and ").n(
        "labelled_b", c.labelled.get(b, 0), "count").t(f" of {b} labelled)")
    if cd is None:
        return s.t(": not estimable (an arm has fewer than two labelled rows).")
    return s.t(f" {x} minus {y} is ").n("corrected_d", cd.mean, "delta").t(" [").n(
        "corrected_low", cd.low, "delta").t(", ").n("corrected_high", cd.high, "delta").t(
        f"]: {OUTCOME_TEXT[outcome]}.")


# -- next experiments ----------------------------------------------------------------------------------------------

def _yaml_value(v: Any) -> str:
    if isinstance(v, str):
        return v if v.replace("-", "").replace("_", "").replace(".", "").replace("/", "").isalnum() else repr(v)
    return str(v).lower() if isinstance(v, bool) else str(v)


def next_experiments(sweep: DiagnosisInputs) -> list[tuple[Sentence, str]]:
    """Combinations the sweep did not run that its findings point to: two changes from the same arm, each moving
    a quality metric up (significant or not), not an oracle or counterfactual, whose union no arm has run (the
    seed's 11.2: the multipart prompt with K=8 and a non-binding budget); and families with no compared pair."""
    arms, out = sweep.arms, []
    ups: dict[str, list[PairReport]] = {}
    for r in sweep.comparisons:
        if label_kind(arms, r.a) != "none" or label_kind(arms, r.b) != "none":
            continue
        head = r.headline_metric()
        if head and any(q in r.metrics and outcome(q, r.metrics[q].mean_delta) == "gain" for q in QUALITY) and \
                outcome(r.headline, head.mean_delta) != "loss":
            ups.setdefault(r.a, []).append(r)
    configs = list(sweep.all_configs.values())
    # (base, r1, r2, the cells that point to it)
    candidates: list[tuple[str, PairReport, PairReport, list[TransitionCell]]] = []
    for base, reps in sorted(ups.items()):
        for i, r1 in enumerate(reps):
            for r2 in reps[i + 1:]:
                candidates.append((base, r1, r2, []))
    # The seed's 11.2: a change that brings evidence into the context whose requests the answer then does not
    # address (retrieval or admission -> not_addressed), beside a prompt change from the same arm, which targets
    # exactly that branch.
    plain = [r for r in sweep.comparisons if label_kind(arms, r.a) == label_kind(arms, r.b) == "none"]
    for r1 in plain:
        recovered = [c for c in r1.transitions.cells if c.a in UPSTREAM and c.b == "not_addressed"]
        if not recovered or "prompt" in r1.changed_parameters:
            continue
        for r2 in plain:
            if r2.a == r1.a and r2 is not r1 and set(r2.changed_parameters) == {"prompt"} and not any(
                    {id(x), id(y)} == {id(r1), id(r2)} for _, x, y, _ in candidates):
                candidates.append((r1.a, r1, r2, recovered))
    for base, r1, r2, recovered in candidates:
        c1 = {k: v[1] for k, v in r1.changed_parameters.items()}
        c2 = {k: v[1] for k, v in r2.changed_parameters.items()}
        if any(k in c2 and c2[k] != v for k, v in c1.items()):
            continue  # the two changes set one field differently: no single combination
        union = {**c1, **c2}
        if any(cfg and all(cfg.get(k) == v for k, v in union.items()) for cfg in configs):
            continue  # some arm of the arms file already runs it
        name = f"{r1.b}-{r2.b}"[:60].strip("-")
        s = Sentence("next.combine", {"base": base, "pairs": [[r1.a, r1.b], [r2.a, r2.b]],
                                      "overrides": union, "cells": [c.key for c in recovered]})
        s.t(f"Combine {r1.b} and {r2.b}: ")
        if recovered:
            s.t(f"{r1.b} brings into the context the evidence of requests the answer then does not address (")
            for i, c in enumerate(recovered):
                s.t(", " if i else "").t(f"{c.key} ").n(f"cell.{c.key}", c.count, "count",
                                                        pair_link(r1, sweep.pages, transition=c.key))
                s.about(c.cases, c.requests)
            s.t(f"), and {r2.b} changes the prompt, which is what not_addressed measures")
        else:
            s.t(f"each moves a quality metric up against {base}, significant or not (")
            for j, r in enumerate((r1, r2)):
                s.t("; " if j else "").t(f"{r.b}:")
                for q in QUALITY:
                    v = r.metrics.get(q)
                    if v and v.mean_delta is not None:
                        s.t(f" {q} ").n(f"{r.b}.{q}", v.mean_delta, "delta", pair_link(r, sweep.pages))
            s.t(")")
        s.t("; no arm runs both. Compare the combination with both, case by case.")
        snippet = ("arms:\n  " + name + ": {" + ", ".join(f"{k}: {_yaml_value(v)}" for k, v in
                                                         sorted(_nest(union).items())) + "}\n"
                   + f"comparisons:\n  - [{base}, {name}]\n  - [{r1.b}, {name}]\n  - [{r2.b}, {name}]\n")
        out.append((s, snippet))
    for fam, spec in sweep.families.items():
        members = spec.members
        pairs = [r for r in sweep.comparisons if r.a in members and r.b in members]
        if len(members) >= 2 and not pairs:
            s = Sentence("next.compare_family", {"family": fam, "members": members})
            s.t(f"Family {fam} has no compared pair: compare its ends case by case to test its trend.")
            out.append((s, f"comparisons:\n  - [{members[0]}, {members[-1]}]\n"))
    return out


def _nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Dotted keys (generator.model) back into the arms file's shape, one level deep as flow mappings."""
    out: dict[str, Any] = {}
    for k, v in flat.items():
        if "." in k:
            head, rest = k.split(".", 1)
            out.setdefault(head, {})[rest] = v
        else:
            out[k] = v
    return {k: ("{" + ", ".join(f"{a}: {_yaml_value(b)}" for a, b in v.items()) + "}") if isinstance(v, dict) else v
            for k, v in out.items()}


def _quality_text(rep: PairReport) -> str:
    parts = []
    for q in QUALITY:
        v = rep.metrics.get(q)
        if v and v.mean_delta is not None:
            parts.append(f"{q} {shown('delta', v.mean_delta)}"
                         + (" significant" if v.significant else " not significant"))
    return ", ".join(parts)
