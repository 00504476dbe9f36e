"""Which labels differ between two labels versions of one dataset: what `rag-ttc compare` names when it refuses a pair
of arms measured on different versions (their evaluation digests differ).

A label is a question's targets or gold answer, or a request's gold quotes (document, quote, `stale` mark) or gold
answer. The hash and corpus binding `rag-ttc labels update` stamps on a quote (`quote_sha256`, `corpus_digest`) are
bookkeeping, not the label: two versions that differ only there name no label.
"""

from __future__ import annotations

from typing import Any

STAMPS = ("quote_sha256", "corpus_digest")


def _short(value: Any, n: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= n else text[:n - 1] + "…"


def _quote(e: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in e.items() if k not in STAMPS}


def label_differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """One line per label that differs between evaluation `a` and evaluation `b` (their parsed JSON), in `a`'s order
    and then `b`'s new questions: `question ID targets`, `request ID evidence[k]` (the document or quote changed, or
    marked stale), a gold answer, a question or request only in one."""
    qa = {q.get("id"): q for q in a.get("questions", [])}
    qb = {q.get("id"): q for q in b.get("questions", [])}
    out: list[str] = []
    for qid, q in qa.items():
        if qid not in qb:
            out.append(f"question {qid!r}: only in a's labels")
            continue
        other = qb[qid]
        if q.get("targets", []) != other.get("targets", []):
            out.append(f"question {qid!r} targets: {_targets(q)} -> {_targets(other)}")
        if q.get("gold_answer") != other.get("gold_answer"):
            out.append(f"question {qid!r} gold_answer: {_short(q.get('gold_answer'))} -> "
                       f"{_short(other.get('gold_answer'))}")
        ra = {r.get("id"): r for r in q.get("requests", [])}
        rb = {r.get("id"): r for r in other.get("requests", [])}
        for rid, r in ra.items():
            if rid not in rb:
                out.append(f"request {rid!r}: only in a's labels")
                continue
            out += _request(rid, r, rb[rid])
        out += [f"request {rid!r}: only in b's labels" for rid in rb if rid not in ra]
    out += [f"question {qid!r}: only in b's labels" for qid in qb if qid not in qa]
    return out


def _targets(q: dict[str, Any]) -> str:
    return "[" + ", ".join(f"{t.get('doc_id')}" + (f" (stale: {t['stale']})" if t.get("stale") else "")
                           for t in q.get("targets", [])) + "]"


def _request(rid: str, r: dict[str, Any], other: dict[str, Any]) -> list[str]:
    out = []
    ea, eb = r.get("evidence", []), other.get("evidence", [])
    for k in range(max(len(ea), len(eb))):
        x = _quote(ea[k]) if k < len(ea) else None
        y = _quote(eb[k]) if k < len(eb) else None
        if x == y:
            continue
        where = f"request {rid!r} evidence[{k}]"
        if x is None or y is None:
            out.append(f"{where}: only in {'b' if x is None else 'a'}'s labels")
            continue
        what = []
        if x.get("doc_id") != y.get("doc_id"):
            what.append(f"document {x.get('doc_id')} -> {y.get('doc_id')}")
        if x.get("quote") != y.get("quote"):
            what.append(f"quote {_short(x.get('quote'), 40)} -> {_short(y.get('quote'), 40)}")
        if x.get("stale") != y.get("stale"):
            what.append(f"stale: {x.get('stale') or 'no'} -> {y.get('stale') or 'no'}")
        out.append(f"{where}: " + ("; ".join(what) or "other fields changed"))
    if r.get("gold_answer") != other.get("gold_answer"):
        out.append(f"request {rid!r} gold_answer: {_short(r.get('gold_answer'))} -> {_short(other.get('gold_answer'))}")
    return out
