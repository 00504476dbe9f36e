"""Which labels differ between two labels versions of one dataset: what `rag-ttc compare` names when it refuses a pair
of arms measured on different versions (their evaluation digests differ).

A label is a question's targets or gold answer, or a request's gold quotes (document, quote, `stale` mark) or gold
answer. The hash and corpus binding `rag-ttc labels update` stamps on a quote (`quote_sha256`, `corpus_digest`) are
bookkeeping, not the label: two versions that differ only there name no label.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

STAMPS = ("quote_sha256", "corpus_digest")


class _Label(BaseModel):
    """A labels version's part as written (strict: no value is coerced). Its fields are those of core.records', but
    none is checked beyond its type: a version is compared as it is, and `given` is the part as its file states it
    (the fields it sets), so two parts differ exactly when their JSON does."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    def given(self) -> dict[str, Any]:
        return self.model_dump(exclude_unset=True, exclude=set(STAMPS))


class LabelTarget(_Label):
    doc_id: str
    relevance: int = 1
    stale: str | None = None


class LabelQuote(_Label):
    doc_id: str
    quote: str
    quote_sha256: str | None = None
    corpus_digest: str | None = None
    stale: str | None = None


class LabelRequest(_Label):
    id: str
    text: str | None = None
    evidence: list[LabelQuote] = Field(default_factory=list)
    gold_answer: str | None = None
    derived: dict[str, Any] | None = None


class LabelQuestion(_Label):
    id: str
    text: str | None = None
    answerable: bool = True
    targets: list[LabelTarget] = Field(default_factory=list)
    requests: list[LabelRequest] = Field(default_factory=list)
    gold_answer: str | None = None


class Labels(_Label):
    """A labels version (an evaluation.json, parsed)."""

    corpus_digest: str | None = None
    pilot: list[str] = Field(default_factory=list)
    questions: list[LabelQuestion] = Field(default_factory=list)


def _short(value: Any, n: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= n else text[:n - 1] + "…"


def label_differences(a: dict[str, Any] | Labels, b: dict[str, Any] | Labels) -> list[str]:
    """One line per label that differs between evaluation `a` and evaluation `b` (their parsed JSON, or Labels), in
    `a`'s order and then `b`'s new questions: `question ID targets`, `request ID evidence[k]` (the document or quote
    changed, or marked stale), a gold answer, a question or request only in one."""
    la = a if isinstance(a, Labels) else Labels.model_validate(a)
    lb = b if isinstance(b, Labels) else Labels.model_validate(b)
    qa = {q.id: q for q in la.questions}
    qb = {q.id: q for q in lb.questions}
    out: list[str] = []
    for qid, q in qa.items():
        if qid not in qb:
            out.append(f"question {qid!r}: only in a's labels")
            continue
        other = qb[qid]
        if [t.given() for t in q.targets] != [t.given() for t in other.targets]:
            out.append(f"question {qid!r} targets: {_targets(q)} -> {_targets(other)}")
        if q.gold_answer != other.gold_answer:
            out.append(f"question {qid!r} gold_answer: {_short(q.gold_answer)} -> {_short(other.gold_answer)}")
        ra = {r.id: r for r in q.requests}
        rb = {r.id: r for r in other.requests}
        for rid, r in ra.items():
            if rid not in rb:
                out.append(f"request {rid!r}: only in a's labels")
                continue
            out += _request(rid, r, rb[rid])
        out += [f"request {rid!r}: only in b's labels" for rid in rb if rid not in ra]
    out += [f"question {qid!r}: only in b's labels" for qid in qb if qid not in qa]
    return out


def _targets(q: LabelQuestion) -> str:
    return "[" + ", ".join(f"{t.doc_id}" + (f" (stale: {t.stale})" if t.stale else "") for t in q.targets) + "]"


def _request(rid: str, r: LabelRequest, other: LabelRequest) -> list[str]:
    out = []
    ea, eb = r.evidence, other.evidence
    for k in range(max(len(ea), len(eb))):
        x = ea[k] if k < len(ea) else None
        y = eb[k] if k < len(eb) else None
        if (x and x.given()) == (y and y.given()):
            continue
        where = f"request {rid!r} evidence[{k}]"
        if x is None or y is None:
            out.append(f"{where}: only in {'b' if x is None else 'a'}'s labels")
            continue
        what = []
        if x.doc_id != y.doc_id:
            what.append(f"document {x.doc_id} -> {y.doc_id}")
        if x.quote != y.quote:
            what.append(f"quote {_short(x.quote, 40)} -> {_short(y.quote, 40)}")
        if x.stale != y.stale:
            what.append(f"stale: {x.stale or 'no'} -> {y.stale or 'no'}")
        out.append(f"{where}: " + ("; ".join(what) or "other fields changed"))
    if r.gold_answer != other.gold_answer:
        out.append(f"request {rid!r} gold_answer: {_short(r.gold_answer)} -> {_short(other.gold_answer)}")
    return out
