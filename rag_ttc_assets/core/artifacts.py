"""Every artifact of an arm, declared once: its code version, the arm fields it reads, the digests it is built from.

One declaration feeds three things that must agree: the store's content key of a shared artifact
(`Artifact.key`: arms that agree on it share the build), the fingerprint `rag-ttc run` and the UI use
to tell an up-to-date asset from a stale one (`defs.arm_registry.fingerprints`: the declared fields, the
files they name, the upstream fingerprints), and the asset's Dagster code version. An arm field read by
an asset but declared by none of its artifacts would let two different arms share a result, or leave a
changed result looking current: `test_artifacts` changes every `ArmConfig` field one at a time and checks
that exactly the declaring artifacts (and what is downstream of them) change.

Bump an artifact's `version` when the code that builds it changes what it writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rag_ttc_assets.core.arms import ArmConfig, VectorIndexConfig
from rag_ttc_assets.core.chunking import CHUNKER_VERSION
from rag_ttc_assets.core.representations import MODEL_BUILT
from rag_ttc_assets.core.usage import DECIDED_BY, unused

# Fields that change how an arm runs, never what it computes: declared by no artifact, on purpose.
# generation_workers: how many provider calls run at once. representation_budget: how many builder calls may
# run; a row the budget stopped is recorded as such and retried on the next run (the representations asset's
# incomplete_rows), so arms that differ only in it share one build, and one set of indexes.
EXECUTION_ONLY = frozenset({"generation_workers", "representation_budget"})

# Read by every arm, an imported one too: which questions it answers, and where its evidence and answers come from.
READ_BY_EVERY_ARM = frozenset({"question_set", "supply"})

# Each source contributes this many candidates to fusion, so a chunk ranked just below retrieve_k by one
# source can still be lifted by the other (part of the retrieval rows' key).
SOURCE_DEPTH = 100


@dataclass(frozen=True)
class Artifact:
    """What one artifact depends on. `inputs` names the digests from outside the arm config (the corpus, the
    evaluation, upstream artifacts) that its store key takes; per-arm tables are not content-keyed and
    declare none."""

    name: str
    version: str
    fields: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    # Fields that count only for arms where `applies(cfg)` holds: a model builder's settings matter to a
    # model-built representation, not to a template (whose arms then share one build whatever they say there).
    conditional: tuple[str, ...] = ()
    applies: Callable[[ArmConfig], bool] | None = None
    # An artifact some arms never read (core.usage: an index their retrieval mode does not search). For such an
    # arm it is not built, and none of its fields count; the fields that decide it (usage.DECIDED_BY) are part of
    # its declaration, so switching an arm between reading and not reading it moves its fingerprint.
    optional: bool = False
    decided_by: tuple[str, ...] = DECIDED_BY
    # A field of which only some keys count here: `vector_index`'s build parameters are the index's key, its query
    # parameters the retrieval rows' (an nprobes sweep shares one index build).
    parts: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # The lab's own build of what an imported arm takes from its source (imported.import_stage: its retrieval rows,
    # admitted contexts and answers): for such an arm only the fields every arm reads count (READ_BY_EVERY_ARM, among
    # them `supply`, which is declared here for that reason), so a default it never reads (evidence_k, the
    # generator, the prompt) leaves it current.
    from_source: bool = False

    def __post_init__(self) -> None:
        unknown = [f for f in self.all_fields if f not in ArmConfig.model_fields]
        if unknown:
            raise ValueError(f"artifact {self.name!r} declares unknown arm fields {unknown}")
        if bool(self.conditional) != (self.applies is not None):
            raise ValueError(f"artifact {self.name!r}: conditional fields and `applies` go together")
        if set(self.parts) - set(self.all_fields):
            raise ValueError(f"artifact {self.name!r}: parts of fields it does not declare {sorted(self.parts)}")

    @property
    def all_fields(self) -> tuple[str, ...]:
        declared = self.fields + self.conditional + (self.decided_by if self.optional else ())
        return declared + (("supply",) if self.from_source and "supply" not in declared else ())

    def unused_reason(self, cfg: ArmConfig) -> str | None:
        """Why `cfg` never reads this artifact (core.usage), or None when it does."""
        return unused(cfg).get(self.name) if self.optional else None

    def fields_for(self, cfg: ArmConfig) -> tuple[str, ...]:
        """The fields this arm's artifact depends on: the declared ones, and the conditional ones where they apply;
        none for an arm that does not read it."""
        if self.unused_reason(cfg) is not None:
            return ()
        if self.from_source and cfg.supply == "imported":
            return tuple(f for f in self.all_fields if f in READ_BY_EVERY_ARM)
        return self.fields + (self.conditional if self.applies is not None and self.applies(cfg) else ())

    def key(self, cfg: ArmConfig, **inputs: Any) -> dict[str, Any]:
        """The store's content key: the version, the fields' values (fields_for) and exactly the declared inputs."""
        if set(inputs) != set(self.inputs):
            raise ValueError(f"artifact {self.name!r} is keyed by inputs {sorted(self.inputs)}, "
                             f"given {sorted(inputs)}")
        key = {"artifact": self.name, "version": self.version,
               "fields": field_values((self,), cfg), "inputs": dict(sorted(inputs.items()))}
        # Never built under this key (nothing is stored for an unused artifact); said, so it cannot pass for one.
        return key if self.unused_reason(cfg) is None else {**key, "used_by_arm": False}


def field_values(declared: tuple[Artifact, ...], cfg: ArmConfig) -> dict[str, Any]:
    """The values of the fields `declared` depend on for `cfg` (fields_for), as JSON; a field declared in parts
    (`Artifact.parts`) keeps only the keys the artifacts declare. The store key and the fingerprint both read this."""
    dumped = cfg.model_dump(mode="json")
    out: dict[str, Any] = {}
    for a in declared:
        for f in a.fields_for(cfg):
            if f in a.parts:
                kept = out.get(f, {}) if isinstance(out.get(f), dict) else {}
                out[f] = {**kept, **{k: dumped[f][k] for k in a.parts[f]}}
            else:
                out[f] = dumped[f]
    return out


# --- the corpus side (shared artifacts in the store) ---------------------------------------------------------
CORPUS_BINDING = Artifact("corpus_binding", "binding/2", ("dataset",))
# The dataset's labels (evaluation.json, derived_requests.json): their own digest, read only by the assets that
# read labels (registry.arm_asset `reads`), so a `rag-ttc labels update` leaves the corpus side current.
LABELS = Artifact("labels", "labels/1", ("dataset",))
# An imported arm's source file (imported.import_source), bound by the digest of its bytes; unused by every other arm.
IMPORTED_SOURCE = Artifact("imported_source", "imported/1", ("source",), ("source_digest", "evaluation_digest"),
                           optional=True, decided_by=("supply",))
CHUNKS = Artifact("chunks", CHUNKER_VERSION, ("chunk_runes", "overlap_runes"), ("corpus_digest",),
                  optional=True, decided_by=("supply",))
REPRESENTATIONS = Artifact(
    "representations", "representations/2", ("representation", "representation_era"),
    ("chunks", "builder", "prompt_digest"),
    conditional=("representation_builder", "representation_prompt", "allow_unpriced_provider"),
    applies=lambda cfg: cfg.representation in MODEL_BUILT, optional=True, decided_by=("supply",))
_INDEX_DECIDED_BY = (*DECIDED_BY, "supply")  # an imported arm reads no index of the lab's
BM25_INDEX = Artifact("bm25_index", "tantivy-0.27/en-stem-stopwords/1", (), ("representations",), optional=True,
                      decided_by=_INDEX_DECIDED_BY)
VECTOR_INDEX = Artifact("vector_index", "sentence-transformers/normalized/2", ("embedding_model", "vector_index"),
                        ("representations",), optional=True, decided_by=_INDEX_DECIDED_BY,
                        parts={"vector_index": VectorIndexConfig.BUILD})
QUESTION_EMBEDDINGS = Artifact("question_embeddings", "sentence-transformers/normalized/1", ("embedding_model",),
                               ("evaluation_digest",), optional=True, decided_by=_INDEX_DECIDED_BY)
# The digest of an index the arm does not read is None in its key (core.usage); the embedding model counts only
# where the vector side is searched.
# An approximate index's rows also hold the exact list (core.ann): its query parameters and type are the rows' key.
RETRIEVAL_ROWS = Artifact("retrieval_rows", "retrieval-rows/2",
                          ("retrieval", "rrf_k", "retrieve_k", "question_set"),
                          ("evaluation_digest", "source_depth", "chunks", "bm25_index", "vector_index",
                           "question_embeddings"),
                          conditional=("embedding_model", "vector_index"),
                          # By the retrieval mode alone: an imported arm's rows are never built under this key.
                          applies=lambda cfg: VECTOR_INDEX.name not in unused(cfg.model_copy(
                              update={"supply": "retrieval", "source": None})),
                          parts={"vector_index": VectorIndexConfig.QUERY}, from_source=True)

# --- per-arm tables and summaries ----------------------------------------------------------------------------
RETRIEVAL_SUMMARY = Artifact("retrieval_summary", "retrieval-metrics/2")
ADMITTED_CONTEXTS = Artifact("admitted_contexts", "admission/4",
                             ("evidence_k", "context_runes", "evidence_order", "shuffle_seed", "counterfactual",
                              "supply", "preloaded_documents"), from_source=True)
ANSWERS = Artifact("answers", "answers/3",
                   ("prompt", "requests_in_prompt", "generator", "generation_budget", "allow_unpriced_provider",
                    "supply", "lookup_top_n", "lookup_rounds", "title_index", "citation_check",
                    "citation_retry_prompt", "response_format"), from_source=True)
CONTRACT_RESULTS = Artifact("contract_results", "contract/2")
CONTRACT_SUMMARY = Artifact("contract_summary", "contract-summary/2")
JUDGE_VERDICTS = Artifact("judge_verdicts", "judge/4",
                          ("judge", "judge_statements_prompt", "judge_verdicts_prompt", "judge_gold_prompt",
                           "judge_budget", "response_format"))
# /5: each row's judge_cost_usd, and request judges (or jurors) of kind entailment, one call per request, whose
# prompt (judge_entailment_prompt) counts only for an arm that has one; /6: a panel's jurors' calibrated coverages
# (panel-rules/2, judging.panel), the panel's coverage their mean.
REQUEST_JUDGMENTS = Artifact("request_judgments", "request-judge/6",
                             ("request_judge", "judge_requests_prompt", "request_judge_budget", "response_format",
                              "request_judges", "request_judge_aggregation"),
                             conditional=("judge_entailment_prompt",), applies=lambda cfg: bool(cfg.entailment_jurors))
JUDGE_SUMMARY = Artifact("judge_summary", "judge-summary/4")
REQUEST_COMPLETENESS = Artifact("request_completeness", "completeness/7")
FAILURE_FLOW = Artifact("failure_flow", "flow/5")
# An arm imported from a Phoenix project logs its flow back there (imported.phoenix_annotations); every other arm has
# nothing to annotate. What it reads (the source) is imported_source's field, upstream of it.
PHOENIX_ANNOTATIONS = Artifact("phoenix_annotations", "phoenix-annotations/1")
RUN_RECORD = Artifact("run_record", "run-record/3")

ARTIFACTS: tuple[Artifact, ...] = tuple(v for v in globals().values() if isinstance(v, Artifact))


def fields_not_read(cfg: ArmConfig) -> frozenset[str]:
    """The arm fields `cfg` never reads: for an imported arm, those only the lab's own builds read (retrieval,
    admission, generation, chunking, representations, indexes), so a setting it carries by default cannot be named
    as a change against another arm; none for any other arm."""
    if cfg.supply != "imported":
        return frozenset()
    skipped = {a.name for a in ARTIFACTS if a.from_source or a.unused_reason(cfg) is not None}
    read = {f for a in ARTIFACTS if a.name not in skipped for f in a.all_fields} | READ_BY_EVERY_ARM
    return frozenset(f for a in ARTIFACTS if a.name in skipped for f in a.all_fields) - read


def declaring(field: str) -> list[str]:
    """The artifacts that declare arm field `field`."""
    return [a.name for a in ARTIFACTS if field in a.all_fields]
