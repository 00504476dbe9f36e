from __future__ import annotations

import pytest

from rag_ttc_assets.judging.lexical_judge import (conflict, extract_statements, recall, swapped_identifier,
                                                  verify_against_gold, verify_statements)

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


@pytest.mark.parametrize(("statement", "sentence"), [
    ("The tower is 1,000 feet tall.", "The tower is 1000 feet tall."),
    ("The tower is one thousand feet tall.", "The tower is 1,000 ft tall."),
    ("The treaty was signed on 3rd March 2020.", "The treaty was signed on March 3, 2020."),
    ("The treaty was signed on 2020-03-03.", "The treaty was signed on 3 March 2020."),
    ("U.S. forces left in 2021.", "US forces left in 2021."),
    ("The road is 5 km long.", "The road is 5 kilometres long."),
    ("It has 3 parts.", "It has 3 parts and 4 steps."),  # the sentence only adds a number
])
def test_a_number_date_or_name_written_another_way_is_no_contradiction(statement, sentence) -> None:
    assert conflict(statement, sentence) is None
    assert recall(statement, sentence) == 1.0


@pytest.mark.parametrize("statement", ["The treaty was signed in 2020.", "The treaty was signed in March 2020."])
def test_a_less_precise_date_is_no_contradiction(statement) -> None:
    assert conflict(statement, "The treaty was signed on 3 March 2020.") is None


@pytest.mark.parametrize(("statement", "sentence", "reason"), [
    ("The tower is 1,000 feet tall.", "The tower is 2,000 feet tall.", "differs in number (1000 vs 2000)"),
    ("The tower is one thousand feet tall.", "The tower is 1,200 feet tall.", "differs in number (1000 vs 1200)"),
    ("The treaty was signed on 3rd March 2020.", "The treaty was signed on March 4, 2020.",
     "differs in number (2020-03-03 vs 2020-03-04)"),
    ("The treaty was signed in March 2021.", "The treaty was signed on 3 March 2020.",
     "differs in number (2021-03 vs 2020-03-03)"),
    ('"x += 1" can be rewritten as "x = x + 2".', '"x += 1" can be rewritten as "x = x + 1".',
     "differs in number (1, 2 vs 1)"),
])
def test_a_number_or_date_changed_is_a_contradiction_however_written(statement, sentence, reason) -> None:
    assert conflict(statement, sentence) == reason


def test_a_number_the_evidence_states_another_way_is_not_missing() -> None:
    from rag_ttc_assets.judging.lexical_judge import _missing_numbers

    assert _missing_numbers("It weighs 2,500 kg.", "It weighs 2500 kilograms.") is None
    assert _missing_numbers("It opened on March 3, 2020.", "It opened on 2020-03-03.") is None
    assert _missing_numbers("It weighs 2,600 kg.", "It weighs 2500 kilograms.") == (
        "states 2600, which the sentence does not")


def test_a_run_on_sentence_is_checked_clause_by_clause() -> None:
    from rag_ttc_assets.judging.lexical_judge import extract_claims, split_clauses

    assert split_clauses("The longest river is the Nile, stretching 6,650 km through Africa, flowing through "
                         "Uganda and Egypt before emptying into the sea.") == [
        "The longest river is the Nile", "stretching 6,650 km through Africa",
        "flowing through Uganda and Egypt before emptying into the sea."]
    assert split_clauses("Some doubt this title, as recent studies suggest the Amazon is longer, potentially "
                         "extending it to 7,000 km.") == [
        "Some doubt this title, as recent studies suggest the Amazon is longer",  # "Some doubt this title": short
        "potentially extending it to 7,000 km."]
    # A list or a relative clause too short to check alone stays whole.
    assert split_clauses("Lists, which are mutable, hold items.") == ["Lists, which are mutable, hold items."]
    assert split_clauses("It reads Uganda, Sudan, and Egypt.") == ["It reads Uganda, Sudan, and Egypt."]
    assert extract_claims("1. The Nile river is long, flowing north into the sea. The evidence is insufficient.") == [
        "The Nile river is long", "flowing north into the sea."]


# The bundled evaluation's rows whose gold quotes, answered verbatim, the gold judge flagged as contradicting the gold
# (under request-judge-rules/4: a clause of one quote matched another gold sentence that negates or words it apart).
VERBATIM_FALSE_ALARM_ROWS = ("pyref-a-041", "pyref-a-078", "pyref-b-016", "pyref-b-031", "pyref-b-064", "pyref-b-066",
                             "pyref-b-094", "pyref-b-098")


def test_a_verbatim_gold_quote_is_never_flagged_contradicting_by_either_judge(embed) -> None:
    """Issue 42 item 2: false alarms not worse. An answer that quotes its gold evidence verbatim contradicts no gold,
    for the gold judge (local/lexical's statements, clauses: extract_claims, against all the question's gold quotes)
    and the request judge (on the requests it is gold evidence of) alike; rules /4 flagged these rows (failed before)."""
    import json
    from pathlib import Path

    from rag_ttc_assets.judging.lexical_judge import extract_claims
    from rag_ttc_assets.judging.request_judge import LabelledRequest, judge_requests

    dataset = Path(__file__).resolve().parents[2] / "datasets" / "pyref" / "evaluation.json"
    questions = {q["id"]: q for q in json.loads(dataset.read_text())["questions"]}
    flagged = []
    for qid in VERBATIM_FALSE_ALARM_ROWS:
        q = questions[qid]
        gold = [e["quote"] for r in q["requests"] for e in r["evidence"]]
        labelled = [LabelledRequest(r["id"], r["text"], tuple(e["quote"] for e in r["evidence"]))
                    for r in q["requests"]]
        for quote in gold:
            claims = extract_claims(quote)
            assert claims, (qid, quote)
            flagged += [(qid, "gold judge", v["text"], v["reason"])
                        for v in verify_against_gold(claims, gold, embed) if v["contradicts_gold"]]
            # The request judge on the requests the quote is gold evidence of (as judge_measurement counts them).
            own = [r for r in labelled if quote in r.quotes]
            flagged += [(qid, "request judge", r.id, j.reason)
                        for r, j in zip(own, judge_requests(own, quote, [], [], embed), strict=True)
                        if j.verdict == "contradicts"]
    assert flagged == []
