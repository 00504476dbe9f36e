"""Lexical baseline judge: support = content-word recall plus embedding cosine; gold contradiction by a lexical rule.
A floor for LLM judges, not an imitation of one: paraphrases that share few words go unsupported, by design."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np

from rag_ttc_assets.core.extractive import INSUFFICIENT, NOT_IN_EVIDENCE, cosine_matrix
from rag_ttc_assets.core.text import NEGATIONS, content_words, split_sentences, stem, tokens

Embed = Callable[[list[str]], np.ndarray]

# Tuned on pyref sentences (copied, lightly reworded and loosely paraphrased statements against
# their source section and against unrelated sections); see the report that introduced this module.
RECALL_THRESHOLD = 0.7
COSINE_THRESHOLD = 0.6
# A statement this close to a gold sentence is "the same claim" for the contradiction rule ...
GOLD_SAME_CLAIM_COSINE = 0.75
# ... provided the gold sentence also holds most of the statement's words; paraphrases rarely do.
GOLD_SAME_CLAIM_RECALL = 0.6


def shown(x: float, threshold: float) -> str:
    """`x` to two decimals, or to as many more as it takes for the printed number to lie on the same side of
    `threshold` as `x` does (0.4999 is not printed "0.50" beside a threshold of 0.50 it did not reach)."""
    for digits in (2, 3, 4, 6, 9, 12):
        text = f"{x:.{digits}f}"
        if (float(text) >= threshold) == (x >= threshold):
            return text
    return repr(float(x))


def compared(x: float, threshold: float) -> str:
    """`x` against `threshold` as a verdict uses it: "0.75 >= 0.60" or "0.43 < 0.60" (shown)."""
    return f"{shown(x, threshold)} {'>=' if x >= threshold else '<'} {threshold:.2f}"


_NUMBERING = re.compile(r"^\s*(?:\(?\d{1,3}[.)]|\(?[a-z][.)](?=\s)|[*\u2022-])\s*", re.IGNORECASE)
_BOILERPLATE = re.compile(
    r"(evidence (does not|doesn't) say|evidence is insufficient|insufficient (evidence|information)"
    r"|not enough (evidence|information)|(cannot|can't|unable to) (answer|determine|tell)"
    r"|i (do not|don't) know|no (relevant )?(evidence|information))",
    re.IGNORECASE,
)
_ABSTENTIONS = {NOT_IN_EVIDENCE, INSUFFICIENT}
_NUMBER_WORDS = {
    "two": "2", "three": "3", "four": "4", "five": "5",
    "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10", "once": "1", "twice": "2",
}  # fmt: skip
_QUOTED = re.compile(r"[\"'`\u201c\u2018]([^\"'`\u201d\u2019]{1,60})[\"'`\u201d\u2019]")


def extract_statements(answer: str) -> list[str]:
    """Sentences of an answer, without list numbering and without abstention boilerplate."""
    statements = []
    for sentence in split_sentences(answer):
        text = _NUMBERING.sub("", sentence, count=1).strip()
        if not text or text in _ABSTENTIONS or _BOILERPLATE.search(text):
            continue
        if not content_words(text):
            continue
        statements.append(text)
    return statements


@dataclass(frozen=True)
class _Unit:
    """A sentence of one evidence block, or two adjacent ones (a statement may fuse them)."""

    block: int  # 1-based evidence/gold number
    text: str
    pair: bool = False


def _units(blocks: Sequence[str]) -> list[_Unit]:
    units = []
    for n, block in enumerate(blocks, start=1):
        sentences = split_sentences(block)
        units.extend(_Unit(n, s) for s in sentences)
        units.extend(_Unit(n, f"{a} {b}", pair=True) for a, b in zip(sentences, sentences[1:], strict=False))
    return units


def recall(statement: str, sentence: str) -> float:
    """Share of the statement's content words (stemmed) that the sentence contains."""
    wanted = {stem(w) for w in content_words(statement)}
    if not wanted:
        return 0.0
    return len(wanted & {stem(w) for w in content_words(sentence)}) / len(wanted)


# How many tokens after a negation cue count as negated ("is not *evaluated*", "emits no *code*").
NEGATION_WINDOW = 3


def _negated_terms(text: str) -> tuple[set[str], set[str]]:
    """(negated stems, plainly stated stems). "n't" counts as "not", so "doesn't" and "does not" agree."""
    words = tokens(re.sub(r"n't\b", " not", text, flags=re.IGNORECASE))
    negated: set[str] = set()
    for k, word in enumerate(words):
        if word.lower() in NEGATIONS:
            negated |= {stem(w) for t in words[k + 1 : k + 1 + NEGATION_WINDOW] for w in content_words(t)}
    return negated, {stem(w) for w in content_words(text)} - negated


def _negation_clash(a: str, b: str) -> set[str]:
    """Words one text negates and the other states plainly."""
    neg_a, plain_a = _negated_terms(a)
    neg_b, plain_b = _negated_terms(b)
    return (neg_a & plain_b) | (neg_b & plain_a)


def _numbers(text: str) -> set[str]:
    found = set(re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.]*\w)", text))
    found |= {_NUMBER_WORDS[w] for w in (t.lower() for t in tokens(text)) if w in _NUMBER_WORDS}
    return found


def _missing_numbers(statement: str, sentence: str) -> str | None:
    # A number the evidence never states is unsupported even when every other word matches.
    missing = _numbers(statement) - _numbers(sentence)
    return f"states {', '.join(sorted(missing))}, which the sentence does not" if missing else None


def _content_tokens(text: str) -> list[str]:
    """content_words in original case (negations and numbers are compared by their own rules)."""
    return [t for t in tokens(text) if content_words(t) and not t[0].isdigit()]


_LITERALS = frozenset({"true", "false", "none"})


def _is_identifier(word: str) -> bool:
    return "_" in word or any(c.isupper() for c in word[1:]) or word.lower() in _LITERALS


def swapped_identifier(statement: str, sentence: str) -> tuple[str, str] | None:
    """(statement's, sentence's) names when the statement is the sentence (or a part of it) with exactly
    one identifier, literal or quoted name replaced."""
    a, b = _content_tokens(statement), _content_tokens(sentence)
    quoted = {q.strip() for q in _QUOTED.findall(statement) + _QUOTED.findall(sentence)}
    matcher = SequenceMatcher(a=[t.lower() for t in a], b=[t.lower() for t in b], autojunk=False)
    ops = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    replaced = [op for op in ops if op[0] == "replace"]
    # Words only the sentence has are fine (the statement may quote part of it); anything else is a rewrite.
    if len(replaced) != 1 or any(op[0] == "delete" for op in ops):
        return None
    _, i1, i2, j1, j2 = replaced[0]
    if i2 - i1 != 1 or j2 - j1 != 1:
        return None
    x, y = a[i1], b[j1]
    if _is_identifier(x) or _is_identifier(y) or x in quoted or y in quoted:
        return x, y
    return None


def conflict(statement: str, sentence: str) -> str | None:
    """Why two near-identical texts disagree (negation, number, identifier), or None."""
    flipped = _negation_clash(statement, sentence)
    if flipped:
        return f"differs in negation of {', '.join(sorted(flipped))}"
    a, b = _numbers(statement), _numbers(sentence)
    if a and b and a != b:
        return f"differs in number ({', '.join(sorted(a))} vs {', '.join(sorted(b))})"
    swap = swapped_identifier(statement, sentence)
    if swap:
        return f"differs in name ({swap[0]} vs {swap[1]})"
    return None


def _support_verdicts(
    statements: Sequence[str],
    blocks: Sequence[str],
    embed: Embed,
    recall_threshold: float,
    cosine_threshold: float,
    label: str,
) -> tuple[list[dict], np.ndarray | None, list[_Unit]]:
    """One verdict per statement, plus the statement-by-unit cosine matrix for callers that need more."""
    units = _units(blocks)
    if not statements:
        return [], None, units
    if not units:
        verdicts = [
            {"statement": n, "text": s, "supported": False, "evidence": [], "reason": f"no {label} to check against"}
            for n, s in enumerate(statements, start=1)
        ]
        return verdicts, None, units
    vectors = embed(list(statements) + [u.text for u in units])
    cosine = cosine_matrix(vectors[: len(statements)], vectors[len(statements) :])
    verdicts = []
    for i, statement in enumerate(statements):
        recalls = np.array([recall(statement, u.text) for u in units])
        # Support needs both signals, so units are ranked by the weaker one relative to its threshold.
        strength = np.minimum(recalls / recall_threshold, cosine[i] / cosine_threshold)
        ranked = [int(j) for j in np.argsort(-strength, kind="stable")]
        covering = [j for j in ranked if recalls[j] >= recall_threshold and cosine[i, j] >= cosine_threshold]
        clashes = {j: conflict(statement, units[j].text) or _missing_numbers(statement, units[j].text)
                   for j in covering}
        agreeing = [j for j in covering if clashes[j] is None]
        best = agreeing[0] if agreeing else (covering[0] if covering else ranked[0])
        # Each number beside its threshold, compared as the verdict compares it: supported takes both at or above.
        measured = (f"content-word recall {compared(recalls[best], recall_threshold)}, "
                    f"cosine {compared(cosine[i, best], cosine_threshold)}")
        if agreeing:
            reason = f"{measured} against {label} {units[best].block}"
        elif covering:
            reason = f"{measured} against {label} {units[best].block}, but {clashes[best]}"
        else:
            reason = (f"no {label} sentence (or adjacent pair) reaches both content-word recall "
                      f"{recall_threshold:.2f} and cosine {cosine_threshold:.2f}; the nearest, {label} "
                      f"{units[best].block}: {measured}")
        verdicts.append(
            {
                "statement": i + 1,
                "text": statement,
                "supported": bool(agreeing),
                "evidence": sorted({units[j].block for j in agreeing}),
                "reason": reason,
            }
        )
    return verdicts, cosine, units


def answer_relevance(question: str, statements: Sequence[str], embed: Embed) -> float:
    """Mean cosine between the question and each statement, clipped to [0, 1]; 0 with no statements."""
    if not question or not statements:
        return 0.0
    vectors = embed([question, *statements])
    mean = float(cosine_matrix(vectors[:1], vectors[1:]).mean())
    return round(min(max(mean, 0.0), 1.0), 4)


def verify_statements(
    statements: Sequence[str],
    evidence: Sequence[str],
    embed: Embed,
    question: str = "",
    recall_threshold: float = RECALL_THRESHOLD,
    cosine_threshold: float = COSINE_THRESHOLD,
) -> tuple[list[dict], float]:
    """(verdicts, answer_relevance): a statement is supported when one evidence sentence (or adjacent pair)
    holds enough of its content words *and* is close in embedding space, without a negation/number/name clash."""
    verdicts, _, _ = _support_verdicts(statements, evidence, embed, recall_threshold, cosine_threshold, "evidence")
    return verdicts, answer_relevance(question, statements, embed)


def verify_against_gold(
    statements: Sequence[str],
    gold_quotes: Sequence[str],
    embed: Embed,
    recall_threshold: float = RECALL_THRESHOLD,
    cosine_threshold: float = COSINE_THRESHOLD,
) -> list[dict]:
    """Verdicts against gold quotes, each with `contradicts_gold`.

    Baseline rule, lexical and deterministic: a statement contradicts the gold when some gold sentence
    makes the same claim (cosine >= GOLD_SAME_CLAIM_COSINE and content-word recall >= GOLD_SAME_CLAIM_RECALL)
    yet one of them negates a word the other states, their numbers differ, or exactly one identifier,
    literal (True/False/None) or quoted name is swapped. It misses contradictions phrased differently
    (antonyms, reordered clauses) and can fire on a paraphrase that moves a "not" onto a shared word.
    """
    verdicts, cosine, units = _support_verdicts(
        statements, gold_quotes, embed, recall_threshold, cosine_threshold, "gold"
    )
    for i, verdict in enumerate(verdicts):
        verdict["contradicts_gold"] = False
        if cosine is None:
            continue
        # Single sentences only: a pair of sentences is never "the same claim" as one statement.
        for j in np.argsort(-cosine[i], kind="stable"):
            unit = units[int(j)]
            if unit.pair:
                continue
            if cosine[i, j] < GOLD_SAME_CLAIM_COSINE:
                break
            same = recall(verdict["text"], unit.text)
            if same < GOLD_SAME_CLAIM_RECALL:
                continue
            clash = conflict(verdict["text"], unit.text)
            if clash:
                verdict["contradicts_gold"] = True
                verdict["supported"] = False
                verdict["evidence"] = [unit.block]
                verdict["reason"] = (f"contradicts gold {unit.block}: {clash} (the same claim: cosine "
                                     f"{compared(cosine[i, j], GOLD_SAME_CLAIM_COSINE)}, content-word recall "
                                     f"{compared(same, GOLD_SAME_CLAIM_RECALL)})")
                break
    return verdicts
