"""Lexical baseline request judge (prompt kind judge_requests): per labelled request, does the answer address it,
with which excerpt and citations, and does that excerpt agree with the gold material?

A floor for LLM request judges, applied identically to every arm. It reads the answer text and its citations only,
never the generator's request labels or `supported` flags. Rules, per request:

  gold material   the request's gold quotes and gold answer (labels: judges may see them).
  addressed       some sentence of the answer, or two adjacent ones, covers >= ADDRESS_RECALL of the content-word
                  stems of one gold text, each stem weighted by how few of the question's requests share it
                  (term_weights: the topic every request names counts least); a request without gold material:
                  >= REQUEST_TERM_RECALL of the request's own terms, unweighted.  Abstention boilerplate and list
                  numbering are not answer sentences. Words are matched normalised (core.text.normalize: names,
                  numbers, dates and units in one spelling, diacritics folded).
  excerpt         that sentence (pair), the best-covering one; ties go to the earlier sentence.
  cited_chunk_ids the citations of the answer passage(s) holding the excerpt; the answer's own citations when no
                  passage holds it.
  verdict         not_addressed; else contradicts when the excerpt makes a gold sentence's claim with a negation,
                  number or name changed (lexical_judge.verify_against_gold's rule: a number is changed when each
                  states one the other does not, normalised); else consistent; without gold
                  material, not_verifiable.
  contradiction   an answer sentence that makes a gold sentence's claim with a negation, number or name changed
                  addresses the request, wrongly, whatever its coverage: the changed word is what lowers it
                  (`contradicts`, that sentence the excerpt).
  coverage        the share (0..1) that the verdict thresholds: of the excerpt's window (the best-covering one when
                  nothing is addressed; the contradicting sentence's), kept with the verdict so a near miss reads as
                  one, and so that completeness can be read graded (the mean coverage of a row's requests) as well as
                  a share of binary verdicts (judging.judge_agreement).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict

from rag_ttc_assets.core.extractive import QUESTION_WORDS
from rag_ttc_assets.judging.lexical_judge import (GOLD_SAME_CLAIM_COSINE, GOLD_SAME_CLAIM_RECALL, compared, conflict,
                                                  extract_statements, recall, shown, verify_against_gold)
from rag_ttc_assets.core.summaries import REQUEST_JUDGE_RULES
from rag_ttc_assets.core.text import (normal_stems, normal_term_recall, normal_words, normalize, split_sentences, stem)

Embed = Callable[[list[str]], np.ndarray]
# Per text: its content words' stems and one unit-normalised contextual vector per word (adapters.embeddings.
# content_word_vectors).
WordVectors = Callable[[list[str]], list[tuple[list[str], np.ndarray]]]

ADDRESS_RECALL = 0.5
REQUEST_TERM_RECALL = 0.6
# The BERTScore juror (judge_requests_soft): a word it does not find still scores its best cosine, so its coverage of an
# unrelated sentence is rarely 0 and its threshold is higher (docs/judges.md: how it was chosen, on two public sets).
SOFT_ADDRESS_RECALL = 0.65
# The rules above, versioned (core.summaries.REQUEST_JUDGE_RULES): change the version with any rule, so two arms
# judged under different rules are never compared as if by one judge.
RULES = REQUEST_JUDGE_RULES


@dataclass(frozen=True)
class LabelledRequest:
    id: str
    text: str
    quotes: tuple[str, ...] = ()
    gold_answer: str | None = None

    @property
    def gold(self) -> list[str]:
        return [*self.quotes, *([self.gold_answer] if self.gold_answer else [])]


class Judged(BaseModel):
    """One offline judgment, in the judge_requests reply contract (judging.statement_judge.RequestJudgment reads it): the
    offline request judges return these; their reply is each one's `model_dump()`, the fields in this order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    request: str
    addressed: bool
    excerpt: str
    cited_chunk_ids: list[str]
    verdict: str
    coverage: float
    reason: str


class GoldCheck(BaseModel):
    """What lexical_judge.verify_against_gold finds of one statement, as the request judges read it: whether it
    makes a gold sentence's claim changed, and the reason it says (its other fields are the gold judge's)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    contradicts_gold: bool
    reason: str


def gold_checks(statements: list[str], gold: list[str], embed: Embed) -> list[GoldCheck]:
    """lexical_judge.verify_against_gold of `statements` against `gold`, read as GoldCheck records."""
    return [GoldCheck.model_validate(v) for v in verify_against_gold(statements, gold, embed)]


def _parts(sentences: list[str]) -> list[list[str]]:
    """Each sentence, then each adjacent pair (a gold quote may span two answer sentences), as the sentences each holds."""
    return [[s] for s in sentences] + [[a, b] for a, b in zip(sentences, sentences[1:], strict=False)]


def _windows(sentences: list[str]) -> list[str]:
    """The text of each of _parts' windows."""
    return [" ".join(part) for part in _parts(sentences)]


def term_weights(requests: Sequence[LabelledRequest]) -> dict[str, float]:
    """Each gold stem's weight, log(1 + N / df): N the question's requests with gold material, df how many of them
    hold the stem in their gold material. A word every request shares is the question's topic (a name an answer
    carries whether or not it makes the request's claim) and weighs least; a word of one request alone weighs most.
    With one request every word weighs the same, and the rule is plain content-word recall."""
    held = [frozenset().union(*(normal_stems(g) for g in r.gold)) for r in requests if r.gold]
    df: dict[str, int] = {}
    for stems in held:
        for t in stems:
            df[t] = df.get(t, 0) + 1
    return {t: math.log(1 + len(held) / n) for t, n in df.items()}


def weighted_recall(terms: frozenset[str], text: str, weights: dict[str, float]) -> float:
    """Share of the terms' weight (term_weights; 1 for a term it does not know) that occurs in `text`. Summed with
    math.fsum, exactly rounded whatever the order: a set's order changes with the process's string hashing, and a
    plain sum in that order put a request at exactly the threshold on either side of it from one run to the next."""
    total = math.fsum(weights.get(t, 1.0) for t in terms)
    if not total:
        return 0.0
    return math.fsum(weights.get(t, 1.0) for t in terms & normal_stems(text)) / total


def request_terms(request: str) -> frozenset[str]:
    """A request's own terms (without gold material): its content words' stems, normalised, less question words."""
    return frozenset(stem(w) for w in normal_words(request) if w not in QUESTION_WORDS)


def _coverage(request: LabelledRequest, text: str, weights: dict[str, float]) -> float:
    gold = request.gold
    if not gold:
        return normal_term_recall(request_terms(request.text), text)
    return max(weighted_recall(normal_stems(g), text, weights) for g in gold)


def _contradiction(request: LabelledRequest, sentences: list[str], embed: Embed) -> tuple[int, GoldCheck] | None:
    """The first answer sentence that makes one of the request's gold claims with a negation, number or name changed
    (verify_against_gold), as (its index, the check); None. Only sentences that share most of a gold sentence's words
    and clash with it lexically are embedded, so a request nothing contradicts costs no model call."""
    gold_sentences = [g for text in request.gold for g in split_sentences(text)]
    candidates = [i for i, s in enumerate(sentences)
                  if any(recall(s, g) >= GOLD_SAME_CLAIM_RECALL and conflict(s, g) for g in gold_sentences)]
    if not candidates:
        return None
    checks = gold_checks([sentences[i] for i in candidates], request.gold, embed)
    return next(((i, c) for i, c in zip(candidates, checks, strict=True) if c.contradicts_gold), None)


def _share(x: float, threshold: float) -> float:
    """A coverage as the reply carries it: four decimals (more when four would put it on the other side of the
    `threshold` that decided the verdict: 0.64996 is not carried as 0.65 beside a 0.65 it did not reach), within 0..1
    (a float sum may pass 1 by a rounding)."""
    return float(shown(min(1.0, max(0.0, x)), threshold, digits=4))


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


# What `consistent` means, said in a reason: the contradiction rule (lexical_judge.verify_against_gold) found nothing.
NO_CLASH = (f"no gold sentence making the same claim (cosine >= {GOLD_SAME_CLAIM_COSINE:.2f}, content-word recall >= "
            f"{GOLD_SAME_CLAIM_RECALL:.2f}) differs from it in negation, number or name")


def _verdict(request: LabelledRequest, excerpt: str, measured: str, embed: Embed) -> tuple[str, str]:
    """An addressed request's verdict and reason: its excerpt checked against the gold (contradicts or consistent);
    without gold material, not_verifiable. `measured` opens the reason; the rest states the rule that decided the
    verdict (the contradiction rule's finding, never the support check's unrelated thresholds)."""
    if not request.gold:
        return "not_verifiable", f"{measured}; nothing to verify it against"
    check = gold_checks([excerpt], request.gold, embed)[0]
    if check.contradicts_gold:
        return "contradicts", f"{measured}; {check.reason}"
    return "consistent", f"{measured}; consistent: in the excerpt, {NO_CLASH}"


def judge_requests(requests: Sequence[LabelledRequest], answer_text: str, citations: list[str],
                   passages: Sequence[tuple[str, list[str]]], embed: Embed) -> list[Judged]:
    """One judgment per request, in the judge_requests reply contract (judging.statement_judge.RequestJudgment)."""
    sentences = extract_statements(answer_text)
    windows = _windows(sentences)
    parts = _parts(sentences)
    weights = term_weights(requests)
    out: list[Judged] = []
    for r in requests:
        threshold = ADDRESS_RECALL if r.gold else REQUEST_TERM_RECALL
        scores = [_coverage(r, w, weights) for w in windows]
        # A single sentence wins over a pair at the same coverage: the shorter excerpt.
        best = max(range(len(windows)), key=lambda i: (round(scores[i], 6), -i), default=None)
        against = "gold" if r.gold else "the request's own terms (no gold material)"
        if best is None or scores[best] < threshold:
            covered = scores[best] if best is not None else 0.0
            clash = _contradiction(r, sentences, embed) if r.gold else None
            if clash is not None:
                i, check = clash
                out.append(Judged(request=r.id, addressed=True, excerpt=sentences[i],
                                  cited_chunk_ids=passage_citations([sentences[i]], passages, citations),
                                  verdict="contradicts", coverage=_share(scores[i], threshold),
                                  reason=f"covers {shown(scores[i], threshold)} of gold (< {threshold:.2f}), but "
                                         f"makes its claim changed; {check.reason}"))
                continue
            out.append(Judged(request=r.id, addressed=False, excerpt="", cited_chunk_ids=[],
                              verdict="not_addressed", coverage=_share(covered, threshold),
                              reason=f"no answer sentence covers {threshold:.2f} of {against} (best "
                                     f"{compared(covered, threshold)})"))
            continue
        excerpt = windows[best]
        cites = passage_citations(parts[best], passages, citations)
        verdict, reason = _verdict(r, excerpt, f"covers {shown(scores[best], threshold)} of {against} (>= "
                                               f"{threshold:.2f})", embed)
        out.append(Judged(request=r.id, addressed=True, excerpt=excerpt, cited_chunk_ids=cites,
                          verdict=verdict, coverage=_share(scores[best], threshold), reason=reason))
    return out


def judge_requests_whole(requests: Sequence[LabelledRequest], answer_text: str, citations: list[str],
                         embed: Embed) -> list[Judged]:
    """The whole-answer coverage juror (`local/coverage`), a second offline request judge with another blind spot:
    a request is addressed when the answer as a whole (all its sentences together) covers >= ADDRESS_RECALL of one
    gold text's content-word stems, weighted as above (term_weights; without gold material, >= REQUEST_TERM_RECALL
    of the request's terms), wherever
    the words stand. The sentence-window judge above misses a claim spread over distant sentences; this one takes
    words scattered across unrelated sentences for the claim. Excerpt: the answer's sentences holding any of those
    words; citations: the answer's own; verdict: contradicts when any answer sentence contradicts the gold
    (lexical_judge.verify_against_gold), else consistent; without gold material, not_verifiable; coverage: the
    whole answer's, what the verdict thresholds."""
    sentences = extract_statements(answer_text)
    whole = " ".join(sentences)
    weights = term_weights(requests)
    out: list[Judged] = []
    for r in requests:
        threshold = ADDRESS_RECALL if r.gold else REQUEST_TERM_RECALL
        covered = _coverage(r, whole, weights) if sentences else 0.0
        against = "gold" if r.gold else "the request's own terms (no gold material)"
        clash = _contradiction(r, sentences, embed) if r.gold and covered < threshold else None
        if clash is not None:
            i, check = clash
            out.append(Judged(request=r.id, addressed=True, excerpt=sentences[i],
                              cited_chunk_ids=list(citations), verdict="contradicts",
                              coverage=_share(covered, threshold),
                              reason=f"the whole answer covers {shown(covered, threshold)} of gold (< "
                                     f"{threshold:.2f}), but a sentence makes its claim changed; {check.reason}"))
            continue
        if covered < threshold:
            out.append(Judged(request=r.id, addressed=False, excerpt="", cited_chunk_ids=[],
                              verdict="not_addressed", coverage=_share(covered, threshold),
                              reason=f"the whole answer covers {shown(covered, threshold)} of {against} (< "
                                     f"{threshold:.2f})"))
            continue
        wanted = frozenset().union(*(normal_stems(g) for g in (r.gold or [r.text])))
        excerpt = " ".join(s for s in sentences if wanted & normal_stems(s))
        measured = f"the whole answer covers {shown(covered, threshold)} of {against} (>= {threshold:.2f})"
        if not r.gold:
            verdict, reason = "not_verifiable", f"{measured}; nothing to verify it against"
        else:
            found = next((c for c in gold_checks(sentences, r.gold, embed) if c.contradicts_gold), None)
            verdict = "contradicts" if found else "consistent"
            reason = f"{measured}; " + (found.reason if found else f"consistent: in the answer, {NO_CLASH}")
        out.append(Judged(request=r.id, addressed=True, excerpt=excerpt, cited_chunk_ids=list(citations),
                          verdict=verdict, coverage=_share(covered, threshold), reason=reason))
    return out


def soft_recall(gold: tuple[list[str], np.ndarray], window: tuple[list[str], np.ndarray],
                weights: dict[str, float]) -> float:
    """BERTScore recall of `gold` in `window` (Zhang et al., ICLR 2020), over content words: each gold stem scores the
    best cosine (floored at 0) of its contextual vector with the window's words' (a repeated stem: its best), and the
    stems are averaged with term_weights' weights (1 for a stem it does not know), summed with math.fsum."""
    stems, vectors = gold
    wstems, wvectors = window
    if not stems or not wstems:
        return 0.0
    best = (vectors @ wvectors.T).max(axis=1)
    per: dict[str, float] = {}
    for s, c in zip(stems, best.tolist(), strict=True):
        per[s] = max(per.get(s, 0.0), max(0.0, c))
    total = math.fsum(weights.get(s, 1.0) for s in per)
    return math.fsum(weights.get(s, 1.0) * v for s, v in per.items()) / total if total else 0.0


def judge_requests_soft(requests: Sequence[LabelledRequest], answer_text: str, citations: list[str],
                        passages: Sequence[tuple[str, list[str]]], embed: Embed,
                        word_vectors: WordVectors) -> list[Judged]:
    """The BERTScore juror (`local/bertscore`), an offline request judge that reads words in context rather than
    their spelling: the sentence-window judge's rules (judge_requests) with soft_recall in place of the content-word
    recall, so "a physician purchased the automobile" covers "a doctor bought the car" (not every paraphrase: "revenue
    increased" soft-covers "sales rose" 0.43 with the bundled MiniLM). The texts are read normalised (core.text.
    normalize), so "two hundred" and "200" are one word to the model too. A request is addressed when some answer
    sentence, or two adjacent ones, reaches SOFT_ADDRESS_RECALL of one gold text (without gold material: of the request's own words,
    unweighted); excerpt, citations and the verdict as judge_requests, on the best window; and what judge_requests
    calls `contradicts` is `contradicts` here too (with its excerpt); coverage: the best window's soft recall, what
    the verdict thresholds. Its blind spot is another: words that sit in the same context without making
    the same claim (a cosine is not an entailment)."""
    sentences = extract_statements(answer_text)
    windows = _windows(sentences)
    parts = _parts(sentences)
    weights = term_weights(requests)
    golds = [r.gold or [r.text] for r in requests]
    texts = list(dict.fromkeys([*sentences, *(g for gs in golds for g in gs)]))
    # The model reads each text normalised (core.text.normalize): "two hundred" and "200", "5 km" and "5 kilometres"
    # are then the same words to it, as to the word-reading jurors.
    vectors = dict(zip(texts, word_vectors([normalize(t) for t in texts]), strict=True)) if texts else {}
    window_vectors = [_joined([vectors[s] for s in part]) for part in parts]
    lexical = {j.request: j for j in judge_requests(requests, answer_text, citations, passages, embed)}
    out: list[Judged] = []
    for r, gold in zip(requests, golds, strict=True):
        w = weights if r.gold else {}
        scores = [max(soft_recall(vectors[g], wv, w) for g in gold) for wv in window_vectors]
        best = max(range(len(windows)), key=lambda i: (round(scores[i], 6), -i), default=None)
        covered = scores[best] if best is not None else 0.0
        against = "gold" if r.gold else "the request's own words (no gold material)"
        # Soft recall scores a claim and the claim negated nearly alike, and keeps the sentence whose context is
        # closest to the gold's: an answer that states both would read consistent. So what the lexical judge reads as
        # contradicting (its excerpt's check, or a sentence making the claim changed) is contradicting here too.
        lex = lexical[r.id]
        if lex.verdict == "contradicts":
            out.append(lex.model_copy(update={
                "coverage": _share(covered, SOFT_ADDRESS_RECALL),
                "reason": f"soft-covers {shown(covered, SOFT_ADDRESS_RECALL)} of gold, and contradicts it whatever "
                          f"that coverage, by the lexical reading: {lex.reason}"}))
            continue
        if covered < SOFT_ADDRESS_RECALL:
            out.append(Judged(request=r.id, addressed=False, excerpt="", cited_chunk_ids=[],
                              verdict="not_addressed", coverage=_share(covered, SOFT_ADDRESS_RECALL),
                              reason=f"no answer sentence soft-covers {SOFT_ADDRESS_RECALL:.2f} of {against} "
                                     f"(best {compared(covered, SOFT_ADDRESS_RECALL)})"))
            continue
        assert best is not None  # covered >= SOFT_ADDRESS_RECALL > 0: some window scored it
        excerpt = windows[best]
        verdict, reason = _verdict(r, excerpt, f"soft-covers {shown(covered, SOFT_ADDRESS_RECALL)} of {against} "
                                               f"(>= {SOFT_ADDRESS_RECALL:.2f}; BERTScore recall, MiniLM)", embed)
        out.append(Judged(request=r.id, addressed=True, excerpt=excerpt,
                          cited_chunk_ids=passage_citations(parts[best], passages, citations),
                          verdict=verdict, coverage=_share(covered, SOFT_ADDRESS_RECALL), reason=reason))
    return out


def _joined(parts: list[tuple[list[str], np.ndarray]]) -> tuple[list[str], np.ndarray]:
    return [s for stems, _ in parts for s in stems], np.concatenate([v for _, v in parts], axis=0)
