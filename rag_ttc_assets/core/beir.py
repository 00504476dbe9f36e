"""Convert a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) into the lab's format.

BEIR has document-level qrels but no request annotations, so each question becomes a single
request with no evidence quotes: retrieval metrics work, request-level evidence is undefined.

A query record may carry its answer in `metadata` (HotpotQA-style exports): `metadata.answer`, a
string, or else `metadata.answers`, a list of strings joined with " | " (every accepted answer is kept,
in order). It becomes both the question's `gold_answer` and its single request's; without it the
field is left out (as it is when the answer is null). A non-string or blank answer is refused,
naming the file, the line and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag_ttc_assets.core.jsonl import json_lines, malformed


class BeirError(ValueError):
    pass


@dataclass(frozen=True)
class BeirReport:
    documents: int
    questions: int
    judgments: int
    dropped_missing: int


def _read_jsonl(text: str, path: str) -> list[tuple[int, dict[str, Any]]]:
    """The records of a JSONL file with their 1-based line numbers."""
    out = []
    for n, rec, err in json_lines(text):
        if err:
            raise BeirError(f"{path}: line {n}: {malformed(err)}")
        if not isinstance(rec, dict) or "_id" not in rec:
            raise BeirError(f"{path}: line {n}: field '_id' is missing")
        out.append((n, rec))
    return out


def _read_qrels(text: str, path: str) -> list[tuple[int, str, str, int]]:
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        parts = line.strip().split("\t") if "\t" in line else line.split()
        if not parts or not line.strip():
            continue
        if n == 1 and parts[0] in ("query-id", "query_id", "qid"):
            continue
        if len(parts) != 3:
            raise BeirError(f"{path}: line {n}: expected 3 fields (query-id, corpus-id, score), got {len(parts)}")
        try:
            rel = int(float(parts[2]))
        except ValueError:
            raise BeirError(f"{path}: line {n}: field 'score' is not a number: {parts[2]!r}") from None
        rows.append((n, parts[0], parts[1], rel))
    return rows


def _gold_answer(query: dict[str, Any], path: str, n: int) -> str | None:
    """The answer a query record carries in its metadata (see the module docstring), or None."""
    meta = query.get("metadata")
    if not isinstance(meta, dict):
        return None
    if meta.get("answer") is not None:
        parts, fields = [meta["answer"]], ["metadata.answer"]
    elif meta.get("answers") is not None:
        if not isinstance(meta["answers"], list) or not meta["answers"]:
            raise BeirError(f"{path}: line {n}: field 'metadata.answers' is not a non-empty list of strings: "
                            f"{meta['answers']!r:.60}")
        parts, fields = meta["answers"], [f"metadata.answers[{i}]" for i in range(len(meta["answers"]))]
    else:
        return None
    for part, field in zip(parts, fields):
        if not isinstance(part, str):
            raise BeirError(f"{path}: line {n}: field {field!r} is not a string: {part!r:.60}")
        if not part.strip():
            raise BeirError(f"{path}: line {n}: field {field!r} is blank; give the answer or remove it")
    return " | ".join(parts)


BEIR_FILES = ("corpus.jsonl", "queries.jsonl")


def convert(texts: dict[str, str], src: str, split: str = "test",
            drop_missing: bool = False) -> tuple[dict[str, Any], dict[str, Any], BeirReport]:
    """Convert the texts of a BEIR folder, keyed by relative path; return (corpus, evaluation, report).

    The evaluation's `corpus_digest` is left for the writer, which digests the bytes it writes.
    """
    docs = [d for _, d in _read_jsonl(texts["corpus.jsonl"], f"{src}/corpus.jsonl")]
    queries_path = f"{src}/queries.jsonl"
    query_records = _read_jsonl(texts["queries.jsonl"], queries_path)
    queries = {str(q["_id"]): q for _, q in query_records}
    query_lines = {str(q["_id"]): n for n, q in query_records}
    qrels_path = f"{src}/qrels/{split}.tsv"
    doc_ids = {str(d["_id"]) for d in docs}
    targets: dict[str, dict[str, int]] = {}
    dropped = 0
    for n, qid, did, rel in _read_qrels(texts[f"qrels/{split}.tsv"], qrels_path):
        if did not in doc_ids:
            if drop_missing:
                dropped += 1
                continue
            raise BeirError(f"{qrels_path}: line {n}: corpus-id {did!r} is not in {src}/corpus.jsonl "
                            "(use --drop-missing to drop such judgments)")
        if qid not in queries:
            raise BeirError(f"{qrels_path}: line {n}: query-id {qid!r} is not in {src}/queries.jsonl")
        targets.setdefault(qid, {})[did] = rel
    corpus = {"documents": [{"id": str(d["_id"]), "title": d.get("title") or "", "text": d.get("text") or "",
                             "metadata": d.get("metadata") or {}} for d in docs]}
    questions = []
    order = {q: i for i, q in enumerate(queries)}
    for qid in sorted(targets, key=order.__getitem__):
        q = queries[qid]
        gold = _gold_answer(q, queries_path, query_lines[qid])
        request = {"id": f"{qid}.r1", "text": q.get("text", ""), "evidence": []}
        question = {
            "id": qid, "text": q.get("text", ""), "answerable": True,
            "targets": [{"doc_id": d, "relevance": r} for d, r in targets[qid].items()],
            "requests": [request],
        }
        if gold is not None:
            request["gold_answer"] = question["gold_answer"] = gold
        questions.append(question)
    report = BeirReport(len(docs), len(questions), sum(len(t) for t in targets.values()), dropped)
    return corpus, {"pilot": [q["id"] for q in questions[:12]], "questions": questions}, report


