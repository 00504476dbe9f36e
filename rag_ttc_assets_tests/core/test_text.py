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


# --- normalisation before matching (the offline jurors and the statement judge) ---------------------------------

SAME = [  # each group: one name, number, date or unit, written the ways answers write it
    ["1,000 people", "1000 people", "one thousand people", "a thousand people"],
    ["12,345,678", "12345678"],
    ["205 steps", "two hundred and five steps", "two hundred five steps"],
    ["21 days", "twenty-one days", "twenty one days"],
    ["2500000 visitors", "2.5 million visitors"],
    ["5 km", "5 kilometres", "5 kilometers", "5km", "5 kilometre", "five kilometres"],
    ["10 m", "10 metres", "10 meters", "ten metres"],
    ["3 mi", "3 miles", "three miles"],
    ["6 ft", "6 feet", "6 foot"],
    ["2 kg", "2 kilograms", "2 kilogrammes"],
    ["4 h", "4 hours", "4 hrs", "four hours"],
    ["90 min", "90 minutes", "ninety minutes"],
    ["50%", "50 percent", "50 per cent", "fifty percent"],
    ["$5", "5 dollars", "five dollars"],
    ["20 °C", "20 degrees celsius"],
    ["3rd March 2020", "March 3, 2020", "2020-03-03", "3 March 2020", "the 3rd of March, 2020", "Mar. 3, 2020",
     "March 3rd 2020"],
    ["March 2020", "Mar 2020"],
    ["5 May", "May 5th", "5th of May"],
    ["U.S. troops", "US troops", "USA troops", "United States troops"],
    ["the U.K.", "the UK", "the United Kingdom"],
    ["Café in Zürich", "cafe in zurich", "CAFE IN ZURICH"],
    ["Señor Núñez", "Senor Nunez"],
]
DIFFERENT = [  # never merged
    ("1,000 people", "100 people"), ("3rd March 2020", "4 March 2020"), ("March 2020", "May 2020"),
    ("5 km", "5 miles"), ("version 3.10", "version 3.1"), ("1990s", "1980s"),
]


@pytest.mark.parametrize("group", SAME, ids=[g[0] for g in SAME])
def test_names_numbers_dates_and_units_written_another_way_are_the_same_words(group) -> None:
    from rag_ttc_assets.core.text import normal_stems

    assert len({normal_stems(text) for text in group}) == 1, {text: sorted(normal_stems(text)) for text in group}


@pytest.mark.parametrize(("a", "b"), DIFFERENT)
def test_a_different_number_date_or_unit_stays_different(a, b) -> None:
    from rag_ttc_assets.core.text import normal_stems

    assert normal_stems(a) != normal_stems(b)


def test_normalisation_leaves_what_is_not_a_quantity_alone() -> None:
    from rag_ttc_assets.core.text import fold, normal_words, normalize

    assert normal_words("one of the rivers") == ["rivers"]  # "one" alone is a pronoun as often as a number
    assert normal_words("you may 5 times") == ["5", "times"]  # "may" a verb: a month only capitalised, in a date
    assert normal_words("the 1990s") == ["1990"]  # a decade, not 1990 seconds
    assert normal_words("the WHO said") == ["who", "said"]  # a name in capitals spelt like a stopword is kept
    assert normal_words("plain m and km words") == ["plain", "km", "words"]  # abbreviations only after a number
    assert normalize("03/04/2020") == "03/04/2020"  # slashed dates: day and month order differ by country
    assert fold("Zürich café") == "Zurich cafe" and len(fold("ﬁx")) == len("ﬁx")  # offsets kept
    # Content words of the text as written are unchanged (the extractive answerer and derived requests read them).
    assert content_words("1,000 km") == ["1", "000", "km"]


def test_a_share_is_its_number_not_the_word_percent() -> None:
    from rag_ttc_assets.core.text import normal_stems

    # Two shares of different things share no word ("percent" would be one; the sign never was a word).
    assert not normal_stems("46.1% of total costs") & normal_stems("roughly 35 per cent of revenue")
    assert normal_stems("50 percent") == normal_stems("50%") == {"50"}
