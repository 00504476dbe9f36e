"""Load and validate a dataset folder (corpus.json + evaluation.json), including the digest binding.

Every problem names the file, the record and the field, so a user can fix it without guessing.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field as dc_field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from rag_ttc_assets.core.corpus_table import CorpusTable, parse_corpus
from rag_ttc_assets.core.records import Corpus, Evaluation
from rag_ttc_assets.core.request_derivation import apply_derivation, needs_derivation

CORPUS_FILE = "corpus.json"
EVALUATION_FILE = "evaluation.json"
# A dataset's name is its folder in the datasets folder and a value in arms files and store rows: a plain name.
DATASET_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
M = TypeVar("M", bound=BaseModel)  # the model a file is read into (Corpus, Evaluation)


def dataset_name_problem(name: str) -> str | None:
    """Why `name` cannot name a dataset folder, or None."""
    if DATASET_NAME.fullmatch(name):
        return None
    return (f"{name!r} is not a valid dataset name (lower-case letters, digits, '-' and '_', starting with a letter "
            "or digit, at most 64 characters)")


@dataclass(frozen=True)
class Problem:
    file: str
    record: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.record}: {self.field}: {self.message}"


class ProblemsError(ValueError):
    """An input that cannot be used; `problems` lists every reason found, each naming file, record and field.
    `WHAT` names the input in the message's head."""

    WHAT = "input"

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        head = f"{len(problems)} problem(s) in {self.WHAT}" if len(problems) > 1 else f"{self.WHAT} problem"
        super().__init__(head + ":\n" + "\n".join(f"  - {p}" for p in problems))


class DatasetError(ProblemsError):
    """A dataset that cannot be used; `problems` lists every reason found."""

    WHAT = "dataset"


class DigestMismatchError(DatasetError):
    """The evaluation was labelled against a different corpus than the one supplied."""


@dataclass(frozen=True)
class Dataset:
    name: str
    corpus_path: Path
    evaluation_path: Path
    corpus: CorpusTable  # the documents as Arrow columns (core.corpus_table): lookups and slices, not models
    evaluation: Evaluation
    corpus_digest: str
    evaluation_digest: str
    # Labels a check marked stale (changed, gone, ambiguous): their requests, and questions left without any, are
    # out of `evaluation` (every measurement); counted here so every table can say what it left out.
    labels: dict[str, Any] = dc_field(default_factory=dict)  # without_stale_labels' counts

    @property
    def documents_by_id(self) -> Mapping[str, str]:
        """Document id -> text, in corpus order, each text read from the corpus table when looked up."""
        return self.corpus.texts


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _decode_json(path: Path, data: bytes | None, problems: list[Problem]) -> tuple[bytes | None, object | None]:
    """`data` (the bytes of `path`, None when there is no such file) as JSON, or a problem naming the file."""
    if data is None:
        problems.append(Problem(str(path), "(file)", "(file)", "file not found"))
        return None, None
    if data.startswith(b"\xef\xbb\xbf"):
        problems.append(
            Problem(str(path), "(file)", "(encoding)",
                    "starts with a UTF-8 byte-order mark; save the file as UTF-8 without BOM "
                    "(the digest binding is over the exact bytes)")
        )
        return data, None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        problems.append(Problem(str(path), "(file)", "(encoding)", f"not valid UTF-8 at byte {e.start}: {e.reason}"))
        return data, None
    try:
        return data, json.loads(text)
    except json.JSONDecodeError as e:
        problems.append(Problem(str(path), f"line {e.lineno} column {e.colno}", "(json)", f"malformed JSON: {e.msg}"))
        return data, None


def _record_name(raw: object, loc: tuple[int | str, ...], list_key: str) -> tuple[str, str]:
    """Turn a pydantic error location into (record, field), naming the record by its id when it has one."""
    if len(loc) >= 2 and loc[0] == list_key and isinstance(loc[1], int):
        items = raw.get(list_key) if isinstance(raw, dict) else None
        rid = None
        if isinstance(items, list) and loc[1] < len(items) and isinstance(items[loc[1]], dict):
            rid = items[loc[1]].get("id")
        record = f"{list_key}[{loc[1]}]" + (f" (id {rid!r})" if isinstance(rid, str) else "")
        return record, ".".join(str(p) for p in loc[2:]) or "(record)"
    return "(top level)", ".".join(str(p) for p in loc) or "(record)"


def _parse(model: type[M], raw: object, path: Path, list_key: str, problems: list[Problem]) -> M | None:
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        for err in e.errors():
            record, field = _record_name(raw, tuple(err["loc"]), list_key)
            problems.append(Problem(str(path), record, field, err["msg"]))
        return None


def _read_model(model: type[M], path: Path, data: bytes | None, list_key: str,
                problems: list[Problem]) -> tuple[M | None, bytes | None]:
    """(`model` read from the file's bytes, the bytes), or (None, bytes) with the problems named. A valid file is
    validated from its bytes in one pass (pydantic's JSON parser: no decoded copy of the text, no parsed JSON tree
    beside the models, which at a million chunks' corpus were gigabytes at once); a file that fails it is read again
    the long way, which names each problem's record and field."""
    if data is not None and not data.startswith(b"\xef\xbb\xbf"):
        try:
            return model.model_validate_json(data), data
        except ValueError:  # pydantic's ValidationError, or JSON it refuses: the long way says what is wrong
            pass
    data, raw = _decode_json(path, data, problems)
    return (_parse(model, raw, path, list_key, problems) if raw is not None else None), data


def _read_corpus(path: Path, data: bytes | None, problems: list[Problem]) -> tuple[CorpusTable | None, bytes | None]:
    """(the corpus as a CorpusTable, the bytes), or (None, bytes) with the problems named. A valid file is validated
    a slice of documents at a time into Arrow columns (core.corpus_table.parse_corpus: at a million chunks the
    documents as models were 2 GB, their parse 4 GB); a file that fails it is read again the long way, which names
    each problem's record and field."""
    if data is not None and not data.startswith(b"\xef\xbb\xbf"):
        corpus = parse_corpus(data)
        if corpus is not None:
            return corpus, data
    data, raw = _decode_json(path, data, problems)
    model = _parse(Corpus, raw, path, "documents", problems) if raw is not None else None
    return (CorpusTable.from_documents(model.documents) if model is not None else None), data


def _check_corpus(corpus: CorpusTable, path: Path, problems: list[Problem]) -> None:
    if not len(corpus):
        problems.append(Problem(str(path), "(top level)", "documents", "the corpus has no documents"))
    seen: set[str] = set()
    for i, (doc_id, text) in enumerate(corpus.id_texts()):
        record = f"documents[{i}] (id {doc_id!r})"
        if doc_id in seen:
            problems.append(Problem(str(path), record, "id", f"duplicate document id {doc_id!r}"))
        seen.add(doc_id)
        if not text.strip():
            problems.append(Problem(str(path), record, "text", "empty document text"))


_BLANK_GOLD = "empty gold answer; write the expected answer or leave the field out"


def _check_evaluation(ev: Evaluation, docs: Mapping[str, str] | None, path: Path, problems: list[Problem],
                      derivation_failed: bool = False) -> None:
    """`derivation_failed`: the derived-requests file was refused (its problems are listed), so a question that
    would get derived requests has none; that is said once, by the file's problems, not once a question."""
    qids: set[str] = set()
    rids: set[str] = set()
    for i, q in enumerate(ev.questions):
        rec = f"questions[{i}] (id {q.id!r})"
        if q.id in qids:
            problems.append(Problem(str(path), rec, "id", f"duplicate question id {q.id!r}"))
        qids.add(q.id)
        if not q.requests and not (derivation_failed and needs_derivation(q)):
            problems.append(Problem(str(path), rec, "requests", "a question needs at least one request, or a "
                                                                "gold_answer to derive them from"))
        if q.gold_answer is not None and not q.gold_answer.strip():
            problems.append(Problem(str(path), rec, "gold_answer", _BLANK_GOLD))
        for j, t in enumerate(q.targets):
            if docs is not None and t.doc_id not in docs and t.stale is None:
                problems.append(Problem(str(path), rec, f"targets[{j}].doc_id", f"unknown document {t.doc_id!r}"))
        for j, r in enumerate(q.requests):
            rrec = f"{rec} request {r.id!r}"
            if r.id in rids:
                problems.append(Problem(str(path), rrec, f"requests[{j}].id", f"duplicate request id {r.id!r}"))
            rids.add(r.id)
            if r.gold_answer is not None and not r.gold_answer.strip():
                problems.append(Problem(str(path), rrec, f"requests[{j}].gold_answer", _BLANK_GOLD))
            for k, ev_ in enumerate(r.evidence):
                name = f"requests[{j}].evidence[{k}]"
                if docs is None or ev_.stale is not None:  # a stale label is kept for a person, not measured
                    continue
                if ev_.doc_id not in docs:
                    problems.append(Problem(str(path), rrec, name + ".doc_id", f"unknown document {ev_.doc_id!r}"))
                elif ev_.quote not in docs[ev_.doc_id]:
                    problems.append(Problem(str(path), rrec, name + ".quote",
                                            f"quote is not a verbatim substring of document {ev_.doc_id!r}: "
                                            f"{ev_.quote[:60]!r}"))
    for i, pid in enumerate(ev.pilot):
        if pid not in qids:
            problems.append(Problem(str(path), f"pilot[{i}]", "pilot", f"unknown question id {pid!r}"))


def parse_dataset(name: str, cpath: Path, epath: Path, corpus_bytes: bytes | None,
                  evaluation_bytes: bytes | None, derived: tuple[Path, bytes] | None = None) -> Dataset:
    """Parse and validate a dataset from its two files' bytes (None: the file does not exist); raise DatasetError
    listing every problem, each naming its file, record and field.

    The digest binding is checked first: a mismatch raises DigestMismatchError naming both digests and both
    files, before anything else is trusted. Reading the files is the caller's (adapters.input_files.load_dataset).
    A question with a gold answer and no requests gets derived ones (core.request_derivation): from `derived`
    (derived_requests.json's path and bytes) when it has them, else by the offline rule.
    """
    problems: list[Problem] = []
    corpus, cbytes = _read_corpus(cpath, corpus_bytes, problems)
    evaluation, ebytes = _read_model(Evaluation, epath, evaluation_bytes, "questions", problems)
    cdigest = sha256_digest(cbytes) if cbytes is not None else ""
    if evaluation is not None and cbytes is not None and evaluation.corpus_digest != cdigest:
        raise DigestMismatchError([Problem(
            str(epath), "(top level)", "corpus_digest",
            f"the evaluation is bound to corpus {evaluation.corpus_digest} but {cpath} has digest {cdigest}; "
            "use the corpus the evaluation was labelled against, or run `rag-ttc labels check "
            f"{name}` (which labels the change broke) and `rag-ttc labels update {name}` (a new labels version bound "
            "to this corpus)",
        )])
    if corpus is not None:
        _check_corpus(corpus, cpath, problems)
    derivation_failed = False
    if evaluation is not None and corpus is not None and ebytes is not None and not problems:
        evaluation = _derive(evaluation, sha256_digest(ebytes), corpus, derived, problems, name)
        derivation_failed = bool(problems)
    if evaluation is not None:
        docs = corpus.texts if corpus is not None else None
        _check_evaluation(evaluation, docs, epath, problems, derivation_failed)
    if problems:
        raise DatasetError(problems)
    assert corpus is not None and evaluation is not None and ebytes is not None
    evaluation, labels = without_stale_labels(evaluation)
    return Dataset(name, cpath, epath, corpus, evaluation, cdigest, sha256_digest(ebytes), labels)


def without_stale_labels(ev: Evaluation) -> tuple[Evaluation, dict[str, Any]]:
    """`ev` without the requests that hold a stale gold quote (`rag-ttc labels update` marks those changed, gone or
    ambiguous: a gold answer written from that quote is stale too), without questions left with no request, and
    without targets whose document was removed; and the count of gold quotes and targets: {"labels", "current",
    "excluded", "requests_excluded", "questions_excluded"}."""
    total = sum(len(r.evidence) for q in ev.questions for r in q.requests) + sum(len(q.targets) for q in ev.questions)
    stale = (sum(e.stale is not None for q in ev.questions for r in q.requests for e in r.evidence)
             + sum(t.stale is not None for q in ev.questions for t in q.targets))
    out: dict[str, Any] = {"labels": total, "current": total - stale, "excluded": stale, "requests_excluded": [],
                           "questions_excluded": []}
    if not stale:
        return ev, out
    questions = []
    for q in ev.questions:
        keep = [r for r in q.requests if not any(e.stale for e in r.evidence)]
        out["requests_excluded"] += [r.id for r in q.requests if r not in keep]
        if keep:
            questions.append(q.model_copy(update={"requests": keep,
                                                  "targets": [t for t in q.targets if t.stale is None]}))
        else:
            out["questions_excluded"].append(q.id)
    pilot = [p for p in ev.pilot if p not in out["questions_excluded"]]
    return ev.model_copy(update={"questions": questions, "pilot": pilot}), out


def labels_line(labels: Mapping[str, Any]) -> str:
    """"N of M labels current, K excluded as changed or gone" (what every table that measures against them says)."""
    return (f"{labels['current']} of {labels['labels']} labels current, {labels['excluded']} excluded as changed or "
            f"gone ({len(labels['requests_excluded'])} requests, {len(labels['questions_excluded'])} questions "
            "left out; `rag-ttc labels check` lists them)")


def _derive(evaluation: Evaluation, digest: str, corpus: CorpusTable, derived: tuple[Path, bytes] | None,
            problems: list[Problem], name: str) -> Evaluation:

    file = None
    if derived is not None:
        found: list[Problem] = []
        _, file = _decode_json(derived[0], derived[1], found)
        if found:
            problems.extend(found)
            return evaluation
    out, found_ = apply_derivation(evaluation, digest, corpus.texts, file,
                                   str(derived[0]) if derived else "", name)
    problems.extend(Problem(str(derived[0]) if derived else "", *p) for p in found_)
    return out


def dataset_counts(ds: Dataset) -> dict[str, int]:
    qs = ds.evaluation.questions
    return {
        "documents": len(ds.corpus),
        "questions": len(qs),
        "multi_part": sum(1 for q in qs if len(q.requests) > 1),
        "requests": sum(len(q.requests) for q in qs),
        "unanswerable": sum(1 for q in qs if not q.answerable),
        "with_targets": sum(1 for q in qs if any(t.relevance > 0 for t in q.targets)),
        # Allowed (a BEIR import has none), but request-level completeness is undefined for them.
        "requests_without_evidence": sum(1 for q in qs if q.answerable for r in q.requests if not r.evidence),
        "requests_with_gold_answer": sum(1 for q in qs for r in q.requests if r.gold_answer is not None),
        "requests_derived": sum(1 for q in qs for r in q.requests if r.derived is not None),
        "pilot": len(ds.evaluation.pilot),
    }
