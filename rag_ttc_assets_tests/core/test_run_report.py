"""core/run_report.py: the views `rag-ttc run`'s tables read name only fields the summaries declare (a summary field
renamed fails here and in the type checker, never prints `None`), and keep every value as written."""

from dataclasses import fields

import pytest

from rag_ttc_assets.core import arm_summaries as arm
from rag_ttc_assets.core import judge_summaries as js
from rag_ttc_assets.core import run_report as rr

# Each view and the summary model whose fields it reads; `branches` is the counts by branch name (diagnosis.flow,
# core.supply), not a field.
VIEWS = [
    (rr.RetrievalView, arm.RetrievalMeasures), (rr.AdmissionView, arm.AdmissionSummary),
    (rr.RepresentationsView, arm.Representations), (rr.ContractView, arm.ContractSummary),
    (rr.JudgeView, js.JudgeSummary), (rr.EntailmentView, js.Entailment), (rr.InstrumentView, js.Instrument),
    (rr.PanelView, js.PanelAgreement), (rr.RequestJudgeView, js.RequestJudgeSummary),
    (rr.CompletenessView, js.RequestCompleteness), (rr.HitRateView, js.FlowHitRate),
    (rr.JudgeSensitiveView, js.JudgeSensitive), (rr.LookupFlowView, js.LookupFlow), (rr.FlowView, js.FailureFlow),
]


@pytest.mark.parametrize("view, model", VIEWS, ids=[v.__name__ for v, _ in VIEWS])
def test_a_view_reads_only_fields_its_summary_declares(view, model):
    names = {f.name for f in fields(view)} - {"branches"}
    assert names <= set(model.model_fields), sorted(names - set(model.model_fields))


def test_values_are_kept_as_written_and_sections_read_as_views():
    report = {"label_use": "oracle", "retrieval": {"recip_rank": 1, "evaluated": 0, "ann_recall_of": 3, "x": 2},
              "completeness": {"requests_measured": 4, "request_judge": {"model": "m", "entailment": {
                  "jurors": ["j"], "prompt_digest": "sha256:ab"}}},
              "request_judge": {"provider_calls": 2, "panel": {"jurors": ["a", "b"], "requests": 5}},
              "calls": {"answers": {"provider_calls": 1, "mean_input_tokens": 10.0}},
              "flow": {"ok": 3, "supply": "tool", "hit_rate": {"measured": 0, "of": 2},
                       "lookup_flow": {"lookup_calls": 4, "no_call": 1}},
              "judge_measurement": {
                  "sensitivity": {"gold_judge": {"flagged": 1, "of": 2, "share": 0.5},
                                  "request_judge": {"flagged": 0, "of": 0, "share": None}},
                  "false_alarms": {"gold_judge": {"flagged": 0, "of": 2, "share": 0.0},
                                   "request_judge": {"flagged": 0, "of": 0, "share": None}}}}
    v = rr.ArmView.of(report)
    assert v.label_use == "oracle" and v.retrieval is not None and v.retrieval.recip_rank == 1
    assert type(v.retrieval.recip_rank) is int and v.retrieval.approximate  # an int stays an int
    assert v.completeness is not None and v.completeness.requests_graded == 0  # absent: 0, as the table reads it
    assert v.completeness.request_judge == rr.InstrumentView(model="m", entailment=rr.EntailmentView(
        jurors=["j"], prompt_digest="sha256:ab"))
    assert v.request_judge is not None and v.request_judge.panel == rr.PanelView(jurors=["a", "b"], requests=5)
    assert v.calls is not None and v.calls.answers == rr.CallsView(provider_calls=1, mean_input_tokens=10.0)
    assert v.calls.judge is None and v.judge is None and v.contract is None
    assert v.flow is not None and v.flow.branches["ok"] == 3 and v.flow.hit_rate == rr.HitRateView(measured=0, of=2)
    assert v.flow.lookup_flow is not None and v.flow.lookup_flow.branches["no_call"] == 1
    assert v.judge_measurement is not None and v.judge_measurement.sensitivity.gold_judge.share == 0.5
    assert rr.ArmView.of({}) == rr.ArmView()
