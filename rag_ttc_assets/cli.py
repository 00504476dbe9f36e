"""`rag-ttc`: the lab from a terminal. It runs the same Dagster definitions the UI runs."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import sys
import uuid
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from rag_ttc_assets.adapters.store import ArmJson, Table  # noqa: E402
# The stages `run --stage` selects, derived from the asset registry (the stage names alone import no dagster).
from rag_ttc_assets.defs.graph import STAGES  # noqa: E402
from rag_ttc_assets.lab import PROJECT_ROOT  # noqa: E402


class CliError(Exception):
    pass


def _lab(args):
    from rag_ttc_assets.lab import Lab

    # Flags win over the environment; exporting them lets the Dagster definitions see the same lab.
    for flag, env in (("arms_file", "RAG_TTC_ARMS"), ("datasets_dir", "RAG_TTC_DATASETS"), ("home", "RAG_TTC_HOME")):
        value = getattr(args, flag, None)
        if value:
            os.environ[env] = str(Path(value).resolve())
    return Lab.from_env()


def _print(obj, as_json: bool, text: str) -> None:
    print(json.dumps(obj, indent=2, sort_keys=False, default=str) if as_json else text)


def cmd_validate(args) -> int:
    from rag_ttc_assets.adapters.files import load_dataset
    from rag_ttc_assets.core.dataset import DatasetError, dataset_counts

    try:
        ds = load_dataset(Path(args.dir))
    except DatasetError as e:
        if args.json:
            print(json.dumps({"valid": False, "problems": [str(p) for p in e.problems]}, indent=2))
        else:
            print(str(e), file=sys.stderr)
        return 1
    counts = dataset_counts(ds)
    text = (f"valid: {args.dir}: " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in counts.items())
            + f"; corpus {ds.corpus_digest[:19]}…")
    _print({"valid": True, "corpus_digest": ds.corpus_digest, **counts}, args.json, text)
    return 0


def cmd_arms(args) -> int:
    lab = _lab(args)
    arms = lab.arms
    names = arms.family(args.family) if args.family else arms.names
    if args.json:
        print(json.dumps({n: arms[n].model_dump(mode="json") for n in names}, indent=2))
        return 0
    cols = ["arm", "chunk_runes", "overlap_runes", "retrieval", "retrieve_k", "evidence_k", "context_runes",
            "evidence_order", "supply", "prompt", "generator", "judge"]
    rows = []
    for n in names:
        c = arms[n]
        supply = c.supply if c.supply != "tool" else (
            f"tool top{c.lookup_top_n}" + (" +index" if c.title_index else "") + (" +check" if c.citation_check else ""))
        rows.append([n, c.chunk_runes, c.overlap_runes, c.retrieval, c.retrieve_k, c.evidence_k, c.context_runes,
                     c.evidence_order, supply, c.prompt, c.generator.model, c.judge.model])
    print(_table(cols, rows))
    if not args.family:
        print("\nfamilies: " + "; ".join(f"{f}: {', '.join(m)}" for f, m in arms.families.items()))
    return 0


def _table(cols, rows) -> str:
    cells = [[str(c) for c in cols]] + [[_fmt(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cols))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4f}"
    return "-" if v is None else str(v)


def _dagster_home() -> Path:
    home = Path(os.environ.get("DAGSTER_HOME") or PROJECT_ROOT / ".dagster_home")
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists() and (PROJECT_ROOT / "dagster.yaml").exists():
        shutil.copy(PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def _open_instance(home: Path):
    """The Dagster instance of `home`, its storages created one process at a time: two `rag-ttc run`s starting
    on a fresh DAGSTER_HOME could otherwise both stamp its sqlite schema, and alembic then finds two heads."""
    from dagster import DagsterInstance

    from rag_ttc_assets.adapters.store import file_lock

    with file_lock(home / ".rag_ttc-instance.lock"):
        return DagsterInstance.get()  # creates (and on a fresh home, stamps) every storage


def materialize_arms(arm_names: list[str], stage: str, force: bool = False, verbose: bool = False) -> dict[str, dict]:
    """Materialize `stage` for each arm through the project's job, recorded in DAGSTER_HOME.

    Only what Dagster calls stale runs, with the reasons it does not see (see `defs.staleness.to_run`); `force`
    runs every asset of the stage. stderr gets one line per step as it finishes and the progress of long
    stages; `verbose` adds Dagster's own event log."""
    from dagster import AssetKey

    from rag_ttc_assets.defs.progress import reporting
    from rag_ttc_assets.defs.registry import CHECK_SPECS
    from rag_ttc_assets.defs.staleness import to_run
    from rag_ttc_assets.definitions import JOB, build_definitions
    from rag_ttc_assets.lab import Lab
    from rag_ttc_assets.terminal import StepEvents, Terminal

    home = _dagster_home()
    lab = Lab.from_env()
    defs = build_definitions(lab)
    job = defs.resolve_job_def(JOB)
    steps = [*STAGES[stage], *(s.fn.__name__ for s in CHECK_SPECS)]
    # Dagster's lines share stderr with ours in verbose mode: no live bar to tear, progress as plain lines.
    terminal = Terminal(sys.stderr, live=False if verbose else None, arm_width=max(map(len, arm_names)),
                        step_width=max(map(len, steps)))
    out = {}
    with _open_instance(home) as instance:
        reap_dead_runs(instance)
        for arm in arm_names:
            why = to_run(instance, lab, defs.resolve_asset_graph(), arm, STAGES[stage], force)
            todo = list(why)
            if not todo:
                out[arm] = {"run_id": None, "ran": [], "why": {}}
                continue
            # The run's id chosen here, so its events reach the terminal from the first one (RUN_START).
            run_id = str(uuid.uuid4())
            instance.add_event_listener(run_id, StepEvents(terminal, arm, failed="FAILED" if verbose else
                                                           "FAILED; rag-ttc run --verbose prints its traceback"))
            with reporting(run_id, terminal):
                result = job.execute_in_process(partition_key=arm, instance=instance,
                                                asset_selection=[AssetKey(a) for a in todo],
                                                raise_on_error=False, tags=_cli_tags(), run_id=run_id,
                                                run_config=_console_config(verbose))
            if not result.success:
                raise CliError(f"arm {arm!r}: run {result.run_id} failed:\n{_failure_text(result)}")
            out[arm] = {"run_id": result.run_id, "ran": todo, "why": why}
    return out


def _console_config(verbose: bool) -> dict:
    """Dagster's console logger: every event (DEBUG) when verbose; else none. Its errors are a failing step's
    traceback through Dagster's frames and one line per step not executed after it; the step lines and the
    failure's message (`_failure_text`) say what a user acts on, and the event log in DAGSTER_HOME, which the UI
    reads, keeps every event either way."""
    return {"loggers": {"console": {"config": {"log_level": "DEBUG" if verbose else "CRITICAL"}}}}


def _cli_tags() -> dict[str, str]:
    return {"rag_ttc/source": "cli", "rag_ttc/pid": str(os.getpid()), "rag_ttc/host": socket.gethostname()}


def reap_dead_runs(instance) -> list[str]:
    """Runs this CLI executed in a process that has since died (killed): nothing monitors an in-process
    run, so it stays STARTED for ever and keeps its `provider` pool slot, and every later provider-bound
    step would wait for that slot for ever. Mark them canceled and free their slots."""
    from dagster import DagsterRunStatus, RunsFilter

    from rag_ttc_assets.stages.run_record import _alive

    reaped = []
    for run in instance.get_runs(RunsFilter(statuses=[DagsterRunStatus.STARTED], tags={"rag_ttc/source": "cli"})):
        pid, host = run.tags.get("rag_ttc/pid"), run.tags.get("rag_ttc/host")
        if pid is None or host != socket.gethostname() or _alive(int(pid), host):
            continue
        instance.report_run_canceled(run, message=f"the rag-ttc process ({pid}) ended before the run did")
        if instance.event_log_storage.supports_global_concurrency_limits:
            instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        reaped.append(run.run_id)
    return reaped


def _failure_text(result) -> str:
    lines = []
    for ev in result.all_events:
        if ev.is_step_failure:
            err = ev.step_failure_data.error
            msg = err.cause.message if err and err.cause else (err.message if err else "")
            lines.append(f"  step {ev.step_key}: {msg.strip()}")
    return "\n".join(lines) or "  (no step failure recorded)"


def arm_report(lab, arm: str, stage: str = "all") -> dict:
    """The summaries of `arm` up to and including `stage`, read from the store."""
    store = lab.store
    report: dict = {"label_use": lab.arms[arm].label_use}
    upto = set(STAGES[stage])
    try:
        r = store.read_arm_json(arm, ArmJson.RETRIEVAL_SUMMARY)["summary"]
        report["retrieval"] = {k: r[k] for k in ("recip_rank", "recall_10", "ndcg_cut_10", "success_10",
                                                 "evaluated", "undefined")}
        report["admission"] = store.read_arm_json(arm, ArmJson.ADMISSION_SUMMARY)
        report["representations"] = store.read_arm_json(arm, ArmJson.REPRESENTATIONS)
    except FileNotFoundError:
        pass
    try:
        if "contract_summary" not in upto:
            raise FileNotFoundError
        c = store.read_arm_json(arm, ArmJson.CONTRACT_SUMMARY)
        report["contract"] = {k: c.get(k, 0) for k in ("total", "valid", "parse_failures", "contract_failures",
                                                       "contract_failure_reasons", "abstentions", "escalated",
                                                       "provider_faults", "mean_answer_chars")}
        report["supply"] = lab.arms[arm].supply
        from rag_ttc_assets.stages.generation import calls_summary

        report["calls"] = {"answers": calls_summary(store.read_table(arm, Table.ANSWERS))}
        report["generator_model"] = lab.arms[arm].generator.model
    except FileNotFoundError:
        pass
    try:
        if "judge_summary" not in upto:
            raise FileNotFoundError
        j = store.read_arm_json(arm, ArmJson.JUDGE_SUMMARY)
        report["judge"] = {k: j[k] for k in ("judged", "abstained", "invalid", "judge_failures", "mean_faithfulness",
                                             "mean_relevance", "contradicts_gold", "gold_judged", "judge_model",
                                             "same_model_as_generator", "offline_baseline_judge")}
        # Each mean with its denominator and the reasons the other rows were not measured.
        report["judge"].update({k: j[k] for n in ("faithfulness", "relevance")
                                for k in (f"{n}_measured", f"{n}_of", f"{n}_not_measured")})
        report.setdefault("calls", {})["judge"] = {"provider_calls": j["provider_calls"], "cache_hits": j["cache_hits"]}
        report["judge_measurement"] = j.get("judge_measurement")
        rj = store.read_arm_json(arm, ArmJson.REQUEST_JUDGE_SUMMARY)
        report["request_judge"] = rj
        report["calls"]["request_judge"] = {"provider_calls": rj["provider_calls"], "cache_hits": rj["cache_hits"]}
    except FileNotFoundError:
        pass
    try:
        if "failure_flow" not in upto:
            raise FileNotFoundError
        c = store.read_arm_json(arm, ArmJson.REQUEST_COMPLETENESS)
        f = store.read_arm_json(arm, ArmJson.FAILURE_FLOW)
        report["completeness"] = c
        report["flow"] = {k: v for k, v in f.items() if k != "accounting"}
        report["flow"]["accounting"] = f["accounting"]
    except FileNotFoundError:
        pass
    if "calls" in report:
        parts = report["calls"].values()
        report["calls"].update({k: sum(p.get(k, 0) for p in parts)
                                for k in ("provider_calls", "cache_hits", "input_tokens", "output_tokens")})
    return report


def cmd_run(args) -> int:
    lab = _lab(args)
    names = list(args.arms)
    if args.family:
        names += [n for n in lab.arms.family(args.family) if n not in names]
    if not names:
        raise CliError("name at least one arm, or a family with --family")
    for n in names:
        lab.arms[n]
    if not args.verbose:
        # The libraries' own chatter, which says nothing the step lines do not: the model-loading bar of
        # transformers and LanceDB's warning that a new index table has no dataset yet. Set values win.
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("LANCEDB_LOG", "error")
    runs = materialize_arms(names, args.stage, args.force, verbose=args.verbose)
    reports = {n: {**arm_report(lab, n, args.stage), **runs[n]} for n in names}
    if args.json:
        print(json.dumps({"arms": reports}, indent=2, default=str))
        return 0
    for n, rep in reports.items():
        print(f"{n}: " + (f"ran {len(rep['ran'])} asset(s) in run {rep['run_id']}" if rep["ran"]
                          else "up to date, nothing to run"))
    print()
    print(run_tables(reports))
    return 0


def run_tables(reports: dict[str, dict]) -> str:
    """The per-arm summary: retrieval and admission, then contract, then judge and calls. An oracle or
    counterfactual arm is named as such in every table."""
    out = []
    rows = []
    reports = {(n if rep.get("label_use", "none") == "none" else f"{n} ({rep['label_use']})"): rep
               for n, rep in reports.items()}
    for n, rep in reports.items():
        r, a = rep.get("retrieval", {}), rep.get("admission", {})
        rows.append([n, r.get("recip_rank"), r.get("recall_10"), r.get("ndcg_cut_10"), r.get("success_10"),
                     r.get("evaluated"), r.get("undefined"), a.get("queries_with_omissions"),
                     a.get("mean_admitted_chunks"), a.get("mean_used_runes"), a.get("admission_coverage")])
    out.append(_table(["arm", "recip_rank", "recall_10", "ndcg_cut_10", "success_10", "evaluated", "undefined",
                       "omissions", "admitted", "used_runes", "adm_coverage"], rows))
    reps = {n: rep["representations"] for n, rep in reports.items() if rep.get("representations")}
    if len({r["era"] for r in reps.values()}) > 1 or any(r.get("builder_model") for r in reps.values()):
        from rag_ttc_assets.core.eras import describe

        out.append(representation_table(reps, describe))
    if any("contract" in rep for rep in reports.values()):
        rows = []
        for n, rep in reports.items():
            c = rep.get("contract", {})
            a = rep.get("calls", {}).get("answers", {})
            rows.append([n, rep.get("generator_model"), c.get("total"), c.get("valid"), c.get("parse_failures"),
                         c.get("contract_failures"), c.get("abstentions"),
                         sum(c.get("provider_faults", {}).values()) if c else None, c.get("mean_answer_chars"),
                         a.get("provider_calls"), a.get("cache_hits")])
        out.append(_table(["arm", "generator", "total", "valid", "parse_failures", "contract_failures",
                           "abstentions", "provider_faults", "mean_chars", "provider_calls", "cache_hits"], rows))
    if any("judge" in rep for rep in reports.values()):
        rows = []
        for n, rep in reports.items():
            # The judge's own calls (the generator's are in the contract table above).
            j, calls = rep.get("judge", {}), rep.get("calls", {}).get("judge", {})
            rows.append([n, j.get("judge_model"), j.get("same_model_as_generator"), j.get("judged"),
                         j.get("abstained"), j.get("invalid"), j.get("mean_faithfulness"), _of(j, "faithfulness"),
                         j.get("mean_relevance"), _of(j, "relevance"), _why(j.get("faithfulness_not_measured")),
                         j.get("contradicts_gold"), calls.get("provider_calls"), calls.get("cache_hits")])
        out.append("judge (each mean over the rows it measured, of all answer rows; not_measured: why the others "
                   "were not):\n"
                   + _table(["arm", "judge", "same_model", "judged", "abstained", "invalid", "faithfulness",
                             "faith_n", "relevance", "rel_n", "not_measured", "contradicts_gold", "provider_calls",
                             "cache_hits"], rows))
    if any(rep.get("judge_measurement") for rep in reports.values()):
        def share(m: dict | None) -> str:
            return "-" if not m or not m["of"] else f"{m['flagged']}/{m['of']} ({m['share']:.3f})"

        rows = [[n, share(jm["sensitivity"]["gold_judge"]), share(jm["sensitivity"]["request_judge"]),
                 share(jm["false_alarms"]["gold_judge"]), share(jm["false_alarms"]["request_judge"])]
                for n, rep in reports.items() if (jm := rep.get("judge_measurement"))]
        out.append("the judges measured (sensitivity: answers repeating a planted falsehood flagged as contradicting; "
                   "false alarms: answers quoting the gold evidence verbatim flagged as contradicting):\n"
                   + _table(["arm", "gold_judge_sensitivity", "request_judge_sensitivity", "gold_judge_false_alarms",
                             "request_judge_false_alarms"], rows))
    if any("completeness" in rep for rep in reports.values()):
        from rag_ttc_assets.core.flow import FLOW_BRANCHES

        rows, flows, judges = [], [], set()
        for n, rep in reports.items():
            c, f = rep.get("completeness", {}), rep.get("flow", {})
            inst = c.get("request_judge") or {}
            judges.add((inst.get("model"), (inst.get("prompt_digest") or "")[:15]))
            hit = f.get("hit_rate") or {}
            rows.append([n, f"{c.get('requests_measured')}/{c.get('requests_total')}",
                         _why(c.get("requests_not_measured")), c.get("requests_answered"),
                         c.get("requests_supported"), c.get("mean_completeness"), _of(c, "completeness"),
                         f"{c.get('questions_complete')}/{c.get('questions_measured')}",
                         c.get("self_reported_answered"), c.get("self_report_unattributed"), c.get("overclaimed"),
                         c.get("underclaimed"), c.get("correct_abstentions"), hit.get("hit_rate"),
                         f"{hit.get('measured')}/{hit.get('of')}" if hit else None])
            flows.append([n, *[f.get(b) for b in FLOW_BRANCHES]])
        out.append("request completeness, by the request judge (answered and supported count measured requests; "
                   "completeness is the mean over the questions whose every request was measured, completeness_n "
                   "of all; self_reported is the generator's own claim):\n"
                   + _table(["arm", "measured", "not_measured", "answered", "supported", "completeness",
                             "completeness_n", "q_complete", "self_reported", "unattributed", "overclaimed",
                             "underclaimed", "correct_abst", "hit_rate", "hit_rate_n"], rows)
                   + "\nrequest judge: " + "; ".join(f"{m} (prompt {d}…)" for m, d in sorted(judges, key=str))
                   + ("" if len(judges) == 1 else "  [instrument differs between arms: not comparable]"))
        out.append(_table(["arm", *FLOW_BRANCHES], flows))
    if any("calls" in rep and "answers" in rep["calls"] for rep in reports.values()):
        from rag_ttc_assets.core.supply import LOOKUP_BRANCHES

        rows = []
        for n, rep in reports.items():
            a = rep.get("calls", {}).get("answers", {})
            lf = rep.get("flow", {}).get("lookup_flow") or {}
            rows.append([n, rep.get("supply"), a.get("mean_input_tokens"), a.get("p95_latency_s"),
                         rep.get("contract", {}).get("escalated"), lf.get("lookup_calls"),
                         *[lf.get(b) for b in LOOKUP_BRANCHES], lf.get("hit_rate"), lf.get("wrong_on_misses")])
        out.append(_table(["arm", "supply", "mean_input_tokens", "p95_latency_s", "escalated", "lookups",
                           *LOOKUP_BRANCHES, "lookup_hit_rate", "wrong_on_misses"], rows))
    from rag_ttc_assets.core.summaries import is_offline_baseline

    if any(is_offline_baseline(str(rep.get("generator_model", ""))) for rep in reports.values()):
        out.append("local/extractive and local/lexical are offline baselines (extractive answerer, lexical judge), "
                   "not language models.")
    if any((rep.get("representations") or {}).get("offline_baseline") for rep in reports.values()):
        out.append("local/contextual is an offline baseline representation builder (each chunk's context from its "
                   "document's own title, headings and first sentence), not a language model.")
    return "\n\n".join(out)


def representation_table(reps: dict[str, dict], describe) -> str:
    """Who built each arm's representations, and how many rows were not built (indexed as chunk text alone)."""
    return "representations (the text indexed and embedded; the generator sees the chunk text alone):\n" + _table(
        ["arm", "representation", "builder", "not_built", "statuses", "provider_calls", "cache_hits"],
        [[n, r["representation"], describe(r), r["not_built"],
          " ".join(f"{k} {v}" for k, v in (r.get("statuses") or {}).items()), r["provider_calls"], r["cache_hits"]]
         for n, r in reps.items()])


def _of(summary: dict, name: str) -> str | None:
    """"37/50": a mean's rows measured of all rows, from its <name>_measured and <name>_of keys."""
    if summary.get(f"{name}_of") is None:
        return None
    return f"{summary[f'{name}_measured']}/{summary[f'{name}_of']}"


def _why(not_measured: dict | None) -> str | None:
    from rag_ttc_assets.core.measured import reasons_text

    return None if not_measured is None else reasons_text(not_measured)


def _lookup_line(label: str, lk: dict) -> str:
    rate = "n/a" if lk["hit_rate"] is None else f"{lk['hit_rate']:.4f}"
    return (f"{label}: {lk['correct_document']} of {lk['cases']} cases returned every governing document "
            f"(hit rate {rate}); wrong document {lk['wrong_document']}, empty {lk['empty_results']}")


def cmd_hitrate(args) -> int:
    lab = _lab(args)
    lab.arms[args.arm]
    materialize_arms([args.arm], "retrieval")
    # What admitted_contexts wrote: the hit rates at each boundary (a tool arm's: its lookups' and the oracle's).
    admission = lab.store.read_arm_json(args.arm, ArmJson.ADMISSION_SUMMARY)
    report = {"arm": args.arm, **admission["hit_rates"],
              "retrieval": arm_report(lab, args.arm, "retrieval")["retrieval"]}
    admitted = report["admitted"]["question_hit_rate"]
    if "lookup" in admission:
        report["lookup"], report["oracle_lookup"] = admission["lookup"], admission["oracle_lookup"]
        admitted = report["lookup"]["hit_rate"]
    failed = args.min_hit_rate is not None and (admitted is None or admitted < args.min_hit_rate)
    report["gate"] = None if args.min_hit_rate is None else {"min_hit_rate": args.min_hit_rate, "passed": not failed}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{args.arm}: {report['questions']} questions with gold evidence, {report['requests']} requests")
        if "lookup" not in report:  # a tool arm admits nothing before it answers: no boundary table
            print(_table(["boundary", "question_hits", "question_hit_rate", "request_hits", "request_hit_rate"],
                         [[b, report[b]["question_hits"], report[b]["question_hit_rate"], report[b]["request_hits"],
                           report[b]["request_hit_rate"]] for b in ("ranked", "selected", "admitted")]))
        if "lookup" in report:
            print(_lookup_line("lookups of the question text, split as the product sends them (no generation)",
                               report["lookup"]))
            print(_lookup_line("oracle: the annotator's request texts as queries, not something the product sends",
                               report["oracle_lookup"]))
        if report["gate"]:
            what = "lookup" if "lookup" in report else "admitted"
            print(f"gate: {what} hit rate {admitted:.4f} {'>=' if not failed else '<'} {args.min_hit_rate}")
    return 1 if failed else 0


def cmd_inspect(args) -> int:
    from rag_ttc_assets.stages.inspect import InspectError, inspect_question, to_markdown

    lab = _lab(args)
    lab.arms[args.arm]
    try:
        view = inspect_question(lab, args.arm, args.question_id)
    except InspectError as e:
        raise CliError(str(e)) from None
    print(json.dumps(view, indent=2, default=str) if args.json else to_markdown(view))
    return 0


def compare_all() -> dict:
    """Materialize `arm_comparisons` (every pair in `comparisons`, every family's sweep plot) in DAGSTER_HOME."""
    from rag_ttc_assets.definitions import build_definitions

    home = _dagster_home()
    job = build_definitions().resolve_job_def("comparisons_job")
    with _open_instance(home) as instance:
        result = job.execute_in_process(instance=instance, raise_on_error=False, tags={"rag_ttc/source": "cli"})
        if not result.success:
            raise CliError(f"arm_comparisons: run {result.run_id} failed:\n{_failure_text(result)}")
        meta = result.get_asset_materialization_events()[0].materialization.metadata
    return {k: getattr(v, "value", v) for k, v in meta.items() if not k.startswith("sweep_") or k == "sweep_plots"
            and k != "failure_flow_plot"} | {"run_id": result.run_id}


def cmd_compare(args) -> int:
    from rag_ttc_assets.core.compare import InstrumentDriftError, LabelDriftError
    from rag_ttc_assets.core.eras import EraChangeError
    from rag_ttc_assets.stages.diagnostics import arm_title, compare_two, p_adjust_text, paired_text

    lab = _lab(args)
    if args.all:
        if args.p_adjust or args.alpha is not None:
            # arm_comparisons is an asset: it reads its settings from the arms file, as the UI does.
            raise CliError(f"compare --all adjusts as the arms file says ({lab.arms_file}: p_adjust "
                           f"{lab.arms.p_adjust}, alpha {lab.arms.alpha}); set `p_adjust:` and `alpha:` there")
        out = compare_all()
        if args.json:
            print(json.dumps(out, indent=2, default=str))
        else:
            print(out["comparisons"])
            print(f"\np-values adjusted by {out['p_adjust']}; significant: adjusted p <= alpha")
            print("skipped: " + ("; ".join(out["skipped"]) or "none"))
            print("sweep plots: " + ", ".join(f"{k}: {v}" for k, v in out["sweep_plots"].items()))
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
        rep = compare_two(lab, args.a, args.b, args.allow_label_drift, plots_dir=out_dir, headline=args.headline,
                          allow_instrument_drift=args.allow_instrument_drift, p_adjust=args.p_adjust,
                          alpha=args.alpha, allow_era_change=args.allow_era_change)
    except (LabelDriftError, InstrumentDriftError, EraChangeError) as e:
        raise CliError(str(e)) from None
    if args.json:
        print(json.dumps(rep, indent=2, default=str))
        return 0
    print(f"{arm_title(lab, args.b)} vs {arm_title(lab, args.a)}: {rep['n']} paired cases; changed: "
          + ", ".join(f"{k} {v[0]} -> {v[1]}" for k, v in rep["changed_parameters"].items()))
    inst = rep["instruments"][args.a]
    print(f"request judge: {inst['model']} (prompt {inst['prompt']}, {inst['prompt_digest'][:19]}…)"
          + (f"; INSTRUMENT DRIFT allowed ({', '.join(rep['instrument_drift'])} differ: "
             f"{args.b} {rep['instruments'][args.b]['model']}, {rep['instruments'][args.b]['prompt_digest'][:19]}…)"
             if rep["instrument_drift"] else "; the same for both arms"))
    print(rep["representation_era"]["line"] + (" (--allow-era-change)" if rep["representation_era"]["allowed"] else ""))
    print("completeness measured: " + "; ".join(
        f"{arm} {m['requests_measured']} of {m['requests_total']} requests, {m['questions_measured']} of "
        f"{m['questions_total']} questions" for arm, m in rep["completeness_measured"].items()))
    for arm, use in rep["label_use"].items():
        if use == "oracle":
            print(f"{arm} is an ORACLE arm: its generator was shown the evaluation's request annotation; its numbers "
                  "are a diagnostic upper bound, not a deployable system's")
    sets = rep["admitted_sets"]
    print(f"admitted sets identical in {sets['identical']} of {sets['questions']} questions"
          + (" (only the evidence order differs)" if sets["position_only"] else ""))
    rows = [[m, v["mean_a"], v["mean_b"], v["mean_delta"], v["ci_low"], v["ci_high"], v["p_value"],
             v["p_adjusted"], "yes" if v["significant"] else ("-" if v["significant"] is None else "no"), v["test"],
             v["gains"], v["losses"], v["ties"], paired_text(v)] for m, v in rep["metrics"].items()]
    print(_table(["metric", "mean_a", "mean_b", "delta", "ci_low", "ci_high", "p_value", "p_adj", "significant",
                  "test", "gains", "losses", "ties", "paired (why the others were dropped)"], rows))
    print(f"p-values adjusted by {p_adjust_text(rep)}; significant: adjusted p <= alpha")
    print(f"\nHow the {rep['headline']} mean is made (per-case deltas by size):")
    print(_table(["bucket", "count", "sum"], [[b["label"], b["count"], b["sum"]] for b in rep["buckets"]
                                              if b["count"]]))
    print(f"\nCatastrophic cases ({len(rep['catastrophic'])}):")
    if rep["catastrophic"]:
        print(_table(["case", "a", "b", "delta", f"branches in {args.a}", f"branches in {args.b}"],
                     [[c["case_id"], c["a"], c["b"], c["delta"], " ".join(c["branches_a"]),
                       " ".join(c["branches_b"])] for c in rep["catastrophic"]]))
    t = rep["token_latency"]
    print(f"\nmean input tokens {t['mean_input_tokens']['a']:.1f} -> {t['mean_input_tokens']['b']:.1f}; "
          f"p95 latency {t['p95_latency_s']['a']:.3f}s -> {t['p95_latency_s']['b']:.3f}s; "
          f"attributed to: {', '.join(t['attributed_to']) or 'nothing (same config)'}")
    sup = rep.get("supply") or {}
    if sup:
        # The second seed's four numbers, none of them a mean of quality: per-case deltas (above), hit rate over
        # all cases, contradictions of the gold evidence, tokens.
        print("\nsupply (hit rate over all cases; the lookup flow's for tool arms):")
        print(_table(["arm", "supply", "hit_rate", "hits", "cases", "contradicts_gold", "mean_input_tokens",
                      "p95_latency_s", "lookup_calls"],
                     [[arm, v["supply"], v["hit_rate"], v["hits"], v["cases"], v["contradicts_gold"],
                       v["mean_input_tokens"], v["p95_latency_s"], v["lookup_calls"]] for arm, v in sup.items()]))
    if rep.get("plots"):
        print("plots: " + ", ".join(rep["plots"].values()))
    return 0


def cmd_runs(args) -> int:
    from rag_ttc_assets.stages.run_record import list_runs

    lab = _lab(args)
    if args.arm:
        lab.arms[args.arm]
    with _open_instance(_dagster_home()) as instance:
        reap_dead_runs(instance)

        def status_of(run_id):
            run = instance.get_run_by_id(run_id)
            return run.status.value if run else None

        runs = list_runs(lab, args.arm, status_of)
    if args.json:
        print(json.dumps(runs, indent=2))
        return 0
    rows = [[r["arm"], r["status"], r["started_at"], r["counts"].get("answer_rows"), r["counts"].get("valid"),
             sum(r["partial_rows"].values()) if r["partial_rows"] else None, r["run_dir"]] for r in runs]
    print(_table(["arm", "status", "started_at", "answer_rows", "valid", "partial_rows", "run_dir"], rows)
          if rows else "no run records yet (rag-ttc run ARM writes one per materialization)")
    return 0


def cmd_metrics(args) -> int:
    from rag_ttc_assets.adapters.trec_eval import evaluate
    from rag_ttc_assets.core.metrics import DEFAULT_MEASURES, MeasureError
    from rag_ttc_assets.core.trec_files import parse_qrels, parse_run

    qrels = parse_qrels(_read(args.qrels), args.qrels)
    run = parse_run(_read(args.run), args.run)
    try:
        result = evaluate(qrels, run, args.measures or DEFAULT_MEASURES, complete=args.complete)
    except MeasureError as e:
        raise CliError(f"-m: {e}") from None
    out = {"measures": result.measures, "evaluated": result.evaluated,
           "undefined": len(result.undefined_query_ids), "undefined_query_ids": result.undefined_query_ids}
    if args.per_query:
        out["per_query"] = result.per_query
    print(json.dumps(out, indent=2, sort_keys=True))
    return 0


def _read(path: str) -> str:
    p = Path(path)
    if not p.is_file():
        raise CliError(f"{path}: file not found")
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise CliError(f"{path}: not valid UTF-8 at byte {e.start}") from None


def cmd_import_beir(args) -> int:
    from rag_ttc_assets.adapters.store import atomic_write_bytes
    from rag_ttc_assets.core.beir import BEIR_FILES, convert
    from rag_ttc_assets.core.dataset import sha256_digest

    src, dest = Path(args.src), Path(args.dest)
    texts = {name: _read(str(src / name)) for name in (*BEIR_FILES, f"qrels/{args.split}.tsv")}
    corpus, evaluation, report = convert(texts, str(src), args.split, args.drop_missing)
    cbytes = (json.dumps(corpus, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    evaluation = {"corpus_digest": sha256_digest(cbytes), **evaluation}
    # The corpus first, the evaluation last: a folder with only a corpus is visibly incomplete.
    atomic_write_bytes(dest / "corpus.json", cbytes)
    atomic_write_bytes(dest / "evaluation.json",
                       (json.dumps(evaluation, ensure_ascii=False, indent=1) + "\n").encode("utf-8"))
    out = {"dest": str(dest), "documents": report.documents, "questions": report.questions,
           "judgments": report.judgments, "dropped_missing": report.dropped_missing,
           "corpus_digest": evaluation["corpus_digest"]}
    _print(out, args.json, f"imported {report.documents} documents, {report.questions} questions, "
                           f"{report.judgments} judgments ({report.dropped_missing} dropped: missing document) "
                           f"into {dest}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--arms-file", help="arms file (default: $RAG_TTC_ARMS or ./arms.yaml)")
    common.add_argument("--datasets-dir", help="datasets folder (default: $RAG_TTC_DATASETS or ./datasets)")
    common.add_argument("--home", help="artifact store folder (default: $RAG_TTC_HOME or ./.rag_ttc)")
    p = argparse.ArgumentParser(prog="rag-ttc", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("validate", help="check a dataset folder", description="Check a dataset folder: digest "
                       "binding, unique IDs, targets and evidence documents exist, quotes are verbatim.")
    s.add_argument("dir")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_validate)

    s = sub.add_parser("arms", parents=[common], help="list arms with their effective parameters")
    s.add_argument("--family")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_arms)

    s = sub.add_parser("run", parents=[common], help="materialize arms through the Dagster definitions",
                       description="Materialize the named arms (partitions) up to and including a stage, "
                                   "recorded in DAGSTER_HOME so the runs appear in the UI.")
    s.add_argument("arms", nargs="*")
    s.add_argument("--family")
    s.add_argument("--stage", choices=list(STAGES), default="all")
    s.add_argument("--force", action="store_true", help="re-run every asset of the stage, not only stale ones")
    s.add_argument("--verbose", action="store_true",
                   help="also print Dagster's full event log to stderr (by default: one line per step, and "
                        "progress with rate and ETA on long steps)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_run)

    s = sub.add_parser("inspect", parents=[common], help="one question of one arm, in the seed's reading order")
    s.add_argument("arm")
    s.add_argument("question_id")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_inspect)

    s = sub.add_parser("compare", parents=[common], help="paired per-case comparison of two arms")
    s.add_argument("a", nargs="?")
    s.add_argument("b", nargs="?")
    s.add_argument("--all", action="store_true",
                   help="materialize arm_comparisons: every pair in `comparisons` and every family's sweep plot")
    s.add_argument("--headline", default="completeness",
                   choices=["completeness", "valid", "faithfulness", "recip_rank", "recall_10", "ndcg_cut_10"])
    s.add_argument("--allow-instrument-drift", action="store_true",
                   help="compare arms whose request judge or its prompt differ (the report says so)")
    s.add_argument("--allow-label-drift", action="store_true",
                   help="compare arms whose evaluation digests differ (labels revised between runs)")
    s.add_argument("--allow-era-change", action="store_true",
                   help="compare arms whose representations come from another builder or era while their chunking "
                        "or prompt changed too (the report says the difference is not attributable to either)")
    s.add_argument("--p-adjust", choices=["holm", "bh"],
                   help="adjust the p-values over the report's metrics by Holm's step-down or Benjamini-Hochberg "
                        "(default: the arms file's p_adjust, holm); --all reads the arms file")
    s.add_argument("--alpha", type=float, help="significance level of the adjusted p-values (default: the arms "
                                               "file's alpha, 0.05)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_compare)

    s = sub.add_parser("hitrate", parents=[common], help="retrieval hit rate and admission coverage, no generation",
                       description="Hit rate over all cases against the gold labels at each boundary (ranked, "
                                   "selected by evidence_k, admitted under the context budget), without generating "
                                   "an answer: cheap enough for CI whenever the corpus or chunking changes.")
    s.add_argument("arm")
    s.add_argument("--min-hit-rate", type=float, help="exit 1 when the admitted question hit rate is below this")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_hitrate)

    s = sub.add_parser("runs", parents=[common], help="list run records (one per materialization) with status")
    s.add_argument("arm", nargs="?")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_runs)

    s = sub.add_parser("metrics", help="trec_eval measures of a TREC run against TREC qrels",
                       description="trec_eval's own measures (through pytrec_eval) of a TREC run against TREC "
                                   "qrels, the same code as the retrieval_summary asset. Queries without a "
                                   "relevant judgment, and run queries absent from the qrels, are undefined: "
                                   "listed in undefined_query_ids, never scored 0.")
    s.add_argument("--qrels", required=True)
    s.add_argument("--run", required=True)
    s.add_argument("-m", "--measure", action="append", dest="measures", metavar="MEASURE",
                   help="a trec_eval measure, repeatable, as trec_eval -m spells it: map, P.5,10, ndcg_cut.10, "
                        "recall.1000, or a set (official, all_trec); default: "
                        "num_q, recip_rank, recall, ndcg_cut and success at 5,10,20,100")
    s.add_argument("-q", "--per-query", action="store_true", help="also print each evaluated query (trec_eval -q)")
    s.add_argument("-c", "--complete", action="store_true",
                   help="average over every qrels query, one missing from the run scoring 0 (trec_eval -c)")
    s.set_defaults(fn=cmd_metrics)

    s = sub.add_parser("import-beir", help="convert a BEIR folder into corpus.json + evaluation.json")
    s.add_argument("src")
    s.add_argument("dest")
    s.add_argument("--split", default="test")
    s.add_argument("--drop-missing", action="store_true", help="drop qrels naming missing documents (counted)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_import_beir)
    from rag_ttc_assets import bench, sweep
    from rag_ttc_assets.report import cli as report

    sweep.add_parser(sub)
    bench.add_parser(sub)
    report.add_parser(sub, common)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from rag_ttc_assets.core.arms import ArmsError
    from rag_ttc_assets.core.beir import BeirError
    from rag_ttc_assets.core.dataset import DatasetError
    from rag_ttc_assets.core.trec_files import TrecFormatError
    from rag_ttc_assets.lab import LabPathError

    try:
        return args.fn(args)
    except (CliError, ArmsError, DatasetError, BeirError, TrecFormatError, LabPathError, FileNotFoundError) as e:
        print(f"rag-ttc: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
