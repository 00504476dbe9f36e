"""The seed's self-contained run directory (section 2.4), one per materialization, never reused.

`runs/<arm>/<UTC time>-<dagster run id>/` holds copies, not references: the effective config,
the corpus and evaluation bytes, the prompts, the chunks and representations, an index manifest,
every per-query result and the summaries. `status.json` says running, complete, failed or
interrupted; a run killed before it could say so is marked interrupted by the next run, and one
that succeeded without reaching the run record (`rag-ttc run --stage answers`) is marked partial.
"""

from __future__ import annotations

import json
import os
import socket
from datetime import datetime, timezone
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from rag_ttc_assets.adapters.object_store import remote_root
from rag_ttc_assets.adapters.store import ArmJson, ArtifactStore, Built, Table, atomic_write_bytes, atomic_write_json
from rag_ttc_assets.core.arm_summaries import ContractSummary, RetrievalMeasures, RetrievalSummary, problems
from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.dataset import Dataset
from rag_ttc_assets.core.judge_summaries import JudgeSummary, RequestCompleteness, RequestJudgeSummary
from rag_ttc_assets.core.measured import Counts, measured_text, reasons_text
from rag_ttc_assets.core.prompts import Prompt
from rag_ttc_assets.core.run_records import (AnswerRole, ModelAssignments, RunCheck, RunConfig, RunEntry, RunFailure,
                                             RunFolders, RunJudgeSummary, RunStatus)
from rag_ttc_assets.core.representations import RECORD as REPRESENTATION_RECORD
from rag_ttc_assets.core.summaries import generator_label, generator_models
from rag_ttc_assets.core.usage import unused
from rag_ttc_assets.lab import prompt_fields
from rag_ttc_assets.stages import arm_supply
from rag_ttc_assets.stages.generation import calls_summary
from rag_ttc_assets.judging.statement_judge_stage import JUDGE_MEANS
from rag_ttc_assets.stages.retrieval import evidence_pairs
from rag_ttc_assets.stages.row_log import count_rows, remove_rows

if TYPE_CHECKING:
    import polars as pl

STATUS = "status.json"
RUNNING, COMPLETE, INTERRUPTED, FAILED, PARTIAL = "running", "complete", "interrupted", "failed", "partial"
PARTIAL_ANSWERS = "results/generated-answers.partial.jsonl"
PARTIAL_JUDGE = "results/judge-per-query.partial.jsonl"
PARTIAL_REQUEST_JUDGE = "results/request-judgments.partial.jsonl"
# the declared column names (core.tables)
ROWS, CTX = Table.RETRIEVAL_ROWS.c, Table.ADMITTED_CONTEXTS.c
ANS, CON, JV = Table.ANSWERS.c, Table.CONTRACT_RESULTS.c, Table.JUDGE_VERDICTS.c
PARTIALS = (PARTIAL_ANSWERS, PARTIAL_JUDGE, PARTIAL_REQUEST_JUDGE)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def read_status(run_dir: Path) -> RunStatus:
    try:
        fields = json.loads((run_dir / STATUS).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return RunStatus.of({"status": INTERRUPTED, "reason": "no readable status.json"})
    try:
        return RunStatus.of(fields)
    except ValidationError as e:
        return RunStatus.of({"status": INTERRUPTED, "reason": f"no readable status.json: {problems(e)}"})


def _write_status(run_dir: Path, status: RunStatus) -> None:
    atomic_write_json(run_dir / STATUS, status.to_json())


def _alive(pid: int | None, host: str | None) -> bool:
    if not pid or host != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def mark_interrupted(runs: RunFolders, arm: str, current_run_id: str | None = None,
                     status_of: Callable[[str], str | None] | None = None) -> list[Path]:
    """Run directories left `running` by a process that is gone: say so, keep their partial rows.

    `status_of` asks Dagster about the run: a run it recorded as FAILURE is `failed` (a step raised),
    one it recorded as SUCCESS is `partial` (it ran fewer stages), anything else whose process is gone
    is `interrupted` (killed before it could say so).
    """
    marked = []
    root = runs.of(arm)
    for d in sorted(root.glob("*")) if root.is_dir() else []:
        st = read_status(d)
        if st.status != RUNNING or st.dagster_run_id == current_run_id:
            continue
        dagster_status = status_of(st.dagster_run_id) if status_of and st.dagster_run_id else None
        # Steps may run in other processes (multiprocess executor): Dagster's word wins over the pid.
        if dagster_status in ("STARTED", "QUEUED", "STARTING", "NOT_STARTED", "CANCELING"):
            continue
        if dagster_status is None and _alive(st.pid, st.host):
            continue
        rows = {name: count_rows(d / name) for name in PARTIALS}
        status, reason = {
            "FAILURE": (FAILED, "a step failed"),
            # A run of fewer stages ended as asked: not killed, but no run record either.
            "SUCCESS": (PARTIAL, "the run succeeded without its run_record step (a --stage run)"),
        }.get(dagster_status, (INTERRUPTED, "the process ended without completing the run record"))
        _write_status(d, st.with_(status=status, detected_at=_now(), dagster_status=dagster_status, reason=reason,
                                  partial_rows=rows))
        marked.append(d)
    return marked


def open_run(runs: RunFolders, arm: str, dagster_run_id: str, status_of, stage: str) -> Path:
    """The run directory of this Dagster run (created on first use, status running)."""
    root = runs.of(arm)
    for d in root.glob(f"*-{dagster_run_id[:8]}") if root.is_dir() else []:
        st = read_status(d)
        if st.dagster_run_id == dagster_run_id:
            _write_status(d, st.with_(stage=stage, updated_at=_now()))
            return d
    mark_interrupted(runs, arm, dagster_run_id, status_of)
    d = root / f"{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}-{dagster_run_id[:8]}"
    (d / "results").mkdir(parents=True, exist_ok=True)
    _write_status(d, RunStatus.of({"status": RUNNING, "arm": arm, "dagster_run_id": dagster_run_id,
                                   "started_at": _now(), "stage": stage, "pid": os.getpid(),
                                   "host": socket.gethostname()}))
    return d


def record_unfinished(runs: RunFolders, arm: str, dagster_run_id: str, stage: str, status: str, failure: dict) -> Path:
    """The run directory of a run that ended unfinished (the one its steps opened, or a new one when it ended before
    any step opened it) says so: `failed` (a step raised) or `interrupted` (SIGINT, SIGTERM), the step, the
    exception and its message, the steps that succeeded, and the rows its per-row logs kept. Those rows' provider
    results stay in the provider cache, so a rerun serves them from there; the assets that succeeded are not
    stale and are not run again."""
    root = runs.of(arm)
    run_dir = next((d for d in (root.glob(f"*-{dagster_run_id[:8]}") if root.is_dir() else [])
                    if read_status(d).dagster_run_id == dagster_run_id), None)
    if run_dir is None:
        run_dir = root / f"{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}-{dagster_run_id[:8]}"
        (run_dir / "results").mkdir(parents=True, exist_ok=True)
        st = RunStatus.of({"arm": arm, "dagster_run_id": dagster_run_id, "started_at": _now(), "pid": os.getpid(),
                           "host": socket.gethostname()})
    else:
        st = read_status(run_dir)
    f = RunFailure.model_validate(failure)
    step = f.step
    reason = f.reason or (f"step {step} failed" if step else "the run failed outside its steps")
    _write_status(run_dir, st.with_(
        status=status, stage=stage, finished_at=_now(), reason=reason,
        failed_step=step, exception=f.exception, error=f.error, steps_succeeded=f.steps_succeeded,
        partial_rows={name: count_rows(run_dir / name) for name in PARTIALS},
        exit_code=130 if status == INTERRUPTED else 1))
    return run_dir


def run_path(runs: RunFolders, run_dir: str) -> Path:
    """The run directory named by `list_runs`'s `run_dir` (a folder, or a URI in an object store)."""
    return Path(run_dir) if runs.local else remote_root(run_dir)


def list_runs(runs: RunFolders, arm: str | None = None, status_of=None) -> list[RunEntry]:
    arms = [arm] if arm else sorted(p.name for p in runs.root.glob("*") if p.is_dir())
    out = []
    for a in arms:
        mark_interrupted(runs, a, status_of=status_of)
        for d in sorted(runs.of(a).glob("*")):
            st = read_status(d)
            failed = st.status in (FAILED, INTERRUPTED)
            out.append(RunEntry(arm=a, run_dir=str(d), status=st.status, started_at=st.started_at,
                                dagster_run_id=st.dagster_run_id, counts=st.counts or {},
                                partial_rows=st.partial_rows or {},
                                **(dict(failed_step=st.failed_step, exception=st.exception, error=st.error,
                                        reason=st.reason) if failed else {})))
    return out


def _jsonl(path: Path, rows: list[dict]) -> None:
    atomic_write_bytes(path, "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows).encode())


def _loads(v, default):
    return json.loads(v) if isinstance(v, str) and v else default


def per_query_rows(arm: str, cfg: ArmConfig, tables: dict[str, pl.DataFrame], chunk_text: dict[str, str],
                   retrieval_per_query: dict) -> list[dict]:
    """Retrieval, context, generation and contract per question, in the seed's section 3.1 shape."""
    by = {name: {r[name.c.query_id]: r for r in df.iter_rows(named=True)} for name, df in tables.items()}
    rows = []
    for qid, r in by[Table.RETRIEVAL_ROWS].items():
        c, a, k = by[Table.ADMITTED_CONTEXTS][qid], by[Table.ANSWERS].get(qid), by[Table.CONTRACT_RESULTS].get(qid)
        answer = None
        if k and k[CON.answer] is not None:
            answer = {"answer": k[CON.answer], "citation_chunk_ids": k[CON.citation_chunk_ids],
                      "abstained": k[CON.abstained], "requests": _loads(k[CON.request_items], [])}
        rows.append({
            "query_id": qid, "arm": arm,
            "retrieval": {"ranked_chunk_ids": r[ROWS.ranked_chunk_ids], "ranked_doc_ids": r[ROWS.ranked_doc_ids],
                          "retrieve_k": cfg.retrieve_k, "evidence_k": cfg.evidence_k,
                          "selected_chunk_ids": c[CTX.selected_chunk_ids], "metrics": retrieval_per_query.get(qid)},
            "generated_answer": {
                # A preloaded set is the same for every question: written once, in preparation/preloaded.json.
                "context": {"evidence": "preloaded: see preparation/preloaded.json" if cfg.supply == "preloaded"
                            else [{"chunk_id": cid, "text": text} for cid, text in evidence_pairs(c, chunk_text)],
                            "omitted_chunk_ids": c[CTX.omitted_chunk_ids], "used_runes": c[CTX.used_runes],
                            "max_runes": c[CTX.max_runes]},
                "answer": answer,
                "contract": {"valid": bool(k and k[CON.status] == "valid"), "status": k[CON.status] if k else None,
                             "reason": k[CON.reason] if k else None},
                "provider": {key: a[key] for key in (ANS.model, ANS.provider_role, ANS.offline_baseline, ANS.status,
                                                     ANS.input_tokens, ANS.output_tokens, ANS.latency_s, ANS.cost_usd,
                                                     ANS.cache_hit, ANS.attempts, ANS.error)} if a else None,
                "raw_response": a[ANS.raw_text] if a else None,
                "supply": {"mode": cfg.supply, "lookups": _loads(a.get(ANS.lookups), []),
                           "citation_check": a.get(ANS.citation_check)} if a else None,
            },
        })
    return rows


OFFLINE = "offline baseline, no provider call"


def provenance(provider_calls: int, cache_hits: int) -> str:
    """Whether results came from provider calls, cache hits or a mixture of both (the seed's section 10.2)."""
    if provider_calls and cache_hits:
        return "mixture of provider calls and cache hits"
    if cache_hits:
        return "cache hits only"
    return "provider calls only" if provider_calls else "no provider results"


class RoleProvenance(BaseModel):
    """One role's results: provider calls, cache hits, and which of the two its metrics were generated from."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    provider_calls: int
    cache_hits: int
    from_: str = Field(alias="from")

    @classmethod
    def of(cls, calls: int, hits: int, offline: bool) -> RoleProvenance:
        # An offline judge or panel of offline jurors computes its replies in this process: no provider call.
        return cls(provider_calls=calls, cache_hits=hits,
                   from_=OFFLINE if offline and not calls and not hits else provenance(calls, hits))


class Provenance(BaseModel):
    """results/provider-provenance.json: per role where its results came from, and the provider cache."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    provider_cache: str
    answers: RoleProvenance
    judge: RoleProvenance
    request_judge: RoleProvenance | None = None  # written only when the arm has a request judge summary

    def roles(self) -> list[tuple[str, RoleProvenance]]:
        return [(role, p) for role, p in (("answers", self.answers), ("judge", self.judge),
                                          ("request_judge", self.request_judge)) if p is not None]

    def to_json(self) -> dict:
        """As written: the cache first, then each role present (`from` by its JSON name)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def result_provenance(provider_cache: str | Path, answers: pl.DataFrame, judge_summary: JudgeSummary,
                      request_judge: RequestJudgeSummary | None = None) -> Provenance:
    """Per role: provider calls, cache hits and which of the two the metrics were generated from; and the cache."""
    a = calls_summary(answers)
    return Provenance(
        provider_cache=str(provider_cache),
        answers=RoleProvenance.of(a.provider_calls, a.cache_hits, False),
        judge=RoleProvenance.of(judge_summary.provider_calls, judge_summary.cache_hits,
                                judge_summary.offline_baseline_judge),
        request_judge=None if request_judge is None else RoleProvenance.of(
            request_judge.provider_calls, request_judge.cache_hits, request_judge.request_judge.offline_baseline))


def recorded_prompts(cfg: ArmConfig) -> dict[str, str]:
    """The prompts a run record copies (field -> kind, core.prompts): every prompt the arm names, except an imported
    arm's answer prompt (the system's own prompt is in its traces, copied with them)."""
    return {field: kind for field, kind in prompt_fields(cfg).items()
            if not (field == "prompt" and cfg.supply == "imported")}


def write_run_record(store: ArtifactStore, arm: str, cfg: ArmConfig, run_dir: Path, ds: Dataset,
                     built: dict[str, Built | None], fingerprints: dict[str, Any], *, prompts: Mapping[str, Prompt],
                     arms_file: Path, provider_cache: str | Path) -> dict:
    """Fill `run_dir` with the seed's layout and mark it complete; return the counts written. `prompts`: the arm's
    prompts the record copies (field -> prompt, recorded_prompts), `arms_file` and `provider_cache` where the arm
    was declared and where its provider results were cached."""
    import polars as pl

    answer_models = store.read_table(arm, Table.ANSWERS)[ANS.model].to_list()  # an imported arm's generator
    (run_dir / "inputs" / "prompts").mkdir(parents=True, exist_ok=True)
    atomic_write_json(run_dir / "config.json", RunConfig(
        arm=arm, effective_config=cfg.model_dump(mode="json"), fingerprints=fingerprints,
        corpus_digest=ds.corpus_digest, evaluation_digest=ds.evaluation_digest,
        model_assignments=ModelAssignments(generator=generator_label(cfg, answer_models), judge=cfg.judge.model,
                                           request_judge=cfg.request_judge.model,
                                           same_model=cfg.judge.model in generator_models(cfg, answer_models)),
        # What of the evaluation's labels reached the generator: none, oracle, or counterfactual:<kind>.
        label_use=cfg.label_use,
        arms_file=str(arms_file),
        # Where the answers and verdicts were cached: another store's cache (RAG_TTC_PROVIDER_CACHE) may have served them.
        provider_cache=str(provider_cache)).model_dump(mode="json"))
    atomic_write_bytes(run_dir / "inputs" / "corpus.json", Path(ds.corpus_path).read_bytes())
    atomic_write_bytes(run_dir / "inputs" / "evaluation.json", Path(ds.evaluation_path).read_bytes())
    for field, p in prompts.items():
        target = run_dir / "inputs" / ("prompt.txt" if field == "prompt" else f"prompts/{p.name}.txt")
        atomic_write_bytes(target, p.text.encode("utf-8"))
    (run_dir / "preparation").mkdir(exist_ok=True)
    if cfg.supply == "imported":
        # The imported documents are the arm's chunks; the source file is copied beside its mapping.
        chunks = store.read_table(arm, Table.IMPORTED_CHUNKS)
        mapping = store.read_arm_json(arm, ArmJson.IMPORT_MAPPING)  # copied as written
        source_file = store.read_summary(arm, ArmJson.IMPORT_MAPPING).source_file
        if source_file:
            atomic_write_bytes(run_dir / "inputs" / f"imported-source{Path(source_file).suffix}",
                               Path(source_file).read_bytes())
        else:  # a Phoenix project: the span records as they were read from the server
            atomic_write_json(run_dir / "inputs" / "imported-source-phoenix-spans.json",
                              store.read_arm_json(arm, ArmJson.IMPORTED_SPANS))
        atomic_write_json(run_dir / "preparation" / "import-mapping.json", mapping)
        atomic_write_json(run_dir / "preparation" / "representations.json",
                          {"used_by_arm": False, "reason": unused(cfg)["representations"]})
    else:
        chunks = pl.read_parquet(built["chunks"].path / "chunks.parquet")
        reps = pl.read_parquet(built["representations"].path / "representations.parquet")
        atomic_write_json(run_dir / "preparation" / "representations.json",
                          {**{k: built["representations"].manifest["info"].get(k) for k in REPRESENTATION_RECORD},
                           "records": reps.to_dicts()})
    atomic_write_json(run_dir / "preparation" / "chunks.json", chunks.to_dicts())
    atomic_write_json(run_dir / "indexes" / "manifest.json", {
        name: {"used_by_arm": False, "reason": unused(cfg)[name]} if b is None else
        {"path": str(b.path), "content_digest": b.content_digest, "key_digest": b.key_digest,
         "info": b.manifest.get("info", {})} for name, b in built.items() if name.endswith("index")})
    tables = {n: store.read_table(arm, n) for n in (Table.RETRIEVAL_ROWS, Table.ANSWERS, Table.CONTRACT_RESULTS,
                                                    Table.JUDGE_VERDICTS)}
    # What each row had in context (tool arms: its lookup results), from the answers already read above.
    tables[Table.ADMITTED_CONTEXTS] = arm_supply.supplied_contexts(
        cfg, store.read_table(arm, Table.ADMITTED_CONTEXTS), tables[Table.ANSWERS] if cfg.supply == "tool" else None)
    chunk_text = dict(zip(chunks["chunk_id"].to_list(), chunks["text"].to_list()))
    if cfg.supply == "preloaded" and tables[Table.ADMITTED_CONTEXTS].height:
        first = tables[Table.ADMITTED_CONTEXTS].row(0, named=True)
        atomic_write_json(run_dir / "preparation" / "preloaded.json",
                          [{"chunk_id": cid, "text": text} for cid, text in evidence_pairs(first, chunk_text)])
    retrieval = store.read_summary(arm, ArmJson.RETRIEVAL_SUMMARY)
    per_query = per_query_rows(arm, cfg, tables, chunk_text, retrieval.per_query)
    results = run_dir / "results"
    _jsonl(results / "per-query.jsonl", per_query)
    atomic_write_json(results / "generated-answers.json", tables[Table.ANSWERS].to_dicts())
    atomic_write_json(results / "answer-contract-summary.json", store.read_arm_json(arm, ArmJson.CONTRACT_SUMMARY))
    atomic_write_json(results / "retrieval-summary.json", store.read_arm_json(arm, ArmJson.RETRIEVAL_SUMMARY))
    judge_rows = [{**r, "verdicts": _loads(r[JV.verdicts], []), "gold_verdicts": _loads(r[JV.gold_verdicts], [])}
                  for r in tables[Table.JUDGE_VERDICTS].to_dicts()]
    _jsonl(results / "judge-per-query.jsonl", judge_rows)
    atomic_write_json(results / "judge-summary.json", {**store.read_arm_json(arm, ArmJson.JUDGE_SUMMARY),
                                                       "judge_config": cfg.judge.model_dump(mode="json")})
    judge_summary = store.read_summary(arm, ArmJson.JUDGE_SUMMARY)
    atomic_write_json(results / "request-completeness.json", store.read_arm_json(arm, ArmJson.REQUEST_COMPLETENESS))
    completeness = store.read_summary(arm, ArmJson.REQUEST_COMPLETENESS)
    _jsonl(results / "request-judgments.jsonl", store.read_table(arm, Table.REQUEST_JUDGMENTS).to_dicts())
    atomic_write_json(results / "failure-flow.json", store.read_arm_json(arm, ArmJson.FAILURE_FLOW))
    _jsonl(results / "request-outcomes.jsonl", store.read_table(arm, Table.FAILURE_FLOW).to_dicts())
    for partial in PARTIALS:
        remove_rows(run_dir / partial)  # complete tables replace the per-row logs
    contract = store.read_summary(arm, ArmJson.CONTRACT_SUMMARY)
    counts = {"questions": len(per_query), "answer_rows": tables[Table.ANSWERS].height,
              "judge_rows": tables[Table.JUDGE_VERDICTS].height, "valid": contract.valid,
              "judged": judge_summary.judged}
    source = result_provenance(provider_cache, tables[Table.ANSWERS], judge_summary,
                               store.read_summary(arm, ArmJson.REQUEST_JUDGE_SUMMARY))
    atomic_write_json(results / "provider-provenance.json", source.to_json())
    atomic_write_bytes(run_dir / "summary.md", summary_markdown(arm, cfg, retrieval.summary, contract,
                                                                judge_summary, counts, source,
                                                                completeness).encode("utf-8"))
    _write_status(run_dir, read_status(run_dir).with_(status=COMPLETE, finished_at=_now(), counts=counts, exit_code=0))
    return counts


LABEL_USE_TEXT = {"oracle": "**ORACLE arm**: the generator was shown the evaluation's request annotation "
                            "(requests_in_prompt: oracle). Its numbers are a diagnostic upper bound, not a deployable "
                            "system's."}


def summary_markdown(arm: str, cfg: ArmConfig, retrieval: RetrievalMeasures, contract: ContractSummary,
                     judge: JudgeSummary, counts: dict, source: Provenance, completeness: RequestCompleteness) -> str:
    use = cfg.label_use
    disclosure = LABEL_USE_TEXT.get(use, f"**Counterfactual arm** ({use.split(':', 1)[-1]}): the evaluation's labels "
                                         "were used to edit the evidence on purpose." if use != "none" else "")
    c, r = completeness, retrieval
    inst = c.request_judge
    jm = judge.judge_measurement
    means = {"faithfulness": (judge.mean_faithfulness, _counted(judge.faithfulness_measured, judge.faithfulness_of,
                                                                judge.faithfulness_not_measured)),
             "relevance": (judge.mean_relevance, _counted(judge.relevance_measured, judge.relevance_of,
                                                          judge.relevance_not_measured)),
             "gold_supported": (judge.mean_gold_supported, _counted(judge.gold_supported_measured,
                                                                    judge.gold_supported_of,
                                                                    judge.gold_supported_not_measured))}
    lines = [f"# Run of arm `{arm}`" + ("" if use == "none" else f" ({use})"), "",
             *([disclosure, ""] if disclosure else []),
             f"chunks {cfg.chunk_runes}/{cfg.overlap_runes}, {cfg.retrieval}, retrieve_k {cfg.retrieve_k}, "
             f"evidence_k {cfg.evidence_k}, context_runes {cfg.context_runes}, prompt `{cfg.prompt}`", "",
             "## Retrieval (ranked list, before evidence_k)", "",
             "| recip_rank | recall_10 | ndcg_cut_10 | success_10 | evaluated | undefined |", "|---|---|---|---|---|---|",
             f"| {r.recip_rank:.4f} | {r.recall_10:.4f} | {r.ndcg_cut_10:.4f} | {r.success_10:.4f} | {r.evaluated} "
             f"| {r.undefined} |", "",
             f"means over {_counted(r.measured, r.of, r.not_measured)} questions", "",
             "## Answer contract", "", "| total | valid | parse failures | contract failures | abstentions |",
             "|---|---|---|---|---|",
             f"| {contract.total} | {contract.valid} | {contract.parse_failures} | "
             f"{contract.contract_failures} | {contract.abstentions} |", "",
             "## Judge", "",
             f"judge `{judge.judge_model}`, generator `{judge.generator_model}`, "
             f"same model: {judge.same_model_as_generator}"
             + (" (offline baseline judge, not a language model)" if judge.offline_baseline_judge else ""),
             "", f"judged {judge.judged}, abstained {judge.abstained}, invalid {judge.invalid}, "
             f"contradicts_gold {judge.contradicts_gold}", "",
             "| mean | value | measured of rows (not measured: why) |", "|---|---|---|",
             *[f"| {n} | {means[n][0]} | {means[n][1]} |" for n in JUDGE_MEANS], "",
             "## Request completeness (by the request judge)", "",
             f"request judge `{inst.model}`, prompt `{inst.prompt}` ({inst.prompt_digest})"
             + (" (offline baseline judge, not a language model)" if inst.offline_baseline else ""), "",
             f"{c.requests_measured} measured of {c.requests_total} requests"
             + (f" (not measured: {reasons_text(c.requests_not_measured)})" if c.requests_not_measured
                else "") + f": answered "
             f"{c.requests_answered}, supported {c.requests_supported}; questions complete "
             f"{c.questions_complete} of {c.questions_measured} measured", "",
             f"mean completeness {c.mean_completeness} over "
             f"{_counted(c.completeness_measured, c.completeness_of, c.completeness_not_measured)} questions", "",
             f"self-reported by the generator (not the measurement): answered {c.self_reported_answered}; "
             f"overclaimed {c.overclaimed}, underclaimed {c.underclaimed}", "",
             "## The judges measured", "",
             "| judge | measure | flagged | of | share |", "|---|---|---|---|---|",
             *[f"| {j} | {m} | {share.flagged} | {share.of} | {share.share} |"
               for m, pair in (("sensitivity", jm.sensitivity), ("false_alarms", jm.false_alarms))
               for j, share in (("gold_judge", pair.gold_judge), ("request_judge", pair.request_judge))], "",
             "## Where the provider results came from", "",
             "A cache hit hides the provider call that produced it; the copied inputs and per-query records "
             "above are the source of truth.", "",
             "| role | provider calls | cache hits | metrics generated from |", "|---|---|---|---|",
             *[f"| {role} | {p.provider_calls} | {p.cache_hits} | {p.from_} |" for role, p in source.roles()], "",
             f"provider cache: `{source.provider_cache}`", "", f"rows: {counts}", ""]
    return "\n".join(lines)


def _counted(measured: int, of: int, not_measured: dict[str, int]) -> str:
    """"37 measured of 50 (not measured: abstained 10, invalid 3)"."""
    return measured_text(Counts(measured=measured, of=of, not_measured=not_measured))


def validate_run_record(run_dir: Path, expected_rows: int, generator: str | None, judge_model: str) -> list[RunCheck]:
    """The seed's post-run validation sequence (section 10.4), one result per step: the design's generator (None:
    an imported arm's, the system's own) and judge."""
    st = read_status(run_dir)
    checks = [("status complete, exit 0", st.status == COMPLETE and st.exit_code == 0,
               f"status {st.status}, exit {st.exit_code}")]

    def read(name: str) -> str:
        return (run_dir / name).read_text(encoding="utf-8")

    try:
        per_query = read("results/per-query.jsonl").splitlines()
        contract = ContractSummary.model_validate_json(read("results/answer-contract-summary.json"))
        rs = RetrievalSummary.model_validate_json(read("results/retrieval-summary.json")).summary
        # A judge summary without its judge configuration or same-model flag fails here, as a file not present.
        judge = RunJudgeSummary.model_validate_json(read("results/judge-summary.json"))
        config = RunConfig.model_validate_json(read("config.json"))
        answers = TypeAdapter(list[AnswerRole]).validate_json(read("results/generated-answers.json"))
    except (FileNotFoundError, ValidationError) as e:
        return [*[RunCheck(check=c, passed=p, detail=d) for c, p, d in checks],
                RunCheck(check="run record files present", passed=False, detail=str(e))]
    checks.append(("expected answer rows", len(per_query) == expected_rows == len(answers),
                   f"{len(per_query)} per-query rows, {len(answers)} answers, expected {expected_rows}"))
    checks.append(("retrieval and contract totals match the evaluation",
                   rs.evaluated + rs.undefined == expected_rows == contract.total,
                   f"retrieval {rs.evaluated}+{rs.undefined}, contract total {contract.total}"))
    # An imported arm's generator is the system's own (design generator None): its model is what its traces say.
    roles_ok = all(generator in (None, a.model) and a.provider_role == "generator" for a in answers)
    checks.append(("provider model and role match the design",
                   roles_ok and judge.judge_model == judge_model,
                   f"generator {generator}, judge {judge_model}"))
    checks.append(("judge configuration and same-model limitation recorded",
                   config.model_assignments.same_model == judge.same_model_as_generator,
                   f"same_model_as_generator {judge.same_model_as_generator}"))
    return [RunCheck(check=c, passed=bool(p), detail=d) for c, p, d in checks]
