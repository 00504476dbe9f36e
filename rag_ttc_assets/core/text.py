"""Plain-text helpers for the offline baselines: sentence splitting, content words, request splitting."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
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
    token-embedding model's pieces for the word stand (judging.request_judge.judge_requests_soft); the stem is of the
    word's canonical spelling (normal_word), diacritics folded."""
    folded = fold(text)  # same length: offsets into it are offsets into text
    return [(stem(normal_word(m.group())), m.start(), m.end()) for m in _TOKEN.finditer(folded)
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


# --- normalisation for matching (the offline jurors and the statement judge: judging.lexical_judge, judging.request_judge)
# Names, numbers, dates and units are written many ways; the jurors compare one canonical spelling of each, so "1,000",
# "1000" and "one thousand" are one number, "5 km" and "5 kilometres" one length, "3rd March 2020", "March 3, 2020" and
# "2020-03-03" one date, "U.S." and "US" one name, and "café" and "cafe" one word (case was never compared). The rules
# are textual and local: a unit abbreviation only after a number, a month name only capitalised and inside a date.
# Slashed dates (03/04/2020) are left alone: day and month order differ by country.

_MONTHS = {m: i for i, m in enumerate(
    ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
     "December"], start=1)}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["Sept"] = 9
_MONTH = r"(?P<{}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<{}>[0-3]?\d)"
_YEAR = r"(?P<{}>\d{{4}})"
_DATES = [
    re.compile(r"(?<![\w-])" + _YEAR.format("y") + r"-(?P<m>[01]?\d)-(?P<d>[0-3]?\d)(?![\w-])"),
    # 3 March 2020, 3 of March, 2020 / March 3, 2020 (ordinals are stripped before)
    re.compile(r"\b" + _DAY.format("d") + r"\s+(?:of\s+)?" + _MONTH.format("m") + r",?\s+" + _YEAR.format("y")
               + r"\b"),
    re.compile(r"\b" + _MONTH.format("m") + r"\s+" + _DAY.format("d") + r",?\s+" + _YEAR.format("y") + r"\b"),
    re.compile(r"\b" + _MONTH.format("m") + r",?\s+" + _YEAR.format("y") + r"\b"),
    re.compile(r"\b" + _DAY.format("d") + r"\s+(?:of\s+)?" + _MONTH.format("m") + r"\b"),
    re.compile(r"\b" + _MONTH.format("m") + r"\s+" + _DAY.format("d") + r"\b(?!\s*(?:,\s*)?\d)"),
]
# The canonical date: 2020-03-03, 2020-03 (month and year), --03-03 (day and month), ISO 8601's forms.
DATE_TOKEN = re.compile(r"\d{4}-\d{2}(?:-\d{2})?|--\d{2}-\d{2}")

# Full spellings, anywhere; singular and plural, British and American: one canonical word.
_UNIT_WORDS: list[tuple[str, str | Callable[[re.Match[str]], str]]] = [
    (r"(kilo|centi|milli|nano|micro)?met(?:er|re)s?", lambda m: (m.group(1) or "").lower() + "metre"),
    (r"(milli)?lit(?:er|re)s?", lambda m: (m.group(1) or "").lower() + "litre"),
    (r"(kilo|milli)?grammes?|(kilo|milli)?grams?", lambda m: (m.group(1) or m.group(2) or "").lower() + "gram"),
    (r"miles?", "mile"), (r"feet|foot", "foot"), (r"inch(?:es)?", "inch"), (r"pounds?", "pound"),
    (r"ounces?", "ounce"), (r"hours?", "hour"), (r"minutes?", "minute"), (r"seconds?", "second"),
    (r"milliseconds?", "millisecond"), (r"per\s+cent|percent", "percent"), (r"degrees?", "degree"),
    (r"(kilo|mega|giga|tera)bytes?", lambda m: m.group(1).lower() + "byte"), (r"dollars?", "dollar"),
    (r"euros?", "euro"),
]
_UNIT_WORD = [(re.compile(r"\b" + p + r"\b", re.IGNORECASE), r) for p, r in _UNIT_WORDS]
_UNIT_ABBREVIATIONS = {  # only after a number: "5 m" is five metres, "m" alone is a letter ("1990s" is a decade)
    "km": "kilometre", "m": "metre", "cm": "centimetre", "mm": "millimetre", "nm": "nanometre", "mi": "mile",
    "ft": "foot", "kg": "kilogram", "g": "gram", "mg": "milligram", "lb": "pound", "lbs": "pound", "oz": "ounce",
    "l": "litre", "L": "litre", "ml": "millilitre", "mL": "millilitre", "h": "hour", "hr": "hour", "hrs": "hour",
    "min": "minute", "mins": "minute", "sec": "second", "secs": "second", "ms": "millisecond",
    "km/h": "kilometre per hour", "kph": "kilometre per hour", "mph": "mile per hour",
    "°C": "degree celsius", "ºC": "degree celsius", "°F": "degree fahrenheit", "ºF": "degree fahrenheit",
    "KB": "kilobyte", "kB": "kilobyte", "MB": "megabyte", "GB": "gigabyte", "TB": "terabyte", "%": "percent",
}
_UNIT_AFTER_NUMBER = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?)\s?("
    + "|".join(re.escape(u) for u in sorted(_UNIT_ABBREVIATIONS, key=len, reverse=True)) + r")(?![\w/])")
_CURRENCY = re.compile(r"([$€£])\s?(\d+(?:\.\d+)?)")
_CURRENCY_NAMES = {"$": "dollar", "€": "euro", "£": "pound"}
# Thousands separators: 1,000 and 12,345,678 (groups of exactly three digits).
_GROUPED = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d]|,\d)")
_ORDINAL = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b", re.IGNORECASE)
_SMALL = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), start=2)}
_SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_NUMBER_WORD = "|".join([*_SMALL, *_TENS, *_SCALES])
# A run of number words ("one thousand", "twenty-one", "two hundred and five"), or a number before a scale
# ("2.5 million", "a thousand").
_NUMBER_RUN = re.compile(
    r"\b(?:(?:a|\d+(?:\.\d+)?)\s+(?=(?:hundred|thousand|million|billion)\b))?(?:" + _NUMBER_WORD
    + r")(?:(?:\s+and\s+|\s+|-)(?:" + _NUMBER_WORD + r"))*\b", re.IGNORECASE)
# Dotted capitals are one name (U.S. = US, U.K. = UK); a few names have one canonical spelling.
_DOTTED = re.compile(r"\b((?:[A-Z]\.){2,})(?=\W|$)")
_ALIASES = [(re.compile(p), r) for p, r in [
    (r"\bUnited States of America\b|\bUnited States\b|\bUSA\b|\bUS\b", "USA"),
    (r"\bUnited Kingdom\b|\bUK\b", "UK"), (r"\bEuropean Union\b|\bEU\b", "EU"), (r"\bUnited Nations\b|\bUN\b", "UN"),
]]


def fold(text: str) -> str:
    """`text` without diacritics, character for character (same length, so offsets into it hold for `text`):
    "Zürich" -> "Zurich". A character that does not fold to one character is kept."""
    out = []
    for ch in text:
        if ch.isascii():
            out.append(ch)
            continue
        bare = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
        out.append(bare if len(bare) == 1 else ch)
    return "".join(out)


def _canonical_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.6f}".rstrip("0").rstrip(".")


def _number_run(match: re.Match[str]) -> str:
    words = [w.lower() for w in re.split(r"\s+and\s+|\s+|-", match.group(0)) if w]
    if len(words) == 1 and words[0] == "one":
        return match.group(0)  # "one" alone is as often a pronoun ("one of the rivers") as a number
    total, current = 0.0, 0.0
    for w in words:
        if w == "a":
            current = 1
        elif w in _SMALL:
            current += _SMALL[w]
        elif w in _TENS:
            current += _TENS[w]
        elif w in _SCALES:
            scale = _SCALES[w]
            if scale == 100:
                current = (current or 1) * 100
            else:
                total += (current or 1) * scale
                current = 0
        else:
            current += float(w)
    return _canonical_number(total + current)


def _date(match: re.Match[str]) -> str:
    groups = match.groupdict()
    month = groups.get("m")
    m = int(month) if month and month.isdigit() else _MONTHS.get(month) if month else None
    d = int(groups["d"]) if groups.get("d") else None
    if not m or not 1 <= m <= 12 or (d is not None and not 1 <= d <= 31):
        return match.group(0)
    if groups.get("y"):
        return f"{groups['y']}-{m:02d}" + (f"-{d:02d}" if d is not None else "")
    return f"--{m:02d}-{d:02d}"


@lru_cache(maxsize=200_000)
def normalize(text: str) -> str:
    """`text` with names, numbers, dates and units in one canonical spelling (see above), for matching only: the
    jurors quote the answer as written."""
    text = unicodedata.normalize("NFKC", fold(text))
    text = _DOTTED.sub(lambda m: m.group(1).replace(".", ""), text)
    for pattern, name in _ALIASES:
        text = pattern.sub(name, text)
    text = _GROUPED.sub(lambda m: m.group(0).replace(",", ""), text)
    text = _ORDINAL.sub(r"\1", text)
    for pattern in _DATES:
        text = pattern.sub(_date, text)
    text = _NUMBER_RUN.sub(_number_run, text)
    text = _CURRENCY.sub(lambda m: f"{m.group(2)} {_CURRENCY_NAMES[m.group(1)]}", text)
    text = _UNIT_AFTER_NUMBER.sub(lambda m: f"{m.group(1)} {_UNIT_ABBREVIATIONS[m.group(2)]}", text)
    for pattern, unit in _UNIT_WORD:
        text = pattern.sub(unit, text)
    return text


_NORMAL_TOKEN = re.compile(DATE_TOKEN.pattern + r"|[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?")


def normal_words(text: str) -> list[str]:
    """content_words of normalize(text), a date one word (2020-03-03); a name in capitals that is spelt like a
    stopword ("WHO", "IT") is kept, unless the whole text is in capitals."""
    text = normalize(text)
    shouted = not any(c.islower() for c in text)  # a text in capitals: its capitals name nothing
    return [t.lower() for t in _NORMAL_TOKEN.findall(text) if t.lower() not in _NOT_CONTENT
            and (_is_content(t.lower()) or (not shouted and len(t) > 1 and t.isupper() and t.lower() in STOPWORDS))]


# "%" was never a word; "percent" and "per cent", its spellings, are none either: a share's number says what it is
# (46.1% and 35% share no claim, and "percent" would be a word they share).
_NOT_CONTENT = frozenset({"percent"})


@lru_cache(maxsize=200_000)
def normal_stems(text: str) -> frozenset[str]:
    """The stems of normal_words, remembered: what the offline jurors and the statement judge match."""
    return frozenset(stem(w) for w in normal_words(text))


def normal_term_recall(terms: set[str] | frozenset[str], text: str) -> float:
    """Share of `terms` (normal stems) that occur in `text` once normalised."""
    if not terms:
        return 0.0
    return len(terms & normal_stems(text)) / len(terms)


@lru_cache(maxsize=100_000)
def normal_word(word: str) -> str:
    """One token's canonical spelling (a unit or number word, diacritics): for the BERTScore juror's word spans."""
    return normalize(word).lower()
