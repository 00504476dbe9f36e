"""Request-level completeness, the failure flow, and paired per-case comparisons between arms.

Reads an arm's tables from the store (request_coverage, contract_results, judge_verdicts,
retrieval summary) and calls the pure functions in core.completeness, core.flow and core.compare.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from rag_ttc_assets.adapters.store import ArmJson, Table
from rag_ttc_assets.core import compare as cmp
from rag_ttc_assets.core import eras
from rag_ttc_assets.core.completeness import (abstention_outcome, completeness_totals, question_completeness,
                                              request_outcomes)
from rag_ttc_assets.core.counterfactual import Planted, repeats
from rag_ttc_assets.core.flow import FLOW_BRANCHES, flow_rows, flow_table, hit_rate
from rag_ttc_assets.core.measured import MISSING_ROW, reasons_text
from rag_ttc_assets.lab import Lab
from rag_ttc_assets.core.supply import lookup_cases, lookup_flow
from rag_ttc_assets.core.transitions import flow_index, transitions
from rag_ttc_assets.stages import imported, supply
from rag_ttc_assets.stages.resolve import ArmInputs


def _rows_by_query(df: pl.DataFrame) -> dict[str, dict]:
    return {r["query_id"]: r for r in df.iter_rows(named=True)}


def _inputs(lab: Lab, arm: str):
    """What both diagnostics read: the arm, its questions, per-request coverage, contract and judge rows."""
    inputs = ArmInputs(lab, arm)
    cfg = inputs.cfg
    coverage = supply.arm_coverage(inputs)
    cov_by_q: dict[str, list[dict]] = {}
    for r in coverage.iter_rows(named=True):
        cov_by_q.setdefault(r["query_id"], []).append(r)
    judgments: dict[str, list[dict]] = {}
    for r in lab.store.read_table(arm, Table.REQUEST_JUDGMENTS).iter_rows(named=True):
        judgments.setdefault(r["query_id"], []).append(r)
    return (cfg, inputs.questions, cov_by_q, _rows_by_query(lab.store.read_table(arm, Table.CONTRACT_RESULTS)),
            _rows_by_query(lab.store.read_table(arm, Table.JUDGE_VERDICTS)), judgments)


def request_instrument(lab: Lab, cfg) -> dict:
    """The request judge that measured an arm's completeness: its model and prompt digest."""
    from rag_ttc_assets.stages.request_judge import instrument

    return instrument(cfg, lab.prompt(cfg.judge_requests_prompt, "judge_requests"))


def completeness(lab: Lab, arm: str) -> dict:
    """Request and question completeness (from the request judge), abstention outcomes and totals for one arm."""
    cfg, questions, cov_by_q, contracts, judged, judgments = _inputs(lab, arm)
    outcomes, abstentions = [], []
    for q in questions:
        if q.answerable:
            outcomes += request_outcomes(q, cov_by_q.get(q.id, []), contracts.get(q.id), judgments.get(q.id, []))
        else:
            abstentions.append(abstention_outcome(q, contracts.get(q.id)))
    totals = {**completeness_totals(outcomes, abstentions), "request_judge": request_instrument(lab, cfg),
              "label_use": cfg.label_use}
    if cfg.counterfactual != "none":
        contexts = {r["query_id"]: r for r in lab.store.read_table(arm, Table.ADMITTED_CONTEXTS).iter_rows(named=True)}
        totals["counterfactual"] = counterfactual_summary(cfg.counterfactual, outcomes, contexts, contracts,
                                                          cov_by_q, judged)
    return {
        "requests": pl.DataFrame([o.model_dump() for o in outcomes]),
        "questions": pl.DataFrame([q.model_dump() for q in question_completeness(outcomes)]),
        "abstentions": pl.DataFrame([a.model_dump() for a in abstentions]),
        "completeness": totals,
    }


def failure_flow(lab: Lab, arm: str) -> dict:
    """Flow rows (one per request of an answerable question), their totals, and a tool arm's lookup flow."""
    cfg, questions, cov_by_q, contracts, judged, judgments = _inputs(lab, arm)
    imported = cfg.supply == "imported"
    retrieval_status = ({r["query_id"]: r["retrieval_status"] for r in lab.store.read_table(
        arm, Table.RETRIEVAL_ROWS).select("query_id", "retrieval_status").iter_rows(named=True)} if imported else {})
    flows = [f for q in questions if q.answerable
             for f in flow_rows(q, cov_by_q.get(q.id, []), contracts.get(q.id), judged.get(q.id),
                                judgments.get(q.id, []), imported, retrieval_status.get(q.id, "ok"))]
    summary = {**flow_table(flows), "hit_rate": hit_rate(flows), "supply": cfg.supply}
    lookups = pl.DataFrame()
    if cfg.supply == "tool":
        qualities: dict[str, list[str]] = {}
        for f in flows:
            qualities.setdefault(f.query_id, []).append(f.quality)
        cases = lookup_cases(questions, supply.read_lookups(lab.store.read_table(arm, Table.ANSWERS)), qualities)
        summary["lookup_flow"] = lookup_flow(cases)
        lookups = pl.DataFrame([c.model_dump() for c in cases],
                               schema_overrides={"missing_requests": pl.List(pl.String)})
    return {"flow": pl.DataFrame([f.model_dump() for f in flows]), "lookup_cases": lookups, "flow_summary": summary}


def counterfactual_summary(kind: str, outcomes, contexts: dict, contracts: dict, coverage: dict,
                           judged: dict) -> dict:
    """Withheld-relevant: did the answer abstain for the requests whose support was withheld?
    Planted-falsehood: did the answer repeat the planted claim, and did the gold judge see a contradiction?"""
    by_request = {o.request_id: o for o in outcomes}
    if kind == "withheld-relevant":
        affected = [r["request_id"] for q, rows in coverage.items() for r in rows
                    if set(r["supporting_chunk_ids"]) & set(contexts.get(q, {}).get("withheld_chunk_ids") or [])
                    and not r["admitted"]]
        # Only measured requests count: an unmeasured one (answered None) is neither a correct abstention nor not.
        correct = sum(1 for rid in affected if rid in by_request and by_request[rid].answered is False)
        return {"kind": kind, "withheld_requests": len(affected), "correct_abstentions": correct,
                "correct_abstention_rate": correct / len(affected) if affected else None}
    planted, repeated = 0, 0
    for qid, ctx in contexts.items():
        answer = (contracts.get(qid) or {}).get("answer")
        for p in json.loads(ctx.get("planted") or "[]"):
            planted += 1
            repeated += repeats(answer, Planted(**p))
    contradicting = sum(1 for r in judged.values() if r.get("contradicts_gold"))
    return {"kind": kind, "planted_claims": planted, "repeated": repeated,
            "falsehood_repetition_rate": repeated / planted if planted else None,
            "answers_contradicting_gold": contradicting}


def case_values(lab: Lab, arm: str) -> tuple[dict[str, dict[str, float | None]], dict]:
    """Per-case values of each compared metric for one arm (core.compare.case_values over its tables), and the arm's
    context for comparisons: its `reasons`, metric -> case -> why the value is undefined, for every undefined one."""
    store = lab.store
    unmeasured: dict[str, str] = {}  # question -> the judge status of its first unmeasured request
    for r in store.read_table(arm, Table.REQUEST_OUTCOMES).iter_rows(named=True):
        if not r["measured"]:
            unmeasured.setdefault(r["query_id"], r["judge_status"])
    values, reasons = cmp.case_values(
        *(_rows_by_query(store.read_table(arm, t)) for t in (Table.CONTRACT_RESULTS, Table.ANSWERS,
                                                              Table.JUDGE_VERDICTS, Table.QUESTION_COMPLETENESS)),
        unmeasured, store.read_arm_json(arm, ArmJson.RETRIEVAL_SUMMARY)["per_query"])
    flow = store.read_table(arm, Table.FAILURE_FLOW)
    branches: dict[str, list[str]] = {}
    for r in flow.iter_rows(named=True):
        branches.setdefault(r["query_id"], []).append(f"{r['request_id']}:{r['branch']}")
    binding = store.read_arm_json(arm, ArmJson.BINDING)
    return values, {"branches": branches, "flow": flow_index(flow.iter_rows(named=True)),
                    "evaluation_digest": binding["evaluation_digest"],
                    "config": lab.arms[arm].model_dump(mode="json"), "reasons": reasons}


KINDS = cmp.KINDS


def arm_title(lab: Lab, arm: str) -> str:
    """The arm's name as every table shows it: an oracle or counterfactual arm says so."""
    use = lab.arms[arm].label_use
    return arm if use == "none" else f"{arm} ({use})"


def compare_two(lab: Lab, a: str, b: str, allow_label_drift: bool = False, plots_dir: Path | None = None,
                headline: str = "completeness", seed: int = 0, allow_instrument_drift: bool = False,
                p_adjust: str | None = None, alpha: float | None = None, allow_era_change: bool = False) -> dict:
    """The paired per-case comparison of arms a and b (refused across label versions, across request judges
    or judge prompts, and across representation eras when chunking or the prompt changed too, unless allowed). p-values are adjusted over the report's metrics (p_adjust and alpha default
    to the arms file's); each metric names, per arm, why its undefined cases were not measured."""
    va, ctx_a = case_values(lab, a)
    vb, ctx_b = case_values(lab, b)
    drift = cmp.label_drift(ctx_a["evaluation_digest"], ctx_b["evaluation_digest"], allow_label_drift)
    instruments = {arm: lab.store.read_arm_json(arm, ArmJson.REQUEST_COMPLETENESS)["request_judge"] for arm in (a, b)}
    instrument_drift = cmp.instrument_drift(a, instruments[a], b, instruments[b], allow_instrument_drift)
    # The representations each arm's indexes were built from, as recorded when it ran.
    reps = {arm: imported.representations_record(lab, arm) for arm in (a, b)}
    era = eras.era_change(a, reps[a], b, reps[b], cmp.attribute_changes(ctx_a["config"], ctx_b["config"]),
                          allow_era_change)
    report = cmp.compare_arms(a, b, va, vb, KINDS, headline, seed=seed,
                              p_adjust=p_adjust or lab.arms.p_adjust,
                              alpha=lab.arms.alpha if alpha is None else alpha).to_json()
    for m, row in report["metrics"].items():
        # Why the dropped cases were undefined, per arm (a case absent from an arm is a missing row there).
        row["not_measured"] = {
            side: dict(sorted(Counter(ctx["reasons"][m].get(c, MISSING_ROW) for c in (va[m].keys() | vb[m].keys())
                                      if values[m].get(c) is None).items()))
            for side, ctx, values in (("a", ctx_a, va), ("b", ctx_b, vb))}
    for row in report["catastrophic"]:
        row["branches_a"] = ctx_a["branches"].get(row["case_id"], [])
        row["branches_b"] = ctx_b["branches"].get(row["case_id"], [])
    # The failure flow as a diff: per request, its branch in a against b, each cell listing its requests and cases.
    report["transitions"] = transitions(ctx_a["flow"], ctx_b["flow"])
    # The headline's value per case in each arm (None: undefined there), so a case list can show every delta.
    report["per_case"] = {c: {"a": va[headline].get(c), "b": vb[headline].get(c)}
                          for c in sorted(va[headline].keys() | vb[headline].keys())}
    changed = cmp.attribute_changes(ctx_a["config"], ctx_b["config"])
    report["changed_parameters"] = {k: list(v) for k, v in changed.items()}
    report["token_latency"] = {
        "mean_input_tokens": {"a": report["metrics"]["input_tokens"]["mean_a"],
                              "b": report["metrics"]["input_tokens"]["mean_b"],
                              "delta": report["metrics"]["input_tokens"]["mean_delta"]},
        "p95_latency_s": {"a": _p95(va["latency_s"].values()), "b": _p95(vb["latency_s"].values())},
        "attributed_to": sorted(changed),
    }
    sets_a = {r["query_id"]: frozenset(r["admitted_chunk_ids"]) for r in
              supply.arm_contexts(ArmInputs(lab, a)).iter_rows(named=True)}
    sets_b = {r["query_id"]: frozenset(r["admitted_chunk_ids"]) for r in
              supply.arm_contexts(ArmInputs(lab, b)).iter_rows(named=True)}
    report["supply"] = {a: supply_numbers(lab, a), b: supply_numbers(lab, b)}
    same = sum(1 for q in sets_a if sets_b.get(q) == sets_a[q])
    # Evidence position: when every admitted set is identical, any change is the order's doing.
    report["admitted_sets"] = {"identical": same, "questions": len(sets_a), "position_only": same == len(sets_a)}
    report["headline"] = headline
    report["label_drift"] = drift
    report["instruments"] = instruments
    report["instrument_drift"] = instrument_drift  # the differing fields, when --allow-instrument-drift let it pass
    report["representation_era"] = era
    report["label_use"] = {a: lab.arms[a].label_use, b: lab.arms[b].label_use}
    report["completeness_measured"] = {
        arm: {k: lab.store.read_arm_json(arm, ArmJson.REQUEST_COMPLETENESS)[k]
              for k in ("requests_measured", "requests_total", "questions_measured", "questions_total")}
        for arm in (a, b)}
    report["evaluation_digests"] = {a: ctx_a["evaluation_digest"], b: ctx_b["evaluation_digest"]}
    if plots_dir is not None:
        from rag_ttc_assets.adapters import plots

        pairs = cmp.paired(va[headline], vb[headline])
        report["plots"] = {
            "delta_histogram": str(plots.delta_histogram(plots_dir / f"{a}--{b}-deltas.png",
                                                         [y - x for _, x, y in pairs], headline, a, b)),
            "buckets": str(plots.bucket_table_plot(plots_dir / f"{a}--{b}-buckets.png", report["buckets"])),
        }
    return report


def compare_pairs(lab: Lab, plots_dir: Path | None = None) -> tuple[list[dict], list[str]]:
    """Every pair in `comparisons` compared, its p-values adjusted over every pair and metric of the sweep (the arms
    file's p_adjust and alpha); and the pairs refused (missing tables, instrument or label drift, a representation
    era change with chunking or the prompt), with why."""
    reports, skipped = [], []
    for a, b in lab.arms.comparisons:
        try:
            reports.append(compare_two(lab, a, b, plots_dir=plots_dir))
        except (FileNotFoundError, cmp.InstrumentDriftError, cmp.LabelDriftError, eras.EraChangeError) as e:
            skipped.append(f"{a} vs {b}: {e}")  # refused pairs are reported, never compared
    return cmp.adjust_reports(reports, lab.arms.p_adjust, lab.arms.alpha), skipped


def write_comparisons(lab: Lab, out_dir: Path) -> dict:
    """What `arm_comparisons` writes into `out_dir`: every pair's comparison JSON and its case report, the sweep
    curves of every family and the failure-flow bars of every arm; returns the reports, the pairs refused, one
    summary row per pair, the pages and plots written."""
    import json

    from rag_ttc_assets.adapters import plots
    from rag_ttc_assets.report import files as report

    out_dir.mkdir(parents=True, exist_ok=True)
    reports, skipped = compare_pairs(lab, plots_dir=out_dir)
    summary, pages = [], {}
    for rep in reports:
        (out_dir / f"{rep['a']}--{rep['b']}.json").write_text(json.dumps(rep, indent=1, default=str))
        # The clickable case report of the pair, made from the JSON just written.
        pages[f"{rep['a']}--{rep['b']}"] = report.write_pair(lab, rep, report.pair_path(out_dir, rep["a"], rep["b"]))
        m = rep["metrics"]
        summary.append({"a": arm_title(lab, rep["a"]), "b": arm_title(lab, rep["b"]), "n": rep["n"],
                        "valid_delta": m["valid"]["mean_delta"], "valid_p": m["valid"]["p_value"],
                        "valid_p_adj": m["valid"]["p_adjusted"],
                        "completeness_delta": m["completeness"]["mean_delta"],
                        "completeness_paired": paired_text(m["completeness"]),
                        "completeness_p": m["completeness"]["p_value"],
                        "completeness_p_adj": m["completeness"]["p_adjusted"],
                        "significant": significant_metrics(rep), "catastrophic": len(rep["catastrophic"]),
                        "representations": era_text(rep)})
    sweeps = {}
    for family in lab.arms.families:
        parameter, rows = sweep_rows(lab, family)
        if rows:
            sweeps[family] = str(plots.sweep_curves(out_dir / f"sweep-{family}.png", parameter, rows,
                                                    ["valid", "recall_10", "requests_supported", "omitted_chunks"],
                                                    f"sweep {family}: {parameter}"))
    return {"reports": reports, "skipped": skipped, "summary": summary, "pages": pages, "sweeps": sweeps,
            "flow_png": flow_bars(lab, lab.arms.names, out_dir / "failure-flow-all-arms.png")}


def era_text(report: dict) -> str:
    """"same", or the representation fields that differ between the arms (and whether chunking or prompt did too)."""
    era = report["representation_era"]
    if not era["differ"]:
        return "same"
    return f"differ: {', '.join(era['differ'])}" + (f"; with {', '.join(era['confounded'])}" if era["confounded"]
                                                       else "")


def significant_metrics(report: dict) -> str:
    """The metrics whose difference is significant on the adjusted p-value, or "none"."""
    return ", ".join(m for m, v in report["metrics"].items() if v.get("significant")) or "none"


def paired_text(metric: dict) -> str:
    """"7 of 11 (a: abstained 2; b: abstained 1, judge_error 1)": paired cases, of how many, why the rest dropped."""
    why = "; ".join(f"{side}: {reasons_text(r)}" for side, r in (metric.get("not_measured") or {}).items() if r)
    return f"{metric['n']} of {metric['of']}" + (f" ({why})" if why else "")


def p_adjust_text(report: dict) -> str:
    p = report["p_adjust"]
    return f"{p['method']}: {p['method_name']}; alpha {p['alpha']}; over {p['m']} p-values ({p['family']})"


def supply_numbers(lab: Lab, arm: str) -> dict:
    """The second seed's four numbers beside the per-case deltas: supply mode, hit rate over all cases (the lookup
    flow's for tool arms), answers contradicting the gold evidence, mean input tokens and p95 latency per request."""
    flow = lab.store.read_arm_json(arm, ArmJson.FAILURE_FLOW)
    judge = lab.store.read_arm_json(arm, ArmJson.JUDGE_SUMMARY)
    answers = lab.store.read_table(arm, Table.ANSWERS)
    hit = flow.get("lookup_flow") or flow["hit_rate"]
    return {"supply": lab.arms[arm].supply, "hit_rate": hit["hit_rate"], "hits": hit["hits"], "cases": hit["cases"],
            "contradicts_gold": judge["contradicts_gold"],
            "mean_input_tokens": float(answers["input_tokens"].fill_null(0).mean() or 0.0),
            "p95_latency_s": _p95(answers["latency_s"].to_list()),
            # Over the same cases as the hit rate (answerable questions), as the run summary counts them.
            "lookup_calls": (flow.get("lookup_flow") or {}).get("lookup_calls", 0)}


def _p95(values: Iterable[float | None]) -> float | None:
    xs = sorted(v for v in values if v is not None)
    return xs[int(0.95 * (len(xs) - 1))] if xs else None


def sweep_rows(lab: Lab, family: str) -> tuple[str, list[dict]]:
    """One row per materialized member of a family: the swept parameter and the curves' values."""
    spec = lab.arms.family_specs[family]
    rows = []
    for arm in lab.arms.family(family):
        try:
            contract = lab.store.read_arm_json(arm, ArmJson.CONTRACT_SUMMARY)
            retrieval = lab.store.read_arm_json(arm, ArmJson.RETRIEVAL_SUMMARY)["summary"]
            admission = lab.store.read_arm_json(arm, ArmJson.ADMISSION_SUMMARY)
            diag = lab.store.read_arm_json(arm, ArmJson.REQUEST_COMPLETENESS)
        except FileNotFoundError:
            continue
        value = getattr(lab.arms[arm], spec.parameter)
        if not isinstance(value, (int, float)):
            value = spec.values.index(value) if value in spec.values else len(rows)  # categorical: its position
        rows.append({"arm": arm, spec.parameter: value, "valid": contract["valid"],
                     "recall_10": retrieval["recall_10"], "requests_supported": diag["requests_supported"],
                     "omitted_chunks": admission["omitted_chunks"],
                     "admission_coverage": admission["admission_coverage"]})
    return spec.parameter, rows


def flow_bars(lab: Lab, arms: list[str], path: Path) -> Path | None:
    from rag_ttc_assets.adapters import plots

    flows = {}
    for arm in arms:
        try:
            s = lab.store.read_arm_json(arm, ArmJson.FAILURE_FLOW)
        except FileNotFoundError:
            continue
        flows[arm_title(lab, arm)] = {b: s[b] for b in FLOW_BRANCHES}
    return plots.failure_flow_bars(path, flows, list(FLOW_BRANCHES)) if flows else None
