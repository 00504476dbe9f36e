"""Versioned prompt templates with named `{{placeholder}}` fields.

A template that names an unknown placeholder, or lacks one its kind requires, is an error when
the arm loads, not when the first question is sent.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")

# Placeholders each kind of prompt may use, and those it must use.
KINDS = {
    "answer": ({"question", "evidence", "requests", "title_index"}, {"question", "evidence"}),
    # A tool arm's first turn: no evidence, the model fetches it with `lookup` (core.supply).
    "tool_answer": ({"question", "requests", "title_index"}, {"question"}),
    "judge_statements": ({"question", "answer"}, {"answer"}),
    "judge_verdicts": ({"question", "statements", "evidence"}, {"statements", "evidence"}),
    "judge_gold": ({"question", "statements", "gold"}, {"statements", "gold"}),
}


class PromptError(ValueError):
    pass


@dataclass(frozen=True)
class Prompt:
    name: str
    text: str
    kind: str

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def placeholders(self) -> set[str]:
        return set(PLACEHOLDER.findall(self.text))

    def render(self, **values: str) -> str:
        missing = self.placeholders - set(values)
        if missing:
            raise PromptError(f"prompt {self.name!r}: no value for placeholder(s) {sorted(missing)}")
        return PLACEHOLDER.sub(lambda m: values[m.group(1)], self.text)


def parse_prompt(name: str, text: str, kind: str, source: str = "") -> Prompt:
    allowed, required = KINDS[kind]
    prompt = Prompt(name, text, kind)
    where = source or name
    unknown = prompt.placeholders - allowed
    if unknown:
        raise PromptError(f"{where}: unknown placeholder(s) {sorted(unknown)} in {kind} prompt {name!r}; "
                          f"allowed: {sorted(allowed)}")
    missing = required - prompt.placeholders
    if missing:
        raise PromptError(f"{where}: {kind} prompt {name!r} lacks required placeholder(s) {sorted(missing)}")
    return prompt


def evidence_block(evidence: list[tuple[str, str]]) -> str:
    return "\n\n".join(f'<chunk id="{cid}">\n{text}\n</chunk>' for cid, text in evidence)


def requests_block(requests: list[tuple[str, str]]) -> str:
    return "\n".join(f"- [{rid}] {text}" for rid, text in requests)


def statements_block(statements: list[str]) -> str:
    return "\n".join(f"[{i}] {s}" for i, s in enumerate(statements, 1))


def numbered_block(tag: str, texts: list[str]) -> str:
    return "\n\n".join(f'<{tag} n="{i}">\n{t}\n</{tag}>' for i, t in enumerate(texts, 1))
