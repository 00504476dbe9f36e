"""The learned juror (`local/learned`): an offline request judge whose verdict is a small logistic regression over
what the other offline jurors measure, fitted on people's per-request labels (scripts/train_learned_juror.py).

Per request, its features (FEATURES, in this order), each computed by the offline jurors' own functions
(judging.request_judge; their rules are not changed here, and a change of theirs is a refit: rerun the script):

  lexical_coverage    the lexical judge's coverage (judge_requests: the best answer sentence or pair)
  whole_coverage      the coverage juror's (judge_requests_whole: the whole answer)
  bertscore_recall    the BERTScore juror's (judge_requests_soft: soft recall of the best window)
  contradicts         1 when the lexical judge reads the answer as making the request's claim changed (a negation,
                      number or name; its `contradicts` verdict), else 0
  numbers_found       the share of the gold material's numbers (digits or number words, lexical_judge's reading) the
                      answer states; 1 when the gold states none
  names_found         the share of the gold material's names (capitalised words not opening a sentence) the answer
                      holds, case-folded; 1 when the gold names none
  negation_mismatch   1 when the lexical judge's best window negates a gold word the gold states plainly, or the
                      reverse (lexical_judge's negation window), else 0
  request_words       log(1 + the gold material's content words)
  answer_words        log(1 + the answer's content words)

The model (a LearnedJuror, parsed here from a versioned JSON file that adapters/learned_juror.py reads: the one
shipped in the package, adapters/learned_juror.json, or $RAG_TTC_LEARNED_JUROR): each feature
standardised by the training set's mean and scale, a logistic regression's coefficients and intercept, and a
threshold on its probability chosen on the training set. A request is addressed when the probability reaches the
threshold; `coverage` is the probability (so the graded reading of completeness is the mean probability). What the
lexical judge reads as contradicting is `contradicts` here too, whatever the probability, as for the BERTScore juror
(a claim made with a word changed addresses the request wrongly). The parameters file's digest is part of the
instrument (a refit is another instrument) and of the replies' cache key.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rag_ttc_assets.judging.statement_judge import RequestJudgment
from rag_ttc_assets.judging.lexical_judge import _negation_clash, _numbers, compared
from rag_ttc_assets.judging.request_judge import (Embed, Judged, LabelledRequest, WordVectors, _verdict, judge_requests,
                                                  judge_requests_soft, judge_requests_whole)
from rag_ttc_assets.core.text import content_words, split_sentences, tokens

MODEL = "local/learned"
FORMAT = "learned-juror/1"  # the parameters file's layout
FEATURES = ("lexical_coverage", "whole_coverage", "bertscore_recall", "contradicts", "numbers_found", "names_found",
            "negation_mismatch", "request_words", "answer_words")


Jurors = tuple[list[RequestJudgment], list[RequestJudgment], list[RequestJudgment]]


class LearnedJurorError(ValueError):
    """A parameters file that cannot be used: the message names the file and the field."""


@dataclass(frozen=True)
class LearnedJuror:
    """A fitted juror: features standardised by (mean, scale), then a logistic regression, then the threshold."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coefficients: tuple[float, ...]
    intercept: float
    threshold: float
    digest: str  # sha256 of the file's bytes
    file: str  # the file's name, for messages and the instrument
    meta: dict[str, Any]  # training set, data commit, rules version, ...

    def probabilities(self, rows: NDArray[np.float64]) -> NDArray[np.float64]:
        """P(addressed) per row of a (n, len(features)) matrix."""
        z = (np.asarray(rows, dtype=float) - np.array(self.mean)) / np.array(self.scale)
        logit = z @ np.array(self.coefficients) + self.intercept
        p: NDArray[np.float64] = 1.0 / (1.0 + np.exp(-logit))
        return p

    def instrument(self) -> dict[str, Any]:
        """What identifies the fitted juror: its file's digest and what it was fitted on."""
        return {"parameters": self.file, "digest": self.digest, "format": FORMAT,
                **{k: self.meta[k] for k in ("version", "trained_on", "rules") if k in self.meta}}


def _numbers_of(xs: Any, path: Path, field: str, n: int) -> tuple[float, ...]:
    if not isinstance(xs, list) or len(xs) != n:
        raise LearnedJurorError(f"{path}: field '{field}': expected a list of {n} numbers (one per feature), got "
                                f"{_kind(xs)}")
    for i, x in enumerate(xs):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            raise LearnedJurorError(f"{path}: field '{field}[{i}]': expected a finite number, got {x!r}")
    return tuple(float(x) for x in xs)


def _kind(x: Any) -> str:
    return f"a list of {len(x)}" if isinstance(x, list) else repr(x)


def parse_parameters(raw: bytes, path: Path) -> LearnedJuror:
    """The parameters file's contents checked: every problem a LearnedJurorError naming the file and the field."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise LearnedJurorError(f"{path}: not a JSON parameters file of the learned juror ({e})") from None
    if not isinstance(data, dict):
        raise LearnedJurorError(f"{path}: expected a JSON object, got {type(data).__name__}")
    if data.get("format") != FORMAT:
        raise LearnedJurorError(f"{path}: field 'format': expected {FORMAT!r}, got {data.get('format')!r}")
    names = data.get("features")
    if names != list(FEATURES):
        raise LearnedJurorError(f"{path}: field 'features': expected {list(FEATURES)} (this version's features, in "
                                f"order), got {names!r}; refit with scripts/train_learned_juror.py")
    n = len(FEATURES)
    scaler = data.get("scaler")
    if not isinstance(scaler, dict):
        raise LearnedJurorError(f"{path}: field 'scaler': expected an object with 'mean' and 'scale', got {scaler!r}")
    mean = _numbers_of(scaler.get("mean"), path, "scaler.mean", n)
    scale = _numbers_of(scaler.get("scale"), path, "scaler.scale", n)
    for i, s in enumerate(scale):
        if s <= 0:
            raise LearnedJurorError(f"{path}: field 'scaler.scale[{i}]': expected a positive number, got {s!r}")
    coefficients = _numbers_of(data.get("coefficients"), path, "coefficients", n)
    intercept = data.get("intercept")
    if isinstance(intercept, bool) or not isinstance(intercept, (int, float)) or not math.isfinite(intercept):
        raise LearnedJurorError(f"{path}: field 'intercept': expected a finite number, got {intercept!r}")
    threshold = data.get("threshold")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold < 1:
        raise LearnedJurorError(f"{path}: field 'threshold': expected a probability strictly between 0 and 1, got "
                                f"{threshold!r}")
    meta = {k: v for k, v in data.items() if k not in ("format", "features", "scaler", "coefficients", "intercept",
                                                        "threshold")}
    return LearnedJuror(tuple(names), mean, scale, coefficients, float(intercept), float(threshold),
                        "sha256:" + hashlib.sha256(raw).hexdigest(), path.name, meta)


_NAME = re.compile(r"^[A-Z][A-Za-z0-9]+$")


def _names(text: str) -> set[str]:
    """Capitalised words that do not open a sentence, case-folded: names, places, months."""
    out = set()
    for s in split_sentences(text):
        words = tokens(s)
        out |= {w.lower() for w in words[1:] if _NAME.match(w) and content_words(w)}
    return out


def _share_found(wanted: set[str], found: set[str]) -> float:
    return len(wanted & found) / len(wanted) if wanted else 1.0


def features(requests: Sequence[LabelledRequest], answer_text: str, citations: list[str],
             passages: Sequence[tuple[str, list[str]]], embed: Embed, word_vectors: WordVectors
             ) -> tuple[np.ndarray, Jurors]:
    """The FEATURES of every request, one row each, with the lexical, coverage and BERTScore jurors' judgments (read
    for the verdict, excerpt and citations: their replies, as RequestJudgment)."""
    lexical = _read(judge_requests(requests, answer_text, citations, passages, embed))
    whole = _read(judge_requests_whole(requests, answer_text, citations, embed))
    soft = _read(judge_requests_soft(requests, answer_text, citations, passages, embed, word_vectors))
    answer_numbers, answer_names = set(_numbers(answer_text)), {w.lower() for w in tokens(answer_text)}
    answer_words = math.log1p(len(content_words(answer_text)))
    rows = []
    for r, lex, wh, so in zip(requests, lexical, whole, soft, strict=True):
        gold = " ".join(r.gold) or r.text
        window = lex.excerpt if lex.addressed else ""
        rows.append([lex.coverage or 0.0, wh.coverage or 0.0, so.coverage or 0.0,
                     float(lex.verdict == "contradicts"),
                     _share_found(set(_numbers(gold)), answer_numbers),
                     _share_found(_names(gold), answer_names),
                     float(bool(window) and bool(_negation_clash(window, gold))),
                     math.log1p(len(content_words(gold))), answer_words])
    return np.array(rows, dtype=float).reshape(len(requests), len(FEATURES)), (lexical, whole, soft)


def _read(replies: list[Judged]) -> list[RequestJudgment]:
    """An offline juror's judgments as their replies read (the judge_requests reply contract)."""
    return [RequestJudgment.model_validate(r.model_dump()) for r in replies]


def _described(x: np.ndarray) -> str:
    """The features a reason shows: the three coverages."""
    return f"lexical {x[0]:.2f}, whole answer {x[1]:.2f}, BERTScore {x[2]:.2f}"


def judge_requests_learned(requests: Sequence[LabelledRequest], answer_text: str, citations: list[str],
                           passages: Sequence[tuple[str, list[str]]], embed: Embed, word_vectors: WordVectors,
                           juror: LearnedJuror) -> list[Judged]:
    """One judgment per request, in the judge_requests reply contract: addressed when the model's probability reaches
    its threshold, `coverage` that probability; the excerpt and citations those of the first juror that found it
    addressed (lexical, BERTScore, whole-answer coverage), else the whole answer; verdict as the lexical judge checks
    an excerpt (contradicts or consistent; without gold material not_verifiable), and contradicts whatever the
    probability where the lexical judge reads the answer as making the request's claim changed."""
    if not requests:
        return []
    x, (lexical, whole, soft) = features(requests, answer_text, citations, passages, embed, word_vectors)
    probability = juror.probabilities(x)
    t = juror.threshold
    out: list[Judged] = []
    for r, row, p, lex, wh, so in zip(requests, x, probability.tolist(), lexical, whole, soft, strict=True):
        measured = f"probability {compared(p, t)} ({_described(row)})"
        if lex.verdict == "contradicts":
            out.append(lex.model_copy(update={
                "coverage": _share(p, t),
                "reason": f"{measured}, and contradicts the gold whatever that probability, by the lexical reading: "
                          f"{lex.reason}"}))
            continue
        if p < t:
            out.append(Judged(request=r.id, addressed=False, excerpt="", cited_chunk_ids=[], verdict="not_addressed",
                              coverage=_share(p, t), reason=f"not addressed: {measured}"))
            continue
        # The excerpt of the first juror that found the request addressed; none did: the whole answer. Checked
        # against the gold as the lexical judge checks its excerpt (request_judge._verdict).
        found = next((j for j in (lex, so, wh) if j.addressed), None)
        excerpt, cites = ((found.excerpt, found.cited_chunk_ids) if found is not None
                          else (answer_text.strip(), list(citations)))
        verdict, reason = _verdict(r, excerpt, f"addressed: {measured}", embed)
        out.append(Judged(request=r.id, addressed=True, excerpt=excerpt, cited_chunk_ids=cites, verdict=verdict,
                          coverage=_share(p, t), reason=reason))
    return out


def _share(p: float, threshold: float) -> float:
    """A probability as the reply carries it: four decimals, on the same side of the threshold as the probability the
    verdict was taken from (0.49996 is not carried as 0.5 beside a threshold of 0.5 it did not reach)."""
    x = round(min(1.0, max(0.0, p)), 4)
    while p < threshold <= x:
        x = round(x - 1e-4, 4)
    while x < threshold <= p:
        x = round(x + 1e-4, 4)
    return x
