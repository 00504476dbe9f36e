"""Experiment arms: one arm's typed, frozen configuration (`ArmConfig`, one arm = one Dagster partition), the model,
juror, imported-source and vector-index settings it holds, and `config_digest`.

An arm is the full effective configuration. Reading an arms file (defaults, named arms, sweep families, comparisons)
into these configs is core.arms_file's.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar, Literal

from pydantic import (BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, field_validator, model_serializer,
                      model_validator)

from rag_ttc_assets.core.representations import era_of


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelConfig(Frozen):
    """A litellm model string and how to call it. `api_key_env` is the NAME of a variable, never a key."""

    model: str = Field(min_length=1)
    params: dict[str, Any] = Field(default_factory=dict)
    api_base: str | None = None
    api_key_env: str | None = None
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=3, ge=0, le=10)

    @field_validator("params")
    @classmethod
    def _no_keys_in_params(cls, v: dict[str, Any]) -> dict[str, Any]:
        if "api_key" in v:
            raise ValueError("put the key in an environment variable and name it in api_key_env, not api_key")
        if "response_format" in v:
            raise ValueError("set the arm's response_format (json_schema or none), not params.response_format")
        return v


# The kinds of request judge (and juror): `requests` judges every request of a question in one call (prompt kind
# judge_requests, or the offline rules of a `local/` judge); `entailment` judges one request per call (prompt kind
# judge_entailment, judging.entailment): whether the answer addresses it, is supported or contradicted by its gold
# material, and the span of the answer that says so.
JUROR_KINDS = ("requests", "entailment")
ENTAILMENT = "entailment"


class JurorConfig(ModelConfig):
    """A request judge or a panel's juror: a model (ModelConfig) and its `kind` (JUROR_KINDS). The kind is written
    out only when it is not the default, so a judge without one keeps the configuration (and the fingerprints) it
    had before kinds existed."""

    kind: Literal["requests", "entailment"] = "requests"

    @model_serializer(mode="wrap")
    def _default_kind_unwritten(self, handler: SerializerFunctionWrapHandler) -> Any:
        out = handler(self)
        if isinstance(out, dict) and out.get("kind") == "requests":
            out.pop("kind")
        return out

    @model_validator(mode="after")
    def _entailment_calls_a_model(self) -> JurorConfig:
        from rag_ttc_assets.core.summaries import is_offline_baseline  # late: summaries is not needed to parse

        if self.kind == ENTAILMENT and is_offline_baseline(self.model):
            raise ValueError(f"kind: entailment asks a language model one request at a time; {self.model!r} is an "
                             "offline baseline with its own rules (drop kind, or name a litellm model)")
        return self


def _as_juror(v: Any) -> Any:
    """A ModelConfig given where a juror is expected (code that builds arms) is read as a juror of the default kind."""
    return v.model_dump() if isinstance(v, ModelConfig) and not isinstance(v, JurorConfig) else v


class ImportedSource(Frozen):
    """Where an imported arm's retrieval rows, admitted contexts and answers come from (imported.import_source): a file of
    another system's traces (OTLP JSON of OpenInference spans) or rows (RAGChecker, RAGAS), relative to the arms
    file, or a running Phoenix server's project (`format: phoenix`, `endpoint`, `project`), and how to read its
    answers."""

    file: str | None = Field(default=None, min_length=1)
    format: Literal["otlp_json", "otlp_jsonl", "ragchecker", "ragas", "phoenix"]
    # format: phoenix: the server's base URL (http://host:6006) and the project whose spans are read.
    endpoint: str | None = Field(default=None, pattern=r"^https?://[^\s/]+(/\S*)?$")
    project: str | None = Field(default=None, min_length=1)
    # How a free-text answer cites: `[2]` = the second document of the prompt, document IDs in brackets, or not at all.
    citation_style: Literal["numbered", "ids", "none"] = "none"
    # contract: the system already answers in the lab's answer format, so the lab's contract classifies its replies.
    answer_format: Literal["free_text", "contract"] = "free_text"
    # Two traces for one question are an error naming both, unless the later one is to be kept.
    pick: Literal["latest"] | None = None
    question_id_attribute: str = Field(default="metadata.question_id", min_length=1)

    @model_validator(mode="after")
    def _file_or_server(self) -> ImportedSource:
        if self.format == "phoenix":
            missing = [f for f in ("endpoint", "project") if getattr(self, f) is None]
            if missing or self.file is not None:
                raise ValueError("format: phoenix reads a Phoenix server's project: it takes `endpoint` and "
                                 "`project`, no `file`" + (f" (missing: {', '.join(missing)})" if missing else ""))
        elif self.file is None or self.endpoint is not None or self.project is not None:
            raise ValueError(f"format: {self.format} reads a file: it takes `file`, no `endpoint` or `project` "
                             "(for a Phoenix server set format: phoenix)")
        return self

    @property
    def server(self) -> bool:
        return self.format == "phoenix"

    @property
    def label(self) -> str:
        """What the source is, for messages: the file, or the server and project."""
        return f"Phoenix project {self.project!r} at {self.endpoint}" if self.server else str(self.file)


INDEX_TYPES = ("flat", "ivf_pq", "ivf_hnsw_sq", "ivf_hnsw_pq")
# Which of LanceDB's own parameters each index type takes (lancedb.index.IvfPq / HnswSq / HnswPq and the vector
# query's nprobes / refine_factor / ef). `flat` is no index: every query scans every row, exactly.
INDEX_PARAMS = {
    "flat": (),
    "ivf_flat": ("num_partitions", "nprobes"),
    "ivf_sq": ("num_partitions", "nprobes", "refine_factor"),
    "ivf_rq": ("num_partitions", "nprobes", "refine_factor"),
    "ivf_pq": ("num_partitions", "num_sub_vectors", "num_bits", "nprobes", "refine_factor"),
    "ivf_hnsw_sq": ("num_partitions", "m", "ef_construction", "nprobes", "refine_factor", "ef"),
    "ivf_hnsw_pq": ("num_partitions", "num_sub_vectors", "num_bits", "m", "ef_construction", "nprobes", "refine_factor",
                    "ef"),
}


class VectorIndexConfig(Frozen):
    """The LanceDB table's vector index (`vector_index` in arms.yaml): its type, LanceDB's build parameters and the
    query parameters its searches use. Unset parameters are LanceDB's defaults, resolved against the corpus by
    core.ann (the build records the values it used).

    The build parameters (BUILD) are the `vector_index` artifact's key; the query parameters (QUERY) the retrieval
    rows' (core.artifacts), so arms that differ only in nprobes, refine_factor or ef search one index build."""

    type: Literal["flat", "ivf_flat", "ivf_sq", "ivf_rq", "ivf_pq", "ivf_hnsw_sq", "ivf_hnsw_pq"] = "flat"
    num_partitions: int | None = Field(default=None, gt=0)
    num_sub_vectors: int | None = Field(default=None, gt=0)
    # Bits per PQ code: 8 (256 centroids per sub-vector, LanceDB's default) or 4 (16, a coarser code).
    num_bits: Literal[4, 8] | None = None
    m: int | None = Field(default=None, gt=0)
    ef_construction: int | None = Field(default=None, gt=0)
    nprobes: int | None = Field(default=None, gt=0)
    refine_factor: int | None = Field(default=None, gt=0)
    ef: int | None = Field(default=None, gt=0)

    # `type` is in both: the retrieval rows of an approximate index also hold the exact list (core.ann).
    BUILD: ClassVar[tuple[str, ...]] = ("type", "num_partitions", "num_sub_vectors", "num_bits", "m", "ef_construction")
    QUERY: ClassVar[tuple[str, ...]] = ("type", "nprobes", "refine_factor", "ef")

    @model_validator(mode="after")
    def _params_of_its_type(self) -> VectorIndexConfig:
        takes = INDEX_PARAMS[self.type]
        extra = [f for f in self.BUILD + self.QUERY if f != "type" and getattr(self, f) is not None and f not in takes]
        if extra:
            raise ValueError(f"index type {self.type!r} takes no {', '.join(extra)}"
                             + (f" (it takes {', '.join(takes)})" if takes else " (flat is an exact scan, no index)"))
        if self.nprobes is not None and self.num_partitions is not None and self.nprobes > self.num_partitions:
            raise ValueError(f"nprobes ({self.nprobes}) is above num_partitions ({self.num_partitions}): "
                             "a query cannot probe more partitions than the index has")
        return self

    @property
    def approximate(self) -> bool:
        return self.type != "flat"


class ArmConfig(Frozen):
    """The effective configuration of one arm (seed section 4.1 baseline as defaults)."""

    dataset: str = "pyref"
    question_set: Literal["all", "pilot"] = "all"
    chunk_runes: int = Field(default=1200, gt=0)
    overlap_runes: int = Field(default=120, ge=0)
    representation: Literal["plain", "titled", "contextual"] = "titled"
    # contextual: a builder model writes each chunk a short context from its document (core.contextual), prepended
    # for indexing and embedding only; `local/contextual` is the offline baseline builder. The era labels what
    # produced the representations (default: the builder's model string), so two eras never share an index.
    representation_builder: ModelConfig = ModelConfig(model="local/contextual")
    representation_prompt: str = "representation-context-v1"
    representation_era: str | None = Field(default=None, min_length=1)
    representation_budget: int = Field(default=20000, ge=0)
    embedding_model: str = "all-MiniLM-L6-v2"
    vector_index: VectorIndexConfig = VectorIndexConfig()
    retrieval: Literal["bm25", "vector", "rrf"] = "rrf"
    rrf_k: int = Field(default=60, gt=0)
    retrieve_k: int = Field(default=20, gt=0)
    evidence_k: int = Field(default=5, gt=0)
    context_runes: int = Field(default=12000, gt=0)
    evidence_order: Literal["ranked", "reversed", "shuffled"] = "ranked"
    shuffle_seed: int = 0
    counterfactual: Literal["none", "withheld-relevant", "planted-falsehood"] = "none"
    prompt: str = "grounded-answer-v1"
    # Labels never reach the system under test: a generation prompt that renders the evaluation's request
    # annotation ({{requests}}) is an oracle arm's, declared here and named as oracle in every output.
    requests_in_prompt: Literal["none", "oracle"] = "none"
    # Supply mode (second seed, core.supply): retrieval, preloaded (a fixed document set pasted whole into every
    # prompt) or tool (the model calls `lookup`; each call returns the top lookup_top_n chunks).
    # imported: retrieval rows, admitted contexts and answers read from another system's traces or rows (`source`).
    supply: Literal["retrieval", "preloaded", "tool", "imported"] = "retrieval"
    source: ImportedSource | None = None
    preloaded_documents: Literal["all"] | list[str] = "all"
    lookup_top_n: int = Field(default=1, gt=0, le=100)
    lookup_rounds: int = Field(default=3, gt=0, le=10)
    title_index: bool = False
    citation_check: bool = False
    citation_retry_prompt: str = "restated-evidence-v2"
    generator: ModelConfig = ModelConfig(model="local/extractive")
    # Structured output (core.response_formats): json_schema sends each answer and judge call its reply's JSON schema
    # as `response_format`, which a server may enforce while decoding (constrained); none sends none (free).
    response_format: Literal["json_schema", "none"] = "json_schema"
    generation_workers: int = Field(default=4, gt=0, le=64)
    generation_budget: int = Field(default=10000, ge=0)
    allow_unpriced_provider: bool = False
    # The support judge (statements, faithfulness against the admitted evidence, the gold judge). `judge: none`
    # runs none: a completeness-only measurement, faithfulness and contradicts_gold then not measured.
    judge: ModelConfig = ModelConfig(model="local/lexical")
    judge_statements_prompt: str = "judge-statements-v1"
    judge_verdicts_prompt: str = "judge-verdicts-v1"
    judge_gold_prompt: str = "judge-gold-v1"
    judge_budget: int = Field(default=20000, ge=0)
    # The request judge (request_judgments): one instrument for every arm of a comparison, given the labels,
    # never the generator's own request items or `supported` flags.
    request_judge: JurorConfig = JurorConfig(model="local/lexical")
    judge_requests_prompt: str = "judge-requests-v1"
    # The prompt of a request judge or juror of `kind: entailment` (one request per call, judging.entailment); read only
    # by an arm that has one.
    judge_entailment_prompt: str = "judge-entailment-v1"
    request_judge_budget: int = Field(default=20000, ge=0)
    # A panel of request judges (judging.panel), replacing request_judge when set: each juror's verdict per request is
    # kept and the panel's comes from request_judge_aggregation over the jurors that measured it. Default `all`:
    # the aggregation that agreed best with people across the public sets measured (docs/judges.md, "One calibrated
    # scale, and the aggregation chosen by agreement"); it was `majority` before panel-rules/2.
    request_judges: list[JurorConfig] = Field(default_factory=list)
    request_judge_aggregation: Literal["majority", "all", "any", "mean"] = "all"

    @field_validator("judge", mode="before")
    @classmethod
    def _no_judge(cls, v: Any) -> Any:
        """`judge: none` (or null): no support judge; kept as the model name `none` (core.summaries.NO_JUDGE)."""
        if v is None or (isinstance(v, str) and v.strip().lower() == "none"):
            return {"model": "none"}
        if isinstance(v, str):
            raise ValueError(f"judge is a model setting ({{model: {v}}}) or `none` (no support judge), not {v!r}")
        return v

    @field_validator("request_judges", mode="before")
    @classmethod
    def _juror_strings(cls, v: Any) -> Any:
        return [{"model": x} if isinstance(x, str) else _as_juror(x) for x in v] if isinstance(v, list) else v

    @field_validator("request_judge", mode="before")
    @classmethod
    def _a_juror(cls, v: Any) -> Any:
        return _as_juror(v)

    @field_validator("request_judges")
    @classmethod
    def _a_panel(cls, v: list[JurorConfig]) -> list[JurorConfig]:
        if len(v) == 1:
            raise ValueError("a panel of one juror is one request judge: name it in request_judge, or add a second "
                             "juror")
        models = [j.model for j in v]
        if len(set(models)) != len(models):
            raise ValueError(f"a juror appears twice: {models}; each juror is a different model")
        return v

    @model_validator(mode="after")
    def _possible(self) -> ArmConfig:
        if self.overlap_runes >= self.chunk_runes:
            raise ValueError(
                f"overlap_runes ({self.overlap_runes}) must be smaller than chunk_runes ({self.chunk_runes})"
            )
        if self.evidence_k > self.retrieve_k:
            raise ValueError(f"evidence_k ({self.evidence_k}) cannot exceed retrieve_k ({self.retrieve_k})")
        if self.supply != "retrieval" and self.counterfactual != "none":
            raise ValueError(f"counterfactual {self.counterfactual!r} edits retrieved evidence; it needs "
                             f"supply 'retrieval', not {self.supply!r}")
        if (self.supply == "imported") != (self.source is not None):
            raise ValueError("an imported arm (supply: imported) names its `source`, and only an imported arm does"
                             if self.supply == "imported" else
                             f"`source` is for imported arms; this arm's supply is {self.supply!r} (set supply: imported)")
        if isinstance(self.preloaded_documents, list) and not self.preloaded_documents:
            raise ValueError("preloaded_documents is an empty list; name documents or use 'all'")
        return self

    @property
    def entailment_jurors(self) -> list[JurorConfig]:
        """The request judge, or the panel's jurors, of kind entailment (they read judge_entailment_prompt)."""
        return [j for j in (self.request_judges or [self.request_judge]) if j.kind == ENTAILMENT]

    @property
    def label_use(self) -> str:
        """What of the evaluation's labels reaches this arm's generator: "none", "oracle" (the request annotation
        is rendered into the prompt) or "counterfactual:<kind>" (labels used to edit the evidence on purpose)."""
        if self.requests_in_prompt == "oracle":
            return "oracle"
        return f"counterfactual:{self.counterfactual}" if self.counterfactual != "none" else "none"

    @property
    def representation_era_label(self) -> str:
        return era_of(self.representation, self.representation_builder.model, self.representation_era)


def config_digest(obj: Any) -> str:
    """Stable digest of a JSON-able config (sorted keys)."""
    if isinstance(obj, BaseModel):
        obj = obj.model_dump(mode="json")
    data = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return "sha256:" + hashlib.sha256(data).hexdigest()
