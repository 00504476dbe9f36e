"""One declaration per artifact (core.artifacts) feeds the store key, the fingerprint and the Dagster code version.

Every field of ArmConfig is changed, one at a time: exactly the artifacts that declare it change their store
key, exactly the assets built from them (and everything downstream) change fingerprint, and a field declared
by no artifact fails unless it is execution-only.
"""

from __future__ import annotations

import typing

import pytest

import rag_ttc_assets.definitions  # noqa: F401  (registers every asset)
from rag_ttc_assets.core.arms import ArmConfig, ImportedSource, ModelConfig, VectorIndexConfig
from rag_ttc_assets.core.artifacts import ANSWERS, ARTIFACTS, EXECUTION_ONLY, Artifact, declaring
from rag_ttc_assets.defs import graph
from rag_ttc_assets.defs.arm_registry import SPECS, fingerprints

BASE = ArmConfig()
# Conditional fields count only where they apply: each field is changed against every base, and the union of what
# moved must be exactly what declares it (core.artifacts.Artifact.conditional). A vector-only base reads no Tantivy
# index: its `retrieval` changed (to bm25) moves both indexes between read and unread (core.usage). A request judge of
# kind entailment reads judge_entailment_prompt (judging.entailment).
BASES = (BASE, ArmConfig(representation="contextual"), ArmConfig(retrieval="vector"),
         ArmConfig(request_judge={"model": "openai/judge", "kind": "entailment"}))


def other_value(field: str, base: ArmConfig = BASE):
    """A valid value of `field` different from `base`'s."""
    value = getattr(base, field)
    annotation = ArmConfig.model_fields[field].annotation
    if typing.get_origin(annotation) is typing.Literal:
        return next(v for v in typing.get_args(annotation) if v != value)
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, VectorIndexConfig):  # its type is in both its parts (the index's and the rows' key)
        return VectorIndexConfig(type="ivf_pq" if value.type == "flat" else "flat")
    if isinstance(value, ModelConfig):
        return value.model_copy(update={"model": value.model + "-other"})
    if field == "preloaded_documents":
        return ["doc-1"]
    if field == "request_judges":  # a panel of two jurors (judging.panel)
        return [ModelConfig(model="local/lexical"), ModelConfig(model="local/coverage")]
    if value is None:  # an optional label (representation_era)
        return "other-era"
    if isinstance(value, str):
        return value + "-other"
    raise AssertionError(f"no other value for {field!r} ({value!r}): extend other_value")


# An imported arm (supply: imported) names its source; `source` is changed against it, and `supply` to it.
SOURCE = ImportedSource(file="traces.json", format="otlp_json")
IMPORTED = ArmConfig(supply="imported", source=SOURCE)


def bases(field: str) -> tuple[ArmConfig, ...]:
    return (IMPORTED,) if field == "source" else BASES


def changed(field: str, base: ArmConfig = BASE) -> ArmConfig:
    if field == "supply":  # to imported, the supply that reads none of the lab's corpus-side builds
        return ArmConfig(**{**base.model_dump(), "supply": "imported", "source": SOURCE})
    if field == "source":
        return base.model_copy(update={"source": SOURCE.model_copy(update={"file": "other.json"})})
    return ArmConfig(**{**base.model_dump(), field: other_value(field, base)})


def undeclared(artifacts: tuple[Artifact, ...]) -> list[str]:
    """Arm fields no artifact declares and that are not execution-only."""
    declared = {f for a in artifacts for f in a.all_fields}
    return [f for f in ArmConfig.model_fields if f not in declared and f not in EXECUTION_ONLY]


def test_every_arm_field_is_declared_by_an_artifact_or_execution_only():
    assert undeclared(ARTIFACTS) == []
    assert [f for f in EXECUTION_ONLY if declaring(f)] == []


def test_a_field_missing_from_a_declaration_is_caught():
    # requests_in_prompt was once in no declaration: an oracle arm and its label-free twin shared a fingerprint.
    without = tuple(Artifact(a.name, a.version, tuple(f for f in a.fields if f != "requests_in_prompt"), a.inputs)
                    if a is ANSWERS else a for a in ARTIFACTS)
    assert undeclared(without) == ["requests_in_prompt"]


def test_a_conditional_field_counts_only_where_it_applies():
    from rag_ttc_assets.core.artifacts import REPRESENTATIONS

    inputs = dict.fromkeys(REPRESENTATIONS.inputs, "sha256:same")
    # A template's arms share one build whatever they say of a builder; a model-built kind's do not.
    for base, moves in ((BASE, False), (BASES[1], True)):
        other = changed("representation_builder", base)
        assert (REPRESENTATIONS.key(base, **inputs) != REPRESENTATIONS.key(other, **inputs)) is moves


def test_the_entailment_prompt_s_text_counts_only_for_an_arm_with_an_entailment_judge():
    """Its file's digest (Lab.fingerprint_inputs, keyed by the field) moves request_judgments and what is downstream
    where a request judge or juror is of kind entailment, and nothing elsewhere."""
    moved = {}
    for base in (BASE, BASES[3]):
        a, b = (fingerprints(base, {"judge_entailment_prompt": d}) for d in ("sha256:a", "sha256:b"))
        moved[base is BASE] = {name for name in a if a[name] != b[name]}
    assert moved[True] == set() and moved[False] == {"request_judgments", *graph.downstream("request_judgments")}


@pytest.mark.parametrize("field", sorted(set(ArmConfig.model_fields) - EXECUTION_ONLY))
def test_a_field_changes_exactly_the_declaring_artifacts_keys(field):
    moved = set()
    for base in bases(field):
        other = changed(field, base)
        for a in ARTIFACTS:
            inputs = dict.fromkeys(a.inputs, "sha256:same")
            if a.key(base, **inputs) != a.key(other, **inputs):
                assert a.name in declaring(field), f"{field} moves {a.name}'s key but is not declared there"
                moved.add(a.name)
    assert moved == set(declaring(field))


@pytest.mark.parametrize("field", sorted(ArmConfig.model_fields))
def test_a_field_changes_exactly_the_fingerprints_of_its_assets_and_downstream(field):
    inputs = {"dataset": "sha256:dataset-files"}
    moved = set()
    for base in bases(field):
        before, after = fingerprints(base, inputs), fingerprints(changed(field, base), inputs)
        moved |= {name for name in before if before[name] != after[name]}
    own = {s.name for s in SPECS if field in s.config}
    expected = own | {d for name in own for d in graph.downstream(name)}
    assert moved == expected
    if field in EXECUTION_ONLY:
        assert expected == set()


def test_every_asset_is_built_from_its_own_declaration():
    names = {s.name for s in SPECS}
    for s in SPECS:
        assert s.artifacts[-1].name == s.name
        assert s.code_version == "+".join(a.version for a in s.artifacts)
    # Every declared artifact is built by an asset (question embeddings along with the retrieval rows).
    built = {a.name for s in SPECS for a in s.artifacts}
    assert {a.name for a in ARTIFACTS} == built
    assert names <= built


def test_a_key_takes_exactly_the_declared_inputs():
    from rag_ttc_assets.core.artifacts import CHUNKS

    with pytest.raises(ValueError, match=r"'chunks' is keyed by inputs \['corpus_digest'\], given \[\]"):
        CHUNKS.key(BASE)
    with pytest.raises(ValueError, match="unknown arm fields"):
        Artifact("x", "x/1", ("chunk_size",))


def test_the_dagster_code_version_is_the_declaration():
    from rag_ttc_assets.definitions import defs

    from dagster import AssetKey

    graph_ = defs.resolve_asset_graph()
    for s in SPECS:
        assert graph_.get(AssetKey(s.name)).code_version == s.code_version


def test_an_unused_artifact_s_fields_matter_to_no_key_or_fingerprint():
    from rag_ttc_assets.core.artifacts import QUESTION_EMBEDDINGS, RETRIEVAL_ROWS, VECTOR_INDEX

    bm25 = ArmConfig(retrieval="bm25")
    other = changed("embedding_model", bm25)
    for a in (VECTOR_INDEX, QUESTION_EMBEDDINGS, RETRIEVAL_ROWS):
        inputs = dict.fromkeys(a.inputs, "sha256:same")
        assert a.key(bm25, **inputs) == a.key(other, **inputs)
    assert VECTOR_INDEX.key(bm25, representations="sha256:same")["used_by_arm"] is False
    assert "used_by_arm" not in VECTOR_INDEX.key(BASE, representations="sha256:same")
    inputs = {"dataset": "sha256:dataset-files"}
    assert fingerprints(bm25, inputs) == fingerprints(other, inputs)
    # The same change on an arm that searches vectors moves the vector side and everything downstream.
    rrf_before, rrf_after = fingerprints(BASE, inputs), fingerprints(changed("embedding_model"), inputs)
    assert {n for n in rrf_before if rrf_before[n] != rrf_after[n]} == \
        {"vector_index", *graph.downstream("vector_index")}


def test_vector_index_build_parameters_key_the_index_and_query_parameters_the_retrieval_rows():
    """An nprobes sweep shares one index build: a query parameter moves the retrieval rows' key and fingerprint,
    never the index's; a build parameter moves the index's key (and the rows only through its digest)."""
    from rag_ttc_assets.core.artifacts import RETRIEVAL_ROWS, VECTOR_INDEX

    def arm(**vi):
        return ArmConfig(vector_index={"type": "ivf_pq", "num_partitions": 8, **vi})

    def keys(cfg):
        return (VECTOR_INDEX.key(cfg, representations="sha256:same"),
                RETRIEVAL_ROWS.key(cfg, **dict.fromkeys(RETRIEVAL_ROWS.inputs, "sha256:same")))

    base = arm(nprobes=2)
    for query in (arm(nprobes=4), arm(nprobes=2, refine_factor=5)):
        assert keys(query)[0] == keys(base)[0]
        assert keys(query)[1] != keys(base)[1]
    inputs = {"dataset": "sha256:dataset-files"}
    before, after = fingerprints(base, inputs), fingerprints(arm(nprobes=4), inputs)
    assert before["vector_index"] == after["vector_index"]
    assert {n for n in before if before[n] != after[n]} == {"retrieval_rows", *graph.downstream("retrieval_rows")}
    for build in (arm(nprobes=2, num_sub_vectors=48), arm(nprobes=2, num_bits=4), ArmConfig(vector_index={"type": "ivf_pq", "num_partitions": 4,
                                                                              "nprobes": 2})):
        assert keys(build)[0] != keys(base)[0]
        assert keys(build)[1] == keys(base)[1]
    assert VECTOR_INDEX.key(base, representations="x")["fields"]["vector_index"] == {
        "type": "ivf_pq", "num_partitions": 8, "num_sub_vectors": None, "num_bits": None, "m": None,
        "ef_construction": None}


def _valid_on_an_imported_arm(field: str) -> bool:
    try:
        changed(field, IMPORTED)
    except ValueError:  # a setting an imported arm cannot take (a counterfactual edits the lab's own retrieval)
        return False
    return True


# `supply` is changed to imported against every base above; here every other field an imported arm can take.
ON_IMPORTED = sorted(f for f in set(ArmConfig.model_fields) - EXECUTION_ONLY - {"supply"} if _valid_on_an_imported_arm(f))


def test_every_field_but_a_counterfactual_is_changed_on_an_imported_arm():
    assert set(ArmConfig.model_fields) - EXECUTION_ONLY - {"supply"} - set(ON_IMPORTED) == {"counterfactual"}


@pytest.mark.parametrize("field", ON_IMPORTED)
def test_an_imported_arm_moves_only_with_a_field_it_reads(field):
    """An imported arm's retrieval rows, admitted contexts and answers are its source's (Artifact.from_source): a
    default it never reads (core.artifacts.fields_not_read: evidence_k, the generator, the prompt...) moves none of
    its fingerprints, so nothing of it turns stale; a field it reads (its judges', its source) still moves exactly
    what declares it and what is downstream."""
    from rag_ttc_assets.core.artifacts import fields_not_read

    inputs = {"dataset": "sha256:dataset-files"}
    # The entailment prompt is read by an arm with an entailment judge (judging.entailment), imported or not.
    base = (IMPORTED.model_copy(update={"request_judge": BASES[3].request_judge})
            if field == "judge_entailment_prompt" else IMPORTED)
    before, after = fingerprints(base, inputs), fingerprints(changed(field, base), inputs)
    moved = {name for name in before if before[name] != after[name]}
    if field in fields_not_read(base):
        assert moved == set(), f"{field}, which an imported arm never reads, moves {sorted(moved)}"
    else:
        own = {s.name for s in SPECS if field in s.fields_for(base) or field in s.fields_for(changed(field, base))}
        assert own and moved == own | {d for name in own for d in graph.downstream(name)}, field


def test_an_imported_arm_reads_none_of_the_lab_s_generation_and_admission_fields():
    from rag_ttc_assets.core.artifacts import fields_not_read

    assert {"evidence_k", "context_runes", "generator", "prompt", "retrieve_k", "rrf_k", "chunk_runes",
            "embedding_model"} <= fields_not_read(IMPORTED)
    assert not {"judge", "request_judge", "judge_budget", "response_format", "question_set", "supply",
                "source"} & fields_not_read(IMPORTED)
