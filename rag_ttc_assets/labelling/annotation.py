"""Human labels made on the annotation page (`rag-ttc annotate`): the change log, replayed into the current labels.

Every change a person makes is one record of an append-only change log (JSON Lines, `seq` numbered in order of
arrival); the current labels are the log replayed: for each annotator, arm, question and request, the last label not
undone (two tabs writing the same label: the later write wins, both stay in the log). Request edits (the seed's
request annotation: a request added, split, merged or reworded) are changes too, one per question and annotator.

A label record in the labels file (the documented format judge-agreement reads, docs/annotate.md):

  {"kind": "request", "question": Q, "request": R, "arm": A, "addressed": bool, "verdict": V, "annotator": N,
   "case": C, "note": T, "origin": "dataset"|"added"|"split"|"merged"|"reworded", "request_text": T, "from": [R...],
   "run_id": RUN, "row": ROW, "answer_sha256": H, "corpus_digest": D, "chunk_ids": [...],
   "quote": T|null, "quote_chunk_id": C|null, "quote_doc_id": DOC|null, "quote_sha256": H|null,
   "probability": P|null, "stratum": S|null, "labelled_at": ISO, "log_seq": n}

with `addressed` and `verdict` mapped from the seed's four cases (CASES). A pairwise label (the pairwise view: which
of two arms' answers to one question is more complete, on the -2..2 scale of PAIR_SCALE, `a` and `b` as displayed,
left and right, their order drawn per question from `order_seed`, pair_order):

  {"kind": "pair", "question": Q, "a": {"arm": A, "row": ROW, "run_id": RUN, "answer_sha256": H, "corpus_digest": D},
   "b": {...}, "labels": {"completeness": -2..2}, "annotator": N, "note": T, "order_seed": S,
   "labelled_at": ISO, "log_seq": n}

An edit record:

  {"kind": "request_edit", "question": Q, "edit": "add"|"split"|"merge"|"reword", "from": [R...],
   "into": [{"id": R, "text": T}...], "annotator": N, "corpus_digest": D, "labelled_at": ISO, "log_seq": n}

Pure: no file access, no dagster (the server reads and writes the files).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from rag_ttc_assets.core.jsonl import json_lines, malformed

# The seed's four cases of a request, on keys 1-4, and the labels format's `addressed` and `verdict` for each.
CASES = {
    "answered_supported": {"key": "1", "title": "answered and supported", "addressed": True, "verdict": "consistent"},
    "answered_unsupported": {"key": "2", "title": "answered without support", "addressed": True,
                             "verdict": "not_verifiable"},
    "not_answered": {"key": "3", "title": "not answered", "addressed": False, "verdict": "not_addressed"},
    "contradicts_gold": {"key": "4", "title": "contradicts the gold", "addressed": True, "verdict": "contradicts"},
}
EDITS = {"add": "added", "split": "split", "merge": "merged", "reword": "reworded"}  # edit -> origin of its requests
# The pairwise view's scale on keys 1-5: a label > 0 prefers answer b (the right one), < 0 answer a, 0 a tie.
PAIR_SCALE = {"1": (-2, "A much more complete"), "2": (-1, "A more complete"), "3": (0, "as complete"),
              "4": (1, "B more complete"), "5": (2, "B much more complete")}
LABEL, EDIT, UNDO, PAIR = "label", "edit", "undo", "pair"
# A record of the annotation log or of a file the page writes or reads (a change, a label, a row's view): JSON.
Record = dict[str, Any]
SAMPLE_FIELDS = ("arm", "question", "run_id", "stratum", "probability")


def annotate_command(arms: list[str]) -> str:
    """The command that opens the labelling page of `arms` (the Dagster UI's metadata and the case report name it)."""
    return "rag-ttc annotate " + " ".join(arms) + " --annotator NAME"




class AnnotationError(ValueError):
    """A change the page refuses: the message says what and why (shown to the person, nothing written)."""


def sha256(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def answer_sha256(view: Record) -> str | None:
    """The hash of the answer a row's view shows (its contract answer): a rerun that changed it is told apart."""
    answer: str | None = (view.get("contract") or {}).get("answer")
    return sha256(answer) if answer is not None else None


def locate_quote(quote: str, chunk_id: str | None, chunks: dict[str, str]) -> str:
    """The chunk a highlighted quote lies in; AnnotationError when it lies in no single chunk shown."""
    if not isinstance(quote, str) or not quote.strip():
        raise AnnotationError("quote: select some text inside one chunk")
    if chunk_id not in chunks:
        raise AnnotationError(f"quote: the highlight is outside any chunk shown for this question (chunk "
                              f"{chunk_id!r}); select text within a single chunk")
    if quote not in chunks[chunk_id]:
        raise AnnotationError(f"quote: the highlighted text is not inside chunk {chunk_id!r} (a selection across two "
                              "chunks or outside them); select text within a single chunk")
    return chunk_id


def edit_requests(question: str, edit: str, sources: list[str], texts: list[str], known: dict[str, str],
                  taken: set[str]) -> list[dict[str, str]]:
    """The requests an edit makes, each {"id", "text"}; AnnotationError for an edit that cannot be made.
    `known`: the question's requests as the annotator sees them now (id -> text); `taken`: every id ever used."""
    if edit not in EDITS:
        raise AnnotationError(f"edit: {edit!r} is not one of {sorted(EDITS)}")
    texts = [t.strip() for t in texts if isinstance(t, str) and t.strip()]
    missing = [s for s in sources if s not in known]
    if missing:
        raise AnnotationError(f"from: question {question!r} has no request {missing[0]!r} (now)")
    want = {"add": (0, 1), "split": (1, 2), "merge": (2, 1), "reword": (1, 1)}[edit]
    if edit == "merge" and len(sources) >= 2:
        want = (len(sources), 1)
    if len(sources) != want[0] or len(texts) < want[1] or (edit != "split" and len(texts) != want[1]):
        raise AnnotationError(f"{edit}: takes {want[0]} request(s) and {'at least ' if edit == 'split' else ''}"
                              f"{want[1]} non-empty text(s); got {len(sources)} and {len(texts)}")
    base = sources[0] if edit in ("split", "reword") else question  # a merge or an addition: the question's
    out: list[dict[str, str]] = []
    for text in texts:
        n = 1
        while f"{base}.{edit[0]}{n}" in taken:
            n += 1
        rid = f"{base}.{edit[0]}{n}"
        taken.add(rid)
        out.append({"id": rid, "text": text})
    return out


@dataclass
class Replayed:
    labels: dict[tuple[str, str, str, str], Record]  # (annotator, arm, question, request) -> label change
    edits: dict[tuple[str, str], list[Record]]  # (annotator, question) -> [edit change, ...] in order
    active: list[Record]  # the changes in effect, in log order (undo pops the annotator's last)
    # (annotator, question, frozenset of the two arms) -> pair change
    pairs: dict[tuple[str, str, frozenset[str]], Record] = field(default_factory=dict)


def replay(log: list[Record]) -> Replayed:
    """The changes in effect after the whole log: undo removes the annotator's last change still in effect."""
    stack: dict[str, list[Record]] = {}
    for ch in log:
        mine = stack.setdefault(ch["annotator"], [])
        if ch["op"] == UNDO:
            if mine:
                mine.pop()
        else:
            mine.append(ch)
    active = sorted((c for s in stack.values() for c in s), key=lambda c: c["seq"])
    labels: dict[tuple[str, str, str, str], Record] = {}
    edits: dict[tuple[str, str], list[Record]] = {}
    pairs: dict[tuple[str, str, frozenset[str]], Record] = {}
    for c in active:
        if c["op"] == PAIR:
            pairs[(c["annotator"], c["question"], frozenset((c["a"]["arm"], c["b"]["arm"])))] = c
        elif c["op"] == LABEL:
            labels[(c["annotator"], c["arm"], c["question"], c["request"])] = c
        else:
            edits.setdefault((c["annotator"], c["question"]), []).append(c)
    return Replayed(labels, edits, active, pairs)


def pair_order(seed: int, question: str, arms: tuple[str, str]) -> tuple[str, str]:
    """The two arms as the pairwise view shows a question's answers, (left: a, right: b): an order drawn per question
    from the seed (a hash of seed and question, so it is the same on every reload and server, and the arms' names,
    never sorted, do not decide it). Arms given in either order get the same sides."""
    first, second = sorted(arms)
    flip = hashlib.sha256(f"{seed}\0{question}".encode("utf-8")).digest()[0] & 1
    return (second, first) if flip else (first, second)


def pair_value(key_or_value: object) -> int:
    """A pairwise label's value from a key (1-5) or a value (-2..2); AnnotationError otherwise."""
    if isinstance(key_or_value, str) and key_or_value in PAIR_SCALE:
        return PAIR_SCALE[key_or_value][0]
    if isinstance(key_or_value, int) and not isinstance(key_or_value, bool) and -2 <= key_or_value <= 2:
        return key_or_value
    raise AnnotationError(f"completeness: {key_or_value!r} is not an integer from -2 to 2 (keys 1-5: "
                          + ", ".join(f"{k} {t}" for k, (_v, t) in PAIR_SCALE.items()) + ")")


def requests_now(question: str, dataset_requests: list[Record], edits: list[Record]) -> list[Record]:
    """The question's requests after an annotator's edits: {"id", "text", "origin", "from"} in reading order
    (a split or reworded request in its place, a merge where its first source was, an added one at the end)."""
    out = [{"id": r["id"], "text": r["text"], "origin": "dataset", "from": []} for r in dataset_requests]
    for e in edits:
        made = [{"id": r["id"], "text": r["text"], "origin": EDITS[e["edit"]], "from": list(e["from"])}
                for r in e["into"]]
        at = next((i for i, r in enumerate(out) if r["id"] in e["from"]), len(out))
        out = [r for r in out if r["id"] not in e["from"]]
        out[at:at] = made
    return out


def label_record(c: Record) -> Record:
    case = CASES[c["case"]]
    return {"kind": "request", "question": c["question"], "request": c["request"], "arm": c["arm"],
            "addressed": case["addressed"], "verdict": case["verdict"], "annotator": c["annotator"],
            "case": c["case"], "note": c.get("note") or "", "origin": c.get("origin", "dataset"),
            "request_text": c.get("request_text"), "from": c.get("from") or [],
            "run_id": c.get("run_id"), "row": c.get("row", c["question"]), "answer_sha256": c.get("answer_sha256"),
            "corpus_digest": c.get("corpus_digest"), "chunk_ids": c.get("chunk_ids") or [],
            "quote": c.get("quote"), "quote_chunk_id": c.get("quote_chunk_id"), "quote_doc_id": c.get("quote_doc_id"),
            "quote_sha256": sha256(c["quote"]) if c.get("quote") else None,
            "probability": c.get("probability"), "stratum": c.get("stratum"),
            "labelled_at": c["at"], "log_seq": c["seq"]}


def pair_record(c: Record) -> Record:
    return {"kind": "pair", "question": c["question"], "a": c["a"], "b": c["b"],
            "labels": {"completeness": c["completeness"]}, "annotator": c["annotator"], "note": c.get("note") or "",
            "order_seed": c.get("order_seed"), "labelled_at": c["at"], "log_seq": c["seq"]}


def edit_record(c: Record) -> Record:
    return {"kind": "request_edit", "question": c["question"], "edit": c["edit"], "from": c["from"],
            "into": c["into"], "annotator": c["annotator"], "corpus_digest": c.get("corpus_digest"),
            "labelled_at": c["at"], "log_seq": c["seq"]}


def current_labels(log: list[Record]) -> str:
    """The labels file (JSON Lines) the log holds now: request edits, then labels, then pairwise labels, in log
    order."""
    r = replay(log)
    recs = [edit_record(c) for es in r.edits.values() for c in es]
    recs.sort(key=lambda x: x["log_seq"])
    labels = sorted(r.labels.values(), key=lambda c: c["seq"])
    recs += [label_record(c) for c in labels]
    recs += [pair_record(c) for c in sorted(r.pairs.values(), key=lambda c: c["seq"])]
    return "".join(json.dumps(x, ensure_ascii=False, sort_keys=False) + "\n" for x in recs)


def parse_log(text: str, path: str) -> tuple[list[Record], list[str]]:
    """The log's changes; a line that does not parse (a write cut by a crash) is skipped and named."""
    out: list[Record] = []
    skipped: list[str] = []
    for n, rec, err in json_lines(text):
        if err or not isinstance(rec, dict) or rec.get("op") not in (LABEL, EDIT, UNDO, PAIR) or "seq" not in rec:
            skipped.append(f"{path}: line {n}: skipped, not a change record ({err or 'not a change record'})")
            continue
        out.append(rec)
    return out, skipped


def parse_sample(text: str, path: str, known: dict[str, set[str]]) -> list[Record]:
    """The rows of a --sample file, in its order; AnnotationError naming the file, line and field."""
    rows: list[Record] = []
    seen: set[tuple[str, str]] = set()
    for n, rec, err in json_lines(text):
        if err:
            raise AnnotationError(f"{path}: line {n}: {malformed(err)}")
        if not isinstance(rec, dict):
            raise AnnotationError(f"{path}: line {n}: a sample row is a JSON object {{{', '.join(SAMPLE_FIELDS)}}}")
        arm, question = rec.get("arm"), rec.get("question")
        if arm not in known:
            raise AnnotationError(f"{path}: line {n}: arm: {arm!r} is not one of the arms served ({sorted(known)})")
        if question not in known[arm]:
            raise AnnotationError(f"{path}: line {n}: question: arm {arm!r} has no answer row {question!r}")
        p = rec.get("probability")
        if p is not None and (isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p <= 1):
            raise AnnotationError(f"{path}: line {n}: probability: {p!r} is not a number in (0, 1]")
        if (arm, question) in seen:
            raise AnnotationError(f"{path}: line {n}: question: {arm}/{question} is listed twice")
        seen.add((arm, question))
        rows.append({"arm": arm, "question": question, "run_id": rec.get("run_id"), "stratum": rec.get("stratum"),
                     "probability": p})
    if not rows:
        raise AnnotationError(f"{path}: no rows to label")
    return rows
