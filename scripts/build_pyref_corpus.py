"""Build datasets/pyref/corpus.json from the Python language reference shipped in CPython.

The text is `pydoc_data.topics.topics`, the reference sections that `help()` shows. Each topic
is split at its subsection headings into section documents with stable IDs. Run with the
CPython version named in datasets/pyref/README.md to reproduce the committed bytes exactly.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HEADING = re.compile(r"^(?P<title>[^\n]+)\n(?P<rule>[=\-~^*])(?P=rule){2,}\n", re.MULTILINE)
MIN_SECTION_CHARS = 300


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "section"


def split_topic(topic: str, text: str) -> list[dict]:
    """Split one topic into (title, text) sections at its underlined headings."""
    text = text.replace("\r\n", "\n")
    marks = list(HEADING.finditer(text))
    if not marks:
        return [{"id": topic, "title": topic, "text": text.strip()}]
    top_title = marks[0].group("title").strip() if marks[0].start() == 0 else topic
    sections: list[dict] = []
    bounds = [(m.start(), m.end(), m.group("title").strip()) for m in marks]
    if bounds[0][0] > 0:
        bounds.insert(0, (0, 0, top_title))
    for i, (start, body_start, title) in enumerate(bounds):
        end = bounds[i + 1][0] if i + 1 < len(bounds) else len(text)
        body = text[body_start:end].strip()
        if not body:
            continue
        is_top = i == 0
        sections.append(
            {
                "id": topic if is_top else f"{topic}--{slug(title)}",
                "title": top_title if is_top else f"{top_title} / {title}",
                "text": body,
            }
        )
    # Merge sections too short to stand alone into the one before them.
    merged: list[dict] = []
    for sec in sections:
        if merged and len(sec["text"]) < MIN_SECTION_CHARS:
            merged[-1]["text"] += "\n\n" + sec["title"].split(" / ")[-1] + "\n\n" + sec["text"]
        else:
            merged.append(sec)
    # A short lead-in before the first subsection joins the section that follows it.
    if len(merged) > 1 and len(merged[0]["text"]) < MIN_SECTION_CHARS:
        lead = merged.pop(0)
        merged[0] = {**merged[0], "id": lead["id"], "text": lead["text"] + "\n\n" + merged[0]["text"]}
    return merged


def build() -> dict:
    from pydoc_data import topics

    documents: list[dict] = []
    seen: set[str] = set()
    by_text: dict[str, dict] = {}
    for topic in sorted(topics.topics):
        for sec in split_topic(topic, topics.topics[topic]):
            doc_id, n = sec["id"], 2
            while doc_id in seen:
                doc_id, n = f"{sec['id']}-{n}", n + 1
            seen.add(doc_id)
            # pydoc files some sections under several topics; keep one document per text so
            # retrieval is not scored on finding twins, and record where else it appears.
            twin = by_text.get(sec["text"])
            if twin is not None:
                twin["metadata"].setdefault("also_filed_as", []).append(doc_id)
                continue
            by_text[sec["text"]] = doc = (
                {
                    "id": doc_id,
                    "title": sec["title"],
                    "text": sec["text"],
                    "metadata": {
                        "topic": topic,
                        "source": "pydoc_data.topics",
                        "cpython": ".".join(map(str, sys.version_info[:3])),
                    },
                }
            )
            documents.append(doc)
    return {"documents": documents}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("datasets/pyref/corpus.json"))
    args = parser.parse_args()
    corpus = build()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(corpus, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(corpus['documents'])} documents to {args.out}")


if __name__ == "__main__":
    main()
