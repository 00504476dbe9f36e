"""core.contextual: the builder's reply contract, the document window, and the offline baseline's context."""

import json

import pytest

from rag_ttc_assets.core import contextual
from rag_ttc_assets.core.prompts import parse_prompt
from rag_ttc_assets_tests.conftest import REPO

DOC = """Strings implement all of the common sequence operations. They also have methods.

str.capitalize()

   Return a copy of the string with its first character capitalized.

str.casefold()

   Return a casefolded copy of the string. Casefolded strings may be
   used for caseless matching.

The simple form is equivalent to

   if x: pass
"""


def test_parse_context_accepts_one_json_object_and_normalizes_its_whitespace():
    assert contextual.parse_context('{"context": "  From the\\n string methods.  "}') == "From the string methods."
    assert contextual.parse_context('```json\n{"context": "fenced"}\n```') == "fenced"


@pytest.mark.parametrize("raw, why", [
    ("Sure! The chunk is about strings.", "not a JSON object"),
    ('{"summary": "x"}', 'no string "context"'),
    ('["context"]', 'no string "context"'),
    ('{"context": "   "}', "empty"),
    (json.dumps({"context": "x " * 600}), "more than 1000"),
    (None, "not a JSON object"),
])
def test_parse_context_refuses_what_it_would_have_to_repair(raw, why):
    with pytest.raises(contextual.ContextParseError, match=why):
        contextual.parse_context(raw)


def test_compose_puts_the_context_first_and_keeps_the_chunk_whole():
    assert contextual.compose("ctx", "chunk text") == "ctx\n\nchunk text"
    assert contextual.compose(None, "chunk text") == "chunk text"


def test_document_window_is_the_whole_document_when_it_fits_else_centred_on_the_chunk():
    text = "".join(chr(97 + i % 26) for i in range(100))
    assert contextual.document_window(text, 10, 20, runes=200) == text
    w = contextual.document_window(text, 50, 60, runes=30)
    assert w == text[40:70] and text[50:60] in w
    assert contextual.document_window(text, 0, 10, runes=30) == text[:30]
    assert contextual.document_window(text, 95, 100, runes=30) == text[70:]


def test_headings_finds_markdown_underlined_and_definition_terms_not_sentences_leading_into_examples():
    text = "# Title\n\nIntro.\n\nSection\n=======\n\nBody.\n" + DOC
    found = [h for _, h in contextual.headings(text)]
    assert found == ["Title", "Section", "str.capitalize()", "str.casefold()"]
    offsets = dict((h, o) for o, h in contextual.headings(text))
    assert text[offsets["str.casefold()"]:].startswith("str.casefold()")


def test_first_sentence_skips_headings():
    assert contextual.first_sentence("Title\n=====\n\nThe first one. The second.") == "The first one."


def test_baseline_context_names_title_path_position_heading_and_opening():
    chunk = DOC[DOC.index("   Return a casefolded"):]
    got = contextual.baseline_context("Built-in Types / String Methods", DOC, chunk, "part 2 of 2")
    assert got == ('From Built-in Types > String Methods (part 2 of 2, under the heading "str.casefold()"). '
                   "The document is about: Strings implement all of the common sequence operations.")
    # The chunk that opens the document does not get its own first sentence again.
    assert contextual.baseline_context("String Methods", DOC, DOC[:200], "part 1 of 2") == \
        "From String Methods (part 1 of 2)."


def test_the_bundled_prompt_renders_and_the_baseline_reads_it_back():
    text = (REPO / "prompts" / "representation-context-v1.txt").read_text(encoding="utf-8")
    prompt = parse_prompt("representation-context-v1", text, "representation")
    chunk = DOC[DOC.index("str.casefold()"):]
    rendered = prompt.render(**contextual.prompt_values("String Methods", DOC, "d#chunk-1", chunk, "part 2 of 2"))
    title, document, got_chunk, position = contextual.parse_representation_prompt(rendered)
    assert (title, position) == ("String Methods", "part 2 of 2")
    assert document.strip() == DOC.strip() and got_chunk == chunk.strip()
    assert "{{" not in rendered
