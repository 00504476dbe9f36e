"""Parse TREC qrels and run files, with errors that name the file, the line and the problem.

Formats (trec_eval 9.0.8, usnistgov/trec_eval README and get_qrels.c / get_trec_results.c):

    qrels:  qid iter docno rel               iter ignored; rel an integer (graded, may be negative)
    run:    qid Q0 docno rank score tag      Q0, rank and tag ignored; score a decimal number; any further
                                             fields ignored (get_trec_results.c "Skip over rest of line";
                                             trec_eval's own test/results.trunc has them)

Fields are separated by any whitespace; blank lines are ignored; line numbers are 1-based and
count '\\n'-terminated lines.  The rank column is not checked because trec_eval never reads it
(it ranks by score), so a run that trec_eval accepts is not rejected here for its ranks.
A document judged twice for one query, or retrieved twice for one query, is an error, as in
trec_eval (form_res_rels.c: "duplicate docs").  Numbers are plain ASCII decimals: Python's int()
and float() would also accept '1_000', 'nan' or non-ASCII digits, which trec_eval's atol/atof do not
read the same way; non-finite scores are rejected because they have no place in a ranking.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


class TrecFormatError(ValueError):
    def __init__(self, path: str, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem


def _fields(text: str, path: str, layout: str, rest: bool = False) -> Iterator[tuple[int, list[str]]]:
    expected = len(layout.split())
    for lineno, line in enumerate(text.split("\n"), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < expected or (len(fields) > expected and not rest):
            at_least = "at least " if rest else ""
            raise TrecFormatError(
                path, lineno, f"malformed line: expected {at_least}{expected} fields '{layout}', got {len(fields)}"
            )
        yield lineno, fields[:expected]


def _once(first_seen: dict[tuple[str, str], int], qid: str, docno: str, path: str, lineno: int, what: str) -> None:
    """Record (qid, docno) on `lineno`; a second line for the same pair is an error naming both lines."""
    if (qid, docno) in first_seen:
        raise TrecFormatError(path, lineno, f"duplicate {what} {docno!r} for query {qid!r} "
                                            f"(first on line {first_seen[(qid, docno)]})")
    first_seen[(qid, docno)] = lineno


def parse_qrels(text: str, path: str) -> dict[str, dict[str, int]]:
    """qid -> docno -> relevance, in file order."""
    qrels: dict[str, dict[str, int]] = {}
    first_seen: dict[tuple[str, str], int] = {}
    for lineno, (qid, _iter, docno, rel) in _fields(text, path, "qid iter docno rel"):
        if not _INT.fullmatch(rel):
            raise TrecFormatError(path, lineno, f"rel field {rel!r} is not an integer")
        _once(first_seen, qid, docno, path, lineno, "judgment of document")
        qrels.setdefault(qid, {})[docno] = int(rel)
    return qrels


def parse_run(text: str, path: str) -> dict[str, dict[str, float]]:
    """qid -> docno -> score, in file order."""
    run: dict[str, dict[str, float]] = {}
    first_seen: dict[tuple[str, str], int] = {}
    for lineno, (qid, _q0, docno, _rank, score, _tag) in _fields(text, path, "qid Q0 docno rank score tag", rest=True):
        if not _FLOAT.fullmatch(score):
            raise TrecFormatError(path, lineno, f"score field {score!r} is not a number")
        value = float(score)
        if not math.isfinite(value):
            raise TrecFormatError(path, lineno, f"score field {score!r} is not finite")
        _once(first_seen, qid, docno, path, lineno, "document")
        run.setdefault(qid, {})[docno] = value
    return run
