"""Lexical baseline judge: support = content-word recall plus embedding cosine; gold contradiction by a lexical rule.
A floor for LLM judges, not an imitation of one: paraphrases that share few words go unsupported, by design."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

import numpy as np

from rag_ttc_assets.core.extractive import INSUFFICIENT, NOT_IN_EVIDENCE, cosine_matrix
from rag_ttc_assets.core.text import (DATE_TOKEN, NEGATIONS, content_words, normal_stems, normalize, split_sentences,
                                      stem, tokens)

Embed = Callable[[list[str]], np.ndarray]

# Tuned on pyref sentences (copied, lightly reworded and loosely paraphrased statements against
# their source section and against unrelated sections); see the report that introduced this module.
RECALL_THRESHOLD = 0.7
COSINE_THRESHOLD = 0.6
# A statement this close to a gold sentence is "the same claim" for the contradiction rule ...
GOLD_SAME_CLAIM_COSINE = 0.75
# ... provided the gold sentence also holds most of the statement's words; paraphrases rarely do.
GOLD_SAME_CLAIM_RECALL = 0.6


def shown(x: float, threshold: float, digits: int = 2) -> str:
    """`x` to two decimals (`digits`), or to as many more as it takes for the printed number to lie on the same side
    of `threshold` as `x` does (0.4999 is not printed "0.50" beside a threshold of 0.50 it did not reach)."""
    return shown_beside(x, (threshold,), digits)


def shown_beside(x: float, thresholds: Sequence[float], digits: int = 2) -> str:
    """`x` to `digits` decimals or as many more as it takes to lie on the same side of every one of `thresholds`
    as `x` does: where the threshold that decided is not at hand (a juror's coverage beside its verdict)."""
    for n in sorted({digits, 3, 4, 6, 9, 12}):
        if n < digits:
            continue
        text = f"{x:.{n}f}"
        if all((float(text) >= t) == (x >= t) for t in thresholds):
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
# Number words are digits once normalised (core.text.normalize); these two are counts too.
_NUMBER_WORDS = {"once": "1", "twice": "2"}
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


# A clause boundary inside a sentence: a comma, semicolon or dash before a participle ("..., stretching 6,650 km") or a
# conjunction that opens a clause of its own ("..., as studies suggest ...", "..., but ...").
_CLAUSE = re.compile(r"(?:,|;|\s[\u2013\u2014-])\s+(?=(?:(?:[a-z]+ly\s+)?[a-z]+ing|as|while|whereas|although|though|"
                     r"but|which|so|yet|because|since|whereby)\b)")
# A clause shorter than this (content words) stays with the one before it: too little to check on its own.
MIN_CLAUSE_WORDS = 3


def split_clauses(sentence: str) -> list[str]:
    """A sentence's clauses (_CLAUSE), each of at least MIN_CLAUSE_WORDS content words (a shorter one joins the one
    before it; a short first one, the next). "The X is the Nile, stretching 6,650 km, flowing into the sea" is three
    claims, each checked on its own, not one that fails whole for one unsupported detail."""
    pieces = [p.strip() for p in _CLAUSE.split(sentence) if p.strip()]
    clauses: list[str] = []
    for piece in pieces:
        if clauses and (len(content_words(piece)) < MIN_CLAUSE_WORDS
                        or len(content_words(clauses[-1])) < MIN_CLAUSE_WORDS):
            clauses[-1] = f"{clauses[-1]}, {piece}"
        else:
            clauses.append(piece)
    return clauses


def extract_claims(answer: str) -> list[str]:
    """The statement judge's statements: extract_statements' sentences, each split into its clauses
    (split_clauses)."""
    return [clause for sentence in extract_statements(answer) for clause in split_clauses(sentence)]


@dataclass(frozen=True)
class _Unit:
    """A sentence of one evidence block, or two adjacent ones (a statement may fuse them)."""

    block: int  # 1-based evidence/gold number
    text: str
    pair: bool = False


def _units(blocks: Sequence[str]) -> list[_Unit]:
    units: list[_Unit] = []
    for n, block in enumerate(blocks, start=1):
        sentences = split_sentences(block)
        units.extend(_Unit(n, s) for s in sentences)
        units.extend(_Unit(n, f"{a} {b}", pair=True) for a, b in zip(sentences, sentences[1:], strict=False))
    return units


def recall(statement: str, sentence: str) -> float:
    """Share of the statement's content words (stemmed, names, numbers, dates and units normalised: core.text.
    normalize) that the sentence contains."""
    wanted = normal_stems(statement)
    if not wanted:
        return 0.0
    return len(wanted & normal_stems(sentence)) / len(wanted)


# How many tokens after a negation cue count as negated ("is not *evaluated*", "emits no *code*").
NEGATION_WINDOW = 3


def _negated_terms(text: str) -> tuple[set[str], set[str]]:
    """(negated stems, plainly stated stems). "n't" counts as "not", so "doesn't" and "does not" agree."""
    text = normalize(re.sub(r"n't\b", " not", text, flags=re.IGNORECASE))
    words = tokens(text)
    negated: set[str] = set()
    for k, word in enumerate(words):
        if word.lower() in NEGATIONS:
            negated |= {stem(w) for t in words[k + 1 : k + 1 + NEGATION_WINDOW] for w in content_words(t)}
    return negated, set(normal_stems(text)) - negated


def _negation_clash(a: str, b: str) -> set[str]:
    """Words one text negates and the other states plainly."""
    neg_a, plain_a = _negated_terms(a)
    neg_b, plain_b = _negated_terms(b)
    return (neg_a & plain_b) | (neg_b & plain_a)


def _numbers(text: str) -> list[str]:
    """The numbers and dates a text states, repeats kept, in their canonical spelling (core.text.normalize): "1,000",
    "1000" and "one thousand" are 1000; "March 3, 2020" is 2020-03-03. A number inside a name ("v2", "3.14.1") is
    none."""
    text = normalize(text)
    dates = DATE_TOKEN.findall(text)
    text = DATE_TOKEN.sub(" ", text)
    found = re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.]*\w)", text)
    found += [_NUMBER_WORDS[w] for w in (t.lower() for t in tokens(text)) if w in _NUMBER_WORDS]
    return sorted(found + dates)


def _holds(held: str, number: str) -> bool:
    """Whether `held` states `number`: the same, or a fuller date (2020 and 2020-03 are in 2020-03-03; --03-03 is
    its day and month)."""
    if held == number:
        return True
    return bool(DATE_TOKEN.fullmatch(held)) and (held.startswith(number + "-")
                                                 or (number.startswith("--") and held.endswith(number[1:])))


def _lacking(a: list[str], b: list[str]) -> set[str]:
    """The numbers of `a` that `b` does not state, each of b's stating one of a's ("x + 1 = x + 2" states a 1 that
    "x + 1 = x + 1" does, and a 2 it does not)."""
    pool = list(b)
    missing = set()
    for x in sorted(a, key=lambda n: n not in pool):  # exact matches first, then dates that hold one
        j = next((k for k, y in enumerate(pool) if _holds(y, x)), None)
        if j is None:
            missing.add(x)
        else:
            pool.pop(j)
    return missing


def _missing_numbers(statement: str, sentence: str) -> str | None:
    # A number the evidence never states is unsupported even when every other word matches.
    missing = _lacking(_numbers(statement), _numbers(sentence))
    return f"states {', '.join(sorted(missing))}, which the sentence does not" if missing else None


def _content_tokens(text: str) -> list[str]:
    """content_words in original case (negations and numbers are compared by their own rules)."""
    return [t for t in tokens(text) if content_words(t) and not t[0].isdigit()]


_LITERALS = frozenset({"true", "false", "none"})


def _is_identifier(word: str) -> bool:
    return "_" in word or any(c.isupper() for c in word[1:]) or word.lower() in _LITERALS


def swapped_identifier(statement: str, sentence: str) -> tuple[str, str] | None:
    """(statement's, sentence's) names when the statement is the sentence (or a part of it) with exactly
    one identifier, literal or quoted name replaced (names compared normalised: "U.S." is "US")."""
    statement, sentence = normalize(statement), normalize(sentence)
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
    """Why two near-identical texts disagree (negation, number, identifier), or None. A number is changed when each
    states one the other does not, both normalised (core.text.normalize: "1,000" is "1000"); one that only adds a
    number, or a fuller date, changes none."""
    flipped = _negation_clash(statement, sentence)
    if flipped:
        return f"differs in negation of {', '.join(sorted(flipped))}"
    a, b = _numbers(statement), _numbers(sentence)
    if _lacking(a, b) and _lacking(b, a):
        return f"differs in number ({', '.join(sorted(set(a)))} vs {', '.join(sorted(set(b)))})"
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
) -> tuple[list[dict[str, Any]], np.ndarray | None, list[_Unit]]:
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
) -> tuple[list[dict[str, Any]], float]:
    """(verdicts, answer_relevance): a statement is supported when one evidence sentence (or adjacent pair)
    holds enough of its content words *and* is close in embedding space, without a negation/number/name clash."""
    verdicts, _, _ = _support_verdicts(statements, evidence, embed, recall_threshold, cosine_threshold, "evidence")
    return verdicts, answer_relevance(question, statements, embed)


_WORD_RUN = re.compile(r"[^\W_]+")


def _verbatim_form(text: str) -> str:
    """`text` lower-cased, each run of non-word characters one space, padded: what verbatim containment compares."""
    words = _WORD_RUN.findall(normalize(text).lower())
    return " " + " ".join(words) + " "


def quoted_from_gold(statement: str, gold_forms: Sequence[str]) -> bool:
    """Whether `statement` is a gold quote's own words (_verbatim_form of one of `gold_forms` contains it): the gold
    states it, so it contradicts no gold, whatever another gold sentence near it says ("... may only occur nested in
    a loop" beside "... not nested in a loop" in the same gold is the gold's own nuance, not the answer's error)."""
    form = _verbatim_form(statement)
    return bool(content_words(statement)) and form.strip() != "" and any(form in g for g in gold_forms)


def verify_against_gold(
    statements: Sequence[str],
    gold_quotes: Sequence[str],
    embed: Embed,
    recall_threshold: float = RECALL_THRESHOLD,
    cosine_threshold: float = COSINE_THRESHOLD,
) -> list[dict[str, Any]]:
    """Verdicts against gold quotes, each with `contradicts_gold`.

    Baseline rule, lexical and deterministic: a statement contradicts the gold when some gold sentence
    makes the same claim (cosine >= GOLD_SAME_CLAIM_COSINE and content-word recall >= GOLD_SAME_CLAIM_RECALL)
    yet one of them negates a word the other states, each states a number or date the other does not (normalised:
    "1,000" is "1000", "March 3, 2020" is "2020-03-03"), or exactly one identifier, literal (True/False/None) or
    quoted name is swapped. A statement in a gold quote's own words (quoted_from_gold) contradicts none: since rules
    /5, as a clause of such a quote matched another gold sentence. It misses contradictions phrased differently
    (antonyms, reordered clauses) and can fire on a paraphrase that moves a "not" onto a shared word.
    """
    verdicts, cosine, units = _support_verdicts(
        statements, gold_quotes, embed, recall_threshold, cosine_threshold, "gold"
    )
    golds = [_verbatim_form(g) for g in gold_quotes]
    for i, verdict in enumerate(verdicts):
        verdict["contradicts_gold"] = False
        if cosine is None or quoted_from_gold(verdict["text"], golds):
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
