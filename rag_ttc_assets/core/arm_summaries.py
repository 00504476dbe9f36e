"""The per-arm JSON records and summaries (`arms/<arm>/<name>.json`, adapters.store.ArmJson), one pydantic model each.

Each model is typed from what its writer writes (the asset in `defs/` that calls `write_arm_json`, and the stage or
core function that builds the dict), so a summary written by another rules version or edited by hand fails on read,
naming the file and the field (`SummaryError`), instead of a `KeyError` three modules later. Every model forbids a
field it does not declare (strict types: a count is an int, a flag a bool, never "1" or 1.0); a field is optional
only where its writer leaves it out (a panel's agreement, a tool arm's lookups, an approximate index's recall) or
writes null. Free-form maps (statuses, reasons, per-question metrics keyed by question) stay `dict[str, ...]`.

`ArmFile` is a file name (a `str`, so it is used as one everywhere) that carries its model; `ArmJson` in
adapters/store.py declares them. The store validates what it writes (the bytes it writes, read back as JSON) and
what it reads; `ArtifactStore.read_summary` returns the model. Pure: pydantic only.
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError


class SummaryError(ValueError):
    """A per-arm JSON file that does not hold what its model declares: the message names the arm, the file and the
    field, and what is wrong with it."""


M = TypeVar("M", bound=BaseModel)


class ArmFile(str, Generic[M]):
    """A per-arm JSON file's name that names its model: `ArmFile("judge_summary.json", JudgeSummary)`."""

    model: type[M]

    def __new__(cls, name: str, model: type[M]) -> ArmFile[M]:
        self = super().__new__(cls, name)
        self.model = model
        return self

    def __getnewargs__(self) -> tuple[str, type[M]]:  # type: ignore[override]  # pickled with its model
        return str(self), self.model


class Summary(BaseModel):
    """A summary or a part of one: strict types, no undeclared field."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def problems(error: ValidationError, limit: int = 3) -> str:
    """pydantic's errors as one line: `field 'a.b[2]': <what is wrong>; ...` (the first `limit`, then how many more)."""
    parts = []
    for e in error.errors()[:limit]:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e["loc"]).lstrip(".") or "(the whole file)"
        got = "" if e["type"] == "missing" else f" (got {e['input']!r:.60})"
        parts.append(f"field '{where}': {e['msg']}{got}")
    more = error.error_count() - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


# --- binding.json, labels.json (defs/ingest.py: corpus_binding, labels) -------------------------------------------

class Binding(Summary):
    """The corpus an arm ran against, bound by the digest of its bytes."""

    dataset: str
    corpus_digest: str
    corpus_file: str
    evaluation_file: str


class LabelCounts(Summary):
    """core.dataset.without_stale_labels: gold quotes and targets, how many current, which left out as stale."""

    labels: int
    current: int
    excluded: int
    requests_excluded: list[str]
    questions_excluded: list[str]


class Labels(Summary):
    """The labels an arm measured with: the evaluation's digest, the labels files' digest, the counts."""

    dataset: str
    evaluation_digest: str
    labels_digest: str
    corpus_digest: str
    corpus_file: str
    evaluation_file: str
    labels: LabelCounts


# --- import_mapping.json, imported_spans.json (defs/ingest.py: imported_source; stages/imported.read_import) ------

class ImportMapping(Summary):
    """An imported arm's source (a file, or a Phoenix project: endpoint, project, spans), what matched what."""

    source_file: str | None
    endpoint: str | None = None  # a Phoenix project's only
    project: str | None = None
    spans: int | None = None
    source_digest: str
    format: str
    answer_format: str
    citation_style: str
    pick: str | None
    question_id_attribute: str
    traces: int
    matched_traces: int
    unmatched_traces: int
    superseded_traces: int
    unanswered_questions: int
    matched_by_attribute: int
    matched_by_text: int
    documents: int
    documents_by_id: int
    documents_by_content: int
    external_documents: int
    no_answer_span: int
    no_retrieval_span: int
    unmatched_trace_ids: list[str]
    superseded_trace_ids: list[str]
    unanswered_question_ids: list[str]
    external_document_ids: list[str]


class ImportedSpans(RootModel[list[dict[str, Any]]]):
    """A Phoenix project's span records as its REST API returned them (the server's shape, not the lab's:
    core.imported.phoenix_spans reads and checks them)."""


# --- representations.json (defs/ingest.py: representations; core.representations.RECORD) -------------------------

class Representations(Summary):
    """What an arm's indexes were built from: the builder (kind, version, model, prompt, era) and the outcome."""

    representation: str
    builder: str
    builder_model: str | None  # a model-built kind's only
    builder_prompt: str | None
    prompt_digest: str | None
    era: str
    offline_baseline: bool
    representations: int
    statuses: dict[str, int]
    not_built: int
    retryable: int
    provider_calls: int
    cache_hits: int
    content_digest: str
    key_digest: str


# --- retrieval_summary.json (defs/retrieval.py: retrieval_summary; stages/retrieval.retrieval_metrics) ------------

class RetrievalMeasures(Summary):
    """trec_eval's `all` row of stages.retrieval.RETRIEVAL_MEASURES, with its denominators; an approximate vector
    index adds its recall of the exact list (stages.retrieval.ann_summary), an exact one nothing."""

    recip_rank: float
    recall_5: float
    recall_10: float
    recall_20: float
    recall_100: float
    ndcg_cut_5: float
    ndcg_cut_10: float
    ndcg_cut_20: float
    ndcg_cut_100: float
    success_5: float
    success_10: float
    success_20: float
    success_100: float
    map: float
    P_5: float
    P_10: float
    evaluated: int
    undefined: int
    questions: int
    undefined_query_ids: list[str]
    metric_definitions: str
    measured: int
    of: int
    not_measured: dict[str, int]
    ann_recall_k: float | None = None
    ann_recall_measured: int | None = None
    ann_recall_of: int | None = None
    ann_recall_not_measured: dict[str, int] | None = None


class RetrievalSummary(Summary):
    summary: RetrievalMeasures
    # Per question, its measures by trec_eval name; null for a question without targets (undefined).
    per_query: dict[str, dict[str, float] | None]


# --- admission_summary.json (defs/retrieval.py: admitted_contexts; core.admission, stages/retrieval) -------------

class BoundaryHits(Summary):
    question_hits: int
    question_hit_rate: float | None
    request_hits: int
    request_hit_rate: float | None


class HitRates(Summary):
    """core.admission.hit_rates: hit rate at each boundary over the requests with gold evidence."""

    questions: int
    requests: int
    ranked: BoundaryHits
    selected: BoundaryHits
    admitted: BoundaryHits


class LookupCounts(Summary):
    """A tool arm's lookups scored with no generation (stages.supply.question_lookups): core.supply.lookup_flow
    without its answer-quality accounting."""

    no_call: int
    empty_results: int
    wrong_document: int
    correct_document: int
    cases: int
    called: int
    lookup_calls: int
    hits: int
    hit_rate: float | None
    misses: int
    closes: bool


class AdmissionSummary(Summary):
    supply: str
    queries: int
    queries_with_omissions: int
    omitted_chunks: int
    mean_admitted_chunks: float
    mean_used_runes: float
    max_runes: int
    requests_with_evidence: int
    requests_ranked: int
    requests_selected: int
    requests_admitted: int
    admission_coverage: float | None
    hit_rates: HitRates
    lookup: LookupCounts | None = None  # a tool arm's only
    oracle_lookup: LookupCounts | None = None


# --- contract_summary.json (defs/generation.py: contract_summary; core.summaries.contract_summary) ---------------

class ContractSummary(Summary):
    total: int
    valid: int
    parse_failures: int
    contract_failures: int
    contract_failure_reasons: dict[str, int]
    abstentions: int
    escalated: int
    free_text: int
    no_answer: dict[str, int]
    provider_faults: dict[str, int]
    mean_answer_chars: float
    mean_cited_chunks: float
    parsed_from: dict[str, int]  # core.contract.PARSED_FROM: json, fenced, prose
    sums_close: bool


# --- the request judge as an instrument (stages/request_judge.instrument), and a panel's agreement ---------------

class Derivation(Summary):
    """core.derive_requests.derivation_of: how the requests the judge judged were derived from gold answers."""

    method: str
    model: str
    prompt_digest: str | None
    requests_digest: str
    questions: int
    requests: int


class LearnedParameters(Summary):
    """core.learned_judge.LearnedJuror.instrument: the fitted juror's parameters file."""

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
    """stages/request_judge.panel_summary: the jurors' agreement (core.panel.agreement) and their faults."""

    jurors: list[str]
    requests: int
    all_measured: int
    fleiss_kappa: float | None
    krippendorff_alpha: float | None
    jurors_disagree: int
    aggregation: str
    juror_not_measured: dict[str, int]


class RequestVerdicts(Summary):
    """core.judging.REQUEST_VERDICTS, each counted."""

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


# --- judge_summary.json (defs/evaluation.py: judge_summary; core.summaries.judge_summary, core.judge_measurement) --

class Share(Summary):
    flagged: int
    of: int
    share: float | None


class JudgePair(Summary):
    gold_judge: Share
    request_judge: Share


class JudgeMeasurement(Summary):
    """core.judge_measurement: sensitivity to planted falsehoods, false alarms on verbatim gold."""

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


# --- request_completeness.json (defs/diagnostics.py: request_completeness; core.completeness.completeness_totals) --

class WithheldRelevant(Summary):
    """stages/diagnostics.counterfactual_summary of a withheld-relevant arm."""

    kind: Literal["withheld-relevant"]
    withheld_requests: int
    correct_abstentions: int
    correct_abstention_rate: float | None


class PlantedFalsehood(Summary):
    """stages/diagnostics.counterfactual_summary of a planted-falsehood arm."""

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
    # core.completeness.CASES, each counted
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


# --- failure_flow.json (defs/diagnostics.py: failure_flow; core.flow, core.supply.lookup_flow, core.panel) --------

class Qualities(Summary):
    """core.flow.QUALITIES: a branch's items by answer quality."""

    acceptable: int
    wrong: int
    unanswered: int
    not_measured: int


class FlowAccounting(Summary):
    """Every branch of core.flow.FLOW_BRANCHES, by answer quality."""

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
    """core.flow.hit_rate: question and request hit rates over every case, with their denominators."""

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
    """core.panel.judge_sensitive: the requests whose branch depends on which juror decided."""

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
    """Requests per branch (core.flow.flow_table), the hit rate, and a panel's or a tool arm's extra."""

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


# --- phoenix_annotations.json (defs/diagnostics.py: phoenix_annotations; core.phoenix_annotations) ----------------

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
