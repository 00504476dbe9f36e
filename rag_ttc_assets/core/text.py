"""Plain-text helpers for the offline baselines: sentence splitting, content words, request splitting."""

from __future__ import annotations

import re
from functools import lru_cache

# Abbreviations whose trailing dot never ends a sentence.
_ABBREVIATIONS = frozenset(
    {"e.g.", "i.e.", "cf.", "vs.", "viz.", "approx.", "resp.", "fig.", "no.", "mr.", "mrs.", "dr.", "st."}
)
# "etc." ends a sentence only when the next word is capitalised.
_SOFT_ABBREVIATIONS = frozenset({"etc.", "al."})

# A terminator, any closing quotes/brackets, then whitespace. Dots inside names
# ("object.__init__()", "3.14") are never followed by whitespace, so they never match.
_BOUNDARY = re.compile(r"(?<!\.)[.!?][\"'\u201d\u2019)\]]*\s+")
_PARAGRAPH = re.compile(r"\n\s*\n")
# A line that opens a list item starts a new sentence even if the previous line had no terminator.
_LIST_ITEM_LINE = re.compile(r"\n[ \t]*(?=(?:\d{1,3}[.)]|[*\u2022-])\s)")
_LIST_MARKER = re.compile(r"^\s*(?:\(?\d{1,3}[.)]|\(?[a-z][.)]|[*\u2022-])\s*$", re.IGNORECASE)

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?")

STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because been before being
    below between both but by can could did didn do does doesn doing don down during each either else
    ever few for from further get gets got had hadn has hasn have haven having he her here hers herself
    him himself his how however i if in into is isn it its itself just let like ll may me might more most
    much must mustn my myself need neither nor now of off on once one only or other our ours ourselves out
    over own per please re same shall shan she should shouldn so some such than that the their theirs them
    themselves then there these they this those through thus to too under until up upon us ve very via
    was wasn we were weren what when where whether which while who whom whose why will with within without
    won would wouldn you your yours yourself yourselves
    """.split()
)
# Negation cues; content_words drops them (they say nothing about topic) and the judge compares them separately.
NEGATIONS = frozenset({"not", "no", "never", "cannot", "none", "nothing", "nobody", "nowhere", "neither", "nor"})


def split_sentences(text: str) -> list[str]:
    """Sentences of `text`; blank lines and list items are hard breaks, abbreviations and dotted names are not."""
    sentences: list[str] = []
    for paragraph in _PARAGRAPH.split(text):
        for block in _LIST_ITEM_LINE.split(paragraph):
            flat = " ".join(block.split())
            if flat:
                sentences.extend(_split_flat(flat))
    return sentences


def _split_flat(flat: str) -> list[str]:
    out: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(flat):
        candidate = flat[start : match.end()].strip()
        last_word = candidate.split()[-1].lstrip("(\"'[").rstrip("\"')]\u201d\u2019").lower()
        next_char = flat[match.end() : match.end() + 1]
        if last_word in _ABBREVIATIONS:
            continue
        if last_word in _SOFT_ABBREVIATIONS and not next_char.isupper():
            continue
        if _LIST_MARKER.match(candidate):
            # "1. The context expression..." - the marker belongs to the sentence it numbers.
            continue
        out.append(candidate)
        start = match.end()
    tail = flat[start:].strip()
    if tail:
        out.append(tail)
    return out


def tokens(text: str) -> list[str]:
    """Word and number tokens in original case; "object.__init__()" gives "object", "__init__"."""
    return _TOKEN.findall(text)


def _is_content(word: str) -> bool:
    """A lowercased token is a content word: not a stopword or negation, not a single letter (digits are kept)."""
    return not (word in STOPWORDS or word in NEGATIONS or (len(word) == 1 and not word.isdigit()))


def content_words(text: str) -> list[str]:
    """Lowercased tokens minus stopwords and single letters; identifiers such as __init__ and numbers are kept."""
    return [w for w in (t.lower() for t in tokens(text)) if _is_content(w)]


def content_word_spans(text: str) -> list[tuple[str, int, int]]:
    """Each content word (content_words' rule) as (its stem, start, end) in `text`, in order, repeats kept: where a
    token-embedding model's pieces for the word stand (core.request_judge.judge_requests_soft)."""
    return [(stem(m.group().lower()), m.start(), m.end()) for m in _TOKEN.finditer(text)
            if _is_content(m.group().lower())]


def stem(word: str) -> str:
    """A crude suffix stripper so "raised"/"raises"/"raising" meet; identifiers and numbers are left alone."""
    if "_" in word or any(ch.isdigit() for ch in word) or len(word) <= 3:
        return word
    for suffix in ("ations", "ation", "ingly", "ings", "ing", "ied", "ies", "edly", "ed", "es", "ly", "s"):
        if suffix == "s" and word.endswith("ss"):
            break
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    # "raise"/"rais" and "evaluate"/"evaluat" should coincide.
    return word[:-1] if word.endswith("e") and len(word) >= 4 else word


def stems(text: str) -> set[str]:
    return {stem(w) for w in content_words(text)}


# --- request splitting -------------------------------------------------------------------------

_WH = ("what", "when", "why", "which", "how", "where", "who")
# A bare comma before these is a relative clause as often as a new question ("X, which is ..."), so
# they only split after an explicit "and".
_WH_AFTER_COMMA = ("what", "when", "why", "how")
_AUX = (
    "is", "are", "was", "were", "does", "do", "did", "can", "could", "should", "would", "will", "must",
    "may", "might", "has", "have",
)  # fmt: skip
_IMPERATIVE = ("explain", "describe", "give", "show")
_CONNECTOR = re.compile(r"(,\s+and\s+|,\s+|\s+and\s+)", re.IGNORECASE)


def _opens_clause(rest: str, connector: str) -> bool:
    words = [w.lower() for w in re.findall(r"[A-Za-z_']+", rest)[:4]]
    if len(words) < 2:
        # "..., and why?" is too elliptical to answer on its own; it stays with the request it extends.
        return False
    first = words[0]
    has_and = "and" in connector.lower()
    if has_and:
        return first in _WH or first in _AUX or first in _IMPERATIVE
    # Bare comma: "..., when is Y raised" splits, "..., when called" does not.
    if first in _AUX:
        return True
    return first in _WH_AFTER_COMMA and any(w in _AUX for w in words[1:])


def split_requests(question: str) -> list[str]:
    """The explicit requests of a (possibly multi-part) question, in order; a single question gives one."""
    text = " ".join(question.split())
    if not text:
        return []
    terminator = "?" if "?" in text else "."
    # "?" and ";" always separate requests; the trailing terminator is re-attached per request.
    segments = [s for s in re.split(r"(?<=\?)\s+|;\s+", text) if s.strip()]
    parts = [piece for segment in segments for piece in _split_segment(segment)]
    return [cleaned for part in parts if (cleaned := _clean_request(part, terminator))]


def _split_segment(segment: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for match in _CONNECTOR.finditer(segment):
        if _opens_clause(segment[match.end() :], match.group(0)):
            pieces.append(segment[start : match.start()])
            start = match.end()
    pieces.append(segment[start:])
    return pieces


def _clean_request(part: str, terminator: str) -> str:
    part = part.strip(" ,;")
    part = re.sub(r"^(?:and|also|then)\s+", "", part, flags=re.IGNORECASE).strip()
    if not part:
        return ""
    part = part[0].upper() + part[1:]
    if part[-1] not in "?.!":
        part += terminator
    return part


@lru_cache(maxsize=200_000)
def text_stems(text: str) -> frozenset[str]:
    """The stems of a text's content words, remembered: the same evidence sentences (a preloaded manual above all)
    are scored against every question."""
    return frozenset(stem(w) for w in content_words(text))


def term_recall(terms: set[str], text: str) -> float:
    """Share of `terms` (stems) that occur in `text`."""
    if not terms:
        return 0.0
    return len(terms & text_stems(text)) / len(terms)
