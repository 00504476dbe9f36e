"""core.representations and the arm's representation fields: eras, builders, and store keys that keep eras apart."""

import pytest

from rag_ttc_assets.core.artifacts import REPRESENTATIONS
from rag_ttc_assets.core.arms import ArmConfig, ModelConfig
from rag_ttc_assets.core.chunking import Chunk
from rag_ttc_assets.core.representations import BUILDERS, era_of, identity, represent

CHUNK = Chunk(chunk_id="d#chunk-0", doc_id="d", ordinal=0, text="body", runes=4, start=0, end=4)


def test_templates_and_the_model_built_kind():
    assert represent(CHUNK, "T", "titled") == "T\n\nbody" and represent(CHUNK, "T", "plain") == "body"
    with pytest.raises(ValueError, match="built by a model"):
        represent(CHUNK, "T", "contextual")
    assert BUILDERS["contextual"] == "contextual/1"


def test_era_is_the_arms_label_else_the_builder_model_else_the_template():
    assert era_of("contextual", "openai/gpt-4o-mini", None) == "openai/gpt-4o-mini"
    assert era_of("contextual", "openai/gpt-4o-mini", "2024-07") == "2024-07"
    assert era_of("titled", "local/contextual", None) == "titled/1"


def test_identity_of_a_template_names_no_model_or_prompt():
    assert identity("titled", "local/contextual", "p", "sha256:x", "titled/1", True) == {
        "representation": "titled", "builder": "titled/1", "builder_model": None, "builder_prompt": None,
        "prompt_digest": None, "era": "titled/1", "offline_baseline": False}


def _key(cfg: ArmConfig) -> dict:
    return REPRESENTATIONS.key(cfg, chunks="sha256:c", builder="b", prompt_digest="sha256:p")


def test_two_eras_or_builders_never_share_a_store_key():
    base = ArmConfig(representation="contextual")
    keys = [_key(c) for c in (
        base, base.model_copy(update={"representation_era": "2026-q1"}),
        base.model_copy(update={"representation_builder": ModelConfig(model="openai/gpt-4o-mini")}),
        base.model_copy(update={"representation_builder": ModelConfig(model="openai/m", api_base="http://h/v1")}),
        base.model_copy(update={"representation_prompt": "representation-context-v2"}))]
    assert len({repr(k) for k in keys}) == len(keys)
    # The budget changes how many calls may run, not what a built row is: not in the key.
    assert _key(base.model_copy(update={"representation_budget": 5})) == keys[0]


def test_a_template_arm_is_keyed_by_its_template_and_era_only():
    titled = ArmConfig()
    other_builder = titled.model_copy(update={"representation_builder": ModelConfig(model="openai/x")})
    assert _key(titled) == _key(other_builder)
    assert _key(titled)["fields"] == {"representation": "titled", "representation_era": None}
    assert titled.representation_era_label == "titled/1"
    assert _key(titled) != _key(titled.model_copy(update={"representation_era": "2026-q1"}))


def test_an_empty_era_label_is_refused():
    with pytest.raises(ValueError, match="representation_era"):
        ArmConfig(representation_era="")


def test_a_contextual_arm_with_an_unknown_builder_prompt_is_an_error_naming_arm_and_field(mini_lab):
    from rag_ttc_assets.core.arms_file import ArmsError
    from rag_ttc_assets.lab import Lab

    mini_lab.arms_file.write_text("defaults: {dataset: mini}\narms:\n  ctx: {representation: contextual, "
                                  "representation_prompt: representation-nope}\n  titled: {representation_prompt: "
                                  "representation-nope}\n", encoding="utf-8")
    with pytest.raises(ArmsError) as e:
        Lab.from_env().arms
    assert "arm 'ctx': field 'representation_prompt': unknown prompt 'representation-nope'" in str(e.value)
    # A template arm never reads the builder prompt, so it is not checked (or copied into its run record).
    mini_lab.arms_file.write_text("defaults: {dataset: mini}\narms:\n  titled: {representation_prompt: "
                                  "representation-nope}\n", encoding="utf-8")
    assert Lab.from_env().arms.names == ["titled"]
