"""Labels against a changed corpus: which gold quotes are still where they were, which moved, which a person must see.

A label here is one gold quote: a request's `evidence` entry (`doc_id`, `quote`, and since label checking
`quote_sha256` and `corpus_digest`, the corpus it was made on or last verified against). A label points at a document
and a text, not at an offset or a chunk: chunk IDs depend on each arm's chunking and are computed from the quote's
place per arm, so an edit elsewhere in a document (a heading renamed above the quote) leaves the label fresh.

Each label gets one status:

- `fresh`: the quote is verbatim in its document.
- `relocated`: found elsewhere, once: verbatim in another document, or (in its own document first, then in any)
  after whitespace or case changes, or by a fuzzy match in its own document scoring at least RELOCATE_MIN whose
  every difference is a spelling fix (each changed word at least TYPO_MIN similar to the old one, no word added or
  removed, no number and no meaning word (MEANING_WORDS) changed); with the new place and the score (100 for a
  verbatim or normalised match).
- `changed`: its document is there and holds a passage matching the quote at least PLACE_MIN, but the text differs
  (a number, a meaning word or a word changed, or the match is below RELOCATE_MIN): both texts, the difference
  marked.
- `gone`: the document was removed, or nothing in it matches the quote at PLACE_MIN.
- `ambiguous`: the quote (verbatim or normalised) is in several places and not in its own document: listed for a
  person, never guessed.

A label without `quote_sha256` and `corpus_digest` (written before label checking) is checked by its text alone and
said so; a label whose `quote_sha256` does not match its quote was edited after it was labelled: said so (a problem).

Pure: no dagster, no file access (the caller reads the files and passes their bytes).
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, TypedDict

from rag_ttc_assets.core.dataset import Problem, ProblemsError
from rag_ttc_assets.core.jsonl import json_lines, malformed

RELOCATE_MIN = 90.0  # fuzzy match score (0-100, difflib ratio) at or above which a quote is relocated, not changed
PLACE_MIN = 80.0  # below this the quote's passage is taken as removed from its document (gone)
TYPO_MIN = 0.75  # a fuzzy relocation changes words only by spelling: each changed word this similar to the old one
# Words whose change alters what a quote says; a fuzzy match that changes one (or any number) is `changed`.
MEANING_WORDS = frozenset("""not no never none nor without cannot can't must mustn't may might shall should
    can could will would only all any every always sometimes required optional before after more less minimum
    maximum at least most true false""".split())
NEEDS_PERSON = ("changed", "gone", "ambiguous")
STATUSES = ("fresh", "relocated", "changed", "gone", "ambiguous")
MIN_BLOCK = 6  # matching blocks shorter than this do not anchor a fuzzy match


class LabelCheckError(ProblemsError):
    """Labels or a corpus that cannot be checked (duplicate document IDs, a malformed labels file)."""

    WHAT = "labels"


def quote_sha256(quote: str) -> str:
    return "sha256:" + hashlib.sha256(quote.encode("utf-8")).hexdigest()


@dataclass
class LabelResult:
    label: str  # "questions[i] (id 'q') request 'r' evidence[k]": the record a person opens
    question: str
    request: str
    evidence: int
    doc_id: str
    quote: str
    status: str
    how: str = ""  # relocated: "moved to another document", "whitespace or case", "fuzzy"; else why
    score: float | None = None
    new_doc_id: str | None = None
    new_quote: str | None = None  # the text at the new place (relocated) or at the old place (changed)
    diff: str | None = None  # changed: the difference, [-removed-] {+added+}
    places: list[dict[str, object]] = field(default_factory=list)  # ambiguous: every place found
    text_only: bool = False  # no quote_sha256 / corpus_digest: checked by text alone
    made_on: str | None = None  # the label's corpus_digest
    kind: str = "quote"  # "quote" (a request's evidence) or "target" (a question's retrieval target: its document)


@dataclass
class CheckReport:
    dataset: str
    corpus_digest: str
    evaluation_corpus_digest: str
    results: list[LabelResult]
    problems: list[Problem]

    @property
    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in STATUSES}
        for r in self.results:
            out[r.status] += 1
        return out

    @property
    def needs_person(self) -> list[LabelResult]:
        return [r for r in self.results if r.status in NEEDS_PERSON]

    def summary(self) -> str:
        c, m = self.counts, len(self.results)
        current = c["fresh"] + c["relocated"]
        text_only = sum(r.text_only for r in self.results)
        return (f"{current} of {m} labels current ({c['fresh']} fresh, {c['relocated']} relocated), "
                f"{c['changed'] + c['gone']} changed or gone ({c['changed']} changed, {c['gone']} gone), "
                f"{c['ambiguous']} ambiguous" + (f"; {text_only} checked by text alone (no quote_sha256/"
                                                 "corpus_digest: made before label checking)" if text_only else ""))

    def to_json(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "corpus_digest": self.corpus_digest,
                "evaluation_corpus_digest": self.evaluation_corpus_digest,
                "corpus_changed": self.corpus_digest != self.evaluation_corpus_digest,
                "thresholds": {"relocate_min": RELOCATE_MIN, "place_min": PLACE_MIN},
                "labels": len(self.results), "counts": self.counts,
                "needs_person": len(self.needs_person), "summary": self.summary(),
                "problems": [str(p) for p in self.problems],
                "results": [asdict(r) for r in self.results]}


def _normalized(text: str) -> tuple[str, list[int]]:
    """`text` with whitespace runs as one space and lower-cased, and each output character's offset in `text`."""
    out: list[str] = []
    where: list[int] = []
    space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            if not space and out:
                out.append(" ")
                where.append(i)
            space = True
            continue
        space = False
        low = ch.lower()
        out.extend(low)
        where.extend([i] * len(low))
    while out and out[-1] == " ":
        out.pop()
        where.pop()
    return "".join(out), where


def _find_all(text: str, needle: str) -> list[int]:
    out, i = [], text.find(needle)
    while i >= 0:
        out.append(i)
        i = text.find(needle, i + 1)
    return out


_WORD = re.compile(r"\w+")


class CorpusIndex:
    """The corpus as the check reads it: texts by ID; made once, when a quote is first looked for outside its own
    document, an index of each lower-cased word's documents, so that search reads only the documents holding every
    one of the quote's interior words (its first and last words may be cut, so they narrow nothing)."""

    def __init__(self, documents: list[tuple[str, str]]):
        self.texts = dict(documents)
        self._norm: dict[str, tuple[str, list[int]]] = {}
        self._words: dict[str, set[str]] | None = None
        self._order: dict[str, int] = {}

    def norm(self, doc_id: str) -> tuple[str, list[int]]:
        if doc_id not in self._norm:
            self._norm[doc_id] = _normalized(self.texts[doc_id])
        return self._norm[doc_id]

    def candidates(self, quote: str) -> list[str]:
        """The documents that can hold `quote`, verbatim or after whitespace and case changes, in corpus order."""
        inner = _WORD.findall(quote.lower())[1:-1]
        if not inner:
            return list(self.texts)
        if self._words is None:
            self._words = {}
            for d, t in self.texts.items():
                for w in set(_WORD.findall(t.lower())):
                    self._words.setdefault(w, set()).add(d)
            self._order = {d: i for i, d in enumerate(self.texts)}
        keep: set[str] | None = None
        for posting in sorted((self._words.get(w, set()) for w in set(inner)), key=len):
            keep = set(posting) if keep is None else keep & posting
            if len(keep) <= 1:
                break
        return sorted(keep or (), key=self._order.__getitem__)

    def exact(self, quote: str, skip: str | None = None) -> list[tuple[str, int, str]]:
        return [(d, i, quote) for d in self.candidates(quote) if d != skip for i in _find_all(self.texts[d], quote)]

    def normalized(self, quote: str, doc_ids: Iterable[str]) -> list[tuple[str, int, str]]:
        nq = _normalized(quote)[0]
        if not nq:
            return []
        out = []
        for d in doc_ids:
            nt, where = self.norm(d)
            for i in _find_all(nt, nq):
                start, end = where[i], where[i + len(nq) - 1] + 1
                out.append((d, start, self.texts[d][start:end]))
        return out


def _fuzzy(quote: str, text: str) -> tuple[float, int, int] | None:
    """The passage of `text` that best matches `quote`: (score 0-100, start, end), or None when nothing anchors it.

    The longest matching blocks anchor the quote's place; the passage spans from where the quote's first matched
    character maps to where its last one does, extended by the unmatched ends."""
    sm = difflib.SequenceMatcher(None, text, quote, autojunk=False)
    blocks = [b for b in sm.get_matching_blocks() if b.size >= MIN_BLOCK]
    if not blocks:
        return None
    anchor = max(blocks, key=lambda b: b.size)
    origin = anchor.a - anchor.b  # where the quote would start if the anchor held for all of it
    slack = max(20, len(quote) // 4)
    near = [b for b in blocks if abs((b.a - b.b) - origin) <= slack]
    first, last = near[0], near[-1]
    start = max(0, first.a - first.b)
    end = min(len(text), last.a + last.size + (len(quote) - last.b - last.size))
    passage = text[start:end]
    score = 100.0 * difflib.SequenceMatcher(None, quote, passage, autojunk=False).ratio()
    return score, start, end


_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[A-Za-z]+(?:'[a-z]+)?")


def _meaning(text: str) -> list[str]:
    """The numbers and meaning words of `text`, in order."""
    return [t.lower() for t in _TOKEN.findall(text) if t[0].isdigit() or t.lower() in MEANING_WORDS]


def _spelling_only(old: str, new: str) -> bool:
    """Whether `new` differs from `old` only by words respelled (each pair at least TYPO_MIN similar)."""
    a, b = old.split(), new.split()
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if op != "replace" or i2 - i1 != j2 - j1:
            return False
        if any(difflib.SequenceMatcher(None, x, y).ratio() < TYPO_MIN for x, y in zip(a[i1:i2], b[j1:j2])):
            return False
    return True


def mark_difference(old: str, new: str) -> str:
    """`new` against `old` word by word: removed words as [-...-], added as {+...+}."""
    a, b = re.split(r"(\s+)", old), re.split(r"(\s+)", new)
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append("".join(a[i1:i2]))
            continue
        if i2 > i1:
            out.append("[-" + "".join(a[i1:i2]) + "-]")
        if j2 > j1:
            out.append("{+" + "".join(b[j1:j2]) + "+}")
    return "".join(out)


class _Found(TypedDict, total=False):
    """What classify found besides the status (LabelResult's fields of it), each key set only when it has one."""

    score: float | None
    new_doc_id: str
    new_quote: str
    diff: str
    places: list[dict[str, object]]


class Classified(_Found):
    """classify's answer: the fields of LabelResult it sets (status and how always)."""

    status: str
    how: str


def classify(doc_id: str, quote: str, corpus: CorpusIndex) -> Classified:
    """One quote's status against the corpus (the fields of LabelResult it sets)."""
    own = corpus.texts.get(doc_id)
    if own is not None and quote in own:
        return {"status": "fresh", "how": "verbatim in its document", "score": 100.0}
    elsewhere = corpus.exact(quote, skip=doc_id)
    if len(elsewhere) == 1:
        d, _, text = elsewhere[0]
        return {"status": "relocated", "how": "moved to another document", "score": 100.0, "new_doc_id": d,
                "new_quote": text}
    if len(elsewhere) > 1:
        return _ambiguous("verbatim in several other documents", elsewhere)
    for scope, how in (([doc_id] if own is not None else [], "whitespace or case, in its document"),
                       ([d for d in corpus.candidates(quote) if d != doc_id],
                        "whitespace or case, in another document")):
        found = corpus.normalized(quote, scope)
        if len(found) == 1:
            d, _, text = found[0]
            return {"status": "relocated", "how": how, "score": 100.0, "new_doc_id": d, "new_quote": text}
        if len(found) > 1:
            return _ambiguous(f"{how}: in several places", found)
    if own is None:
        return {"status": "gone", "how": f"document {doc_id!r} removed"}
    hit = _fuzzy(quote, own)
    if hit is None or hit[0] < PLACE_MIN:
        return {"status": "gone", "how": "passage removed from its document",
                "score": round(hit[0], 1) if hit else None}
    score, start, end = hit
    passage = own[start:end]
    base: _Found = {"score": round(score, 1), "new_doc_id": doc_id, "new_quote": passage}
    if _meaning(quote) != _meaning(passage):
        return {**base, "status": "changed", "how": "a number or meaning word changed",
                "diff": mark_difference(quote, passage)}
    if score < RELOCATE_MIN:
        return {**base, "status": "changed", "how": f"text differs (match {score:.1f} < {RELOCATE_MIN:g})",
                "diff": mark_difference(quote, passage)}
    if not _spelling_only(quote, passage):
        return {**base, "status": "changed", "how": "words changed", "diff": mark_difference(quote, passage)}
    return {**base, "status": "relocated", "how": f"spelling fixed (fuzzy match >= {RELOCATE_MIN:g})",
            "diff": mark_difference(quote, passage)}


def _ambiguous(how: str, found: list[tuple[str, int, str]]) -> Classified:
    return {"status": "ambiguous", "how": how,
            "places": [{"doc_id": d, "start": i, "text": t} for d, i, t in found]}


def check_corpus(documents: list[dict[str, Any]], corpus_file: str) -> None:
    """Raise LabelCheckError naming every duplicate document ID (a label's document would be a guess)."""
    seen: dict[str, int] = {}
    problems = []
    for i, d in enumerate(documents):
        if d["id"] in seen:
            problems.append(Problem(corpus_file, f"documents[{i}] (id {d['id']!r})", "id",
                                    f"duplicate document id {d['id']!r} (also documents[{seen[d['id']]}]): a label "
                                    "pointing at it cannot be checked; give every document its own id"))
        seen.setdefault(d["id"], i)
    if problems:
        raise LabelCheckError(problems)


def iter_labels(evaluation: dict[str, Any]
                ) -> Iterator[tuple[int, dict[str, Any], dict[str, Any], int, dict[str, Any]]]:
    """(question index, question, request, evidence index, evidence) for every gold quote of a raw evaluation."""
    for qi, q in enumerate(evaluation.get("questions", [])):
        for r in q.get("requests", []):
            for k, e in enumerate(r.get("evidence", [])):
                yield qi, q, r, k, e


def check_labels(dataset: str, evaluation: dict[str, Any], evaluation_file: str, documents: list[dict[str, Any]],
                 corpus_file: str, corpus_digest: str) -> CheckReport:
    """Every gold quote of `evaluation` (its parsed JSON) against `documents` (the corpus's, parsed)."""
    check_corpus(documents, corpus_file)
    corpus = CorpusIndex([(d["id"], d["text"]) for d in documents])
    results, problems = [], []
    for qi, q, r, k, e in iter_labels(evaluation):
        rec = f"questions[{qi}] (id {q['id']!r}) request {r['id']!r}"
        name = f"{rec} evidence[{k}]"
        stamped = e.get("quote_sha256")
        # A stale label whose quote a person rewrote is a repair, not a hand edit to warn about.
        if stamped is not None and stamped != quote_sha256(e["quote"]) and not e.get("stale"):
            problems.append(Problem(evaluation_file, rec, f"evidence[{k}].quote_sha256",
                                    "does not match the quote: the quote was edited after it was labelled "
                                    "(checked by its text as it is now)"))
        found = classify(e["doc_id"], e["quote"], corpus)
        results.append(LabelResult(label=name, question=q["id"], request=r["id"], evidence=k, doc_id=e["doc_id"],
                                   quote=e["quote"], text_only=not (stamped and e.get("corpus_digest")),
                                   made_on=e.get("corpus_digest"), **found))
    for qi, q in enumerate(evaluation.get("questions", [])):
        for k, t in enumerate(q.get("targets", [])):
            there = t["doc_id"] in corpus.texts
            results.append(LabelResult(
                label=f"questions[{qi}] (id {q['id']!r}) targets[{k}]", question=q["id"], request="", evidence=k,
                doc_id=t["doc_id"], quote="", status="fresh" if there else "gone", kind="target",
                how="its document is there" if there else f"document {t['doc_id']!r} removed"))
    return CheckReport(dataset, corpus_digest, evaluation["corpus_digest"], results, problems)


def updated_evaluation(evaluation: dict[str, Any], report: CheckReport) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The next labels version and the log of what moved.

    Fresh labels get their quote hash and the current corpus digest (verified against it); relocated ones their new
    document and quote; changed, gone and ambiguous ones keep their text and get `stale` (the lab leaves them out of
    every measurement until a person repairs them). Nothing is deleted. The version is bound to the current corpus.
    """
    out = copy.deepcopy(evaluation)
    out["corpus_digest"] = report.corpus_digest
    by_name = {r.label: r for r in report.results}
    log = []
    for qi, q, r, k, e in iter_labels(out):
        res = by_name[f"questions[{qi}] (id {q['id']!r}) request {r['id']!r} evidence[{k}]"]
        if res.status in ("fresh", "relocated"):
            if res.status == "relocated":
                log.append({"label": res.label, "how": res.how, "score": res.score,
                            "from": {"doc_id": e["doc_id"], "quote": e["quote"]},
                            "to": {"doc_id": res.new_doc_id, "quote": res.new_quote}})
                e["doc_id"], e["quote"] = res.new_doc_id, res.new_quote
            e.pop("stale", None)
            e["quote_sha256"] = quote_sha256(e["quote"])
            e["corpus_digest"] = report.corpus_digest
        else:
            e["stale"] = res.status
    for qi, q in enumerate(out.get("questions", [])):
        for k, t in enumerate(q.get("targets", [])):
            if by_name[f"questions[{qi}] (id {q['id']!r}) targets[{k}]"].status == "gone":
                t["stale"] = "gone"
            else:
                t.pop("stale", None)
    return out, log


def check_human_labels(dataset: str, text: str, path: str, documents: list[dict[str, Any]], corpus_file: str,
                       corpus_digest: str) -> CheckReport:
    """The gold quotes of a human labels file (judge-agreement's JSON Lines, as the annotation page writes it: a
    `request` label's `quote`, `quote_doc_id`, `quote_sha256`, `corpus_digest`) against `documents`; a label without a
    quote is not a quote label and is skipped. A line that cannot be read, or a hash that does not match its quote, is
    a problem naming the file, line and field."""
    check_corpus(documents, corpus_file)
    corpus = CorpusIndex([(d["id"], d["text"]) for d in documents])
    results, problems, made_on = [], [], set()
    for n, rec, err in json_lines(text):
        if err:
            problems.append(Problem(path, f"line {n}", "(json)", malformed(err)))
            continue
        if not isinstance(rec, dict) or rec.get("kind") != "request" or not rec.get("quote"):
            continue
        doc_id, quote = rec.get("quote_doc_id"), rec["quote"]
        if not isinstance(doc_id, str) or not isinstance(quote, str):
            problems.append(Problem(path, f"line {n}", "quote_doc_id", "a quote needs the document it was taken from"))
            continue
        stamped = rec.get("quote_sha256")
        if stamped is not None and stamped != quote_sha256(quote):
            problems.append(Problem(path, f"line {n}", "quote_sha256", "does not match the quote: the quote was "
                                                                       "edited after it was labelled"))
        if rec.get("corpus_digest"):
            made_on.add(rec["corpus_digest"])
        name = (f"{path}: line {n} ({rec.get('annotator')}, arm {rec.get('arm')}, request {rec.get('request')!r})")
        results.append(LabelResult(label=name, question=str(rec.get("question")), request=str(rec.get("request")),
                                   evidence=0, doc_id=doc_id, quote=quote, made_on=rec.get("corpus_digest"),
                                   text_only=not (stamped and rec.get("corpus_digest")),
                                   **classify(doc_id, quote, corpus)))
    made = next(iter(made_on)) if len(made_on) == 1 else ("several corpora" if made_on else "unknown")
    return CheckReport(dataset, corpus_digest, made, results, problems)
