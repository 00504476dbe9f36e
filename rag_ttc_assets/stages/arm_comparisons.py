"""Paired per-case comparisons between arms (core.case_comparison over each arm's tables), the supply numbers beside
them, and a sweep family's rows; computed only (the files: diagnosis/flow_plots_stage.py, report/comparison_files.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rag_ttc_assets.adapters.store import ArmJson, ArtifactStore, Table
from rag_ttc_assets.core import case_comparison as cmp
from rag_ttc_assets.core import compare_guards, compare_metrics
from rag_ttc_assets.core import eras
from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.arms_file import Arms
from rag_ttc_assets.core.artifacts import fields_not_read
from rag_ttc_assets.core.compare_records import NotMeasured, PairReport
from rag_ttc_assets.core.request_derivation import DerivationDriftError, derivation_drift, describe
from rag_ttc_assets.core.measured import MISSING_ROW, NO_GOLD_QUOTES
from rag_ttc_assets.core.transitions import flow_index, transitions
from rag_ttc_assets.stages import arm_supply
from rag_ttc_assets.imported import import_stage
from rag_ttc_assets.diagnosis.diagnostics_stage import rows_by_query
from rag_ttc_assets.stages.reports import labels_used, requests_derived

# the declared column names (core.tables)
OUT, FLOW = Table.REQUEST_OUTCOMES.c, Table.FAILURE_FLOW.c
CTX, ANS = Table.ADMITTED_CONTEXTS.c, Table.ANSWERS.c


@dataclass(frozen=True)
class ArmContext:
    """What a comparison reads of one arm beside its per-case values: each question's requests with their flow
    branch (`branches`, "request:branch"), the flow indexed by request (core.flow_diff.flow_index), the evaluation
    digest of the labels it was scored against, its flat configuration, and `reasons`: metric -> case -> why the
    value is undefined, for every undefined one."""

    branches: dict[str, list[str]]
    flow: dict[str, tuple[str, str]]  # request_id -> (query_id, branch)
    evaluation_digest: str | None
    config: dict[str, Any]
    reasons: dict[str, dict[str, str]]


def case_values(store: ArtifactStore, arm: str,
                cfg: ArmConfig) -> tuple[dict[str, dict[str, float | None]], ArmContext]:
    """Per-case values of each compared metric for one arm (core.compare_metrics.case_values over its tables), and the
    arm's context for comparisons (ArmContext); `cfg`: the arm's configuration."""
    # question -> the judge status of its first unmeasured request (no_gold_quotes: its support was not measured)
    unmeasured: dict[str, str] = {}
    outcomes = list(store.read_table(arm, Table.REQUEST_OUTCOMES).iter_rows(named=True))
    for r in outcomes:
        if not r[OUT.measured]:
            unmeasured.setdefault(r[OUT.query_id], r[OUT.judge_status])
        elif r[OUT.case] == NO_GOLD_QUOTES:
            unmeasured.setdefault(r[OUT.query_id], NO_GOLD_QUOTES)
    values, reasons = compare_metrics.case_values(
        *(rows_by_query(store.read_table(arm, t)) for t in (Table.CONTRACT_RESULTS, Table.ANSWERS,
                                                             Table.JUDGE_VERDICTS, Table.QUESTION_COMPLETENESS)),
        unmeasured, store.read_arm_json(arm, ArmJson.RETRIEVAL_SUMMARY)["per_query"],
        [{k: r[getattr(OUT, k)] for k in ("query_id", "measured", "judge_status", "coverage")} for r in outcomes])
    flow = store.read_table(arm, Table.FAILURE_FLOW)
    branches: dict[str, list[str]] = {}
    for r in flow.iter_rows(named=True):
        branches.setdefault(r[FLOW.query_id], []).append(f"{r[FLOW.request_id]}:{r[FLOW.branch]}")
    return values, ArmContext(branches=branches, flow=flow_index(flow.iter_rows(named=True)),
                              evaluation_digest=labels_used(store, arm)["evaluation_digest"],
                              config=cfg.model_dump(mode="json"), reasons=reasons)


KINDS = compare_metrics.KINDS


def arm_title(store: ArtifactStore, arm: str, cfg: ArmConfig) -> str:
    """The arm's name as every table shows it: an oracle or counterfactual arm says so, and so does an arm whose
    requests were derived from gold answers (and by what)."""
    use, derived = cfg.label_use, requests_derived(store, arm)
    return arm + (f" ({use})" if use != "none" else "") + (f" (requests derived: {describe(derived)})"
                                                            if derived else "")


@dataclass(frozen=True)
class ComparedArm:
    """One arm as a comparison reads it from the store (read_compared_arm): its per-case values and context
    (case_values), its request completeness summary as written (its request judge: the instrument compared), the
    representations its indexes were built from (as recorded when it ran), each question's admitted chunk set, and
    its supply numbers (supply_numbers)."""

    arm: str
    cfg: ArmConfig
    values: dict[str, dict[str, float | None]]
    context: ArmContext
    completeness: dict[str, Any]
    representations: dict[str, Any]
    admitted: dict[str, frozenset[str]]  # question -> its admitted chunk ids
    supply: dict[str, Any]


@dataclass(frozen=True)
class ComparedPair:
    """Two arms as compare_two reads them (read_pair), and the arms file's p-value adjustment and level."""

    a: ComparedArm
    b: ComparedArm
    p_adjust: str
    alpha: float


def read_compared_arm(store: ArtifactStore, arm: str, cfg: ArmConfig) -> ComparedArm:
    """What a comparison reads of `arm` (its configuration `cfg`) from the store: FileNotFoundError names the first
    summary or table not written."""
    values, context = case_values(store, arm, cfg)
    completeness = store.read_arm_json(arm, ArmJson.REQUEST_COMPLETENESS)
    representations = import_stage.representations_record(store, arm, cfg)
    contexts = arm_supply.supplied_contexts(cfg, store.read_table(arm, Table.ADMITTED_CONTEXTS),
                                            store.read_table(arm, Table.ANSWERS) if cfg.supply == "tool" else None)
    admitted = {r[CTX.query_id]: frozenset(r[CTX.admitted_chunk_ids]) for r in contexts.iter_rows(named=True)}
    return ComparedArm(arm=arm, cfg=cfg, values=values, context=context, completeness=completeness,
                       representations=representations, admitted=admitted,
                       supply=supply_numbers(store, arm, cfg))


def read_pair(store: ArtifactStore, arms: Arms, a: str, b: str) -> ComparedPair:
    """Arms a and b of the arms file `arms` as compare_two reads them, with the file's p_adjust and alpha."""
    return ComparedPair(a=read_compared_arm(store, a, arms[a]), b=read_compared_arm(store, b, arms[b]),
                        p_adjust=arms.p_adjust, alpha=arms.alpha)


def compare_two(pair: ComparedPair, allow_label_drift: bool = False,
                headline: str = "completeness", seed: int = 0, allow_instrument_drift: bool = False,
                p_adjust: str | None = None, alpha: float | None = None,
                allow_era_change: bool = False) -> PairReport:
    """The paired per-case comparison of arms a and b (read_pair) (refused across label versions, across request
    judges or judge prompts, and across representation eras when chunking or the prompt changed too, unless
    allowed). p-values are adjusted over the report's metrics (p_adjust and alpha default to the arms file's); each
    metric names, per arm, why its undefined cases were not measured. Its plots: diagnosis.flow_plots_stage.pair_plots."""
    side_a, side_b = pair.a, pair.b
    a, b = side_a.arm, side_b.arm
    va, ctx_a = side_a.values, side_a.context
    vb, ctx_b = side_b.values, side_b.context
    drift = compare_guards.label_drift(ctx_a.evaluation_digest, ctx_b.evaluation_digest, allow_label_drift)
    instruments = {side.arm: side.completeness["request_judge"] for side in (side_a, side_b)}
    instrument_drift = compare_guards.instrument_drift(a, instruments[a], b, instruments[b], allow_instrument_drift)
    derivation_drift(a, instruments[a].get("requests_derived"), b, instruments[b].get("requests_derived"))
    # The representations each arm's indexes were built from, as recorded when it ran.
    reps = {side.arm: side.representations for side in (side_a, side_b)}
    era = eras.era_change(a, reps[a], b, reps[b],
                          compare_guards.attribute_changes(ctx_a.config, ctx_b.config), allow_era_change)
    core = cmp.compare_arms(a, b, va, vb, KINDS, headline, seed=seed, p_adjust=p_adjust or pair.p_adjust,
                            alpha=pair.alpha if alpha is None else alpha)
    # Why the dropped cases were undefined, per arm (a case absent from an arm is a missing row there).
    not_measured = {m: NotMeasured(**{
        side: dict(sorted(Counter(ctx.reasons[m].get(c, MISSING_ROW) for c in (va[m].keys() | vb[m].keys())
                                  if values[m].get(c) is None).items()))
        for side, ctx, values in (("a", ctx_a, va), ("b", ctx_b, vb))}) for m in core.metrics}
    branches = {row.case_id: (ctx_a.branches.get(row.case_id, []), ctx_b.branches.get(row.case_id, []))
                for row in core.catastrophic}
    # A field one arm never reads (an imported arm's generator, retrieval, admission ...: its source's own) is no
    # parameter a difference can be attributed to; the supply change says the systems differ.
    unread = {side.arm: fields_not_read(side.cfg) for side in (side_a, side_b)}
    skip = unread[a] | unread[b]
    changed = compare_guards.attribute_changes({k: v for k, v in ctx_a.config.items() if k not in skip},
                                               {k: v for k, v in ctx_b.config.items() if k not in skip})
    tokens = core.metrics["input_tokens"]
    sets_a, sets_b = side_a.admitted, side_b.admitted
    same = sum(1 for q in sets_a if sets_b.get(q) == sets_a[q])
    return cmp.pair_report(
        core, not_measured, branches,
        # The failure flow as a diff: per request, its branch in a against b, each cell listing its requests and cases.
        transitions=transitions(ctx_a.flow, ctx_b.flow),
        # The headline's value per case in each arm (None: undefined there), so a case list can show every delta.
        per_case={c: {"a": va[headline].get(c), "b": vb[headline].get(c)}
                  for c in sorted(va[headline].keys() | vb[headline].keys())},
        # Completeness read graded per case (each question's mean request coverage), for its delta plot.
        per_case_graded={c: {"a": va["graded_completeness"].get(c), "b": vb["graded_completeness"].get(c)}
                         for c in sorted(va["graded_completeness"].keys() | vb["graded_completeness"].keys())},
        changed_parameters={k: list(v) for k, v in changed.items()},
        not_read={arm: sorted(fields) for arm, fields in unread.items() if fields},
        token_latency={"mean_input_tokens": {"a": tokens.mean_a, "b": tokens.mean_b, "delta": tokens.mean_delta},
                       "p95_latency_s": {"a": _p95(va["latency_s"].values()), "b": _p95(vb["latency_s"].values())},
                       "attributed_to": sorted(changed)},
        supply={side.arm: side.supply for side in (side_a, side_b)},
        # Evidence position: when every admitted set is identical, any change is the order's doing.
        admitted_sets={"identical": same, "questions": len(sets_a), "position_only": same == len(sets_a)},
        headline=headline, label_drift=drift, instruments=instruments,
        instrument_drift=instrument_drift,  # the differing fields, when --allow-instrument-drift let it pass
        representation_era=era, label_use={side.arm: side.cfg.label_use for side in (side_a, side_b)},
        completeness_measured={
            side.arm: {k: side.completeness.get(k) for k in (
                "requests_measured", "requests_total", "questions_measured", "questions_total", "requests_answered",
                "completeness_measured", "completeness_not_measured", "requests_answered_share",
                "graded_completeness", "requests_graded")}
            for side in (side_a, side_b)},
        evaluation_digests={a: ctx_a.evaluation_digest, b: ctx_b.evaluation_digest})


def compare_pairs(store: ArtifactStore, arms: Arms) -> tuple[list[PairReport], list[str]]:
    """Every pair in the arms file's `comparisons` compared, its p-values adjusted over every pair and metric of the
    sweep (the file's p_adjust and alpha); and the pairs refused (missing tables, instrument or label drift, a
    representation era change with chunking or the prompt), with why."""
    reports: list[PairReport] = []
    skipped: list[str] = []
    for a, b in arms.comparisons:
        try:
            reports.append(compare_two(read_pair(store, arms, a, b)))
        except (FileNotFoundError, compare_guards.InstrumentDriftError, compare_guards.LabelDriftError,
                eras.EraChangeError, DerivationDriftError) as e:
            skipped.append(f"{a} vs {b}: {e}")  # refused pairs are reported, never compared
    return cmp.adjust_reports(reports, arms.p_adjust, arms.alpha), skipped


def supply_numbers(store: ArtifactStore, arm: str, cfg: ArmConfig) -> dict:
    """The second seed's four numbers beside the per-case deltas: supply mode, hit rate over all cases (the lookup
    flow's for tool arms), answers contradicting the gold evidence, mean input tokens and p95 latency per request."""
    flow = store.read_summary(arm, ArmJson.FAILURE_FLOW)
    judge = store.read_summary(arm, ArmJson.JUDGE_SUMMARY)
    answers = store.read_table(arm, Table.ANSWERS)
    hit = flow.lookup_flow or flow.hit_rate
    return {"supply": cfg.supply, "hit_rate": hit.hit_rate, "hits": hit.hits, "cases": hit.cases,
            "contradicts_gold": judge.contradicts_gold,
            # None (not measured) when no answer row recorded its token usage (an imported system's may not).
            "mean_input_tokens": (float(answers[ANS.input_tokens].fill_null(0).mean() or 0.0)
                                  if answers[ANS.input_tokens].null_count() < answers.height else None),
            "p95_latency_s": _p95(answers[ANS.latency_s].to_list()),
            # Over the same cases as the hit rate (answerable questions), as the run summary counts them.
            "lookup_calls": flow.lookup_flow.lookup_calls if flow.lookup_flow else 0}


def _p95(values: Iterable[float | None]) -> float | None:
    xs = sorted(v for v in values if v is not None)
    return xs[int(0.95 * (len(xs) - 1))] if xs else None


def sweep_rows(store: ArtifactStore, arms: Arms, family: str) -> tuple[str, list[dict]]:
    """One row per materialized member of a family (of the arms file's `arms`): the swept parameter and the curves'
    values."""
    spec = arms.family_specs[family]
    rows = []
    for arm in arms.family(family):
        try:
            contract = store.read_summary(arm, ArmJson.CONTRACT_SUMMARY)
            retrieval = store.read_summary(arm, ArmJson.RETRIEVAL_SUMMARY).summary
            admission = store.read_summary(arm, ArmJson.ADMISSION_SUMMARY)
            diag = store.read_summary(arm, ArmJson.REQUEST_COMPLETENESS)
        except FileNotFoundError:
            continue
        value = getattr(arms[arm], spec.parameter)
        if not isinstance(value, (int, float)):
            value = spec.values.index(value) if value in spec.values else len(rows)  # categorical: its position
        rows.append({"arm": arm, spec.parameter: value, "valid": contract.valid,
                     "recall_10": retrieval.recall_10, "requests_supported": diag.requests_supported,
                     # completeness read graded (None where the judge reports no coverage: no point, never 0)
                     "graded_completeness": diag.graded_completeness,
                     "omitted_chunks": admission.omitted_chunks,
                     "admission_coverage": admission.admission_coverage})
    return spec.parameter, rows
