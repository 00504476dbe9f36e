"""Lexical baseline request judge (prompt kind judge_requests): per labelled request, does the answer address it,
with which excerpt and citations, and does that excerpt agree with the gold material?

A floor for LLM request judges, applied identically to every arm. It reads the answer text and its citations only,
never the generator's request labels or `supported` flags. Rules, per request:

  gold material   the request's gold quotes and gold answer (labels: judges may see them).
  addressed       some sentence of the answer, or two adjacent ones, covers >= ADDRESS_RECALL of the content-word
                  stems of one gold text (a request without gold material: >= REQUEST_TERM_RECALL of the request's
                  own terms).  Abstention boilerplate and list numbering are not answer sentences.
  excerpt         that sentence (pair), the best-covering one; ties go to the earlier sentence.
  cited_chunk_ids the citations of the answer passage(s) holding the excerpt; the answer's own citations when no
                  passage holds it.
  verdict         not_addressed; else contradicts when the excerpt makes a gold sentence's claim with a negation,
                  number or name changed (lexical_judge.verify_against_gold's rule); else consistent; without gold
                  material, not_verifiable.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from rag_ttc_assets.core.extractive import request_terms, term_recall
from rag_ttc_assets.core.lexical_judge import extract_statements, verify_against_gold
from rag_ttc_assets.core.text import content_words, stem

Embed = Callable[[list[str]], np.ndarray]

ADDRESS_RECALL = 0.5
REQUEST_TERM_RECALL = 0.6


@dataclass(frozen=True)
class LabelledRequest:
    id: str
    text: str
    quotes: tuple[str, ...] = ()
    gold_answer: str | None = None

    @property
    def gold(self) -> list[str]:
        return [*self.quotes, *([self.gold_answer] if self.gold_answer else [])]


def _windows(sentences: list[str]) -> list[str]:
    """Each sentence, then each adjacent pair (a gold quote may span two answer sentences)."""
    return sentences + [f"{a} {b}" for a, b in zip(sentences, sentences[1:], strict=False)]


def _coverage(request: LabelledRequest, text: str) -> float:
    gold = request.gold
    if not gold:
        return term_recall(request_terms(request.text), text)
    return max(term_recall({stem(w) for w in content_words(g)}, text) for g in gold)


def _flat(text: str) -> str:
    return " ".join(text.split())


def passage_citations(excerpt_sentences: Sequence[str], passages: Sequence[tuple[str, list[str]]],
                      citations: list[str]) -> list[str]:
    """Citations of the passages that hold any of the excerpt's sentences; else the answer's own citations."""
    found: list[str] = []
    held = False
    for text, cites in passages:
        flat = _flat(text)
        if any(_flat(s) in flat for s in excerpt_sentences):
            held = True
            found += [c for c in cites if c not in found]
    return found if held else list(citations)


def judge_requests(requests: Sequence[LabelledRequest], answer_text: str, citations: list[str],
                   passages: Sequence[tuple[str, list[str]]], embed: Embed) -> list[dict]:
    """One judgment per request, in the judge_requests reply contract (core.judging.RequestJudgment)."""
    sentences = extract_statements(answer_text)
    windows = _windows(sentences)
    parts = [[s] for s in sentences] + [[a, b] for a, b in zip(sentences, sentences[1:], strict=False)]
    out = []
    for r in requests:
        threshold = ADDRESS_RECALL if r.gold else REQUEST_TERM_RECALL
        scores = [_coverage(r, w) for w in windows]
        # A single sentence wins over a pair at the same coverage: the shorter excerpt.
        best = max(range(len(windows)), key=lambda i: (round(scores[i], 6), -i), default=None)
        against = "gold" if r.gold else "the request's own terms (no gold material)"
        if best is None or scores[best] < threshold:
            covered = scores[best] if best is not None else 0.0
            out.append({"request": r.id, "addressed": False, "excerpt": "", "cited_chunk_ids": [],
                        "verdict": "not_addressed",
                        "reason": f"no answer sentence covers {threshold:.2f} of {against} (best {covered:.2f})"})
            continue
        excerpt = windows[best]
        cites = passage_citations(parts[best], passages, citations)
        measured = f"covers {scores[best]:.2f} of {against}"
        if not r.gold:
            verdict, reason = "not_verifiable", f"{measured}; nothing to verify it against"
        else:
            check = verify_against_gold([excerpt], r.gold, embed)[0]
            verdict = "contradicts" if check["contradicts_gold"] else "consistent"
            reason = f"{measured}; {check['reason']}"
        out.append({"request": r.id, "addressed": True, "excerpt": excerpt, "cited_chunk_ids": cites,
                    "verdict": verdict, "reason": reason})
    return out


def judge_requests_whole(requests: Sequence[LabelledRequest], answer_text: str, citations: list[str],
                         embed: Embed) -> list[dict]:
    """The whole-answer coverage juror (`local/coverage`), a second offline request judge with another blind spot:
    a request is addressed when the answer as a whole (all its sentences together) covers >= ADDRESS_RECALL of one
    gold text's content-word stems (without gold material, >= REQUEST_TERM_RECALL of the request's terms), wherever
    the words stand. The sentence-window judge above misses a claim spread over distant sentences; this one takes
    words scattered across unrelated sentences for the claim. Excerpt: the answer's sentences holding any of those
    words; citations: the answer's own; verdict: contradicts when any answer sentence contradicts the gold
    (lexical_judge.verify_against_gold), else consistent; without gold material, not_verifiable."""
    sentences = extract_statements(answer_text)
    whole = " ".join(sentences)
    out = []
    for r in requests:
        threshold = ADDRESS_RECALL if r.gold else REQUEST_TERM_RECALL
        covered = _coverage(r, whole) if sentences else 0.0
        against = "gold" if r.gold else "the request's own terms (no gold material)"
        if covered < threshold:
            out.append({"request": r.id, "addressed": False, "excerpt": "", "cited_chunk_ids": [],
                        "verdict": "not_addressed",
                        "reason": f"the whole answer covers {covered:.2f} of {against}, below {threshold:.2f}"})
            continue
        wanted = {stem(w) for g in (r.gold or [r.text]) for w in content_words(g)}
        excerpt = " ".join(s for s in sentences if wanted & {stem(w) for w in content_words(s)})
        measured = f"the whole answer covers {covered:.2f} of {against}"
        if not r.gold:
            verdict, reason = "not_verifiable", f"{measured}; nothing to verify it against"
        else:
            checks = verify_against_gold(sentences, r.gold, embed)
            clash = next((c for c in checks if c["contradicts_gold"]), None)
            verdict = "contradicts" if clash else "consistent"
            reason = f"{measured}; " + (clash["reason"] if clash else "no sentence contradicts the gold")
        out.append({"request": r.id, "addressed": True, "excerpt": excerpt, "cited_chunk_ids": list(citations),
                    "verdict": verdict, "reason": reason})
    return out
