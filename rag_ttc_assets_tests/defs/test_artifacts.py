"""One declaration per artifact (core.artifacts) feeds the store key, the fingerprint and the Dagster code version.

Every field of ArmConfig is changed, one at a time: exactly the artifacts that declare it change their store
key, exactly the assets built from them (and everything downstream) change fingerprint, and a field declared
by no artifact fails unless it is execution-only.
"""

from __future__ import annotations

import typing

import pytest

import rag_ttc_assets.definitions  # noqa: F401  (registers every asset)
from rag_ttc_assets.core.arms import ArmConfig, ModelConfig
from rag_ttc_assets.core.artifacts import ANSWERS, ARTIFACTS, EXECUTION_ONLY, Artifact, declaring
from rag_ttc_assets.defs import graph
from rag_ttc_assets.defs.registry import SPECS, fingerprints

BASE = ArmConfig()


def other_value(field: str):
    """A valid value of `field` different from the default's."""
    value = getattr(BASE, field)
    annotation = ArmConfig.model_fields[field].annotation
    if typing.get_origin(annotation) is typing.Literal:
        return next(v for v in typing.get_args(annotation) if v != value)
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, ModelConfig):
        return value.model_copy(update={"model": value.model + "-other"})
    if field == "preloaded_documents":
        return ["doc-1"]
    if isinstance(value, str):
        return value + "-other"
    raise AssertionError(f"no other value for {field!r} ({value!r}): extend other_value")


def changed(field: str) -> ArmConfig:
    return ArmConfig(**{**BASE.model_dump(), field: other_value(field)})


def undeclared(artifacts: tuple[Artifact, ...]) -> list[str]:
    """Arm fields no artifact declares and that are not execution-only."""
    declared = {f for a in artifacts for f in a.fields}
    return [f for f in ArmConfig.model_fields if f not in declared and f not in EXECUTION_ONLY]


def test_every_arm_field_is_declared_by_an_artifact_or_execution_only():
    assert undeclared(ARTIFACTS) == []
    assert [f for f in EXECUTION_ONLY if declaring(f)] == []


def test_a_field_missing_from_a_declaration_is_caught():
    # requests_in_prompt was once in no declaration: an oracle arm and its label-free twin shared a fingerprint.
    without = tuple(Artifact(a.name, a.version, tuple(f for f in a.fields if f != "requests_in_prompt"), a.inputs)
                    if a is ANSWERS else a for a in ARTIFACTS)
    assert undeclared(without) == ["requests_in_prompt"]


@pytest.mark.parametrize("field", sorted(set(ArmConfig.model_fields) - EXECUTION_ONLY))
def test_a_field_changes_exactly_the_declaring_artifacts_keys(field):
    other = changed(field)
    moved = []
    for a in ARTIFACTS:
        inputs = dict.fromkeys(a.inputs, "sha256:same")
        if a.key(BASE, **inputs) != a.key(other, **inputs):
            moved.append(a.name)
    assert moved == declaring(field)


@pytest.mark.parametrize("field", sorted(ArmConfig.model_fields))
def test_a_field_changes_exactly_the_fingerprints_of_its_assets_and_downstream(field):
    inputs = {"dataset": "sha256:dataset-files"}
    before, after = fingerprints(BASE, inputs), fingerprints(changed(field), inputs)
    own = {s.name for s in SPECS if field in s.config}
    expected = own | {d for name in own for d in graph.downstream(name)}
    assert {name for name in before if before[name] != after[name]} == expected
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
