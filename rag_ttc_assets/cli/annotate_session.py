"""The state of one `rag-ttc annotate` session (cli/annotate.py serves it, cli/annotate_page.py renders it): the
labels file and its change log (`LabelFiles`: one record appended per change, fsynced under a file lock, the labels
rewritten atomically from the log replayed) and what the annotator is labelling (`Annotator`: the rows, their
requests, progress, where to resume, the pairs of a pairwise round)."""

from __future__ import annotations

import fcntl
import json
import os
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rag_ttc_assets.adapters.atomic import atomic_write_bytes
from rag_ttc_assets.cli.annotate_view import RowView, ShownLabel, ShownPair
from rag_ttc_assets.labelling.annotation import (CASES, EDIT, LABEL, PAIR, UNDO, AnnotationError, answer_sha256,
                                                 current_labels, edit_requests, locate_quote, pair_order, pair_value,
                                                 Record, parse_log, replay, requests_now)


class Request(BaseModel):
    """One of a question's requests as the annotator sees it now (labelling.annotation.requests_now): the dataset's, or
    one an edit made (`origin` split, merged, reworded, added; `sources` the requests it was made from)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    text: str
    origin: str
    sources: list[str] = Field(alias="from")

    @classmethod
    def of(cls, r: Record) -> Request:
        return cls.model_validate(r)


class Body(BaseModel):
    """What the page POSTs (a JSON object): the row or pair it is about and the change's fields. Each field is
    checked where it is used, with the message the page shows; a field the body does not have is None, and
    `has(name)` tells a field left out from one sent as null. Fields the page does not send are ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    item: Any = None
    request: Any = None
    case: Any = None
    note: Any = None
    quote: Any = None
    quote_chunk_id: Any = None
    edit: Any = None
    sources: Any = Field(default=None, alias="from")
    texts: Any = None
    pair: Any = None
    completeness: Any = None

    @classmethod
    def of(cls, body: Record) -> Body:
        return cls.model_validate(body)

    def has(self, name: str) -> bool:
        return name in self.model_fields_set


@dataclass(frozen=True)
class Logged:
    """A change as the log holds it: its number and time, and the whole line written (`line`: the JSON object)."""

    seq: int
    at: str
    line: Record


@dataclass(frozen=True)
class Pair:
    """A question both arms answered, in the pairwise view: arm `a` shown left, `b` right, and their rows."""

    question: str
    a: str
    b: str
    rows: tuple[int, int]

    def to_json(self) -> dict[str, Any]:
        return {"question": self.question, "a": self.a, "b": self.b, "rows": list(self.rows)}


@dataclass(frozen=True)
class Progress:
    requests_labelled: int
    requests: int
    rows_done: int
    rows: int


@dataclass(frozen=True)
class PairProgress:
    pairs_labelled: int
    pairs: int


def log_path(labels: Path) -> Path:
    return labels.with_name((labels.name[:-6] if labels.name.endswith(".jsonl") else labels.name) + ".log.jsonl")


class LabelFiles:
    """The change log and the current labels file beside it; every write under one lock (threads and processes)."""

    def __init__(self, labels: Path):
        self.labels, self.log = labels, log_path(labels)
        self.lock_path = labels.with_name("." + labels.name + ".lock")
        self._thread_lock = threading.Lock()
        labels.parent.mkdir(parents=True, exist_ok=True)

    def read(self) -> list[dict]:
        try:
            text = self.log.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return parse_log(text, str(self.log))[0]

    def append(self, change: Record) -> Logged:
        with self._thread_lock, open(self.lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                log = self.read()
                seq = max((c["seq"] for c in log), default=0) + 1
                at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
                change = {"seq": seq, "at": at, **change}
                line = (json.dumps(change, ensure_ascii=False) + "\n").encode("utf-8")
                fd = os.open(self.log, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    size = os.fstat(fd).st_size
                    if size and os.pread(fd, 1, size - 1) != b"\n":  # a line cut by a crash stays its own line
                        line = b"\n" + line
                    os.write(fd, line)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                log.append(change)
                atomic_write_bytes(self.labels, current_labels(log).encode("utf-8"), mode=0o644)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        return Logged(seq, at, change)


class Annotator:
    """The page's state for one annotator over one Source and one pair of label files."""

    def __init__(self, source, files: LabelFiles, annotator: str, labels_check=None, pairwise: bool = False,
                 seed: int = 0):
        self.source, self.files, self.annotator = source, files, annotator
        self.labels_check = labels_check  # () -> list of label-check results needing a person, or None
        self.pairwise, self.seed = pairwise, seed  # `/` opens the pairwise view; the seed of its A/B order
        # The pairwise view (two arms): per question both arms answered, the rows of its answers as shown, (a, b).
        self.pairs: list[Pair] = []
        self._rows: dict[int, RowView] = {}
        if len(source.arms) == 2:
            where = {(it.arm, it.question): i for i, it in enumerate(source.items)}
            for it in source.items:
                q = it.question
                if it.arm == source.arms[0] and (source.arms[1], q) in where:
                    a, b = pair_order(seed, q, tuple(source.arms))
                    self.pairs.append(Pair(q, a, b, (where[(a, q)], where[(b, q)])))

    def requests(self, i: int, state) -> list[Request]:
        item = self.source.items[i]
        dataset = [{"id": r.id, "text": r.text} for r in self.row(i).requests]
        edits = state.edits.get((self.annotator, item.question), [])
        return [Request.of(r) for r in requests_now(item.question, dataset, edits)]

    def row(self, i: int) -> RowView:
        """Row i's view (Source.view, read once) as its record."""
        if i not in self._rows:  # two threads may both build it: the same record
            self._rows[i] = RowView.of(self.source.view(i))
        return self._rows[i]

    def progress(self, state) -> Progress:
        done_q, labelled, total = 0, 0, 0
        for i, item in enumerate(self.source.items):
            reqs = self.requests(i, state)
            n = sum((self.annotator, item.arm, item.question, r.id) in state.labels for r in reqs)
            labelled, total, done_q = labelled + n, total + len(reqs), done_q + (n == len(reqs))
        return Progress(requests_labelled=labelled, requests=total, rows_done=done_q, rows=len(self.source.items))

    def resume_at(self, state) -> int:
        for i, item in enumerate(self.source.items):
            if any((self.annotator, item.arm, item.question, r.id) not in state.labels
                   for r in self.requests(i, state)):
                return i
        return 0

    def pair_key(self, p: Pair) -> tuple:
        return (self.annotator, p.question, frozenset((p.a, p.b)))

    def pair_progress(self, state) -> PairProgress:
        return PairProgress(pairs_labelled=sum(self.pair_key(p) in state.pairs for p in self.pairs),
                            pairs=len(self.pairs))

    def pair_resume_at(self, state) -> int:
        return next((k for k, p in enumerate(self.pairs) if self.pair_key(p) not in state.pairs), 0)

    # --- changes -----------------------------------------------------------------------------------------
    def _item(self, body: Body) -> int:
        i = body.item
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self.source.items):
            raise AnnotationError(f"item: {i!r} is not a row of this page (0 to {len(self.source.items) - 1})")
        return i

    def label(self, raw: Record) -> Logged:
        body = Body.of(raw)
        i = self._item(body)
        item, v = self.source.items[i], self.row(i)
        state = replay(self.files.read())
        reqs = {r.id: r for r in self.requests(i, state)}
        rid = body.request
        if rid not in reqs:
            raise AnnotationError(f"request: question {item.question!r} has no request {rid!r}")
        req = reqs[rid]
        key = (self.annotator, item.arm, item.question, rid)
        before = state.labels.get(key, {})
        shown = ShownLabel.of(before)  # the label this one replaces: its case and note stay unless sent
        case = body.case if body.has("case") else (shown.case if shown else None)
        if case not in CASES:
            raise AnnotationError(f"case: {case!r}: pick one of the four cases first (keys 1-4: "
                                  f"{', '.join(CASES)})")
        note = body.note if body.has("note") else (shown.note if shown else "")
        change = {"op": LABEL, "annotator": self.annotator, "arm": item.arm, "question": item.question,
                  "request": rid, "case": case, "note": note,
                  "origin": req.origin, "request_text": req.text, "from": req.sources,
                  "run_id": self.source.run_ids[item.arm], "row": item.question,
                  "answer_sha256": answer_sha256(self.source.view(i)),
                  "corpus_digest": self.source.corpus[item.arm],
                  "chunk_ids": list(v.admitted_chunk_ids),
                  "probability": item.probability, "stratum": item.stratum}
        if not isinstance(note, str):
            raise AnnotationError("note: a text")
        if body.has("quote"):
            if body.quote is None:
                change.update(quote=None, quote_chunk_id=None, quote_doc_id=None)
            else:
                cid = locate_quote(body.quote, body.quote_chunk_id, v.chunks)
                change.update(quote=body.quote, quote_chunk_id=cid, quote_doc_id=v.chunk_doc[cid])
        else:
            change.update({k: before.get(k) for k in ("quote", "quote_chunk_id", "quote_doc_id")})
        return self.files.append(change)

    def edit(self, raw: Record) -> Logged:
        body = Body.of(raw)
        i = self._item(body)
        item = self.source.items[i]
        state = replay(self.files.read())
        known = {r.id: r.text for r in self.requests(i, state)}
        taken = set(known) | {r["id"] for e in state.edits.get((self.annotator, item.question), [])
                              for r in e["into"]} | {r.id for r in self.row(i).requests}
        sources = body.sources or []
        texts = body.texts or []
        if not isinstance(sources, list) or not isinstance(texts, list):
            raise AnnotationError("from, texts: lists")
        into = edit_requests(item.question, body.edit, sources, texts, known, taken)
        return self.files.append({"op": EDIT, "annotator": self.annotator, "question": item.question,
                                  "edit": body.edit, "from": sources, "into": into,
                                  "corpus_digest": self.source.corpus[item.arm]})

    def pair(self, raw: Record) -> Logged:
        """A pairwise label: which of the two answers shown (a left, b right) is more complete, -2..2."""
        body = Body.of(raw)
        k = body.pair
        if not self.pairs:
            raise AnnotationError("pair: the pairwise view needs two arms that answered the same questions")
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < len(self.pairs):
            raise AnnotationError(f"pair: {k!r} is not a pair of this page (0 to {len(self.pairs) - 1})")
        p = self.pairs[k]
        state = replay(self.files.read())
        before = ShownPair.of(state.pairs.get(self.pair_key(p)))  # the pair's label this one replaces
        if body.has("completeness"):
            value = pair_value(body.completeness)
        elif before:
            value = before.completeness
        else:
            raise AnnotationError("completeness: pick which answer is more complete first (keys 1-5)")
        note = body.note if body.has("note") else (before.note if before else "")
        if not isinstance(note, str):
            raise AnnotationError("note: a text")
        sides = {}
        for side, arm, row in (("a", p.a, p.rows[0]), ("b", p.b, p.rows[1])):
            sides[side] = {"arm": arm, "row": p.question, "run_id": self.source.run_ids[arm],
                           "answer_sha256": answer_sha256(self.source.view(row)),
                           "corpus_digest": self.source.corpus[arm]}
        return self.files.append({"op": PAIR, "annotator": self.annotator, "question": p.question, **sides,
                                  "completeness": value, "note": note, "order_seed": self.seed})

    def undo(self, raw: Record) -> Logged:
        state = replay(self.files.read())
        if not any(c["annotator"] == self.annotator for c in state.active):
            raise AnnotationError(f"undo: nothing of {self.annotator!r} to undo")
        return self.files.append({"op": UNDO, "annotator": self.annotator})
