"""What an arm's assets wrote, read back from the store as one report: the CLI's tables print it."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, fields
from typing import Any

from rag_ttc_assets.adapters.store import ArmJson, ArtifactStore, Table
from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.run_records import ProviderCalls
from rag_ttc_assets.core.summaries import generator_label

ANS = Table.ANSWERS.c  # the declared column names (core.tables)


def labels_used(store: ArtifactStore, arm: str) -> dict:
    """The labels `arm` ran with (the `labels` asset's record); an arm run before that asset existed recorded them
    in its corpus binding."""
    try:
        return store.read_arm_json(arm, ArmJson.LABELS)
    except FileNotFoundError:
        return store.read_arm_json(arm, ArmJson.BINDING)


@dataclass
class ArmReport:
    """One arm's report as its sections are read (each None where its summary is not written, or its asset not run
    yet): `to_json` is what `rag-ttc run --json` prints, the sections in this order, those not read left out; the
    sections' values as their summaries hold them. core.run_report.ArmView reads it for the tables."""

    label_use: str
    requests_derived: dict[str, Any] | None  # written, null when not derived
    labels: dict[str, Any] | None = None
    retrieval: dict[str, Any] | None = None
    admission: dict[str, Any] | None = None
    representations: dict[str, Any] | None = None
    contract: dict[str, Any] | None = None
    response_format: str | None = None
    supply: str | None = None
    calls: dict[str, Any] | None = None
    generator_model: str | None = None
    judge: dict[str, Any] | None = None
    judge_measurement: dict[str, Any] | None = None  # written (null when absent) with the judge's section
    request_judge: dict[str, Any] | None = None
    completeness: dict[str, Any] | None = None
    flow: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        always = {"label_use", "requests_derived"} | ({"judge_measurement"} if self.judge is not None else set())
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) is not None or f.name in always}


def _retrieval(store: ArtifactStore, arm: str, cfg: ArmConfig, report: ArmReport) -> None:
    r = store.read_summary(arm, ArmJson.RETRIEVAL_SUMMARY).summary
    report.retrieval = {"recip_rank": r.recip_rank, "recall_10": r.recall_10, "ndcg_cut_10": r.ndcg_cut_10,
                        "success_10": r.success_10, "evaluated": r.evaluated, "undefined": r.undefined}
    if r.ann_recall_of is not None:  # an approximate vector index's own measure (core.ann), with its N
        report.retrieval.update(ann_recall_k=r.ann_recall_k, ann_recall_measured=r.ann_recall_measured,
                                ann_recall_of=r.ann_recall_of)
    report.admission = store.read_arm_json(arm, ArmJson.ADMISSION_SUMMARY)
    from rag_ttc_assets.imported.import_stage import representations_record  # late: polars; as in _answers below

    report.representations = representations_record(store, arm, cfg)


def _answers(store: ArtifactStore, arm: str, cfg: ArmConfig, report: ArmReport,
             calls: dict[str, ProviderCalls]) -> None:
    # late: polars, pytrec_eval; the CLI reads arm reports without them
    from rag_ttc_assets.stages.generation import calls_summary

    c = store.read_summary(arm, ArmJson.CONTRACT_SUMMARY)
    report.contract = {"total": c.total, "valid": c.valid, "parse_failures": c.parse_failures,
                       "contract_failures": c.contract_failures, "contract_failure_reasons": c.contract_failure_reasons,
                       "abstentions": c.abstentions, "escalated": c.escalated, "provider_faults": c.provider_faults,
                       "mean_answer_chars": c.mean_answer_chars, "parsed_from": c.parsed_from,
                       "free_text": c.free_text,
                       # a summary written before the no-answer counts: 0, as it always read
                       "no_answer": c.no_answer if "no_answer" in c.model_fields_set else 0}
    report.response_format = cfg.response_format
    report.supply = cfg.supply
    answers = store.read_table(arm, Table.ANSWERS)
    calls["answers"] = calls_summary(answers)
    report.calls = {}
    # An imported arm's: the system's own model, as its traces name it (self-reported).
    report.generator_model = generator_label(cfg, answers[ANS.model].to_list())


def _judges(store: ArtifactStore, arm: str, cfg: ArmConfig, report: ArmReport,
            calls: dict[str, ProviderCalls]) -> None:
    j = store.read_summary(arm, ArmJson.JUDGE_SUMMARY)
    # Each mean with its denominator and the reasons the other rows were not measured.
    report.judge = {"judged": j.judged, "abstained": j.abstained, "invalid": j.invalid,
                    "judge_failures": j.judge_failures, "mean_faithfulness": j.mean_faithfulness,
                    "mean_relevance": j.mean_relevance, "contradicts_gold": j.contradicts_gold,
                    "gold_judged": j.gold_judged, "judge_model": j.judge_model,
                    "same_model_as_generator": j.same_model_as_generator,
                    "offline_baseline_judge": j.offline_baseline_judge, "statuses": j.statuses,
                    "parsed_from": j.parsed_from,
                    "faithfulness_measured": j.faithfulness_measured, "faithfulness_of": j.faithfulness_of,
                    "faithfulness_not_measured": j.faithfulness_not_measured,
                    "relevance_measured": j.relevance_measured, "relevance_of": j.relevance_of,
                    "relevance_not_measured": j.relevance_not_measured}
    calls["judge"] = _counted_calls(j.provider_calls, j.cache_hits)
    if report.calls is None:
        report.calls = {}
    report.judge_measurement = j.judge_measurement.model_dump()
    report.request_judge = store.read_arm_json(arm, ArmJson.REQUEST_JUDGE_SUMMARY)
    rj = store.read_summary(arm, ArmJson.REQUEST_JUDGE_SUMMARY)
    calls["request_judge"] = _counted_calls(rj.provider_calls, rj.cache_hits)


def _counted_calls(provider_calls: int, cache_hits: int) -> ProviderCalls:
    """A judge's calls as its summary counts them: calls and cache hits (its tokens are not in the report's calls)."""
    return ProviderCalls(provider_calls=provider_calls, cache_hits=cache_hits, input_tokens=0, output_tokens=0,
                         mean_input_tokens=0.0, p95_latency_s=0.0, cost_usd=0.0, unpriced_rows=0)


def _flow(store: ArtifactStore, arm: str, cfg: ArmConfig, report: ArmReport,
          calls: dict[str, ProviderCalls]) -> None:
    report.completeness = store.read_arm_json(arm, ArmJson.REQUEST_COMPLETENESS)
    f = store.read_arm_json(arm, ArmJson.FAILURE_FLOW)
    # As written, its accounting last.
    report.flow = {**{k: v for k, v in f.items() if k != "accounting"}, "accounting": f["accounting"]}


# Each section of the report, read when the asset that writes its last summary was run (None: always, when present).
SECTIONS = (("contract_summary", _answers), ("judge_summary", _judges), ("failure_flow", _flow))


def recorded_request_judge(store: ArtifactStore, arm: str) -> dict:
    """The arm's request judge as an instrument, as its request judge summary recorded it when its request judgments
    were written (judging.request_judge_stage.instrument); {} when not judged yet."""
    try:
        return store.read_arm_json(arm, ArmJson.REQUEST_JUDGE_SUMMARY).get("request_judge") or {}
    except FileNotFoundError:
        return {}


def requests_derived(store: ArtifactStore, arm: str) -> dict | None:
    """How the requests the arm's request judge measured were derived from gold answers, as recorded when it ran
    (None: hand-written, or not judged yet)."""
    return recorded_request_judge(store, arm).get("requests_derived")


def arm_report(store: ArtifactStore, arm: str, cfg: ArmConfig, upto: Collection[str]) -> ArmReport:
    """The summaries of `arm` its assets wrote, read from the store: those of the assets in `upto` (the assets a
    `rag-ttc run --stage` materialized, defs.graph.STAGES); retrieval's whenever present. A summary not written
    yet leaves its section (from that summary on) out. `cfg`: the arm's configuration (the arms file's)."""
    report = ArmReport(label_use=cfg.label_use, requests_derived=requests_derived(store, arm))
    try:  # the labels the arm ran with, and those `rag-ttc labels update` marked stale and it left out
        report.labels = labels_used(store, arm).get("labels") or {}
    except FileNotFoundError:
        pass
    try:
        _retrieval(store, arm, cfg, report)
    except FileNotFoundError:
        pass
    calls: dict[str, ProviderCalls] = {}  # each role's, in the order read
    for needs, read in SECTIONS:
        if needs in upto:
            try:
                read(store, arm, cfg, report, calls)
            except FileNotFoundError:
                pass
    if report.calls is not None:
        # The generator's calls in full, the judges' as their summaries count them; then the totals.
        report.calls = {role: c.to_json() if role == "answers" else {"provider_calls": c.provider_calls,
                                                                     "cache_hits": c.cache_hits}
                        for role, c in calls.items()}
        parts = calls.values()
        report.calls.update(provider_calls=sum(p.provider_calls for p in parts),
                            cache_hits=sum(p.cache_hits for p in parts),
                            input_tokens=sum(p.input_tokens for p in parts),
                            output_tokens=sum(p.output_tokens for p in parts))
    return report
