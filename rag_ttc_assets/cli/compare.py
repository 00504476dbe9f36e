"""`rag-ttc compare`: the paired per-case comparison `arm_comparisons` writes, for two arms or all."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from rag_ttc_assets.cli.common import CliError, lab_from_args, text_table
from rag_ttc_assets.cli.materialize import compare_all
from rag_ttc_assets.labelling.accept_records import IndependentDifference, PairedDifference
from rag_ttc_assets.labelling.estimate_records import Estimate, EstimateNLast, JudgeInterval
from rag_ttc_assets.core.compare_guards import InstrumentDriftError, LabelDriftError
from rag_ttc_assets.core.request_derivation import DerivationDriftError, describe
from rag_ttc_assets.core.eras import EraChangeError
from rag_ttc_assets.core.judge_summaries import Instrument
from rag_ttc_assets.labelling.label_drift import LabelDrift
from rag_ttc_assets.core.measured import NO_GOLD_QUOTES, addressed_text, graded_text, not_measured_text
from rag_ttc_assets.report.comparison_text import p_adjust_text, paired_text


class ComparisonsRun(BaseModel):
    """What `compare --all` prints of the `arm_comparisons` run (cli.materialize.compare_all: the materialization's
    metadata values by key, as defs/diagnostics.arm_comparisons writes them, and the run id); the pages' keys
    (`report/<pair>`) and the rest are kept as extra fields, in their order."""

    model_config = ConfigDict(extra="allow", frozen=True)

    comparisons: str  # the pairs' table (markdown)
    skipped: list[str]  # refused pairs, each with why
    p_adjust: str  # how the p-values were adjusted
    sweep_plots: dict[str, Any]  # family -> its sweep plot


def _num(value: float | None, spec: str, unit: str = "") -> str:
    """A number as the line shows it; `not measured` when no case had it (an imported system without token usage)."""
    return "not measured" if value is None else format(value, spec) + unit


def corrected(lab, args) -> PairedDifference | IndependentDifference:
    """B - A in completeness (the share of requests addressed) corrected by the human labels of `--labels`
    (labelling/accept_stage.py): the judge's difference, the people's, and the prediction-powered one with its 95% interval.
    The drift checks were compare_two's."""
    from rag_ttc_assets.cli.accept import labels_path  # late: only with --labels
    from rag_ttc_assets.labelling.accept_stage import corrected_difference, read_correction  # late: polars loads only here

    return corrected_difference(read_correction(lab.store, lab.arms_file, lab.datasets_dir, lab.arms, args.b, args.a,
                                                labels_path(lab, args.labels or None), check_drift=False), 0.05)


def labels_differ(lab, a: str, b: str) -> LabelDrift:
    """The labels that differ between two arms' labels versions (labelling/label_drift_stage.py), read where the lab keeps
    them: each arm's dataset folder and its run records."""
    from rag_ttc_assets.labelling.label_drift_stage import labels_that_differ, read_label_versions  # late: polars

    folders = {arm: (lab.dataset_dir(lab.arms[arm].dataset), lab.runs.of(arm)) for arm in (a, b)}
    return labels_that_differ(read_label_versions(lab.store, folders), a, b)


def _iv(e: Estimate | EstimateNLast | JudgeInterval) -> str:
    return f"{e.mean:+.3f} [{e.low:+.3f}, {e.high:+.3f}]"


def corrected_line(c: PairedDifference | IndependentDifference) -> str:
    """The completeness line's corrected reading, beside the judge's own."""
    return (f"completeness as the share addressed, {c.arm} - {c.baseline} (95% CI): judge {_iv(c.judge)} "
            f"over {c.judge.n} rows; corrected by {c.labelled} human labels (prediction-powered, "
            f"{c.estimator}): {_iv(c.ppi)} ({c.decision}); people alone {_iv(c.human)}; "
            f"labels {c.labels_file}")


def cmd_compare(args) -> int:
    from rag_ttc_assets.stages.arm_comparisons import arm_title, compare_two, read_pair  # late: polars loads only when this runs
    from rag_ttc_assets.diagnosis.flow_plots_stage import pair_plots  # late: polars loads only when this runs
    from rag_ttc_assets.labelling.label_drift_stage import drift_text  # late: polars

    lab = lab_from_args(args)
    if args.all:
        if args.labels is not None:
            raise CliError("--labels corrects one pair: rag-ttc compare A B --labels FILE (or rag-ttc accept)")
        if args.p_adjust or args.alpha is not None:
            # arm_comparisons is an asset: it reads its settings from the arms file, as the UI does.
            raise CliError(f"compare --all adjusts as the arms file says ({lab.arms_file}: p_adjust "
                           f"{lab.arms.p_adjust}, alpha {lab.arms.alpha}); set `p_adjust:` and `alpha:` there")
        out = compare_all()
        if args.json:
            print(json.dumps(out, indent=2, default=str))
        else:
            run = ComparisonsRun.model_validate(out)
            print(run.comparisons)
            print(f"\np-values adjusted by {run.p_adjust}; significant: adjusted p <= alpha")
            print("skipped: " + ("; ".join(run.skipped) or "none"))
            print("sweep plots: " + ", ".join(f"{k}: {v}" for k, v in run.sweep_plots.items()))
            print("case reports: " + (", ".join(v for k, v in out.items() if k.startswith("report/")) or "none"))
        return 0
    if not (args.a and args.b):
        raise CliError("name two arms (rag-ttc compare A B), or use --all for every pair in `comparisons`")
    if args.alpha is not None and not 0 < args.alpha < 1:
        raise CliError(f"--alpha must be in (0, 1), got {args.alpha}")
    for arm in (args.a, args.b):
        lab.arms[arm]
    out_dir = lab.store.comparisons_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        rep = compare_two(read_pair(lab.store, lab.arms, args.a, args.b), args.allow_label_drift,
                          headline=args.headline, allow_instrument_drift=args.allow_instrument_drift,
                          p_adjust=args.p_adjust, alpha=args.alpha, allow_era_change=args.allow_era_change)
    except LabelDriftError as e:  # which labels differ, so a person can judge whether the comparison still holds
        raise CliError(f"{e}\n{drift_text(labels_differ(lab, args.a, args.b), args.a, args.b)}") from None
    except (InstrumentDriftError, EraChangeError, DerivationDriftError) as e:
        raise CliError(str(e)) from None
    if rep.label_drift:
        rep = rep.model_copy(update={"labels_differ": labels_differ(lab, args.a, args.b)})
    if args.labels is not None:  # explicit only: a labelling round in progress never changes compare's numbers
        rep = rep.model_copy(update={"completeness_corrected": corrected(lab, args)})
    rep = pair_plots(rep, out_dir)
    if args.json:
        print(json.dumps(rep.to_json(), indent=2, default=str))
        return 0
    title_a, title_b = (arm_title(lab.store, arm, lab.arms[arm]) for arm in (args.a, args.b))
    print(f"{title_b} vs {title_a}: {rep.n} paired cases; changed: "
          + ", ".join(f"{k} {v[0]} -> {v[1]}" for k, v in rep.changed_parameters.items()))
    if rep.label_drift:
        print(f"LABEL DRIFT allowed (--allow-label-drift): {args.a} and {args.b} were measured on different labels "
              "versions; " + drift_text(rep.labels_differ, args.a, args.b))
    for arm, fields in rep.not_read.items():
        print(f"not compared, the lab's own settings {arm} never reads (its source's): {', '.join(fields)}")
    # Each arm's request judge as its request_completeness.json stores it (core.judge_summaries.Instrument).
    inst, inst_b = (Instrument.model_validate(rep.instruments[arm]) for arm in (args.a, args.b))
    print(f"request judge: {inst.model} (prompt {inst.prompt}, {inst.prompt_digest[:19]}…"
          + (f", rules {inst.rules}" if inst.rules else "") + ")"
          + (f"; INSTRUMENT DRIFT allowed ({', '.join(rep.instrument_drift)} differ: "
             f"{args.b} {inst_b.model}, {inst_b.prompt_digest[:19]}…)"
             if rep.instrument_drift else "; the same for both arms"))
    if derived := inst.requests_derived:
        print(f"requests: derived from gold answers by {describe(derived)}, the same for both arms "
              f"({derived.requests} requests of {derived.questions} questions; labels for the judges only)")
    print(rep.representation_era.line + (" (--allow-era-change)" if rep.representation_era.allowed else ""))
    print("completeness measured: " + "; ".join(
        f"{arm} {m.requests_measured} of {m.requests_total} requests, {m.questions_measured} of "
        f"{m.questions_total} questions"
        # Not measured for a reason the request judge is not (no gold quotes): why, and what was measured.
        + (f" ({not_measured_text(m.completeness_not_measured)}; answered {m.requests_answered} of "
           f"{m.requests_measured} requests)"
           if m.completeness_not_measured and m.completeness_not_measured.get(NO_GOLD_QUOTES) else "")
        for arm, m in rep.completeness_measured.items()))
    # Completeness read two ways, graded first (docs/judges.md), each with its N of M.
    print("completeness read graded (mean coverage) and as the share addressed: " + "; ".join(
        f"{arm} graded {graded_text(m)}, addressed {addressed_text(m)}"
        for arm, m in rep.completeness_measured.items()))
    if rep.completeness_corrected:
        print(corrected_line(rep.completeness_corrected))
    for arm, use in rep.label_use.items():
        if use == "oracle":
            print(f"{arm} is an ORACLE arm: its generator was shown the evaluation's request annotation; its numbers "
                  "are a diagnostic upper bound, not a deployable system's")
    sets = rep.admitted_sets
    print(f"admitted sets identical in {sets.identical} of {sets.questions} questions"
          + (" (only the evidence order differs)" if sets.position_only else ""))
    rows = [[m, v.mean_a, v.mean_b, v.mean_delta, v.ci_low, v.ci_high, v.p_value, v.p_adjusted,
             "yes" if v.significant else ("-" if v.significant is None else "no"), v.test, v.gains, v.losses, v.ties,
             paired_text(v)] for m, v in rep.metrics.items()]
    print(text_table(["metric", "mean_a", "mean_b", "delta", "ci_low", "ci_high", "p_value", "p_adj", "significant",
                  "test", "gains", "losses", "ties", "paired (why the others were dropped)"], rows))
    print(f"p-values adjusted by {p_adjust_text(rep)}; significant: adjusted p <= alpha")
    print(f"\nHow the {rep.headline} mean is made (per-case deltas by size):")
    print(text_table(["bucket", "count", "sum"], [[b.label, b.count, b.sum] for b in rep.buckets if b.count]))
    print(f"\nCatastrophic cases ({len(rep.catastrophic)}):")
    if rep.catastrophic:
        print(text_table(["case", "a", "b", "delta", f"branches in {args.a}", f"branches in {args.b}"],
                     [[c.case_id, c.a, c.b, c.delta, " ".join(c.branches_a), " ".join(c.branches_b)]
                      for c in rep.catastrophic]))
    t = rep.token_latency
    print(f"\nmean input tokens {_num(t.mean_input_tokens.a, '.1f')} -> {_num(t.mean_input_tokens.b, '.1f')}; "
          f"p95 latency {_num(t.p95_latency_s.a, '.3f', 's')} -> {_num(t.p95_latency_s.b, '.3f', 's')}; "
          f"attributed to: {', '.join(t.attributed_to) or 'nothing (same config)'}")
    if rep.supply:
        # The second seed's four numbers, none of them a mean of quality: per-case deltas (above), hit rate over
        # all cases, contradictions of the gold evidence, tokens.
        print("\nsupply (hit rate over all cases; the lookup flow's for tool arms; p95 latency over every answer "
              "row, a cached one as its call recorded it, where `rag-ttc run` counts this run's calls only):")
        print(text_table(["arm", "supply", "hit_rate", "hits", "cases", "contradicts_gold", "mean_input_tokens",
                      "p95_latency_s", "lookup_calls"],
                     [[arm, v.supply, v.hit_rate, v.hits, v.cases, v.contradicts_gold, v.mean_input_tokens,
                       v.p95_latency_s, v.lookup_calls] for arm, v in rep.supply.items()]))
    if rep.plots:
        print("plots: " + ", ".join(rep.plots.values()))
    return 0
