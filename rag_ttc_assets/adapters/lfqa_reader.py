"""Read LFQA-Verification's data folder (https://github.com/timchen0618/LFQA-Verification, `data/`) into
core.claim_sets.ClaimSet, checking every file.

What is read (paths relative to the folder):

  annotations/annotations-<system>.json   a JSON list, one record per question: question_id (int), question,
        annotations: [{answer: one sentence of the system's answer, labels: [three of supported / partially /
        not_supported]}] (core.lfqa.SYSTEMS names the systems and the documents each was labelled against)
  docs/docs-webgpt.json, docs/docs-human.json   a JSON list, one record per question: question_id, question,
        docs: [{doc_id, title, text}]

Bad input is a ValueError (LfqaError) naming the file, the record and the field.
"""

from __future__ import annotations

import json
from pathlib import Path

from rag_ttc_assets.adapters.input_files import read_text
from rag_ttc_assets.core import lfqa
from rag_ttc_assets.core.claim_sets import Claim, ClaimSet, Document, Question, System

HINT = " (is this the data/ folder of https://github.com/timchen0618/LFQA-Verification?)"


class LfqaError(ValueError):
    """A data folder that cannot be converted: the message names the file, the record and the field."""


def _json_list(path: Path) -> list:
    try:
        data = json.loads(read_text(path, LfqaError, HINT))
    except json.JSONDecodeError as e:
        raise LfqaError(f"{path}: not JSON: {e.msg} (line {e.lineno}, column {e.colno})") from None
    if not isinstance(data, list):
        raise LfqaError(f"{path}: a JSON list of records (one per question), not {type(data).__name__}")
    return data


def _text(value) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _question(path: Path, i: int, rec) -> tuple[int, str, str]:
    """(question id, question text, where) of record i, checked."""
    if not isinstance(rec, dict):
        raise LfqaError(f"{path}: record {i}: a JSON object")
    qid = rec.get("question_id")
    if isinstance(qid, bool) or not isinstance(qid, int):
        raise LfqaError(f"{path}: record {i}: field 'question_id': an integer, not {qid!r}")
    where = f"{path}: record {i} (question_id {qid})"
    if not _text(rec.get("question")):
        raise LfqaError(f"{where}: field 'question': a non-empty string")
    return qid, " ".join(rec["question"].split()), where


def read_annotations(path: Path) -> dict[int, tuple[str, list[Claim]]]:
    """question id -> (question, its answer's claims) of one annotation file."""
    out: dict[int, tuple[str, list[Claim]]] = {}
    for i, rec in enumerate(_json_list(path)):
        qid, question, where = _question(path, i, rec)
        if qid in out:
            raise LfqaError(f"{where}: field 'question_id': {qid} already in an earlier record")
        anns = rec.get("annotations")
        if not isinstance(anns, list) or not anns:
            raise LfqaError(f"{where}: field 'annotations': a non-empty list of {{answer, labels}}")
        claims = []
        for j, a in enumerate(anns):
            f = f"annotations[{j}]"
            if not isinstance(a, dict):
                raise LfqaError(f"{where}: field '{f}': an object {{answer, labels}}")
            if not _text(a.get("answer")):
                raise LfqaError(f"{where}: field '{f}.answer': the sentence, a non-empty string")
            labels = a.get("labels")
            if not isinstance(labels, list) or not labels:
                raise LfqaError(f"{where}: field '{f}.labels': a non-empty list of labels")
            for k, lab in enumerate(labels):
                if lab not in lfqa.LABELS:
                    raise LfqaError(f"{where}: field '{f}.labels[{k}]': {lab!r}, one of {list(lfqa.LABELS)}")
            claims.append(Claim(" ".join(a["answer"].split()), tuple(lfqa.LABELS[x] for x in labels)))
        out[qid] = (question, claims)
    return out


def read_docs(path: Path, wanted: set[int]) -> dict[int, list[tuple[str, str, str]]]:
    """question id -> [(set's doc_id, title, text)] for the wanted questions."""
    out: dict[int, list[tuple[str, str, str]]] = {}
    for i, rec in enumerate(_json_list(path)):
        qid, _, where = _question(path, i, rec)
        if qid not in wanted:
            continue
        docs = rec.get("docs")
        if not isinstance(docs, list) or not docs:
            raise LfqaError(f"{where}: field 'docs': a non-empty list of {{doc_id, title, text}}")
        got = []
        for j, d in enumerate(docs):
            if not isinstance(d, dict) or not _text(d.get("text")):
                raise LfqaError(f"{where}: field 'docs[{j}].text': a non-empty string")
            got.append((str(d.get("doc_id") or ""), " ".join(str(d.get("title") or "").split()),
                        " ".join(d["text"].split())))
        out[qid] = got
    return out


def read_lfqa(root: Path, systems: list[str] | None = None, limit: int | None = None) -> ClaimSet:
    """The annotated systems found in `root/annotations` (or only the named ones: arm names or file stems), on every
    question, or on the first `limit` question ids (ascending)."""
    files = {stem: root / "annotations" / f"annotations-{stem}.json" for stem in lfqa.SYSTEMS}
    if systems:
        unknown = [s for s in systems if s not in files and s.replace("-", "_") not in files]
        if unknown:
            raise LfqaError(f"--systems: unknown system {unknown[0]!r}; the systems are "
                            + ", ".join(lfqa.arm_name(s) for s in files))
        files = {stem: p for stem, p in files.items() if stem in systems or lfqa.arm_name(stem) in systems}
        missing = [p for p in files.values() if not p.is_file()]
        if missing:
            raise LfqaError(f"{missing[0]}: file not found{HINT}")
    else:
        files = {stem: p for stem, p in files.items() if p.is_file()}
        if not files:
            raise LfqaError(f"{root / 'annotations'}: no annotations-<system>.json file of "
                            f"{', '.join(lfqa.SYSTEMS)}{HINT}")
    annotations = {stem: read_annotations(p) for stem, p in files.items()}
    qids = sorted(set().union(*annotations.values()))
    if limit is not None:
        qids = qids[:limit]
    wanted = set(qids)
    questions_text: dict[int, str] = {}
    for stem, by_q in annotations.items():
        for q in wanted & by_q.keys():
            questions_text.setdefault(q, by_q[q][0])
    sources = sorted({lfqa.SYSTEMS[stem] for stem in files})
    docs: dict[str, dict[int, list[tuple[str, str, str]]]] = {}
    for source in sources:
        path = root / "docs" / f"docs-{source}.json"
        needed = {q for stem, by_q in annotations.items() if lfqa.SYSTEMS[stem] == source for q in wanted & by_q.keys()}
        docs[source] = read_docs(path, needed)
        absent = sorted(needed - docs[source].keys())
        if absent:
            stem = next(s for s in files if lfqa.SYSTEMS[s] == source and absent[0] in annotations[s])
            raise LfqaError(f"{files[stem]}: question_id {absent[0]}: no record for it in {path} (the documents "
                            "its sentences were labelled against)")
    documents: dict[str, Document] = {}
    ids: dict[tuple[str, int], list[str]] = {}
    for source in sources:
        for q, got in sorted(docs[source].items()):
            for k, (orig, title, text) in enumerate(got, 1):
                d = lfqa.doc_id(q, source, k)
                documents[d] = Document(d, f"{orig}: {title}" if orig else title, text, f"LFQA-Verification "
                                                                                        f"docs-{source}")
                ids.setdefault((source, q), []).append(d)
    questions = [Question(lfqa.question_id(q), questions_text[q],
                          tuple(ids.get(("webgpt", q)) or ids.get(("human", q)) or ()),
                          ({"id": f"{lfqa.question_id(q)}.q", "text": questions_text[q], "evidence": []},))
                 for q in qids]
    out = []
    for stem, by_q in annotations.items():
        s = System(lfqa.arm_name(stem), str(files[stem]))
        for q in qids:
            if q in by_q:
                s.answers[lfqa.question_id(q)] = by_q[q][1]
                s.evidence[lfqa.question_id(q)] = ids[(lfqa.SYSTEMS[stem], q)]
        out.append(s)
    out.sort(key=lambda s: s.arm)
    return ClaimSet(lfqa.DATASET, documents, questions, out)
