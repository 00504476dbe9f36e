"""What an arm's assets wrote, read back from the store as one report: the CLI's tables print it."""

from __future__ import annotations

from collections.abc import Collection

from rag_ttc_assets.adapters.store import ArmJson, Table
from rag_ttc_assets.core.summaries import generator_label
from rag_ttc_assets.lab import Lab

ANS = Table.ANSWERS.c  # the declared column names (core.tables)


def labels_used(store, arm: str) -> dict:
    """The labels `arm` ran with (the `labels` asset's record); an arm run before that asset existed recorded them
    in its corpus binding."""
    try:
        return store.read_arm_json(arm, ArmJson.LABELS)
    except FileNotFoundError:
        return store.read_arm_json(arm, ArmJson.BINDING)


def _retrieval(lab: Lab, arm: str, report: dict) -> None:
    r = lab.store.read_arm_json(arm, ArmJson.RETRIEVAL_SUMMARY)["summary"]
    report["retrieval"] = {k: r[k] for k in ("recip_rank", "recall_10", "ndcg_cut_10", "success_10",
                                             "evaluated", "undefined")}
    if "ann_recall_k" in r:  # an approximate vector index's own measure (core.ann), with its N
        report["retrieval"].update({k: r[k] for k in ("ann_recall_k", "ann_recall_measured", "ann_recall_of")})
    report["admission"] = lab.store.read_arm_json(arm, ArmJson.ADMISSION_SUMMARY)
    from rag_ttc_assets.stages.imported import representations_record  # late: polars; as in _answers below

    report["representations"] = representations_record(lab, arm)


def _answers(lab: Lab, arm: str, report: dict) -> None:
    # late: polars, pytrec_eval; the CLI reads arm reports without them
    from rag_ttc_assets.stages.generation import calls_summary

    c = lab.store.read_arm_json(arm, ArmJson.CONTRACT_SUMMARY)
    report["contract"] = {k: c.get(k, 0) for k in ("total", "valid", "parse_failures", "contract_failures",
                                                   "contract_failure_reasons", "abstentions", "escalated",
                                                   "provider_faults", "mean_answer_chars", "parsed_from", "free_text",
                                                   "no_answer")}
    report["response_format"] = lab.arms[arm].response_format
    report["supply"] = lab.arms[arm].supply
    answers = lab.store.read_table(arm, Table.ANSWERS)
    report["calls"] = {"answers": calls_summary(answers).to_json()}
    # An imported arm's: the system's own model, as its traces name it (self-reported).
    report["generator_model"] = generator_label(lab.arms[arm], answers[ANS.model].to_list())


def _judges(lab: Lab, arm: str, report: dict) -> None:
    j = lab.store.read_arm_json(arm, ArmJson.JUDGE_SUMMARY)
    report["judge"] = {k: j[k] for k in ("judged", "abstained", "invalid", "judge_failures", "mean_faithfulness",
                                         "mean_relevance", "contradicts_gold", "gold_judged", "judge_model",
                                         "same_model_as_generator", "offline_baseline_judge", "statuses")}
    report["judge"]["parsed_from"] = j.get("parsed_from", {})
    # Each mean with its denominator and the reasons the other rows were not measured.
    report["judge"].update({k: j[k] for n in ("faithfulness", "relevance")
                            for k in (f"{n}_measured", f"{n}_of", f"{n}_not_measured")})
    report.setdefault("calls", {})["judge"] = {"provider_calls": j["provider_calls"], "cache_hits": j["cache_hits"]}
    report["judge_measurement"] = j.get("judge_measurement")
    rj = lab.store.read_arm_json(arm, ArmJson.REQUEST_JUDGE_SUMMARY)
    report["request_judge"] = rj
    report["calls"]["request_judge"] = {"provider_calls": rj["provider_calls"], "cache_hits": rj["cache_hits"]}


def _flow(lab: Lab, arm: str, report: dict) -> None:
    report["completeness"] = lab.store.read_arm_json(arm, ArmJson.REQUEST_COMPLETENESS)
    f = lab.store.read_arm_json(arm, ArmJson.FAILURE_FLOW)
    report["flow"] = {k: v for k, v in f.items() if k != "accounting"}
    report["flow"]["accounting"] = f["accounting"]


# Each section of the report, read when the asset that writes its last summary was run (None: always, when present).
SECTIONS = ((None, _retrieval), ("contract_summary", _answers), ("judge_summary", _judges), ("failure_flow", _flow))


def recorded_request_judge(lab: Lab, arm: str) -> dict:
    """The arm's request judge as an instrument, as its request judge summary recorded it when its request judgments
    were written (stages.request_judge.instrument); {} when not judged yet."""
    try:
        return lab.store.read_arm_json(arm, ArmJson.REQUEST_JUDGE_SUMMARY).get("request_judge") or {}
    except FileNotFoundError:
        return {}


def requests_derived(lab: Lab, arm: str) -> dict | None:
    """How the requests the arm's request judge measured were derived from gold answers, as recorded when it ran
    (None: hand-written, or not judged yet)."""
    return recorded_request_judge(lab, arm).get("requests_derived")


def arm_report(lab: Lab, arm: str, upto: Collection[str]) -> dict:
    """The summaries of `arm` its assets wrote, read from the store: those of the assets in `upto` (the assets a
    `rag-ttc run --stage` materialized, defs.graph.STAGES); retrieval's whenever present. A summary not written
    yet leaves its section (from that summary on) out."""
    report: dict = {"label_use": lab.arms[arm].label_use, "requests_derived": requests_derived(lab, arm)}
    try:  # the labels the arm ran with, and those `rag-ttc labels update` marked stale and it left out
        report["labels"] = labels_used(lab.store, arm).get("labels") or {}
    except FileNotFoundError:
        pass
    for needs, read in SECTIONS:
        if needs is None or needs in upto:
            try:
                read(lab, arm, report)
            except FileNotFoundError:
                pass
    if "calls" in report:
        parts = report["calls"].values()
        report["calls"].update({k: sum(p.get(k, 0) for p in parts)
                                for k in ("provider_calls", "cache_hits", "input_tokens", "output_tokens")})
    return report
