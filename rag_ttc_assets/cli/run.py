"""`rag-ttc run`: materialize arms, then print what their assets wrote (stages.reports.arm_report)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ConfigDict

from rag_ttc_assets.adapters.learned_juror import load_parameters, uses_learned_juror
from rag_ttc_assets.adapters.store import StoreError
from rag_ttc_assets.cli import reply_tables
from rag_ttc_assets.cli.common import CliError, lab_from_args, text_table
from rag_ttc_assets.cli.materialize import materialize_arms
from rag_ttc_assets.core.contract import NO_ANSWER_SPAN, NO_TRACE
from rag_ttc_assets.core.dataset import labels_line
from rag_ttc_assets.core.eras import describe
from rag_ttc_assets.diagnosis.flow import FLOW_BRANCHES, IMPORTED_BRANCHES
from rag_ttc_assets.core.judge_summaries import Share
from rag_ttc_assets.core.measured import not_measured_text, reasons_text
from rag_ttc_assets.core.run_report import (AdmissionView, ArmView, CallsSection, CallsView, CompletenessView,
                                            ContractView, FlowView, InstrumentView, JudgeView, LookupFlowView,
                                            PanelView,
                                            RepresentationsView, RequestJudgeView, RetrievalView)
from rag_ttc_assets.core.summaries import is_offline_baseline
from rag_ttc_assets.core.supply import LOOKUP_BRANCHES
from rag_ttc_assets.defs.graph import STAGES
from rag_ttc_assets.stages.reports import arm_report
from rag_ttc_assets.core.request_derivation import describe as describe_derivation


class ArmFailure(BaseModel):
    """A failed arm's run as cli.materialize.run_failure says it, with its run record and its steps' messages."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    step: str | None
    exception: str | None
    error: str
    failed_steps: list[str | None]
    steps_succeeded: list[str]
    run_record: str
    text: str


class ArmRun(BaseModel):
    """One arm's run as cli.materialize.materialize_arms gives it: its run, the assets it ran and why, its failure."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    run_id: str | None
    ran: list[str]
    why: dict[str, Any]
    failed: ArmFailure | None = None


def _juror_faults(faults: Mapping[str, int]) -> str:
    """A panel's jurors' not-measured counts, the ones that have any: `openai/m 54`, or none."""
    return ", ".join(f"{model} {n}" for model, n in faults.items() if n) or "none"


def cmd_run(args) -> int:
    lab = lab_from_args(args)
    names = list(args.arms)
    if args.family:
        names += [n for n in lab.arms.family(args.family) if n not in names]
    if not names:
        raise CliError("name at least one arm, or a family with --family")
    for n in names:
        lab.arms[n]
    check_learned_juror(lab, names)

    try:
        lab.store.check_writable()  # before anything is materialized: no provider call against a store it cannot use
    except StoreError as e:
        raise CliError(str(e)) from None
    if not args.verbose:
        # The libraries' own chatter, which says nothing the step lines do not: the model-loading bar of
        # transformers and LanceDB's warning that a new index table has no dataset yet. Set values win.
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("LANCEDB_LOG", "error")
    # Every arm runs; one whose run fails is recorded (its run record says the step and the error) and named
    # at the end, and the command exits 1.
    materialized = materialize_arms(names, args.stage, args.force, verbose=args.verbose, keep_going=True)
    runs = {n: ArmRun.model_validate(r) for n, r in materialized.items()}
    failed = {n: r.failed for n, r in runs.items() if r.failed is not None}
    reports = {n: {**arm_report(lab.store, n, lab.arms[n], STAGES[args.stage]).to_json(), **materialized[n]}
               for n in names if n not in failed}
    if args.json:
        print(json.dumps({"arms": reports, "not_finished": {n: {"run_id": runs[n].run_id, **f.model_dump()}
                                                           for n, f in failed.items()}}, indent=2, default=str))
    elif reports:  # with no arm finished, the error below says it all
        for n in names:
            rep = runs[n]
            print(f"{n}: " + (f"FAILED at step {rep.failed.step} in run {rep.run_id} (run record "
                              f"{rep.failed.run_record})" if rep.failed is not None
                              else f"ran {len(rep.ran)} asset(s) in run {rep.run_id}" if rep.ran
                              else "up to date, nothing to run"))
        print()
        print(run_tables(reports))
    if failed:
        raise CliError(not_finished_text(failed, runs, len(names), args.stage))
    return 0


def check_learned_juror(lab, names: list[str]) -> None:
    """Before anything runs: an arm judged by the learned juror (`local/learned`) needs its parameters file readable
    and whole; a bad one is an error naming the file and the field (judging.learned_judge), not a failed run."""
    if not any(uses_learned_juror(lab.arms[n]) for n in names):
        return
    from rag_ttc_assets.judging.learned_judge import LearnedJurorError  # late: numpy, for arms that name it

    try:
        load_parameters()
    except LearnedJurorError as e:
        raise CliError(f"the learned juror (local/learned) cannot run: {e}") from None


def not_finished_text(failed: Mapping[str, ArmFailure | dict[str, Any]], runs: Mapping[str, ArmRun | dict[str, Any]],
                      of: int, stage: str = "all") -> str:
    """Each arm whose run failed: its run and failed steps with the exceptions' messages (`failure_text`); with
    more than one arm asked for, then the list of those not finished, which step, and the command that reruns
    them (the steps that succeeded are not run again, nor the provider calls whose results were cached)."""
    fails = {n: ArmFailure.model_validate(f) for n, f in failed.items()}  # cli.sweep's: as materialize_arms gave
    blocks = [f"arm {n!r}: run {ArmRun.model_validate(runs[n]).run_id} failed:\n{f.text}" for n, f in fails.items()]
    if of > 1:
        blocks.append(f"{len(failed)} of {of} arms not finished (the others finished): "
                      + ", ".join(f"{n} (step {f.step})" if f.step else f"{n} (outside its steps)"
                                  for n, f in fails.items())
                      + "; each one's run record says the step and the error (rag-ttc runs ARM); rerun them with "
                      + "`rag-ttc run " + " ".join(failed) + ("" if stage == "all" else f" --stage {stage}")
                      + "`: the finished steps and the provider results already cached are reused")
    return "\n".join(blocks)


def run_tables(reports: dict[str, dict]) -> str:
    """The per-arm summary: retrieval and admission, then contract, then judge and calls. An oracle or
    counterfactual arm is named as such in every table."""
    out = []
    rows = []

    as_read = {n: ArmView.of(rep) for n, rep in reports.items()}
    views = {n + "".join(f" ({x})" for x in (
        v.label_use if v.label_use != "none" else None,
        f"requests derived: {describe_derivation(v.requests_derived)}" if v.requests_derived else None) if x): v
        for n, v in as_read.items()}
    for n, rep in views.items():
        r, adm = rep.retrieval or RetrievalView(), rep.admission or AdmissionView()
        # No question had targets (evaluated 0): the measures are not 0 but undefined ('-'; `undefined` counts them).
        if r.evaluated == 0:
            r = replace(r, recip_rank=None, recall_10=None, ndcg_cut_10=None, success_10=None)
        rows.append([n, r.recip_rank, r.recall_10, r.ndcg_cut_10, r.success_10,
                     r.evaluated, r.undefined, adm.queries_with_omissions,
                     adm.mean_admitted_chunks, adm.mean_used_runes, adm.admission_coverage])
    out.append(text_table(["arm", "recip_rank", "recall_10", "ndcg_cut_10", "success_10", "evaluated", "undefined",
                       "omissions", "admitted", "used_runes", "adm_coverage"], rows))
    ann = [[n, ret.ann_recall_k, f"{ret.ann_recall_measured}/{ret.ann_recall_of}"]
           for n, rep in views.items() if (ret := rep.retrieval) and ret.approximate]
    if ann:
        out.append("approximate vector index (ann_recall_k: the share of the exact vector list, top retrieve_k, that "
                   "the index's list kept; n: questions measured of all):\n"
                   + text_table(["arm", "ann_recall_k", "ann_recall_n"], ann))
    reps = {n: rep.representations for n, rep in views.items() if rep.representations}
    if len({r.era for r in reps.values()}) > 1 or any(r.builder_model for r in reps.values()):
        out.append(representation_table(reps, describe))
    if any(rep.contract is not None for rep in views.values()):
        rows = []
        # An imported arm's rows: free-text answers (no contract to check) and the questions it never answered
        # (no_trace) or whose trace has no LLM span, each its own column when an arm in the table is imported.
        imported = any(rep.supply == "imported" for rep in views.values())
        for n, rep in views.items():
            has = rep.contract is not None
            con = rep.contract or ContractView()
            a = _calls(rep).answers or CallsView()
            none = con.no_answer or {}  # core.contract.NO_ANSWER's reasons, counted
            rows.append([n, rep.generator_model, con.total, con.valid,
                         *([con.free_text, none.get(NO_TRACE, 0) if has else None,
                            none.get(NO_ANSWER_SPAN, 0) if has else None] if imported else []),
                         con.parse_failures, con.contract_failures, con.abstentions,
                         sum((con.provider_faults or {}).values()) if has else None, con.mean_answer_chars,
                         a.provider_calls, a.cache_hits])
        out.append(text_table(["arm", "generator", "total", "valid",
                               *(["free_text", "no_trace", "no_answer_span"] if imported else []), "parse_failures",
                               "contract_failures", "abstentions", "provider_faults", "mean_chars", "provider_calls",
                               "cache_hits"], rows))
    if any(rep.judge is not None for rep in views.values()):
        rows = []
        for n, rep in views.items():
            # The judge's own calls (the generator's are in the contract table above).
            j, calls = rep.judge or JudgeView(), _calls(rep).judge or CallsView()
            rows.append([n, j.judge_model, j.same_model_as_generator, j.judged,
                         j.abstained, j.invalid,
                         _mean(j.mean_faithfulness, j.faithfulness_measured, j.faithfulness_of,
                               j.faithfulness_not_measured), _of(j.faithfulness_measured, j.faithfulness_of),
                         _mean(j.mean_relevance, j.relevance_measured, j.relevance_of, j.relevance_not_measured),
                         _of(j.relevance_measured, j.relevance_of), _why(j.faithfulness_not_measured),
                         j.contradicts_gold, calls.provider_calls, calls.cache_hits])
        out.append("judge (each mean over the rows it measured, of all answer rows; not_measured: why the others "
                   "were not):\n"
                   + text_table(["arm", "judge", "same_model", "judged", "abstained", "invalid", "faithfulness",
                             "faith_n", "relevance", "rel_n", "not_measured", "contradicts_gold", "provider_calls",
                             "cache_hits"], rows))
    if any(rep.judge_measurement for rep in views.values()):
        def share(m: Share | None) -> str:
            return "-" if not m or not m.of else f"{m.flagged}/{m.of} ({m.share:.3f})"

        rows = [[n, share(jm.sensitivity.gold_judge), share(jm.sensitivity.request_judge),
                 share(jm.false_alarms.gold_judge), share(jm.false_alarms.request_judge)]
                for n, rep in views.items() if (jm := rep.judge_measurement)]
        out.append("the judges measured (sensitivity: answers repeating a planted falsehood flagged as contradicting; "
                   "false alarms: answers quoting the gold evidence verbatim flagged as contradicting):\n"
                   + text_table(["arm", "gold_judge_sensitivity", "request_judge_sensitivity", "gold_judge_false_alarms",
                             "request_judge_false_alarms"], rows))
    if any(rep.completeness is not None for rep in views.values()):
        rows, flows, judges = [], [], set()
        for n, rep in views.items():
            c, f = rep.completeness or CompletenessView(), rep.flow or FlowView()
            inst = c.request_judge or InstrumentView()
            params = inst.params
            judges.add((inst.model, (inst.prompt_digest or "")[:15],
                        (f", params {json.dumps(params, sort_keys=True)}" if params else "")
                        + (f", rules {inst.rules}" if inst.rules else "")
                        + (f", entailment jurors {', '.join(e.jurors)} (prompt {e.prompt_digest[:15]}…)"
                           if (e := inst.entailment) else "")))
            hit = f.hit_rate
            # No request's support measured (no gold quotes): supported is not a count of 0, and the completeness
            # cell says why, with the share of the measured requests answered.
            no_support = c.requests_support_measured == 0 and bool(c.requests_total)
            completeness = _mean(c.mean_completeness, c.completeness_measured, c.completeness_of,
                                 c.completeness_not_measured)
            if no_support and c.requests_answered_share is not None:
                completeness = f"{completeness} (answered {c.requests_answered_share:.4f})"
            rows.append([n, *graded_cells(c), f"{c.requests_measured}/{c.requests_total}",
                         _why(c.requests_not_measured), c.requests_answered,
                         None if no_support else c.requests_supported, completeness,
                         _of(c.completeness_measured, c.completeness_of),
                         f"{c.questions_complete}/{c.questions_measured}",
                         c.self_reported_answered, c.self_report_unattributed, c.overclaimed,
                         c.underclaimed, c.correct_abstentions,
                         None if hit is None else
                         not_measured_text(hit.not_measured or {}) if hit.measured == 0 and hit.of else hit.hit_rate,
                         f"{hit.measured}/{hit.of}" if hit else None])
            flows.append([n, *[f.branches.get(b) for b in FLOW_BRANCHES]])
        out.append("request completeness, by the request judge (graded is the mean coverage of the measured "
                   "requests, graded_n those with a coverage of the measured; addressed is the share of the measured "
                   "requests answered, measured of all; answered and supported count measured requests; "
                   "completeness is the share answered and supported, the mean over the questions whose every "
                   "request was measured, completeness_n of all; self_reported is the generator's own claim):\n"
                   + text_table(["arm", "graded", "graded_n", "addressed", "measured", "not_measured", "answered",
                                 "supported", "completeness",
                             "completeness_n", "q_complete", "self_reported", "unattributed", "overclaimed",
                             "underclaimed", "correct_abst", "hit_rate", "hit_rate_n"], rows)
                   + "\nrequest judge: " + "; ".join(f"{m} (prompt {d}…{p})" for m, d, p in sorted(judges, key=str))
                   + ("" if len(judges) == 1 else "  [instrument differs between arms: not comparable]"))
        # A branch only some arms can reach is a column when an arm in the table can: an imported arm's branches
        # (diagnosis.flow.IMPORTED_BRANCHES) when one is imported, missed_by_ann when one searches an ANN index.
        reach = set(FLOW_BRANCHES) - set(IMPORTED_BRANCHES) - {"missed_by_ann"}
        for rep in views.values():
            reach |= set(IMPORTED_BRANCHES) if rep.flow and rep.flow.supply == "imported" else set()
            reach |= {"missed_by_ann"} if rep.retrieval and rep.retrieval.approximate else set()
        shown = [i for i, b in enumerate(FLOW_BRANCHES) if b in reach or any(row[1 + i] for row in flows)]
        out.append(text_table(["arm", *(FLOW_BRANCHES[i] for i in shown)],
                              [[row[0], *(row[1 + i] for i in shown)] for row in flows]))
        panels = [[n, p.aggregation, ", ".join(p.jurors), f"{p.all_measured}/{p.requests}",
                   _juror_faults(p.juror_not_measured or {}), p.fleiss_kappa, p.krippendorff_alpha,
                   f"{p.jurors_disagree}/{p.requests}", sensitive.line]
                  for n, rep in views.items() if (p := _panel(rep))
                  and (sensitive := rep.flow and rep.flow.judge_sensitive)]
        if panels:
            out.append("request judge panels (all_measured: requests every juror measured, of those any juror was "
                       "asked about; a juror's faults are its not_measured, never a vote, so the panel's verdict is "
                       "the measured jurors'; Fleiss' kappa over the requests every juror measured, Krippendorff's "
                       "alpha over those two or more did; judge-sensitive: requests whose branch depends on which "
                       "juror decided):\n" + text_table(["arm", "aggregation", "jurors", "all_measured",
                                                        "juror_not_measured", "fleiss_kappa", "krippendorff_alpha",
                                                        "jurors_disagree", "flow"], panels))
    # The request judge's calls, tokens and cost, as the generator's (only where it reached a provider).
    judge_calls = [[n, (rj.request_judge or InstrumentView()).model, rj.provider_calls, rj.cache_hits,
                    rj.input_tokens, rj.output_tokens, rj.cost_usd, rj.unpriced_rows]
                   for n, rep in views.items() if (rj := rep.request_judge or RequestJudgeView()).provider_calls
                   and not (rj.request_judge or InstrumentView()).offline_baseline]
    if judge_calls:
        out.append("request judge calls (provider calls, cache hits, tokens and cost in USD of the request judge or "
                   "its jurors; unpriced_rows: rows whose model has no known price, their cost unknown):\n"
                   + text_table(["arm", "request_judge", "provider_calls", "cache_hits", "input_tokens",
                                 "output_tokens", "cost_usd", "unpriced_rows"], judge_calls))
    if any(rep.calls and rep.calls.answers for rep in views.values()):
        rows = []
        for n, rep in views.items():
            calls_a = _calls(rep).answers or CallsView()
            lf = (rep.flow and rep.flow.lookup_flow) or LookupFlowView()
            rows.append([n, rep.supply, calls_a.mean_input_tokens, calls_a.p95_latency_s,
                         rep.contract.escalated if rep.contract else None, lf.lookup_calls,
                         *[lf.branches.get(b) for b in LOOKUP_BRANCHES], lf.hit_rate, lf.wrong_on_misses])
        out.append(text_table(["arm", "supply", "mean_input_tokens", "p95_latency_s", "escalated", "lookups",
                           *LOOKUP_BRANCHES, "lookup_hit_rate", "wrong_on_misses"], rows))

    if reply_tables.wanted(views):
        out.append(reply_tables.reply_tables(views, text_table))

    if any(is_offline_baseline(rep.generator_model or "") for rep in views.values()):
        out.append("local/extractive and local/lexical are offline baselines (extractive answerer, lexical judge), "
                   "not language models.")
    if any("local/coverage" in _jurors(rep) for rep in views.values()):
        out.append("local/coverage is an offline baseline juror (whole-answer content-word coverage), not a language "
                   "model.")
    if any("local/bertscore" in _jurors(rep) for rep in views.values()):
        out.append("local/bertscore is an offline baseline juror (BERTScore recall with the bundled MiniLM's token "
                   "embeddings), not a language model.")
    if any("local/learned" in _jurors(rep) if _jurors(rep) else
           ((rep.completeness and rep.completeness.request_judge) or InstrumentView()).model == "local/learned"
           for rep in views.values()):
        out.append("local/learned is an offline baseline juror (a logistic regression fitted on people's labels over "
                   "the other offline jurors' measurements), not a language model; 0 provider calls.")
    if any(rep.representations and rep.representations.offline_baseline for rep in views.values()):
        out.append("local/contextual is an offline baseline representation builder (each chunk's context from its "
                   "document's own title, headings and first sentence), not a language model.")
    # Labels `rag-ttc labels update` marked stale: out of every measurement above, and said so.
    stale = [f"{n}: {labels_line(rep.labels)}" for n, rep in views.items()
             if rep.labels and rep.labels.get("excluded")]  # core.dataset's label counts (labels_line)
    if stale:
        out.append("\n".join(stale))
    return "\n\n".join(out)


def _calls(rep: ArmView) -> CallsSection:
    return rep.calls or CallsSection()


def _panel(rep: ArmView) -> PanelView | None:
    return rep.request_judge.panel if rep.request_judge else None


def _jurors(rep: ArmView) -> list[str]:
    """A panel's jurors (none for a single request judge)."""
    p = _panel(rep)
    return p.jurors if p else []


def representation_table(reps: dict[str, RepresentationsView], describe) -> str:
    """Who built each arm's representations, and how many rows were not built (indexed as chunk text alone)."""
    return "representations (the text indexed and embedded; the generator sees the chunk text alone):\n" + text_table(
        ["arm", "representation", "builder", "not_built", "statuses", "provider_calls", "cache_hits"],
        [[n, r.representation, describe(r), r.not_built,
          " ".join(f"{k} {v}" for k, v in (r.statuses or {}).items()), r.provider_calls, r.cache_hits]
         for n, r in reps.items()])


def graded_cells(c: CompletenessView) -> list:
    """Completeness read two ways, graded first (docs/judges.md: graded agrees with people best): the mean coverage
    of the measured requests with its N of M (requests_graded of requests_measured), and the share of the measured
    requests addressed. A judge that reports no coverage (an LLM's) grades none: "not measured (no coverage)", not 0."""
    measured = c.requests_measured
    graded: int | float | str | None
    if c.graded_completeness is not None:
        graded = c.graded_completeness
    elif measured:
        graded = GRADED_NOT_MEASURED
    else:
        graded = None
    return [graded, None if measured is None else f"{c.requests_graded}/{measured}", c.requests_answered_share]


GRADED_NOT_MEASURED = "not measured (no coverage)"


def _of(measured: int | None, of: int | None) -> str | None:
    """"37/50": a mean's rows measured of all rows (its summary's <name>_measured and <name>_of)."""
    if of is None:
        return None
    return f"{measured}/{of}"


def _mean(mean, measured: int | None, of: int | None, not_measured: Mapping[str, int] | None):
    """The summary's mean_<name>; where no row was measured (<name>_measured 0 of some), not 0 or a blank but why:
    "not measured: no gold quotes" (core.measured.not_measured_text)."""
    if measured == 0 and of:
        return not_measured_text(not_measured or {})
    return mean


def _why(not_measured: Mapping[str, int] | None) -> str | None:
    return None if not_measured is None else reasons_text(not_measured)
