"""The judges' and the diagnosis' per-arm JSON summaries (adapters.store.ArmJson), one pydantic model each, typed
from what their writers write, as in core/arm_summaries.py (which holds the common parts, `Summary` and the
summaries of the build, retrieval, admission and contract boundaries). Pure: pydantic only.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from rag_ttc_assets.core.arm_summaries import LookupCounts, Summary

# --- the request judge as an instrument (judging/request_judge_stage.instrument), and a panel's agreement ---------------

class Derivation(Summary):
    """core.request_derivation.derivation_of: how the requests the judge judged were derived from gold answers."""

    method: str
    model: str
    prompt_digest: str | None
    requests_digest: str
    questions: int
    requests: int


class LearnedParameters(Summary):
    """judging.learned_judge.LearnedJuror.instrument: the fitted juror's parameters file."""

    parameters: str
    digest: str
    format: str
    version: int | None = None
    trained_on: dict[str, Any] | None = None
    rules: str | None = None


class Entailment(Summary):
    jurors: list[str]
    prompt: str
    prompt_digest: str


class Instrument(Summary):
    """What must be equal for two arms' completeness to be comparable."""

    model: str
    prompt: str
    prompt_digest: str
    offline_baseline: bool
    rules: str | None = None  # an offline judge's or juror's only
    learned: LearnedParameters | None = None
    jurors: list[str] | None = None  # a panel's only
    aggregation: str | None = None
    panel_rules: str | None = None
    params: dict[str, Any] | list[dict[str, Any]] | None = None  # only when set
    entailment: Entailment | None = None
    requests_derived: Derivation | None  # null: hand-written requests


class PanelAgreement(Summary):
    """judging/request_judge_stage.panel_summary: the jurors' agreement (judging.panel.agreement) and their faults."""

    jurors: list[str]
    requests: int
    all_measured: int
    fleiss_kappa: float | None
    krippendorff_alpha: float | None
    jurors_disagree: int
    aggregation: str
    juror_not_measured: dict[str, int]


class RequestVerdicts(Summary):
    """judging.statement_judge.REQUEST_VERDICTS, each counted."""

    consistent: int
    contradicts: int
    not_addressed: int
    not_verifiable: int


# --- request_judge_summary.json (defs/evaluation.py: request_judgments; core.summaries.request_judge_summary) ------

class RequestJudgeSummary(Summary):
    requests: int
    judged: int
    not_measured: int
    statuses: dict[str, int]
    verdicts: RequestVerdicts
    provider_calls: int
    cache_hits: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    unpriced_rows: int
    parsed_from: dict[str, int]
    request_judge: Instrument
    label_use: str
    same_model_as_generator: bool
    panel: PanelAgreement | None = None  # a panel of request judges only


# --- judge_summary.json (defs/evaluation.py: judge_summary; core.summaries.judge_summary, judging.judge_measurement) --

class Share(Summary):
    flagged: int
    of: int
    share: float | None


class JudgePair(Summary):
    gold_judge: Share
    request_judge: Share


class JudgeMeasurement(Summary):
    """judging.judge_measurement: sensitivity to planted falsehoods, false alarms on verbatim gold."""

    sensitivity: JudgePair
    false_alarms: JudgePair


class JudgeSummary(Summary):
    answer_rows: int
    judged: int
    abstained: int
    invalid: int
    unanswered: dict[str, int]
    support_judge: bool
    judge_failures: int
    statuses: dict[str, int]
    mean_faithfulness: float | None
    faithfulness_measured: int
    faithfulness_of: int
    faithfulness_not_measured: dict[str, int]
    mean_relevance: float | None
    relevance_measured: int
    relevance_of: int
    relevance_not_measured: dict[str, int]
    gold_judged: int
    contradicts_gold: int | None  # null without a support judge: not measured, never 0
    mean_gold_supported: float | None
    gold_supported_measured: int
    gold_supported_of: int
    gold_supported_not_measured: dict[str, int]
    judge_model: str
    generator_model: str
    same_model_as_generator: bool
    offline_baseline_judge: bool
    provider_calls: int
    cache_hits: int
    parsed_from: dict[str, int]
    judge_measurement: JudgeMeasurement
    request_judge_model: str
    request_judge_panel: PanelAgreement | None = None  # a panel of request judges only


# --- request_completeness.json (defs/diagnostics.py: request_completeness; diagnosis.completeness.completeness_totals) --

class WithheldRelevant(Summary):
    """diagnosis/diagnostics_stage.counterfactual_summary of a withheld-relevant arm."""

    kind: Literal["withheld-relevant"]
    withheld_requests: int
    correct_abstentions: int
    correct_abstention_rate: float | None


class PlantedFalsehood(Summary):
    """diagnosis/diagnostics_stage.counterfactual_summary of a planted-falsehood arm."""

    kind: Literal["planted-falsehood"]
    planted_claims: int
    repeated: int
    falsehood_repetition_rate: float | None
    answers_contradicting_gold: int


class RequestCompleteness(Summary):
    requests_total: int
    requests_measured: int
    requests_answered: int
    requests_answered_share: float | None
    requests_graded: int
    graded_completeness: float | None
    requests_support_measured: int
    requests_supported: int
    # diagnosis.completeness.CASES, each counted
    answered_supported: int
    answered_unsupported: int
    not_answered_evidence_admitted: int
    not_answerable_from_admitted: int
    not_measured: int
    no_gold_quotes: int
    requests_contradicting_gold: int
    self_reported_answered: int
    self_reported_supported: int
    self_report_unattributed: int
    overclaimed: int
    underclaimed: int
    unanswerable_questions: int
    correct_abstentions: int
    correct_abstention_rate: float | None
    questions_total: int
    questions_measured: int
    questions_complete: int
    questions_partial: int
    questions_none: int
    requests_not_measured: dict[str, int]
    requests_support_not_measured: dict[str, int]
    mean_completeness: float | None
    completeness_measured: int
    completeness_of: int
    completeness_not_measured: dict[str, int]
    request_judge: Instrument
    label_use: str
    # a counterfactual arm's only
    counterfactual: WithheldRelevant | PlantedFalsehood | None = Field(default=None, discriminator="kind")


# --- failure_flow.json (defs/diagnostics.py: failure_flow; diagnosis.flow, core.supply.lookup_flow, judging.panel) --------

class Qualities(Summary):
    """diagnosis.flow.QUALITIES: a branch's items by answer quality."""

    acceptable: int
    wrong: int
    unanswered: int
    not_measured: int


class FlowAccounting(Summary):
    """Every branch of diagnosis.flow.FLOW_BRANCHES, by answer quality."""

    no_trace: Qualities
    no_retrieval_span: Qualities
    not_retrieved: Qualities
    missed_by_ann: Qualities
    cut_by_evidence_k: Qualities
    cut_by_reranker: Qualities
    no_answer_span: Qualities
    omitted_by_context: Qualities
    not_in_prompt: Qualities
    contract_failure: Qualities
    not_measured: Qualities
    not_addressed: Qualities
    admitted_not_cited: Qualities
    judged_unsupported: Qualities
    ok: Qualities


class FlowHitRate(Summary):
    """diagnosis.flow.hit_rate: question and request hit rates over every case, with their denominators."""

    hits: int
    cases: int
    hit_rate: float | None
    measured: int
    of: int
    not_measured: dict[str, int]
    request_hits: int
    request_cases: int
    request_hit_rate: float | None
    request_measured: int
    request_of: int
    request_not_measured: dict[str, int]


class JudgeSensitive(Summary):
    """judging.panel.judge_sensitive: the requests whose branch depends on which juror decided."""

    requests: int
    of: int
    request_ids: list[str]
    line: str


class LookupAccounting(Summary):
    """Every branch of core.supply.LOOKUP_BRANCHES, by answer quality."""

    no_call: Qualities
    empty_results: Qualities
    wrong_document: Qualities
    correct_document: Qualities


class LookupFlow(LookupCounts):
    """core.supply.lookup_flow: a tool arm's lookups, with the answers' quality per branch."""

    wrong_on_misses: int
    acceptable_on_misses: int
    wrong_on_hits: int
    accounting: LookupAccounting
    accounting_closes: bool


class FailureFlow(Summary):
    """Requests per branch (diagnosis.flow.flow_table), the hit rate, and a panel's or a tool arm's extra."""

    no_trace: int
    no_retrieval_span: int
    not_retrieved: int
    missed_by_ann: int
    cut_by_evidence_k: int
    cut_by_reranker: int
    no_answer_span: int
    omitted_by_context: int
    not_in_prompt: int
    contract_failure: int
    not_measured: int
    not_addressed: int
    admitted_not_cited: int
    judged_unsupported: int
    ok: int
    total: int
    closes: bool
    accounting: FlowAccounting
    accounting_closes: bool
    hit_rate: FlowHitRate
    supply: str
    judge_sensitive: JudgeSensitive | None = None  # a panel of request judges only
    lookup_flow: LookupFlow | None = None  # a tool arm's only


# --- phoenix_annotations.json (defs/diagnostics.py: phoenix_annotations; imported.phoenix_annotations) ----------------

class AnnotationResult(Summary):
    label: str
    score: float
    explanation: str


class AnnotationMetadata(Summary):
    arm: str
    query_id: str
    request_id: str
    trace_id: str
    verdict: str | None
    request_judge_model: str | None
    request_judge_prompt_digest: str | None


class Annotation(Summary):
    """One span annotation as logged (phoenix.client's SpanAnnotationData)."""

    span_id: str
    name: str
    annotator_kind: str
    identifier: str
    result: AnnotationResult
    metadata: AnnotationMetadata


class NotAnnotated(Summary):
    request_id: str
    query_id: str
    reason: str


class PhoenixAnnotations(Summary):
    """What an arm imported from Phoenix logged back to its project."""

    endpoint: str
    project: str
    name: str
    annotations: int
    logged: int
    not_annotated: int
    not_annotated_requests: list[NotAnnotated]
    records: list[Annotation]
