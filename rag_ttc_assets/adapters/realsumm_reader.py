"""Read a clone of REALSumm (https://github.com/neulab/REALSumm) into core.realsumm.RealSumm, checking every file.

What is read (paths relative to the clone):

  selected_docs_for_human_eval/selected_documents.md   the CNN/DM test line numbers of the 100 articles (a list)
  selected_docs_for_human_eval/abs/ptr_generator/src.txt  the articles, one a line, in that order
  selected_docs_for_human_eval/abs/bart/ref.txt          the reference summaries, one a line, in that order
  human_annotations/SCUs_and_annotations/SCUs_list.csv   the SCUs: eventId, questionId, questionText (BLANK: padding)
  human_annotations/SCUs_and_annotations/SCU_rating_results_{abs,ext}_systems/*.csv
        the crowd's raw batch results: one row = one worker's assignment on one HIT (one article and one system
        summary, 16 statement slots): Input.eventId, Input.summaryId, Input.qIdList, Input.summary_text,
        Input.statement_<i>, Answer.S<i>Answer (p: present, n: not present)

Bad input is a ValueError (RealSummError) naming the file, the row and the field.
"""

from __future__ import annotations

import ast
import csv
import io
import re
from pathlib import Path

from rag_ttc_assets.adapters.input_files import read_text
from rag_ttc_assets.core.realsumm import Label, RealSumm, Scu, SystemSummaries, arm_name, clean

DOCS_LIST = "selected_docs_for_human_eval/selected_documents.md"
ARTICLES = "selected_docs_for_human_eval/abs/ptr_generator/src.txt"
REFERENCES = "selected_docs_for_human_eval/abs/bart/ref.txt"
SCUS = "human_annotations/SCUs_and_annotations/SCUs_list.csv"
CROWD = {"abs": "human_annotations/SCUs_and_annotations/SCU_rating_results_abs_systems",
         "ext": "human_annotations/SCUs_and_annotations/SCU_rating_results_ext_systems"}
SLOTS = 16
BLANK = "BLANK"
ANSWERS = {"p": True, "n": False}


class RealSummError(ValueError):
    """A REALSumm clone that cannot be converted: the message names the file, the row and the field."""


def _read(path: Path) -> str:
    return read_text(path, RealSummError, " (is this a clone of https://github.com/neulab/REALSumm?)")


def _csv(path: Path, columns: list[str]) -> list[tuple[int, dict[str, str]]]:
    """(row number, record) of a CSV file, row 2 being the first record after the header; every column checked."""
    reader = csv.DictReader(io.StringIO(_read(path), newline=""))
    missing = [c for c in columns if c not in (reader.fieldnames or [])]
    if missing:
        raise RealSummError(f"{path}: row 1 (header): column {missing[0]!r} missing"
                            + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    return [(n, rec) for n, rec in enumerate(reader, 2)]


def _lines(path: Path, n: int, what: str) -> list[str]:
    lines = _read(path).splitlines()
    if len(lines) != n:
        raise RealSummError(f"{path}: {len(lines)} lines, {n} expected ({what}, one a line, in the order of {DOCS_LIST})")
    for i, line in enumerate(lines, 1):
        if not clean(line):
            raise RealSummError(f"{path}: line {i}: empty {what}")
    return [clean(x) for x in lines]


def article_ids(root: Path) -> list[str]:
    path = root / DOCS_LIST
    m = re.search(r"\[([\d,\s]+)\]", _read(path))
    if not m:
        raise RealSummError(f"{path}: no list of CNN/DM test line numbers ([1017, 10586, ...]) found")
    ids = [f"cnndm{int(x)}" for x in m.group(1).split(",") if x.strip()]
    if len(set(ids)) != len(ids):
        raise RealSummError(f"{path}: a line number appears twice in the list")
    return ids


def read_scus(root: Path, articles: set[str]) -> dict[str, dict[str, Scu]]:
    """Article id -> SCU id -> SCU, BLANK padding dropped."""
    path = root / SCUS
    out: dict[str, dict[str, Scu]] = {}
    seen: dict[str, int] = {}
    for n, rec in _csv(path, ["eventId", "questionId", "questionText"]):
        event, qid, text = (rec["eventId"] or "").strip(), (rec["questionId"] or "").strip(), rec["questionText"]
        if qid in seen:
            raise RealSummError(f"{path}: row {n}: field 'questionId': {qid!r} already on row {seen[qid]}")
        seen[qid] = n
        if not qid:
            raise RealSummError(f"{path}: row {n}: field 'questionId': empty")
        if text is None or not text.strip():
            raise RealSummError(f"{path}: row {n}: field 'questionText': empty (padding is spelled {BLANK})")
        if text.strip() == BLANK:
            continue
        if event not in articles:
            raise RealSummError(f"{path}: row {n}: field 'eventId': {event!r} is not one of the articles of {DOCS_LIST}")
        out.setdefault(event, {})[qid] = Scu(qid, " ".join(text.split()))
    return out


def read_crowd_file(path: Path, folder: str, scus: dict[str, dict[str, Scu]]) -> SystemSummaries:
    """One system's crowd file: every non-BLANK slot's label, checked against SCUs_list.csv."""
    columns = ["Input.eventId", "Input.summaryId", "Input.qIdList", "Input.summary_text",
               *(f"Input.statement_{i}" for i in range(1, SLOTS + 1)), *(f"Answer.S{i}Answer" for i in range(1, SLOTS + 1))]
    rows = _csv(path, columns)
    if not rows:
        raise RealSummError(f"{path}: no rows")
    system: SystemSummaries | None = None
    positions: dict[str, int] = {}
    for n, rec in rows:
        where = f"{path}: row {n}"
        summary_id = (rec["Input.summaryId"] or "").strip()
        if not summary_id:
            raise RealSummError(f"{where}: field 'Input.summaryId': empty")
        if system is None:
            system = SystemSummaries(arm_name(folder, summary_id), str(path))
        elif arm_name(folder, summary_id) != system.arm:
            raise RealSummError(f"{where}: field 'Input.summaryId': {summary_id!r}, but row 2 of this file is "
                                f"system {system.arm!r}; one system a file")
        event = (rec["Input.eventId"] or "").strip()
        if event not in scus:
            raise RealSummError(f"{where}: field 'Input.eventId': {event!r} is not an article with SCUs in {SCUS}")
        try:
            qids = [str(x) for x in ast.literal_eval(rec["Input.qIdList"] or "")]
        except (ValueError, SyntaxError):
            raise RealSummError(f"{where}: field 'Input.qIdList': not a list of SCU ids: "
                                f"{(rec['Input.qIdList'] or '')[:60]!r}") from None
        if len(qids) != SLOTS:
            raise RealSummError(f"{where}: field 'Input.qIdList': {len(qids)} ids, one per statement slot ({SLOTS})")
        summary = " ".join((rec["Input.summary_text"] or "").split())
        if not summary:
            raise RealSummError(f"{where}: field 'Input.summary_text': empty")
        if event in system.summaries and system.summaries[event] != summary:
            raise RealSummError(f"{where}: field 'Input.summary_text': differs from an earlier assignment of the "
                                f"same HIT (article {event}, system {system.arm})")
        system.summaries[event] = summary
        position = positions[event] = positions.get(event, 0) + 1
        labels = system.labels.setdefault(event, [])
        for i, qid in enumerate(qids, 1):
            statement = " ".join((rec[f"Input.statement_{i}"] or "").split())
            if statement == BLANK:
                continue
            scu = scus[event].get(qid)
            if scu is None:
                raise RealSummError(f"{where}: field 'Input.qIdList'[{i - 1}]: SCU {qid!r} is not an SCU of article "
                                    f"{event} in {SCUS}")
            if statement != scu.text:
                raise RealSummError(f"{where}: field 'Input.statement_{i}': {statement[:60]!r} does not match SCU "
                                    f"{qid} of {SCUS} ({scu.text[:60]!r})")
            answer = (rec[f"Answer.S{i}Answer"] or "").strip()
            if answer not in ANSWERS:
                raise RealSummError(f"{where}: field 'Answer.S{i}Answer': {answer!r}; 'p' (present) or 'n' "
                                    "(not present) for a statement that is not BLANK")
            labels.append(Label(qid, ANSWERS[answer], position))
    assert system is not None
    return system


def crowd_files(root: Path) -> list[tuple[str, Path]]:
    out = []
    for folder, rel in CROWD.items():
        d = root / rel
        if not d.is_dir():
            raise RealSummError(f"{d}: folder not found (is this a clone of https://github.com/neulab/REALSumm?)")
        out += [(folder, p) for p in sorted(d.glob("*.csv"))]
    return out


def read_realsumm(root: Path, systems: list[str] | None = None) -> RealSumm:
    """The whole set, or only the named systems' crowd files (arm names, `abs-bart-out`): an unknown name is an
    error listing the known ones."""
    ids = article_ids(root)
    articles = dict(zip(ids, _lines(root / ARTICLES, len(ids), "article"), strict=True))
    references = dict(zip(ids, _lines(root / REFERENCES, len(ids), "reference summary"), strict=True))
    scus = read_scus(root, set(ids))
    out = []
    for folder, path in crowd_files(root):
        out.append(read_crowd_file(path, folder, scus))
    out.sort(key=lambda s: s.arm)
    names = [s.arm for s in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise RealSummError(f"{root}: system {dup[0]!r} has two crowd files: "
                            + ", ".join(s.file for s in out if s.arm == dup[0]))
    if systems:
        unknown = [s for s in systems if s not in names]
        if unknown:
            raise RealSummError(f"--systems: unknown system {unknown[0]!r}; the systems are {', '.join(names)}")
        out = [s for s in out if s.arm in systems]
    return RealSumm(articles, references, {a: list(v.values()) for a, v in scus.items()}, out)
