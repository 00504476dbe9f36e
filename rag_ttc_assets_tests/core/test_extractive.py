from __future__ import annotations

import numpy as np
import pytest

from rag_ttc_assets.core.extractive import INSUFFICIENT, NOT_IN_EVIDENCE, answer_extractively, cosine_matrix

ASSERT = (
    "Assert statements are a convenient way to insert debugging assertions into a program. "
    "The current code generator emits no code for an assert statement when optimization is requested "
    'at compile time. Assignments to "__debug__" are illegal.'
)
WITH = (
    'If the suite was exited due to an exception, and the return value from the "__exit__()" method was '
    "false, the exception is reraised. If the return value was true, the exception is suppressed, and "
    'execution continues with the statement following the "with" statement.'
)
LAMBDA = (
    "Lambda expressions (sometimes called lambda forms) are used to create anonymous functions. "
    "Note that functions created with lambda expressions cannot contain statements or annotations."
)
EVIDENCE = [("assert#chunk-0", ASSERT), ("with#chunk-1", WITH), ("lambda#chunk-0", LAMBDA)]
SUPPRESSED = (
    'If the return value was true, the exception is suppressed, and execution continues with the statement '
    'following the "with" statement.'
)
LAMBDA_NOTE = "Note that functions created with lambda expressions cannot contain statements or annotations."


@pytest.fixture(scope="module")
def embed():
    from rag_ttc_assets.adapters.embeddings import encode

    return encode


def test_two_requests_only_one_supported(embed) -> None:
    result = answer_extractively(
        "What happens if __exit__ returns a true value, and how do I configure pip's proxy?",
        EVIDENCE,
        embed,
        requests=[
            ("q1.r1", "What happens if __exit__ returns a true value?"),
            ("q1.r2", "How do I configure pip's proxy?"),
        ],
    )
    reraised = (
        'If the suite was exited due to an exception, and the return value from the "__exit__()" method was '
        "false, the exception is reraised."
    )
    assert result["abstained"] is False
    assert result["citation_chunk_ids"] == ["with#chunk-1"]
    assert result["requests"] == [
        {"request": "q1.r1", "answer": f"{reraised} {SUPPRESSED}", "citation_chunk_ids": ["with#chunk-1"],
         "supported": True},
        {"request": "q1.r2", "answer": NOT_IN_EVIDENCE, "citation_chunk_ids": [], "supported": False},
    ]
    assert result["answer"] == f"1. {reraised} {SUPPRESSED}\n2. {NOT_IN_EVIDENCE}"


def test_requests_split_from_the_question_each_cite_their_own_chunk(embed) -> None:
    result = answer_extractively(
        "What does the assert statement do, when is the exception suppressed, and can a lambda contain statements?",
        EVIDENCE,
        embed,
    )
    assert [(r["request"], r["citation_chunk_ids"], r["supported"]) for r in result["requests"]] == [
        ("What does the assert statement do?", ["assert#chunk-0"], True),
        ("When is the exception suppressed?", ["with#chunk-1"], True),
        ("Can a lambda contain statements?", ["lambda#chunk-0"], True),
    ]
    assert result["citation_chunk_ids"] == ["assert#chunk-0", "with#chunk-1", "lambda#chunk-0"]
    assert result["answer"].splitlines()[2] == f"3. {LAMBDA_NOTE}"


def test_single_request_answer_is_unnumbered(embed) -> None:
    result = answer_extractively("Can a lambda contain statements?", EVIDENCE, embed)
    assert result == {
        "answer": LAMBDA_NOTE,
        "citation_chunk_ids": ["lambda#chunk-0"],
        "abstained": False,
        "requests": [
            {"request": "Can a lambda contain statements?", "answer": LAMBDA_NOTE,
             "citation_chunk_ids": ["lambda#chunk-0"], "supported": True},
        ],
    }  # fmt: skip


@pytest.mark.parametrize("evidence", [EVIDENCE, []])
def test_unrelated_question_abstains_without_citations(embed, evidence) -> None:
    result = answer_extractively("How do I configure pip's proxy?", evidence, embed)
    assert result == {
        "answer": INSUFFICIENT,
        "citation_chunk_ids": [],
        "abstained": True,
        "requests": [
            {"request": "How do I configure pip's proxy?", "answer": NOT_IN_EVIDENCE, "citation_chunk_ids": [],
             "supported": False},
        ],
    }  # fmt: skip


def test_threshold_decides_support_and_answers_are_deterministic(embed) -> None:
    question = "Can a lambda contain statements?"
    assert answer_extractively(question, EVIDENCE, embed, threshold=0.99)["abstained"] is True
    assert answer_extractively(question, EVIDENCE, embed) == answer_extractively(question, EVIDENCE, embed)


def test_cosine_matrix_renormalises_rows() -> None:
    sims = cosine_matrix(np.array([[3.0, 0.0]]), np.array([[1.0, 1.0], [0.0, 2.0]]))
    assert np.allclose(sims, [[2**-0.5, 0.0]])
