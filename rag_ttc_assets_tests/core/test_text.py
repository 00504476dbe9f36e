from __future__ import annotations

import pytest

from rag_ttc_assets.core.text import content_words, split_requests, split_sentences, stem


def test_split_sentences_keeps_abbreviations_and_dotted_names() -> None:
    text = (
        "Special methods, e.g. object.__init__(), are looked up on the type. "
        "Use a context manager, i.e. an object with __enter__() and __exit__(). "
        "Version 3.10 added parenthesised items etc. and more. Done!"
    )
    assert split_sentences(text) == [
        "Special methods, e.g. object.__init__(), are looked up on the type.",
        "Use a context manager, i.e. an object with __enter__() and __exit__().",
        "Version 3.10 added parenthesised items etc. and more.",
        "Done!",
    ]


def test_split_sentences_breaks_paragraphs_and_list_items_but_keeps_numbering() -> None:
    text = (
        'The "with" statement proceeds as\nfollows:\n\n'
        "1. The context expression is\n   evaluated.\n\n"
        "2. The context manager's \"__enter__()\" is loaded for later use\n"
        "3. It is invoked.\n"
        "Assignments to \"__debug__\" are illegal. (See section Primaries.) Next one?"
    )
    assert split_sentences(text) == [
        'The "with" statement proceeds as follows:',
        "1. The context expression is evaluated.",
        "2. The context manager's \"__enter__()\" is loaded for later use",
        "3. It is invoked.",
        'Assignments to "__debug__" are illegal.',
        "(See section Primaries.)",
        "Next one?",
    ]


def test_split_sentences_on_numbered_answer_and_empty_text() -> None:
    assert split_sentences("1. Foo is bar. 2. Baz is qux.") == ["1. Foo is bar.", "2. Baz is qux."]
    assert split_sentences("  \n\n ") == []


def test_content_words_drop_stopwords_negations_and_letters_but_keep_identifiers_and_numbers() -> None:
    assert content_words("The object.__init__() method does not raise ValueError in Python 3.11, e.g. for x") == [
        "object", "__init__", "method", "raise", "valueerror", "python", "3.11",
    ]  # fmt: skip
    assert content_words("it is what it is") == []


def test_stem_joins_inflections_and_leaves_identifiers() -> None:
    assert {stem(w) for w in ["raise", "raised", "raises", "raising"]} == {"rais"}
    assert stem("classes") == stem("class") == "class"
    assert stem("__init__") == "__init__"
    assert stem("3.11") == "3.11"


@pytest.mark.parametrize(
    ("question", "requests"),
    [
        (
            "What does X do, when is Y raised, and how do I Z?",
            ["What does X do?", "When is Y raised?", "How do I Z?"],
        ),
        (
            "What does the assert statement do and how do I disable it?",
            ["What does the assert statement do?", "How do I disable it?"],
        ),
        (
            "What is __slots__ for? Can instances still get a __dict__?",
            ["What is __slots__ for?", "Can instances still get a __dict__?"],
        ),
        (
            "Which methods does the with statement call; what happens if __exit__ returns true?",
            ["Which methods does the with statement call?", "What happens if __exit__ returns true?"],
        ),
        (
            "What does __exit__ return, and does the exception propagate?",
            ["What does __exit__ return?", "Does the exception propagate?"],
        ),
        (
            "Explain augmented assignment and give an example.",
            ["Explain augmented assignment.", "Give an example."],
        ),
        ("What does the break statement do and what does the continue statement do?",
         ["What does the break statement do?", "What does the continue statement do?"]),
    ],
)
def test_split_requests_multi_part(question: str, requests: list[str]) -> None:
    assert split_requests(question) == requests


@pytest.mark.parametrize(
    "question",
    [
        "What do lists, tuples, and ranges have in common?",  # a noun list, not three requests
        "What is the mro, which is used by super?",  # relative clause
        "What does X return, when called with no args?",  # subordinate "when" without a verb of its own
        "What is X, and why?",  # too elliptical to stand alone
        "How do I configure pip's proxy?",
    ],
)
def test_split_requests_single(question: str) -> None:
    assert split_requests(question) == [question]


def test_split_requests_empty() -> None:
    assert split_requests("   ") == []
