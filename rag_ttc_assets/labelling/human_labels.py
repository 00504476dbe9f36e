"""Human labels: the labels file read and checked against what the lab holds (the Catalog), into typed records.

The labels file is JSON Lines, one label per line (docs/judges.md):

  per-request  {"kind": "request", "question": Q, "request": R, "arm": A, "addressed": true|false,
                "verdict": "consistent"|"contradicts"|"not_addressed"|"not_verifiable" (optional), "annotator": N}
  pairwise     {"kind": "pair", "question": Q, "a": {"arm": A, "row": ROW}, "b": {"arm": B, "row": ROW},
                "labels": {ASPECT: -2..2, ...}, "annotator": N}
               a label > 0 prefers answer b, < 0 answer a, 0 a tie; `row` (the answer row's query id in that arm,
               which is its question's id) defaults to the question, and names no other question's answer.
  per-claim    {"kind": "claim", "question": Q, "arm": A, "claim": K, "text": T,
                "support": "supported"|"partially_supported"|"not_supported", "annotator": N}
               claim K (1-based) of the arm's answer, whose text T occurs in that answer: is it supported by the
               evidence the answer was given (the support judge's question)?

A `request_edit` record (the annotation page's request edits, labelling.annotation) is counted, not compared; a
per-request label of a request an annotator edited (`origin` not `dataset`) is counted, as no judge saw it.

Pure: the caller reads the file and hands in what exists (the Catalog). What the labels are compared with is
judging.judge_agreement's (per-request and pairwise labels) and judging.claim_agreement's (per-claim labels).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, TypeGuard

from rag_ttc_assets.core.dataset import Problem, ProblemsError
from rag_ttc_assets.core.jsonl import json_lines, malformed

REQUEST, PAIR, CLAIM = "request", "pair", "claim"
REQUEST_EDIT = "request_edit"  # the annotation page's request edits (labelling.annotation), read and counted, not compared
# The fields the annotation page adds to a per-request label (labelling.annotation, docs/annotate.md): provenance, read and
# kept out of the statistics.
ANNOTATION_FIELDS = frozenset({"case", "note", "origin", "request_text", "from", "run_id", "row", "answer_sha256",
                               "corpus_digest", "chunk_ids", "quote", "quote_chunk_id", "quote_doc_id",
                               "quote_sha256", "probability", "stratum", "labelled_at", "log_seq"})
# The fields the annotation page's pairwise view adds to a pairwise label (and to its `a` and `b`: run_id,
# answer_sha256, corpus_digest): provenance, read and kept out of the statistics.
PAIR_ANNOTATION_FIELDS = frozenset({"note", "order_seed", "labelled_at", "log_seq"})
SUPPORT = ("supported", "partially_supported", "not_supported")
VERDICTS = ("consistent", "contradicts", "not_addressed", "not_verifiable")
SCALE = (-2, 2)


Item = tuple[str | int, ...]  # a label's item: (arm, question, request) or (arm, question, claim position)
Row = tuple[str, str]  # an answer row: (arm, question)


class Labelled(Protocol):
    """What the per-item statistics (judging.judge_agreement) read of a binary label: RequestLabel, ClaimLabel."""
    @property
    def annotator(self) -> str: ...
    @property
    def item(self) -> Item: ...
    @property
    def addressed(self) -> bool: ...


LabelProblem = Problem  # one problem of a labels file: file, record (its line), field, message


class LabelsError(ProblemsError):
    """A labels file that cannot be used; `problems` lists every reason found, each naming file, record and field."""

    WHAT = "labels"


@dataclass(frozen=True)
class Provenance:
    """What the annotation page records with a per-request label (ANNOTATION_FIELDS), as a case report shows it
    beside the label: the person's case and note, the gold quote they marked, and the run and answer they labelled
    (an older one is flagged). Each is text when given."""

    case: str | None = None
    note: str | None = None
    quote: str | None = None
    quote_chunk_id: str | None = None
    run_id: str | None = None
    answer_sha256: str | None = None


SHOWN_FIELDS = tuple(f.name for f in fields(Provenance))


@dataclass(frozen=True)
class RequestLabel:
    line: int
    arm: str
    question: str
    request: str
    addressed: bool
    verdict: str | None
    annotator: str
    provenance: Provenance = field(default=Provenance(), compare=False)  # shown beside it, never compared

    @property
    def item(self) -> tuple[str, str, str]:
        return (self.arm, self.question, self.request)


@dataclass(frozen=True)
class PairLabel:
    line: int
    question: str
    a: tuple[str, str]  # (arm, row)
    b: tuple[str, str]
    labels: Mapping[str, int]
    annotator: str

    @property
    def item(self) -> tuple[str, frozenset[tuple[str, str]]]:
        """The pair as an unordered item, its identity only (a labelled b-over-a is the same pair as a-over-b, its
        label negated); never an orientation: a sign follows a label's own a and b (toward)."""
        return (self.question, frozenset((self.a, self.b)))

    def toward(self, other: PairLabel, aspect: str) -> int:
        """This label's `aspect` read with `other`'s a and b: as written when they name the answers in the same
        order, negated when the other way round (the same pair)."""
        return self.labels[aspect] if (self.a, self.b) == (other.a, other.b) else -self.labels[aspect]


@dataclass(frozen=True)
class ClaimLabel:
    line: int
    arm: str
    question: str
    claim: int  # 1-based position of the claim in the answer
    text: str
    support: str  # one of SUPPORT
    annotator: str

    @property
    def item(self) -> tuple[str, str, int]:
        return (self.arm, self.question, self.claim)

    @property
    def addressed(self) -> bool:
        """The binary reading, supported or not (partially supported: not), under the name the shared per-item
        statistics (judging.judge_agreement's majority_agreement, _annotator_pairs) read."""
        return self.support == "supported"


@dataclass
class Catalog:
    """What the labels may name: per arm, its questions with their request ids, and its answer rows."""

    questions: dict[str, dict[str, set[str]]] = field(default_factory=dict)  # arm -> question -> request ids
    rows: dict[str, set[str]] = field(default_factory=dict)  # arm -> answer row ids (query ids)
    unknown_arm_hint: str = ""
    answers: dict[str, dict[str, str]] = field(default_factory=dict)  # arm -> question -> answer text (claim labels)


@dataclass
class Labels:
    requests: list[RequestLabel]
    pairs: list[PairLabel]
    claims: list[ClaimLabel] = field(default_factory=list)
    request_edits: int = 0  # `request_edit` records (the annotation page's request annotation), not compared
    edited_request_labels: int = 0  # labels of requests an annotator edited (`origin` not `dataset`): no judge saw them


def _text(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and bool(value.strip())


def parse_labels(text: str, path: str, catalog: Catalog) -> Labels:
    """Every label of a JSON Lines file, checked against `catalog`; LabelsError lists every problem."""
    problems: list[LabelProblem] = []
    out = Labels([], [])
    seen: dict[tuple[str, str, object], int] = {}  # (kind, annotator, the label's item) -> its line

    def bad(line: int, fld: str, msg: str) -> None:
        problems.append(LabelProblem(path, f"line {line}", fld, msg))

    def arm_row(line: int, prefix: str, side: object, question: str) -> tuple[str, str] | None:
        if not isinstance(side, dict):
            bad(line, prefix, 'an object {"arm": ..., "row": ...} naming one answer')
            return None
        arm, row = side.get("arm"), side.get("row", question)
        if not _text(arm) or arm not in catalog.questions:
            bad(line, f"{prefix}.arm", f"no arm or imported system {arm!r}{catalog.unknown_arm_hint}")
            return None
        if question not in catalog.questions[arm]:
            bad(line, "question", f"arm {arm!r} has no question {question!r}")
            return None
        if not _text(row) or row not in catalog.rows.get(arm, set()):
            bad(line, f"{prefix}.row", f"arm {arm!r} has no answer row {row!r} (run its answers stage)")
            return None
        if row != question:  # an answer row's id is its question's id (the query_id): this row answers another
            bad(line, f"{prefix}.row", f"row {row!r} is the answer of arm {arm!r} to question {row!r}, not to "
                                       f"this label's question {question!r} (leave `row` out: it defaults to the "
                                       "question)")
            return None
        return (arm, row)

    for n, rec, err in json_lines(text):
        if err:
            bad(n, "(json)", malformed(err))
            continue
        if not isinstance(rec, dict):
            bad(n, "(record)", "a label is a JSON object")
            continue
        kind, question, annotator = rec.get("kind"), rec.get("question"), rec.get("annotator")
        if kind == REQUEST_EDIT:  # the annotation page's request edits: request annotation, no judge measured it
            out.request_edits += 1
            continue
        if kind not in (REQUEST, PAIR, CLAIM):
            bad(n, "kind", f"{kind!r}: use {REQUEST!r} (per-request label), {PAIR!r} (pairwise preference) or "
                           f"{CLAIM!r} (per-claim support label)")
            continue
        if not _text(annotator):
            bad(n, "annotator", "who labelled it: a non-empty string")
            continue
        if not _text(question):
            bad(n, "question", "a question id")
            continue
        if kind == CLAIM:
            claim = _claim_label(n, rec, question, annotator, catalog, bad)
            if claim is None:
                continue
            key: tuple[str, str, object] = (CLAIM, annotator, claim.item)
            if key in seen:
                bad(n, "annotator", f"{annotator!r} already labelled this claim on line {seen[key]}; keep one label "
                                    "per annotator")
                continue
            seen[key] = n
            out.claims.append(claim)
            continue
        label: RequestLabel | PairLabel
        if kind == REQUEST:
            # `probability` and `stratum` (ANNOTATION_FIELDS): the row's sampling, copied from `rag-ttc sample-labels`' file
            allowed = {"kind", "question", "request", "arm", "addressed", "verdict", "annotator"} | ANNOTATION_FIELDS
            extra = sorted(set(rec) - allowed)
            if extra:
                bad(n, extra[0], f"unknown field; a per-request label has {sorted(allowed)}")
                continue
            p = rec.get("probability")
            if p is not None and (isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p <= 1):
                bad(n, "probability", f"the row's sampling probability, a number in (0, 1], not {p!r}")
                continue
            arm, request = rec.get("arm"), rec.get("request")
            if rec.get("origin", "dataset") != "dataset":  # a request the annotator added, split, merged, reworded
                out.edited_request_labels += 1
                continue
            if not _text(arm) or arm not in catalog.questions:
                bad(n, "arm", f"no arm or imported system {arm!r}{catalog.unknown_arm_hint}")
                continue
            if question not in catalog.questions[arm]:
                bad(n, "question", f"arm {arm!r} has no question {question!r}")
                continue
            if request not in catalog.questions[arm][question]:
                bad(n, "request", f"question {question!r} has no request {request!r}")
                continue
            if question not in catalog.rows.get(arm, set()):
                bad(n, "arm", f"arm {arm!r} has no answer to question {question!r} (run its answers stage)")
                continue
            if not isinstance(rec.get("addressed"), bool):
                bad(n, "addressed", f"true or false, not {rec.get('addressed')!r}")
                continue
            verdict = rec.get("verdict")
            if verdict is not None and verdict not in VERDICTS:
                bad(n, "verdict", f"{verdict!r}: one of {list(VERDICTS)}, or leave it out")
                continue
            not_text = next((f for f in SHOWN_FIELDS if rec.get(f) is not None and not isinstance(rec[f], str)), None)
            if not_text:
                bad(n, not_text, f"text, or leave it out; not {rec[not_text]!r}")
                continue
            label = RequestLabel(n, arm, question, request, rec["addressed"], verdict, annotator,
                                 Provenance(**{f: rec.get(f) for f in SHOWN_FIELDS}))
            key = (REQUEST, annotator, label.item)
        else:
            allowed = {"kind", "question", "a", "b", "labels", "annotator"} | PAIR_ANNOTATION_FIELDS
            extra = sorted(set(rec) - allowed)
            if extra:
                bad(n, extra[0], f"unknown field; a pairwise label has {sorted(allowed)}")
                continue
            a = arm_row(n, "a", rec.get("a"), question)
            b = arm_row(n, "b", rec.get("b"), question) if a else None
            if a is None or b is None:
                continue
            if a == b:
                bad(n, "b", "the same answer as a; a preference compares two answers")
                continue
            labels = rec.get("labels")
            if not isinstance(labels, dict) or not labels:
                bad(n, "labels", 'one label per aspect, e.g. {"completeness": 1}')
                continue
            wrong = [(k, v) for k, v in labels.items()
                     if isinstance(v, bool) or not isinstance(v, int) or not SCALE[0] <= v <= SCALE[1]]
            if wrong:
                bad(n, f"labels.{wrong[0][0]}", f"{wrong[0][1]!r} is not an integer from {SCALE[0]} to {SCALE[1]}")
                continue
            label = PairLabel(n, question, a, b, dict(labels), annotator)
            key = (PAIR, annotator, label.item)
        if key in seen:
            bad(n, "annotator", f"{annotator!r} already labelled this {'pair' if kind == PAIR else 'request'} "
                                f"on line {seen[key]}; keep one label per annotator")
            continue
        seen[key] = n
        if isinstance(label, RequestLabel):  # kind == REQUEST
            out.requests.append(label)
        else:
            out.pairs.append(label)
    if problems:
        raise LabelsError(problems)
    if not out.requests and not out.pairs and not out.claims and not out.edited_request_labels:
        raise LabelsError([LabelProblem(path, "(file)", "(records)", "no labels in the file")])
    return out


def flat(text: str) -> str:
    """Whitespace collapsed: how a claim's text is found in an answer and a judge's statement in a claim."""
    return " ".join(text.split())


def _claim_label(n: int, rec: dict[str, Any], question: str, annotator: str, catalog: Catalog,
                 bad: Callable[[int, str, str], None]) -> ClaimLabel | None:
    allowed = {"kind", "question", "arm", "claim", "text", "support", "annotator"}
    extra = sorted(set(rec) - allowed)
    if extra:
        bad(n, extra[0], f"unknown field; a per-claim label has {sorted(allowed)}")
        return None
    arm, claim, text, support = rec.get("arm"), rec.get("claim"), rec.get("text"), rec.get("support")
    if not _text(arm) or arm not in catalog.questions:
        bad(n, "arm", f"no arm or imported system {arm!r}{catalog.unknown_arm_hint}")
        return None
    if question not in catalog.questions[arm]:
        bad(n, "question", f"arm {arm!r} has no question {question!r}")
        return None
    if question not in catalog.rows.get(arm, set()):
        bad(n, "arm", f"arm {arm!r} has no answer to question {question!r} (run its answers stage)")
        return None
    if isinstance(claim, bool) or not isinstance(claim, int) or claim < 1:
        bad(n, "claim", f"the claim's 1-based position in the answer, not {claim!r}")
        return None
    if not _text(text):
        bad(n, "text", "the claim's text, as it occurs in the answer")
        return None
    if support not in SUPPORT:
        bad(n, "support", f"{support!r}: one of {list(SUPPORT)}")
        return None
    answer = catalog.answers.get(arm, {}).get(question)
    if answer is not None and flat(text) not in flat(answer):
        bad(n, "text", f"{flat(text)[:60]!r} does not occur in arm {arm!r}'s answer to question {question!r}")
        return None
    return ClaimLabel(n, arm, question, claim, flat(text), support, annotator)
