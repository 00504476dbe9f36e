"""What `rag-ttc run`'s tables read of an arm's report (stages.reports.arm_report), as typed views.

The report is the arm's summaries as its assets wrote them (core.arm_summaries, core.judge_summaries), each section
present only when that asset ran: a view holds the fields the tables print, each None where the section or the field
is absent, exactly as written (no value converted: the printed tables stay what the summaries hold). Every view's
field is named as the summary field it reads (test_run_report checks them against the models), so a summary field
renamed is found by the type checker in cli/run.py, not printed as `None`. Pure: dataclasses only.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from pydantic import BaseModel

from rag_ttc_assets.core.judge_summaries import JudgeMeasurement

V = TypeVar("V")
Number = int | float  # as written: an int stays an int, a float a float


def _part(hint: Any) -> type | None:
    """The view (a dataclass) or model (pydantic) a field holds, `X | None` read as X; None for a plain value."""
    args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    parts = [a for a in args if isinstance(a, type) and (dataclasses.is_dataclass(a) or issubclass(a, BaseModel))]
    return parts[0] if parts else None


def view(cls: type[V], d: Mapping[str, Any] | None) -> V | None:
    """`d`'s fields that `cls` (a dataclass) declares, as written, the others left out; a field that is a view
    itself read the same way, a pydantic model's validated by it; None when `d` is absent."""
    if d is None:
        return None
    hints = typing.get_type_hints(cls)
    values = {}
    for f in fields(cls):  # type: ignore[arg-type]  # cls is a dataclass
        if f.name not in d:
            continue
        value, part = d[f.name], _part(hints[f.name])
        if part is not None and isinstance(value, Mapping):
            value = part.model_validate(value) if issubclass(part, BaseModel) else view(part, value)
        values[f.name] = value
    return cls(**values)


@dataclass(frozen=True)
class RetrievalView:
    """core.arm_summaries.RetrievalMeasures: the measures the table shows, and an approximate index's recall."""

    recip_rank: Number | None = None
    recall_10: Number | None = None
    ndcg_cut_10: Number | None = None
    success_10: Number | None = None
    evaluated: int | None = None
    undefined: int | None = None
    ann_recall_k: Number | None = None
    ann_recall_measured: int | None = None
    ann_recall_of: int | None = None  # an approximate vector index's only (core.ann): its recall's N

    @property
    def approximate(self) -> bool:
        return self.ann_recall_of is not None


@dataclass(frozen=True)
class AdmissionView:
    """core.arm_summaries.AdmissionSummary."""

    queries_with_omissions: int | None = None
    mean_admitted_chunks: Number | None = None
    mean_used_runes: Number | None = None
    admission_coverage: Number | None = None


@dataclass(frozen=True)
class RepresentationsView:
    """core.arm_summaries.Representations (an imported arm's: imported.import_stage.representations_record)."""

    representation: str | None = None
    builder: str | None = None
    builder_model: str | None = None
    builder_prompt: str | None = None
    prompt_digest: str | None = None
    era: str | None = None
    offline_baseline: bool | None = None
    not_built: int | None = None
    statuses: Mapping[str, int] | None = None
    provider_calls: int | None = None
    cache_hits: int | None = None


@dataclass(frozen=True)
class ContractView:
    """core.arm_summaries.ContractSummary's counts (stages.reports._answers)."""

    total: int | None = None
    valid: int | None = None
    free_text: int | None = None
    no_answer: Mapping[str, int] | None = None
    parse_failures: int | None = None
    contract_failures: int | None = None
    abstentions: int | None = None
    escalated: int | None = None
    provider_faults: Mapping[str, int] | None = None
    mean_answer_chars: Number | None = None
    parsed_from: Mapping[str, int] | None = None  # cli.reply_tables: where each reply's object was found
    contract_failure_reasons: Mapping[str, int] | None = None


@dataclass(frozen=True)
class CallsView:
    """One role's calls (stages.generation.calls_summary; the judges': their summaries' counts)."""

    provider_calls: int | None = None
    cache_hits: int | None = None
    mean_input_tokens: Number | None = None
    p95_latency_s: Number | None = None


@dataclass(frozen=True)
class JudgeView:
    """core.judge_summaries.JudgeSummary."""

    judge_model: str | None = None
    same_model_as_generator: bool | None = None
    judged: int | None = None
    abstained: int | None = None
    invalid: int | None = None
    mean_faithfulness: Number | None = None
    faithfulness_measured: int | None = None
    faithfulness_of: int | None = None
    faithfulness_not_measured: Mapping[str, int] | None = None
    mean_relevance: Number | None = None
    relevance_measured: int | None = None
    relevance_of: int | None = None
    relevance_not_measured: Mapping[str, int] | None = None
    contradicts_gold: int | None = None
    statuses: Mapping[str, int] | None = None  # cli.reply_tables: the rows' statuses, where each reply was found
    parsed_from: Mapping[str, int] | None = None


@dataclass(frozen=True)
class EntailmentView:
    """core.judge_summaries.Entailment."""

    jurors: list[str] = field(default_factory=list)
    prompt_digest: str = ""


@dataclass(frozen=True)
class InstrumentView:
    """core.judge_summaries.Instrument: the request judge as an instrument."""

    model: str | None = None
    prompt_digest: str | None = None
    offline_baseline: bool | None = None
    rules: str | None = None
    params: Any = None
    entailment: EntailmentView | None = None


@dataclass(frozen=True)
class PanelView:
    """core.judge_summaries.PanelAgreement."""

    jurors: list[str] = field(default_factory=list)
    requests: int | None = None
    all_measured: int | None = None
    fleiss_kappa: Number | None = None
    krippendorff_alpha: Number | None = None
    jurors_disagree: int | None = None
    aggregation: str | None = None
    juror_not_measured: Mapping[str, int] | None = None


@dataclass(frozen=True)
class RequestJudgeView:
    """core.judge_summaries.RequestJudgeSummary."""

    provider_calls: int | None = None
    cache_hits: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: Number | None = None
    unpriced_rows: int | None = None
    request_judge: InstrumentView | None = None
    panel: PanelView | None = None
    same_model_as_generator: bool | None = None  # cli.reply_tables: these four
    statuses: Mapping[str, int] | None = None
    verdicts: Mapping[str, int] | None = None
    parsed_from: Mapping[str, int] | None = None


@dataclass(frozen=True)
class CompletenessView:
    """core.judge_summaries.RequestCompleteness."""

    requests_total: int | None = None
    requests_measured: int | None = None
    requests_not_measured: Mapping[str, int] | None = None
    requests_answered: int | None = None
    requests_answered_share: Number | None = None
    requests_graded: int = 0  # the table reads an absent count as 0
    graded_completeness: Number | None = None
    requests_support_measured: int | None = None
    requests_supported: int | None = None
    questions_measured: int | None = None
    questions_complete: int | None = None
    self_reported_answered: int | None = None
    self_report_unattributed: int | None = None
    overclaimed: int | None = None
    underclaimed: int | None = None
    correct_abstentions: int | None = None
    mean_completeness: Number | None = None
    completeness_measured: int | None = None
    completeness_of: int | None = None
    completeness_not_measured: Mapping[str, int] | None = None
    request_judge: InstrumentView | None = None


@dataclass(frozen=True)
class HitRateView:
    """core.judge_summaries.FlowHitRate."""

    hit_rate: Number | None = None
    measured: int | None = None
    of: int | None = None
    not_measured: Mapping[str, int] | None = None


@dataclass(frozen=True)
class JudgeSensitiveView:
    """core.judge_summaries.JudgeSensitive."""

    line: str = ""


@dataclass(frozen=True)
class LookupFlowView:
    """core.judge_summaries.LookupFlow; `branches`: its counts by core.supply.LOOKUP_BRANCHES."""

    lookup_calls: int | None = None
    hit_rate: Number | None = None
    wrong_on_misses: int | None = None
    branches: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FlowView:
    """core.judge_summaries.FailureFlow; `branches`: its counts by diagnosis.flow.FLOW_BRANCHES."""

    supply: str | None = None
    hit_rate: HitRateView | None = None
    judge_sensitive: JudgeSensitiveView | None = None
    lookup_flow: LookupFlowView | None = None
    branches: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CallsSection:
    """The calls of each role (stages.reports: the generator's, the judges')."""

    answers: CallsView | None = None
    judge: CallsView | None = None


@dataclass(frozen=True)
class ArmView:
    """One arm's report (stages.reports.arm_report), each section None where its asset has not run."""

    label_use: str | None = "none"
    requests_derived: Mapping[str, Any] | None = None  # core.request_derivation.describe reads it
    labels: dict[str, Any] | None = None  # core.dataset.labels_line reads it
    retrieval: RetrievalView | None = None
    admission: AdmissionView | None = None
    representations: RepresentationsView | None = None
    contract: ContractView | None = None
    response_format: str | None = None
    supply: str | None = None
    generator_model: str | None = None
    calls: CallsSection | None = None
    judge: JudgeView | None = None
    judge_measurement: JudgeMeasurement | None = None
    request_judge: RequestJudgeView | None = None
    completeness: CompletenessView | None = None
    flow: FlowView | None = None

    @classmethod
    def of(cls, rep: Mapping[str, Any]) -> ArmView:
        """The report's sections as views; the flow's and its lookups' counts kept by branch name."""
        v = view(cls, rep) or cls()
        if v.flow is None:
            return v
        flow: Mapping[str, Any] = rep.get("flow") or {}
        lookup = v.flow.lookup_flow and dataclasses.replace(v.flow.lookup_flow, branches=flow.get("lookup_flow") or {})
        return dataclasses.replace(v, flow=dataclasses.replace(v.flow, branches=flow, lookup_flow=lookup))
