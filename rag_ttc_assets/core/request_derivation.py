"""Requests derived from a question's gold answer, for datasets with a reference answer and no request annotation.

  offline baseline (method "rule", model OFFLINE_MODEL): the gold answer's sentences (core.text.split_sentences),
      each split again at coordinated clauses: a semicolon; a comma followed by and / but / or / while / whereas /
      yet (not the last item of a comma list "A, B, and C"); " and " / " but " followed by a pronoun or
      determiner that opens a new subject. A piece with fewer than MIN_CLAIM_WORDS content words joins the one
      before it. Citation markers are left out first (strip_citations: "[4]", "[1][2]", "[1, 3]", "[Doc 2]"); every
      claim is a substring of the gold answer so stripped.
  model (method "model"): a litellm model given the versioned prompt derive-requests-v1, replying
      {"claims": [...]} (parse_claims); the calls are the stage's (stages/derive_requests.py).

Each derived request keeps its claim as gold material (`gold_answer`), the evidence located in the question's
target documents where a verbatim quote can be found (locate_evidence), and its provenance
`derived: {method, model, prompt_digest}`. Derived requests are labels like hand-written ones: judges and metrics
only, never generation. `derived_requests.json` beside evaluation.json (the command's and the asset's output) is
bound to the evaluation's digest; a question without requests and without an entry there is derived offline.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, TypedDict

from pydantic import BaseModel, ConfigDict, ValidationError

from rag_ttc_assets.core.records import Derivation, Evaluation, Evidence, Question, Request
from rag_ttc_assets.core.text import content_words, split_sentences, stem

DERIVED_FILE = "derived_requests.json"
OFFLINE_MODEL = "local/claims-v1"
RULE: Literal["rule"] = "rule"
MODEL: Literal["model"] = "model"
OFFLINE = Derivation(method=RULE, model=OFFLINE_MODEL, prompt_digest=None)
MIN_CLAIM_WORDS = 2
# A target-document sentence holding this share of a claim's content-word stems is its evidence quote.
QUOTE_RECALL = 0.6

_SUBJECT = r"(?:it|they|he|she|we|you|this|that|these|those|there|its|their|his|her|the|a|an)"
_CLAUSE_BREAK = re.compile(
    r";\s+"
    r"|,\s+(?:and|but|or|while|whereas|yet)\s+"
    rf"|\s+(?:and|but)\s+(?={_SUBJECT}\s)",
    re.IGNORECASE,
)


# A citation marker: numbers ("[4]", "[1, 3]", "[2-4]") or a named source ("[Doc 2]", "[source 1]"). A numeric
# marker counts only after a space, the start or sentence punctuation ("Paris [1]", "ago.[2]"), never attached to a
# word or inside `code` ("x[1]", "`[1,2] < [1,2,3]`" stay: they are indexing and lists); a named one counts anywhere.
_NUMS = r"\d{1,4}(?:\s*(?:[,;\u2013-]|and)\s*\d{1,4})*"
_NAMED = r"(?:doc(?:ument)?|source|ref(?:erence)?|passage|context|chunk|citation)\s*#?\s*" + _NUMS
_MARK = rf"\[(?:{_NUMS}|{_NAMED})\]"
_MARKS = rf"(?:{_MARK})(?:[ \t]*,?[ \t]*(?:{_MARK}))*"
_AFTER = r"(?<![^\s.,;:!?)\"'\u201d\u2019])"  # at the start, or after a space or sentence punctuation
# Attached to a word, a numeric marker is a citation where a clause ends: before sentence punctuation, a line break
# or the end ("workforce[1]", "growth[4][5]."), as web answers write them; mid-sentence ("x[1] = 2") it stays.
_CLAUSE_END = r"(?<=[^\W\d_])(?:" + _MARKS + r")(?=[ \t]*(?:$|\n|[.,;:!?]))"
_CITATION = re.compile(rf"[ \t]*(?:{_AFTER}(?:{_MARKS})|{_CLAUSE_END}|\[{_NAMED}\](?:[ \t]*,?[ \t]*(?:{_MARK}))*)",
                       re.IGNORECASE | re.MULTILINE)
_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
# A line that is only a tag is markup a model's output carries ("<Answer>", "<Evidences>"), never a claim.
_INITIALS = re.compile(r"\b(?:[A-Z]\.){2,}(?=\s+[a-z])")
_TAG_LINE = re.compile(r"^[ \t]*</?[A-Za-z][\w-]*>[ \t]*$", re.MULTILINE)


def strip_citations(text: str) -> str:
    """`text` without its citation markers (see _CITATION), inline code left as it is."""
    out, end = [], 0
    for m in _CODE.finditer(text):
        out.append(_CITATION.sub("", text[end:m.start()]))
        out.append(m.group(0))
        end = m.end()
    out.append(_CITATION.sub("", text[end:]))
    return "".join(out)


class DerivationError(ValueError):
    """A derived-requests file or model reply that cannot be used."""


def _words(text: str) -> int:
    return len(content_words(text))


def _clauses(sentence: str) -> list[str]:
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _CLAUSE_BREAK.finditer(sentence):
        # "lists, tuples, and sets": the comma before "and" closes a list, not a clause.
        if m.group(0).startswith(",") and "," in sentence[start:m.start()]:
            continue
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(sentence)))
    merged: list[tuple[int, int]] = []
    for a, b in spans:
        if merged and _words(sentence[a:b]) < MIN_CLAIM_WORDS:
            merged[-1] = (merged[-1][0], b)  # too short to stand alone: it belongs to the clause before it
        elif len(merged) == 1 and _words(sentence[slice(*merged[0])]) < MIN_CLAIM_WORDS:
            merged[0] = (merged[0][0], b)
        else:
            merged.append((a, b))
    return [c for c in (sentence[a:b].strip().rstrip(".;,:!?").strip() for a, b in merged) if c]


def split_claims(gold_answer: str) -> list[str]:
    """The gold answer's atomic claims, its citation markers left out: sentences, then coordinated clauses (see the
    module docstring)."""
    text = strip_citations(_TAG_LINE.sub("", gold_answer))
    # Dotted initials before a lower-case word ("in the U.S. the law") end no sentence: their dots are held out of
    # the sentence splitter's way (as one-dot leaders) and given back to the claim.
    text = _INITIALS.sub(lambda m: m.group(0).replace(".", "\u2024"), text)
    # A piece without a content word (a stray "[") is no claim.
    return [c.replace("\u2024", ".") for s in split_sentences(text) for c in _clauses(s) if _words(c)]


def _recall(claim: str, sentence: str) -> float:
    wanted = {stem(w) for w in content_words(claim)}
    if not wanted:
        return 0.0
    return len(wanted & {stem(w) for w in content_words(sentence)}) / len(wanted)


def _verbatim(flat: str, text: str) -> str | None:
    """The span of `text` that is `flat` up to whitespace (documents break lines inside sentences)."""
    words = flat.split()
    if not words:
        return None
    m = re.search(r"\s+".join(map(re.escape, words)), text)
    return m.group(0) if m else None


def locate_evidence(claim: str, documents: Sequence[tuple[str, str]]) -> list[Evidence]:
    """Where a verbatim quote of the claim's content can be found in the target documents: the claim itself when a
    document contains it (up to whitespace), else the document sentence covering the most of its content words (at
    least QUOTE_RECALL; ties to the earlier document and sentence). The quote is the document's own text, so it is
    a verbatim substring; empty when no document has such a quote."""
    for doc_id, text in documents:
        quote = _verbatim(claim, text)
        if quote:
            return [Evidence(doc_id=doc_id, quote=quote)]
    best: tuple[float, str, str] | None = None
    for doc_id, text in documents:
        for sentence in split_sentences(text):
            r = _recall(claim, sentence)
            if r >= QUOTE_RECALL and (best is None or r > best[0]):
                quote = _verbatim(sentence, text)
                if quote:
                    best = (r, doc_id, quote)
    return [Evidence(doc_id=best[1], quote=best[2])] if best else []


def derived_requests(question: Question, claims: Sequence[str], derivation: Derivation,
                     documents: Mapping[str, str]) -> list[Request]:
    """One request per claim, ids `<question>.d<n>`: the claim as its text and gold answer, its evidence in the
    question's target documents (relevance > 0), its provenance."""
    targets = [(t.doc_id, documents[t.doc_id]) for t in question.targets if t.relevance > 0 and t.doc_id in documents]
    return [Request(id=f"{question.id}.d{n}", text=c, gold_answer=c, evidence=locate_evidence(c, targets),
                    derived=derivation)
            for n, c in enumerate(claims, 1)]


def needs_derivation(question: Question) -> bool:
    return not question.requests and bool(question.gold_answer and question.gold_answer.strip())


SHOWN_IDS = 5


def nothing_to_derive(questions: Sequence[Question], dataset: str) -> str | None:
    """Why no question of `dataset` gets derived requests (None when some does): no gold answer at all, or every
    question with one has requests of its own (naming an earlier import-outputs' whole-question requests). The
    questions as written, or as loaded (their requests then derived: they count as none of their own)."""
    gold = [q for q in questions if q.gold_answer and q.gold_answer.strip()]
    if any(all(r.derived is not None for r in q.requests) for q in gold):
        return None
    if not gold:
        return (f"nothing to derive in {dataset}: none of its {len(questions)} questions has a gold_answer; "
                "derive-requests derives a question's requests from its gold answer")
    ids = ", ".join(q.id for q in gold[:SHOWN_IDS]) + (", ..." if len(gold) > SHOWN_IDS else "")
    why = (f"nothing to derive in {dataset}: all {len(gold)} questions with a gold_answer have requests of their own "
           f"({ids}); derive-requests derives requests only for a question with a gold answer and no `requests` "
           "(leave a question's `requests` out to have them derived)")
    whole = [q for q in gold if len(q.requests) == 1 and q.requests[0].text == q.text
             and q.requests[0].gold_answer == q.gold_answer]
    if len(whole) == len(gold):
        why += (". Each is one request, the whole question with the question's gold answer, as an earlier "
                "`rag-ttc import-outputs` wrote them: import the file again (import-outputs now leaves them out, "
                "so they are derived)")
    return why


def derive_offline(question: Question, documents: Mapping[str, str]) -> list[Request]:
    return derived_requests(question, split_claims(question.gold_answer or ""), OFFLINE, documents)


class ClaimsReply(BaseModel):
    """A derive-requests reply object: its `claims` list (each item checked by parse_claims); other keys ignored."""

    model_config = ConfigDict(frozen=True, strict=True)

    claims: list[object]


def parse_claims(obj: object) -> list[str]:
    """The claims of a derive-requests reply object ({"claims": ["...", ...]}); DerivationError says what is wrong."""
    try:
        reply = ClaimsReply.model_validate(obj)
    except ValidationError:
        raise DerivationError('the reply is not an object with a "claims" list') from None
    claims = [" ".join(c.split()) for c in reply.claims if isinstance(c, str) and c.strip()]
    if len(claims) != len(reply.claims):
        raise DerivationError('every item of "claims" must be a non-empty string')
    if not claims:
        raise DerivationError('"claims" is empty')
    return claims


class RequestsDerived(TypedDict):
    """How an evaluation's requests were derived, as the request judge's instrument records it (derivation_of; read
    back as core.judge_summaries.Derivation)."""
    method: str
    model: str
    prompt_digest: str | None
    requests_digest: str
    questions: int
    requests: int


class DerivedRequests(BaseModel):
    """An instrument's `requests_derived` as read back (RequestsDerived; core.judge_summaries.Derivation is the
    stored summary's model): the derivation, and what it gave when recorded."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    method: str
    model: str
    prompt_digest: str | None = None
    requests_digest: str | None = None
    questions: int | None = None
    requests: int | None = None


class _Derived(Protocol):
    """What describe and derivation_drift read of a derivation: a request's (core.records.Derivation) or an
    instrument's (core.judge_summaries.Derivation)."""

    @property
    def method(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def prompt_digest(self) -> str | None: ...


# A derivation as given: a record, or an instrument's `requests_derived` as read from its JSON; None: hand-written.
Given = Derivation | DerivedRequests | Mapping[str, Any] | None


def _derived(d: Given) -> _Derived | None:
    return DerivedRequests.model_validate(d) if isinstance(d, Mapping) else d


def derivation_of(questions: Sequence[Question]) -> RequestsDerived | None:
    """How an evaluation's derived requests were derived: {method, model, prompt_digest, requests_digest (of the
    derived requests themselves), questions, requests}, one derivation per evaluation (None when none is derived)."""
    seen = {r.derived for q in questions for r in q.requests if r.derived is not None}
    if not seen:
        return None
    if len(seen) > 1:
        raise DerivationError(f"requests derived {len(seen)} ways in one evaluation: {sorted(map(describe, seen))}")
    d = seen.pop()
    derived = [r.model_dump(mode="json") for q in questions for r in q.requests if r.derived]
    digest = "sha256:" + hashlib.sha256(json.dumps(derived, sort_keys=True).encode()).hexdigest()
    return {"method": d.method, "model": d.model, "prompt_digest": d.prompt_digest, "requests_digest": digest,
            "questions": sum(1 for q in questions if any(r.derived for r in q.requests)),
            "requests": sum(1 for q in questions for r in q.requests if r.derived)}


def describe(given: Given) -> str:
    """"none", "rule local/claims-v1" or "model openai/gpt-x (prompt sha256:abcd…)"."""
    d = _derived(given)
    if d is None:
        return "none"
    prompt = f" (prompt {d.prompt_digest[:19]}…)" if d.prompt_digest else ""
    return f"{d.method} {d.model}{prompt}"


def _key(given: Given) -> tuple[str, str, str | None] | None:
    d = _derived(given)
    return None if d is None else (d.method, d.model, d.prompt_digest)


def _requests_key(given: Given) -> str | None:
    d = _derived(given)
    return d.requests_digest if isinstance(d, DerivedRequests) else None


class DerivationDriftError(ValueError):
    """Two arms' requests were derived differently (or one arm's were derived and the other's hand-written)."""


def derivation_drift(arm_a: str, derived_a: Given, arm_b: str, derived_b: Given) -> None:
    """Raise DerivationDriftError naming both arms' derivations when they differ (method, model or prompt), or
    when the same derivation gave different requests (a model's reply changed, the gold answers were edited)."""
    if _key(derived_a) == _key(derived_b):
        if _requests_key(derived_a) == _requests_key(derived_b):
            return
        raise DerivationDriftError(
            f"requests derived differently: arms {arm_a} and {arm_b} were both derived by {describe(derived_a)}, but "
            f"the derived requests differ ({_requests_key(derived_a)} vs {_requests_key(derived_b)}); derive once "
            "and rerun both arms' judge stage.")
    raise DerivationDriftError(
        f"requests derived differently: arm {arm_a} was measured against requests derived by {describe(derived_a)}, "
        f"arm {arm_b} against requests derived by {describe(derived_b)}. Derived requests are labels; a comparison "
        "across two derivations compares two label sets, not two systems. Derive once (rag-ttc derive-requests) and "
        "rerun both arms' judge stage.")


# -- the derived-requests file -------------------------------------------------------------------------------------

def derived_file(evaluation_digest: str, derivation: Derivation, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The content of derived_requests.json: per question its status ("derived" or the call's fault) and requests."""
    return {"evaluation_digest": evaluation_digest, "derived": derivation.model_dump(), "questions": list(rows)}


def apply_derivation(evaluation: Evaluation, evaluation_digest: str, documents: Mapping[str, str],
                     file: object | None, path: str, dataset: str = "<dataset>"
                     ) -> tuple[Evaluation, list[tuple[str, str, str]]]:
    """The evaluation with every question that needs them given derived requests: from the derived file `file`
    (parsed JSON of `path`) when it has the question, else by the offline rule. Returns the evaluation and the
    problems found, each (record, field, message) in `path`; with problems, the evaluation is returned as it was
    (the questions that need derived requests have none: the problems say why)."""
    problems: list[tuple[str, str, str]] = []
    rows: dict[str, list[Request]] = {}
    if file is not None:
        rows = _read_file(file, evaluation, evaluation_digest, documents, problems, dataset)
        if problems:
            return evaluation, problems
    questions = []
    for q in evaluation.questions:
        if needs_derivation(q):
            q = q.model_copy(update={"requests": rows[q.id] if q.id in rows else derive_offline(q, documents)})
        questions.append(q)
    return evaluation.model_copy(update={"questions": questions}), problems


def _read_file(file: object, evaluation: Evaluation, evaluation_digest: str, documents: Mapping[str, str],
               problems: list[tuple[str, str, str]], dataset: str = "<dataset>") -> dict[str, list[Request]]:
    if not isinstance(file, dict):
        problems.append(("(top level)", "(file)", "not a JSON object"))
        return {}
    if file.get("evaluation_digest") != evaluation_digest:
        problems.append(("(top level)", "evaluation_digest",
                         f"stale: derived from evaluation {file.get('evaluation_digest')}, but evaluation.json now "
                         f"has digest {evaluation_digest}; derive again: `rag-ttc derive-requests {dataset}` (or "
                         "delete the file: the questions then get the offline rule's requests)"))
        return {}
    try:
        derivation = Derivation.model_validate(file.get("derived"))
    except ValueError as e:
        problems.append(("(top level)", "derived", str(e).splitlines()[0]))
        return {}
    by_id = {q.id: q for q in evaluation.questions}
    out: dict[str, list[Request]] = {}
    for i, row in enumerate(file.get("questions") or []):
        qid = row.get("id") if isinstance(row, dict) else None
        rec = f"questions[{i}]" + (f" (id {qid!r})" if isinstance(qid, str) else "")
        if qid not in by_id:
            problems.append((rec, "id", f"no question {qid!r} in evaluation.json"))
            continue
        if not needs_derivation(by_id[qid]):
            problems.append((rec, "id", f"question {qid!r} has hand-written requests or no gold_answer; "
                                        "nothing to derive"))
            continue
        if row.get("status") != "derived":
            problems.append((rec, "status", f"derivation did not finish ({row.get('status')}: {row.get('error')}); "
                                            "run rag-ttc derive-requests again (finished questions come from the "
                                            "provider cache)"))
            continue
        try:
            reqs = [Request.model_validate(r) for r in row.get("requests") or []]
        except ValueError as e:
            problems.append((rec, "requests", str(e).splitlines()[0]))
            continue
        for j, r in enumerate(reqs):
            if r.derived != derivation:
                problems.append((rec, f"requests[{j}].derived", "differs from the file's `derived`"))
            for k, ev in enumerate(r.evidence):
                if ev.quote not in documents.get(ev.doc_id, ""):
                    problems.append((rec, f"requests[{j}].evidence[{k}].quote",
                                     f"not a verbatim substring of document {ev.doc_id!r}"))
        if not reqs:
            problems.append((rec, "requests", "no requests"))
        out[qid] = reqs
    return out


def dumps(content: dict[str, Any]) -> str:
    return json.dumps(content, indent=1, ensure_ascii=False) + "\n"
