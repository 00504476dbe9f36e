from __future__ import annotations

import pytest

from rag_ttc_assets.core.lexical_judge import (
    conflict,
    extract_statements,
    swapped_identifier,
    verify_against_gold,
    verify_statements,
)

EVIDENCE = [
    "Assert statements are a convenient way to insert debugging assertions into a program. The current code "
    "generator emits no code for an assert statement when optimization is requested at compile time.",
    'An augmented assignment expression like "x += 1" can be rewritten as "x = x + 1" to achieve a similar, '
    'but not exactly equal effect. In the augmented version, "x" is only evaluated once.',
]
GOLD = [
    'Assignments to "__debug__" are illegal.',
    "In the augmented version, x is only evaluated once.",
    'Attempts to assign to an unlisted variable name raises "AttributeError".',
]


@pytest.fixture(scope="module")
def embed():
    from rag_ttc_assets.adapters.embeddings import encode

    return encode


def test_extract_statements_drops_numbering_and_abstention_boilerplate() -> None:
    answer = (
        "1. Assert statements insert debugging assertions. They are skipped under -O.\n"
        "2. The provided evidence does not say.\n"
        "3. I don't know how pip reads proxies."
    )
    assert extract_statements(answer) == [
        "Assert statements insert debugging assertions.",
        "They are skipped under -O.",
    ]
    assert extract_statements("The provided evidence is insufficient to answer the question.") == []
    assert extract_statements("- The target is evaluated once.") == ["The target is evaluated once."]


def test_verify_statements_supported_and_unsupported(embed) -> None:
    statements = [
        "Assert statements insert debugging assertions into a program.",  # reworded, evidence 1
        'In the augmented version, "x" is only evaluated once.',  # copied, evidence 2
        "Lambda expressions create anonymous functions.",  # true, but not in this evidence
        "The code generator emits code for an assert statement when optimization is requested.",  # negation flipped
        'An augmented assignment expression like "x += 1" can be rewritten as "x = x + 2".',  # number changed
        "Assert statements insert debugging assertions into 2 programs.",  # number the evidence never states
    ]
    verdicts, relevance = verify_statements(statements, EVIDENCE, embed, question="What does the assert statement do?")
    assert [(v["statement"], v["supported"], v["evidence"]) for v in verdicts] == [
        (1, True, [1]),
        (2, True, [2]),
        (3, False, []),
        (4, False, []),
        (5, False, []),
        (6, False, []),
    ]
    assert verdicts[1]["reason"].startswith("content-word recall 1.00 >= 0.70, cosine 1.00 >= 0.60 against evidence 2")
    assert verdicts[2]["reason"].startswith("no evidence sentence (or adjacent pair) reaches both content-word recall "
                                            "0.70 and cosine 0.60; the nearest, evidence ")
    assert verdicts[3]["reason"].endswith("but differs in negation of cod")
    assert verdicts[4]["reason"].endswith("but differs in number (1, 2 vs 1)")
    assert verdicts[5]["reason"].endswith("but states 2, which the sentence does not")
    assert 0.0 < relevance < 1.0
    assert verify_statements([], EVIDENCE, embed, question="Q?") == ([], 0.0)


def test_verify_statements_without_evidence_supports_nothing(embed) -> None:
    verdicts, _ = verify_statements(["Assert statements insert debugging assertions."], [], embed)
    assert verdicts == [
        {"statement": 1, "text": "Assert statements insert debugging assertions.", "supported": False,
         "evidence": [], "reason": "no evidence to check against"},
    ]  # fmt: skip


def test_gold_contradiction_fires_on_negation_number_and_name_not_on_paraphrase(embed) -> None:
    statements = [
        'Assignments to "__debug__" are not illegal.',  # negation
        "In the augmented version, x is evaluated twice.",  # number
        'Attempts to assign to an unlisted variable name raises "TypeError".',  # swapped name
        "In the augmented version, x is only evaluated once.",  # the gold itself
        "Augmented assignment looks up its target a single time.",  # paraphrase
    ]
    verdicts = verify_against_gold(statements, GOLD, embed)
    assert [(v["contradicts_gold"], v["supported"], v["evidence"]) for v in verdicts] == [
        (True, False, [1]),
        (True, False, [2]),
        (True, False, [3]),
        (False, True, [2]),
        (False, False, []),
    ]
    assert verdicts[0]["reason"].startswith("contradicts gold 1: differs in negation of illegal")
    assert verdicts[1]["reason"].startswith("contradicts gold 2: differs in number (2 vs 1)")
    assert verdicts[2]["reason"].startswith("contradicts gold 3: differs in name (TypeError vs AttributeError)")


def test_conflict_rules_are_lexical() -> None:
    negated = conflict("It doesn't raise ValueError.", "It raises ValueError.")
    assert negated == "differs in negation of rais, valueerror"
    assert conflict("Added in version 3.9.", "Added in version 3.10.") == "differs in number (3.9 vs 3.10)"
    assert conflict("The value is True.", "The value is False.") == "differs in name (True vs False)"
    # A negation on a word the other text does not mention is no clash.
    assert conflict("x is only evaluated once.", "x cannot be an unpacking; x is only evaluated once.") is None
    assert swapped_identifier("The suite calls run.", "The suite calls stop.") is None  # plain words, not names
