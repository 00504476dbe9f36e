from __future__ import annotations

import pytest

from rag_ttc_assets.core.trec_files import TrecFormatError, parse_qrels, parse_run


def test_parse_qrels_graded_whitespace_and_blank_lines() -> None:
    text = "q1 0 d1 1\n\nq1\t0\td2   2\n   \nq2 0 d1 -1\r\nq2 0 d3 0\n"
    assert parse_qrels(text, "q.txt") == {"q1": {"d1": 1, "d2": 2}, "q2": {"d1": -1, "d3": 0}}


def test_parse_run_ignores_rank_q0_and_tag() -> None:
    text = "q1 Q0 d1 1 12.5 bm25\nq1 Q0 d2 7 -3e-2 bm25\n\nq2 iter d9 x .5 other\n"
    assert parse_run(text, "run.txt") == {"q1": {"d1": 12.5, "d2": -0.03}, "q2": {"d9": 0.5}}


def test_empty_files() -> None:
    assert parse_qrels("", "q.txt") == {}
    assert parse_run("\n\n", "run.txt") == {}


def test_qrels_wrong_field_count_names_file_and_line() -> None:
    with pytest.raises(TrecFormatError) as err:
        parse_qrels("q1 0 d1 1\n\nq1 0 d2\n", "data/q.txt")
    assert str(err.value) == "data/q.txt:3: malformed line: expected 4 fields 'qid iter docno rel', got 3"
    assert (err.value.path, err.value.line) == ("data/q.txt", 3)
    assert isinstance(err.value, ValueError)


def test_run_wrong_field_count() -> None:
    with pytest.raises(TrecFormatError, match=r"^run\.txt:2: malformed line: expected at least 6 fields .* got 5$"):
        parse_run("q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 0.5\n", "run.txt")


def test_run_ignores_fields_after_the_tag_as_trec_eval_does() -> None:
    # trec_eval's own test/results.trunc: "301 Q0 FBIS3-27619 99 2.138276 STANDARD more junk at"
    assert parse_run("301\tQ0\tFBIS3-27619\t99\t  2.138276\tSTANDARD more junk at\n", "r") == {
        "301": {"FBIS3-27619": 2.138276}}


def test_qrels_extra_field_is_malformed_as_in_trec_eval() -> None:
    with pytest.raises(TrecFormatError, match=r"^q\.txt:1: malformed line: expected 4 fields .* got 5$"):
        parse_qrels("q1 0 d1 1 extra\n", "q.txt")


# "1_0" and Arabic-Indic one are ints to Python's int() but not to trec_eval's atol.
@pytest.mark.parametrize("rel", ["high", "1.5", "1_0", "\u0661"])
def test_qrels_non_integer_relevance(rel: str) -> None:
    with pytest.raises(TrecFormatError, match=rf"^q\.txt:2: rel field '{rel}' is not an integer$"):
        parse_qrels(f"q1 0 d1 1\nq1 0 d2 {rel}\n", "q.txt")


@pytest.mark.parametrize("score", ["abc", "1_000", "nan", "1.0.0"])
def test_run_non_numeric_score(score: str) -> None:
    with pytest.raises(TrecFormatError, match=rf"^run\.txt:1: score field '{score}' is not a number$"):
        parse_run(f"q1 Q0 d1 1 {score} t", "run.txt")


def test_run_non_finite_score() -> None:
    with pytest.raises(TrecFormatError, match=r"^run\.txt:1: score field '1e999' is not finite$"):
        parse_run("q1 Q0 d1 1 1e999 t", "run.txt")


def test_run_duplicate_document_for_one_query() -> None:
    text = "q1 Q0 d1 1 2.0 t\nq2 Q0 d1 1 2.0 t\nq1 Q0 d1 2 1.0 t\n"
    with pytest.raises(
        TrecFormatError, match=r"^run\.txt:3: duplicate document 'd1' for query 'q1' \(first on line 1\)$"
    ):
        parse_run(text, "run.txt")


def test_qrels_duplicate_judgment() -> None:
    with pytest.raises(TrecFormatError, match=r"^q\.txt:2: duplicate judgment of document 'd1' for query 'q1'"):
        parse_qrels("q1 0 d1 1\nq1 0 d1 0\n", "q.txt")
