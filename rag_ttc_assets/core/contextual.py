"""The contextual representation: a short context that situates a chunk in its document (what the chunk is about,
where it sits), written by a builder model and prepended to the chunk text for indexing and embedding only.

The builder sees the corpus and nothing of the evaluation. Its reply is a JSON object `{"context": "..."}`; a reply
that is not, or whose context is empty or longer than MAX_CONTEXT_RUNES, is a parse failure, never repaired. The
offline baseline (`baseline_context`, served as `local/contextual`) writes the context from the document's own
title, headings and first sentence: deterministic, no language model.
"""

from __future__ import annotations

import json
import re

from rag_ttc_assets.core import prompt_markup

CONTEXTUAL_VERSION = "contextual/1"
# The document text a builder reads around a chunk: the whole document when it fits, else a window centred on the
# chunk, so a long document's prompt stays bounded.
DOCUMENT_RUNES = 12000
MAX_CONTEXT_RUNES = 1000


class ContextParseError(ValueError):
    """The builder's reply is not a usable `{"context": "..."}` object."""


def document_window(text: str, start: int, end: int, runes: int = DOCUMENT_RUNES) -> str:
    """`text` whole if it fits in `runes`, else `runes` runes centred on the chunk [start, end)."""
    if len(text) <= runes:
        return text
    left = max(0, min(start - (runes - (end - start)) // 2, len(text) - runes))
    return text[left:left + runes]


def position_text(ordinal: int, count: int) -> str:
    return f"part {ordinal + 1} of {count}"


def prompt_values(title: str, document: str, chunk_id: str, chunk: str, position: str) -> dict[str, str]:
    """The placeholders of a representation prompt (core.prompts kind "representation")."""
    return {"title": title, "document": document, "chunk_id": chunk_id, "chunk": chunk, "position": position}


def parse_context(raw: str | None) -> str:
    """The context of a builder's reply `{"context": "..."}`, whitespace-normalized; ContextParseError otherwise."""
    text = (raw or "").strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
    if fenced:  # a fence around the object is packaging, not content
        text = fenced.group(1)
    try:
        obj = json.loads(text)
    except ValueError:
        raise ContextParseError(f"reply is not a JSON object: {text[:80]!r}") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("context"), str):
        raise ContextParseError(f'reply has no string "context": {text[:80]!r}')
    context = " ".join(obj["context"].split())
    if not context:
        raise ContextParseError('reply\'s "context" is empty')
    if len(context) > MAX_CONTEXT_RUNES:
        raise ContextParseError(f'"context" has {len(context)} runes, more than {MAX_CONTEXT_RUNES}')
    return context


def compose(context: str | None, chunk: str) -> str:
    """The indexed text: the context, then the chunk; the chunk alone when no context was built."""
    return f"{context}\n\n{chunk}" if context else chunk


# -- the offline baseline builder ---------------------------------------------------------------

_UNDERLINE = re.compile(r"^\s*([=\-~^*#]{3,})\s*$")
_MARKDOWN = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_LEADS_ON = frozenset({"to", "of", "as", "is", "by", "with", "that", "the", "a", "an", "and", "or"})
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(*])")


def headings(text: str) -> list[tuple[int, str]]:
    """(offset, heading) of the document's own headings: Markdown `#` lines; lines underlined with `===`, `---` and
    the like (reStructuredText, setext); and definition terms, an unindented one-line paragraph followed by an
    indented one (`str.casefold()` above its description, as reference manuals rendered to text lay them out)."""
    out = []
    offset = 0
    lines = text.split("\n")
    for i, line in enumerate(lines):
        md = _MARKDOWN.match(line)
        after = lines[i + 1] if i + 1 < len(lines) else ""
        if md:
            out.append((offset, md.group(1)))
        elif line.strip() and _UNDERLINE.match(after) and len(after.strip()) >= min(3, len(line.strip())):
            out.append((offset, line.strip()))
        elif _is_term(lines, i):
            out.append((offset, line.strip()))
        offset += len(line) + 1
    return out


def _is_term(lines: list[str], i: int) -> bool:
    line = lines[i]
    if not line.strip() or line[0].isspace() or len(line) > 80 or line.rstrip()[-1] in ".,;:!?":
        return False
    if i > 0 and lines[i - 1].strip():
        return False
    words = line.split()
    # A sentence introducing an indented example ("is equivalent to") is not a term.
    if words[-1].lower() in _LEADS_ON or (len(words) > 5 and "(" not in line):
        return False
    body = next((ln for ln in lines[i + 2:] if ln.strip()), "") if i + 1 < len(lines) and not lines[i + 1].strip() \
        else ""
    return bool(body) and body[0].isspace()


def first_sentence(text: str, limit: int = 300) -> str:
    """The first sentence of the first paragraph that is prose (not a heading or an underline)."""
    for para in re.split(r"\n\s*\n", text):
        lines = [ln for ln in para.split("\n") if ln.strip() and not _UNDERLINE.match(ln) and not _MARKDOWN.match(ln)]
        flat = " ".join(" ".join(lines).split())
        if len(flat.split()) >= 4:
            sentence = _SENTENCE_END.split(flat, maxsplit=1)[0]
            return sentence if len(sentence) <= limit else sentence[:limit].rsplit(" ", 1)[0] + " ..."
    return ""


def baseline_context(title: str, document: str, chunk: str, position: str) -> str:
    """The offline baseline's context: the document's title path, the heading the chunk sits under, its position,
    and (when the chunk does not itself open the document) the document's first sentence."""
    at = document.find(chunk.strip()[:200]) if chunk.strip() else -1
    under = [h for off, h in headings(document) if 0 <= at and off <= at] if at >= 0 else []
    path = " > ".join(p.strip() for p in title.split(" / ") if p.strip()) or "untitled document"
    where = f"{position}" + (f', under the heading "{under[-1]}"' if under else "")
    opening = first_sentence(document)
    parts = [f"From {path} ({where})."]
    if opening and opening[:60] not in " ".join(chunk.split()):
        parts.append(f"The document is about: {opening}")
    return " ".join(parts)


def parse_representation_prompt(text: str) -> tuple[str, str, str, str]:
    """(title, document, chunk, position) of a rendered representation prompt. The document runs from the first
    <document> to the last </document> before the chunk, so text inside it that looks like a tag stays in it."""
    doc_start = text.find("<document>")
    chunk_blocks = prompt_markup.parse_chunks(text)
    chunk_at = text.rfind("<chunk ")
    doc_end = text.rfind("</document>", 0, chunk_at if chunk_at >= 0 else len(text))
    if doc_start < 0 or doc_end < doc_start:
        raise ValueError("prompt has no <document>...</document> block before its <chunk>")
    document = text[doc_start + len("<document>"):doc_end].strip("\n")
    return (prompt_markup.find_tag(text, "title") or "", document, chunk_blocks[-1][1],
            prompt_markup.find_tag(text, "position") or "")
