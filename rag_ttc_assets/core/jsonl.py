"""JSON Lines reading shared by every file format the lab reads line by line (labels, samples, the annotation log,
BEIR files, imported spans and rows): the line numbers a message names, blank lines skipped, a malformed line
handed back with its error so each reader keeps its own policy (stop, collect every problem, or skip and name)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any


def json_lines(text: str) -> Iterator[tuple[int, Any, json.JSONDecodeError | None]]:
    """(1-based line number, value, None) for each non-blank line that parses, (n, None, the error) for one that
    does not."""
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            yield n, json.loads(raw), None
        except json.JSONDecodeError as e:
            yield n, None, e


def malformed(e: json.JSONDecodeError) -> str:
    """How every reader names a line that is not JSON."""
    return f"malformed JSON: {e.msg} (column {e.colno})"
