from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from rag_ttc_assets.adapters.input_files import load_arms
from rag_ttc_assets.core.arms import ArmConfig, ModelConfig, config_digest
from rag_ttc_assets.core.arms_file import ArmsError, parse_arms

REPO = Path(__file__).resolve().parents[2]


def arms_error(raw: object) -> str:
    with pytest.raises(ArmsError) as err:
        parse_arms(raw)
    return str(err.value)


def test_defaults_are_the_seed_baseline() -> None:
    arms = parse_arms({"arms": {"baseline": {}, "also": None}})
    assert arms.names == ["baseline", "also"]
    b = arms["baseline"]
    assert (b.retrieval, b.chunk_runes, b.overlap_runes, b.retrieve_k, b.evidence_k, b.context_runes) == (
        "rrf", 1200, 120, 20, 5, 12000)
    assert (b.dataset, b.representation, b.rrf_k, b.evidence_order, b.prompt) == (
        "pyref", "titled", 60, "ranked", "grounded-answer-v1")
    assert b.generator == ModelConfig(model="local/extractive")
    assert b.judge == ModelConfig(model="local/lexical")
    assert arms["also"] == b == ArmConfig()


def test_empty_file_has_no_arms() -> None:
    arms = parse_arms(None)
    assert (arms.names, arms.families, arms.comparisons) == ([], {}, [])


def test_arm_overrides_defaults_and_nested_configs_merge() -> None:
    arms = parse_arms({
        "defaults": {"evidence_k": 3, "generator": {"model": "openai/gpt-4o-mini", "params": {"temperature": 0}}},
        "arms": {"x": {"retrieval": "bm25", "generator": {"params": {"max_tokens": 5}}}},
    })
    x = arms["x"]
    assert (x.evidence_k, x.retrieval, x.context_runes) == (3, "bm25", 12000)
    assert x.generator == ModelConfig(model="openai/gpt-4o-mini", params={"temperature": 0, "max_tokens": 5})


def test_family_expansion_with_name_template() -> None:
    arms = parse_arms({"families": {"evidence-k": {
        "parameter": "evidence_k", "values": [1, 3, 8], "fixed": {"context_runes": 40000},
        "name": "evidence-k-{value}"}}})
    assert arms.names == ["evidence-k-1", "evidence-k-3", "evidence-k-8"]
    assert arms.family("evidence-k") == ["evidence-k-1", "evidence-k-3", "evidence-k-8"]
    assert [(arms[n].evidence_k, arms[n].context_runes) for n in arms.names] == [(1, 40000), (3, 40000), (8, 40000)]


def test_family_default_name_is_family_dash_value() -> None:
    arms = parse_arms({"families": {"ctx": {"parameter": "context_runes", "values": [700, 4000]}}})
    assert arms.family("ctx") == ["ctx-700", "ctx-4000"]
    assert arms["ctx-4000"].context_runes == 4000


def test_family_with_names_list() -> None:
    arms = parse_arms({"families": {"prompt": {
        "parameter": "prompt", "values": ["grounded-answer-v1", "grounded-answer-multipart-v1"],
        "names": ["prompt-baseline", "prompt-multipart"]}}})
    assert arms.family("prompt") == ["prompt-baseline", "prompt-multipart"]
    assert arms["prompt-multipart"].prompt == "grounded-answer-multipart-v1"
    assert arms["prompt-baseline"] == ArmConfig()


def test_family_mapping_values_are_named_by_the_parameter() -> None:
    arms = parse_arms({"families": {"chunks": {
        "parameter": "chunk_runes", "name": "chunks-{value}",
        "values": [{"chunk_runes": 600, "overlap_runes": 60}, {"chunk_runes": 2400, "overlap_runes": 240}]}}})
    assert arms.family("chunks") == ["chunks-600", "chunks-2400"]
    assert (arms["chunks-600"].chunk_runes, arms["chunks-600"].overlap_runes) == (600, 60)
    assert (arms["chunks-2400"].chunk_runes, arms["chunks-2400"].overlap_runes) == (2400, 240)


def test_names_list_of_the_wrong_length_is_rejected() -> None:
    assert arms_error({"families": {"f": {"parameter": "evidence_k", "values": [1, 2], "names": ["a"]}}}) == (
        "arms.yaml: (top level): field 'families.f': Value error, names has 1 entries but values has 2")


def test_unknown_key_names_the_field_and_the_arm() -> None:
    assert arms_error({"arms": {"x": {"evidence_kk": 3}}}) == (
        "arms.yaml: arms.x: field 'evidence_kk': Extra inputs are not permitted")
    assert arms_error({"bogus": 1}) == "arms.yaml: (top level): field 'bogus': Extra inputs are not permitted"


def test_p_adjust_and_alpha_are_top_level_settings() -> None:
    arms = parse_arms(None)
    assert (arms.p_adjust, arms.alpha) == ("holm", 0.05)
    arms = parse_arms({"p_adjust": "bh", "alpha": 0.01})
    assert (arms.p_adjust, arms.alpha) == ("bh", 0.01)
    assert arms_error({"p_adjust": "bonferroni"}) == (
        "arms.yaml: (top level): field 'p_adjust': Input should be 'holm' or 'bh'")
    assert arms_error({"alpha": 1.5}) == "arms.yaml: (top level): field 'alpha': Input should be less than 1"


def test_unknown_key_in_a_family_names_the_member() -> None:
    assert arms_error({"families": {"f": {"parameter": "evidence_kk", "values": [1, 2]}}}) == (
        "arms.yaml: families.f.values[0]: field 'evidence_kk': Extra inputs are not permitted")


def test_wrong_type() -> None:
    assert arms_error({"arms": {"x": {"evidence_k": "many"}}}) == (
        "arms.yaml: arms.x: field 'evidence_k': Input should be a valid integer, unable to parse string as an integer")
    assert arms_error({"arms": {"x": {"retrieval": "dense"}}}) == (
        "arms.yaml: arms.x: field 'retrieval': Input should be 'bm25', 'vector' or 'rrf'")


@pytest.mark.parametrize("name", ["Baseline", "a_b", "a b", "baseline\n", ""])
def test_invalid_partition_key(name: str) -> None:
    assert arms_error({"arms": {name: {}}}) == (
        f"arms.yaml: arms.{name}: arm name {name!r} is not a valid partition key (use [a-z0-9-]+)")


def test_invalid_partition_key_from_a_family_template() -> None:
    assert arms_error({"families": {"t": {"parameter": "evidence_k", "values": [2], "name": "T_{value}"}}}) == (
        "arms.yaml: families.t.values[0]: arm name 'T_2' is not a valid partition key (use [a-z0-9-]+)")


def test_duplicate_arm_with_a_different_config_is_an_error() -> None:
    raw = {"arms": {"evidence-k-8": {"evidence_k": 8}},
           "families": {"evidence-k": {"parameter": "evidence_k", "values": [8], "fixed": {"context_runes": 40000},
                                       "name": "evidence-k-{value}"}}}
    assert arms_error(raw) == (
        "arms.yaml: families.evidence-k.values[0]: duplicate arm 'evidence-k-8' with a different configuration")


def test_duplicate_arm_with_the_same_config_is_merged() -> None:
    arms = parse_arms({"arms": {"evidence-k-8": {"evidence_k": 8, "context_runes": 40000}},
                       "families": {"evidence-k": {"parameter": "evidence_k", "values": [5, 8],
                                                   "fixed": {"context_runes": 40000}, "name": "evidence-k-{value}"}}})
    assert arms.names == ["evidence-k-8", "evidence-k-5"]
    assert arms.family("evidence-k") == ["evidence-k-5", "evidence-k-8"]
    assert (arms["evidence-k-8"].evidence_k, arms["evidence-k-8"].context_runes) == (8, 40000)


def test_overlap_not_smaller_than_chunk_size() -> None:
    assert arms_error({"arms": {"x": {"overlap_runes": 1200}}}) == (
        "arms.yaml: arms.x: field '(arm)': Value error, overlap_runes (1200) must be smaller than chunk_runes (1200)")
    assert arms_error({"defaults": {"chunk_runes": 100, "overlap_runes": 150}}) == (
        "arms.yaml: defaults: field '(arm)': Value error, overlap_runes (150) must be smaller than chunk_runes (100)")


def test_evidence_k_above_retrieve_k() -> None:
    assert arms_error({"arms": {"x": {"evidence_k": 21}}}) == (
        "arms.yaml: arms.x: field '(arm)': Value error, evidence_k (21) cannot exceed retrieve_k (20)")
    assert parse_arms({"arms": {"x": {"evidence_k": 20}}})["x"].evidence_k == 20


@pytest.mark.parametrize("value", [0, -5])
def test_non_positive_context_runes(value: int) -> None:
    assert arms_error({"arms": {"x": {"context_runes": value}}}) == (
        "arms.yaml: arms.x: field 'context_runes': Input should be greater than 0")


def test_comparison_naming_an_unknown_arm() -> None:
    assert arms_error({"arms": {"x": {}, "y": {}}, "comparisons": [["x", "y"], ["x", "nope"]]}) == (
        "arms.yaml: comparisons[1]: unknown arm 'nope'")
    assert parse_arms({"arms": {"x": {}, "y": {}}, "comparisons": [["x", "y"]]}).comparisons == [("x", "y")]


def test_api_key_in_generator_params_is_rejected() -> None:
    raw = {"defaults": {"generator": {"model": "openai/gpt-4o-mini"}},
           "arms": {"x": {"generator": {"params": {"api_key": "sk-not-a-real-key"}}}}}
    assert arms_error(raw) == (
        "arms.yaml: arms.x: field 'generator.params': Value error, put the key in an environment variable "
        "and name it in api_key_env, not api_key")


def test_response_format_is_the_arm_s_field_not_a_model_param() -> None:
    raw = {"arms": {"x": {"judge": {"model": "local/lexical", "params": {"response_format": {"type": "json_object"}}}}}}
    assert arms_error(raw) == (
        "arms.yaml: arms.x: field 'judge.params': Value error, set the arm's response_format (json_schema or none), "
        "not params.response_format")
    assert parse_arms({"arms": {"x": {"response_format": "none"}}})["x"].response_format == "none"
    assert parse_arms({"arms": {"x": {}}})["x"].response_format == "json_schema"
    assert "response_format" in arms_error({"arms": {"x": {"response_format": "grammar"}}})


def test_source_is_named_and_unknown_lookups_fail() -> None:
    arms = parse_arms({"arms": {"a": {}}, "families": {"f": {"parameter": "evidence_k", "values": [1]}}},
                      source="lab/arms.yaml")
    with pytest.raises(ArmsError) as err:
        arms["b"]
    assert str(err.value) == "lab/arms.yaml: unknown arm 'b'; known arms: a, f-1"
    with pytest.raises(ArmsError) as err:
        arms.family("g")
    assert str(err.value) == "lab/arms.yaml: unknown family 'g'; known families: f"


def test_load_arms_rejects_a_duplicated_arm_key_naming_the_line(tmp_path: Path) -> None:
    p = tmp_path / "arms.yaml"
    p.write_text("defaults:\n  evidence_k: 5\narms:\n  baseline: {}\n  fast: {evidence_k: 3}\n"
                 "  fast: {evidence_k: 4}\n", encoding="utf-8")
    with pytest.raises(ArmsError) as err:
        load_arms(p)
    assert str(err.value) == f"{p}: line 6: duplicate key 'fast'"


def test_load_arms_rejects_a_duplicated_field_inside_an_arm(tmp_path: Path) -> None:
    p = tmp_path / "arms.yaml"
    p.write_text("arms:\n  x: {evidence_k: 3, evidence_k: 4}\n", encoding="utf-8")
    with pytest.raises(ArmsError) as err:
        load_arms(p)
    assert str(err.value) == f"{p}: line 2: duplicate key 'evidence_k'"


def test_load_arms_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ArmsError) as err:
        load_arms(tmp_path / "none.yaml")
    assert str(err.value) == f"{tmp_path / 'none.yaml'}: arms file not found"
    p = tmp_path / "bad.yaml"
    p.write_text("arms: [\n", encoding="utf-8")
    with pytest.raises(ArmsError) as err:
        load_arms(p)
    assert str(err.value).startswith(f"{p}: malformed YAML: ")


def test_load_arms_names_the_file_in_field_errors(tmp_path: Path) -> None:
    p = tmp_path / "arms.yaml"
    p.write_text("arms:\n  x: {evidence_k: 0}\n", encoding="utf-8")
    with pytest.raises(ArmsError) as err:
        load_arms(p)
    assert str(err.value) == f"{p}: arms.x: field 'evidence_k': Input should be greater than 0"


def test_repository_arms_file() -> None:
    arms = load_arms(REPO / "arms.yaml")
    assert arms.families == {
        "evidence-k": ["evidence-k-1", "evidence-k-3", "evidence-k-5", "evidence-k-8", "evidence-k-12"],
        "context": ["context-1500", "context-3000", "context-6000", "context-24000", "context-40000"],
        "chunks": ["chunks-600", "chunks-1200", "chunks-2400"],
        "prompt": ["prompt-baseline", "prompt-multipart"],
        "supply": ["supply-preloaded", "supply-tool", "supply-tool-top3", "supply-tool-indexed",
                   "supply-tool-checked"],
        "ann-nprobes": ["ann-nprobes-1", "ann-nprobes-2", "ann-nprobes-4", "ann-nprobes-8"],
    }
    assert arms.names[:6] == ["baseline", "evidence-k-8", "prompt-multipart", "prompt-multipart-oracle", "retrieval-bm25",
                              "retrieval-vector"]
    assert len(arms.names) == 37  # 15 named + 5 + 5 + 3 + 2 + 5 + 4 members, two of them shared with named arms
    # The nprobes sweep: one index (its build parameters), four query settings.
    sweep = [arms[n].vector_index for n in arms.family("ann-nprobes")]
    assert [v.nprobes for v in sweep] == [1, 2, 4, 8]
    assert {v.model_copy(update={"nprobes": None}) for v in sweep} == {sweep[0].model_copy(update={"nprobes": None})}
    # The local LLM arms: one model answers and judges; they differ in constrained decoding alone.
    llm = arms["local-llm"]
    # (The request judge is a JurorConfig, a ModelConfig with a kind: the same settings, its default kind unwritten.)
    assert llm.generator == llm.judge and llm.request_judge.model_dump() == llm.generator.model_dump()
    assert llm.generator.model == "openai/smollm2-135m-instruct"
    assert (llm.question_set, llm.response_format) == ("pilot", "json_schema")
    assert arms["local-llm-free"] == llm.model_copy(update={"response_format": "none"})
    baseline = arms["baseline"]
    assert baseline == ArmConfig(generator=ModelConfig(model="local/extractive"),
                                 judge=ModelConfig(model="local/lexical"))
    assert arms["evidence-k-8"] == baseline.model_copy(update={"evidence_k": 8, "context_runes": 40000})
    assert arms["evidence-k-8"].context_runes == 40000
    assert arms["prompt-multipart"] == baseline.model_copy(update={"prompt": "grounded-answer-multipart-v2"})
    assert arms["prompt-baseline"] == baseline
    # The one arm whose generator sees the request annotation says so in its configuration.
    assert arms["prompt-multipart-oracle"] == baseline.model_copy(
        update={"prompt": "grounded-answer-multipart-v1", "requests_in_prompt": "oracle"})
    assert [n for n in arms.names if arms[n].label_use == "oracle"] == ["prompt-multipart-oracle"]
    assert {arms[n].label_use for n in ("withheld-relevant", "planted-falsehood")} == {
        "counterfactual:withheld-relevant", "counterfactual:planted-falsehood"}
    assert (arms["chunks-600"].chunk_runes, arms["chunks-600"].overlap_runes) == (600, 60)
    # The contextual representation arm differs from baseline in its representation only; the chunks family keeps
    # the titled one.
    assert arms["representation-contextual"] == baseline.model_copy(update={"representation": "contextual"})
    assert arms["representation-contextual"].representation_builder.model == "local/contextual"
    assert arms["representation-contextual"].representation_era_label == "local/contextual"
    assert {arms[n].representation for n in arms.family("chunks")} == {"titled"}
    assert arms.comparisons == [("baseline", "evidence-k-8"), ("baseline", "representation-contextual"),
                                ("baseline", "prompt-multipart"),
                                ("prompt-multipart", "prompt-multipart-oracle"), ("context-1500", "context-24000"), ("baseline", "order-reversed"),
                                ("baseline", "withheld-relevant"), ("baseline", "planted-falsehood"),
                                ("prompt-multipart", "supply-preloaded"), ("supply-preloaded", "supply-tool"),
                                ("supply-tool", "supply-tool-top3"), ("supply-tool-top3", "supply-tool-indexed"),
                                ("supply-tool-indexed", "supply-tool-checked")]
    # The supply ladder adds one option at a time, so each step's token cost is its own.
    assert arms["supply-tool-top3"] == arms["supply-tool"].model_copy(update={"lookup_top_n": 3})
    assert arms["supply-tool-indexed"] == arms["supply-tool-top3"].model_copy(
        update={"title_index": True, "prompt": "tool-answer-indexed-v2"})
    assert arms["supply-tool-checked"] == arms["supply-tool-indexed"].model_copy(update={"citation_check": True})


def test_config_digest_hand_computed() -> None:
    assert config_digest({"b": 1, "a": [1, 2]}) == "sha256:" + hashlib.sha256(b'{"a":[1,2],"b":1}').hexdigest()
    assert config_digest({"b": 1, "a": [1, 2]}) == (
        "sha256:94a786c3662bc7beeb598efa7d8cb58d7bea25d6c275ea9785a0230ff1f8c2ba")
    assert config_digest({"n": "\u00e9"}) == "sha256:" + hashlib.sha256('{"n":"\u00e9"}'.encode()).hexdigest()


def test_config_digest_is_stable_and_order_independent() -> None:
    assert config_digest({"a": 1, "b": {"c": 2, "d": 3}}) == config_digest({"b": {"d": 3, "c": 2}, "a": 1})
    assert config_digest({"a": [1, 2]}) != config_digest({"a": [2, 1]})
    one = parse_arms({"arms": {"x": {"evidence_k": 3, "retrieval": "bm25"}}})["x"]
    two = parse_arms({"arms": {"x": {"retrieval": "bm25", "evidence_k": 3}}})["x"]
    assert config_digest(one) == config_digest(two) == config_digest(one.model_dump(mode="json"))
    assert config_digest(one) != config_digest(ArmConfig())


def test_load_arms_is_cached_by_content_and_sees_an_edit_at_once(tmp_path: Path) -> None:
    p = tmp_path / "arms.yaml"
    p.write_text("arms:\n  x: {evidence_k: 3}\n", encoding="utf-8")
    first = load_arms(p)
    assert load_arms(p) is first  # same bytes: parsed and validated once
    p.write_text("arms:\n  x: {evidence_k: 4}\n", encoding="utf-8")  # same size, same mtime second
    assert load_arms(p)["x"].evidence_k == 4
    p.write_text("arms:\n  x: {evidence_k: 4}\n  y: {}\n", encoding="utf-8")
    assert load_arms(p).names == ["x", "y"]
    p.write_text("arms:\n  x: {evidence_k: 3}\n", encoding="utf-8")  # back to the first bytes
    assert load_arms(p)["x"].evidence_k == 3 and load_arms(p).names == ["x"]
    # An edit that breaks the file is an error every time, never a stale cached parse.
    p.write_text("arms:\n  x: {evidence_k: 3}\n  x: {evidence_k: 4}\n", encoding="utf-8")
    for _ in range(2):
        with pytest.raises(ArmsError, match="line 3: duplicate key 'x'"):
            load_arms(p)
    p.write_text("arms:\n  x: {evidence_k: 0}\n", encoding="utf-8")
    for _ in range(2):
        with pytest.raises(ArmsError, match="field 'evidence_k'"):
            load_arms(p)


def test_a_rebuilt_lab_sees_an_edited_arms_file_and_prompt(tmp_path: Path) -> None:
    """Lab objects are rebuilt per asset; each sees the files as they are now."""
    import shutil

    from rag_ttc_assets.lab import Lab

    (tmp_path / "datasets" / "pyref").mkdir(parents=True)
    shutil.copytree(REPO / "prompts", tmp_path / "prompts")
    arms_file = tmp_path / "arms.yaml"
    arms_file.write_text("arms:\n  baseline: {}\n", encoding="utf-8")

    def lab() -> Lab:
        return Lab(arms_file, tmp_path / "datasets", tmp_path / "prompts", tmp_path / "home")

    assert lab().arms.names == ["baseline"]
    arms_file.write_text("arms:\n  baseline: {}\n  k3: {evidence_k: 3}\n", encoding="utf-8")
    assert lab().arms.names == ["baseline", "k3"] and lab().arms["k3"].evidence_k == 3
    # A prompt edited to lack a required placeholder fails the next Lab, though the arms file is unchanged.
    prompt = tmp_path / "prompts" / "grounded-answer-v1.txt"
    good = prompt.read_text(encoding="utf-8")
    prompt.write_text("Answer {{question}} without evidence.\n", encoding="utf-8")
    with pytest.raises(ArmsError, match="arm 'baseline': field 'prompt'"):
        lab().arms
    prompt.write_text(good, encoding="utf-8")
    assert lab().arms.names == ["baseline", "k3"]
    # A dataset folder that disappears is seen too.
    (tmp_path / "datasets" / "pyref").rmdir()
    with pytest.raises(ArmsError, match="unknown dataset 'pyref'"):
        lab().arms
