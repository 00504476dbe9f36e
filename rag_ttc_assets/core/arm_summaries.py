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

This module holds the common parts and the summaries of the build, retrieval, admission and contract boundaries;
core/judge_summaries.py those of the judges and the diagnosis (request judge, support judge, completeness, failure
flow, Phoenix annotations).
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, RootModel, ValidationError

from rag_ttc_assets.core import contract


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


# --- binding.json, labels.json (defs/ingest_assets.py: corpus_binding, labels) -------------------------------------------

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


# --- import_mapping.json, imported_spans.json (defs/ingest_assets.py: imported_source; imported/import_stage.read_import) ------

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
    imported.import_source.phoenix_spans reads and checks them)."""


# --- representations.json (defs/ingest_assets.py: representations; core.representations.RECORD) -------------------------

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


# --- retrieval_summary.json (defs/retrieval_assets.py: retrieval_summary; stages/retrieval.retrieval_metrics) ------------

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


# --- admission_summary.json (defs/retrieval_assets.py: admitted_contexts; core.admission, stages/retrieval) -------------

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
    """A tool arm's lookups scored with no generation (stages.arm_supply.question_lookups): core.supply.lookup_flow
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


# --- contract_summary.json (defs/generation_assets.py: contract_summary; core.summaries.contract_summary) ---------------

class ContractSummary(contract.ContractSummary):
    """core.contract's counts (`summarize_contract`, its model reused: one declaration of the buckets) and what
    core.summaries.contract_summary adds: the delivered answers' means, where each parsed object was found, and
    whether the buckets add up."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    mean_answer_chars: float
    mean_cited_chunks: float
    parsed_from: dict[str, int]  # core.contract.PARSED_FROM: json, fenced, prose
    sums_close: bool
