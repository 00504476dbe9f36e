"""core.eras: a comparison states a representation change, and refuses it alongside a chunking or prompt change."""

import pytest

from rag_ttc_assets.core.eras import Builder, EraChangeError, describe, era_change

TITLED = {"representation": "titled", "builder": "titled/1", "builder_model": None, "builder_prompt": None,
          "prompt_digest": None, "era": "titled/1", "offline_baseline": False}
LOCAL = {"representation": "contextual", "builder": "contextual/1", "builder_model": "local/contextual",
         "builder_prompt": "representation-context-v1", "prompt_digest": "sha256:" + "ab" * 32,
         "era": "local/contextual", "offline_baseline": True}
LLM = {**LOCAL, "builder_model": "openai/gpt-4o-mini", "era": "2024-07", "offline_baseline": False}


def test_same_representations_say_so():
    out = era_change("a", TITLED, "b", dict(TITLED), ["chunk_runes"], allow=False)
    assert out.differ == [] and not out.allowed
    assert out.line == "representations: the same builder and era for both arms (titled/1 (era titled/1))"


def test_a_representation_change_alone_is_stated_not_refused():
    out = era_change("baseline", TITLED, "ctx", LOCAL, ["representation"], allow=False)
    assert out.differ == ["builder", "builder_model", "prompt_digest", "era"] and out.confounded == []
    assert "representations differ" in out.line and "offline baseline" in out.line
    assert "era local/contextual" in out.line and "includes the representation change" in out.line


def test_an_era_change_with_chunking_is_refused_naming_both_and_the_flag():
    with pytest.raises(EraChangeError) as e:
        era_change("ctx", LOCAL, "ctx-llm-600", LLM, ["chunk_runes", "overlap_runes", "representation_era"],
                   allow=False)
    msg = str(e.value)
    assert msg.startswith("REPRESENTATION ERA CHANGED (builder_model, era differ")
    assert "together with chunk_runes, overlap_runes" in msg and "not attributable to chunking alone" in msg
    assert "era local/contextual" in msg and "era 2024-07" in msg and "--allow-era-change" in msg


def test_allowed_it_goes_on_and_the_line_says_why_nothing_is_attributed():
    out = era_change("ctx", LOCAL, "ctx-llm", LLM, ["prompt", "chunk_runes"], allow=True)
    assert out.allowed and out.confounded == ["chunk_runes", "prompt"]
    assert out.line.endswith("not attributable to chunking or the prompt alone")


def test_describe():
    assert describe(Builder.model_validate(TITLED)) == "titled/1 (era titled/1)"
    assert describe(Builder.model_validate(LLM)) == ("contextual/1 by openai/gpt-4o-mini (prompt representation-context-v1 sha256:abababab…; "
                             "era 2024-07)")
