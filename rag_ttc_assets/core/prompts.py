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
    # The request judge: the labelled requests with their gold material, and the answer with its citations.
    "judge_requests": ({"question", "gold_requests", "answer"}, {"gold_requests", "answer"}),
    # The entailment juror (judging.entailment): ONE labelled request with its gold passages and gold answer, and the
    # answer with its citations.
    "judge_entailment": ({"question", "request", "gold", "answer"}, {"request", "gold", "answer"}),
    # Requests derived from a gold answer (core.request_derivation): the question and its gold answer, a label.
    "derive_requests": ({"question", "gold_answer"}, {"gold_answer"}),
    # A representation builder's (core.contextual): one chunk and its document, nothing of the evaluation.
    "representation": ({"title", "document", "chunk_id", "chunk", "position"}, {"document", "chunk"}),
}
# Kinds whose prompts the generator reads: only these are subject to the label rule.
GENERATION_KINDS = frozenset({"answer", "tool_answer"})
# The placeholder that renders the evaluation's request annotation into a generation prompt.
LABEL_PLACEHOLDER = "requests"
ORACLE = "oracle"


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


def label_values(requests_in_prompt: str, requests: list[tuple[str, str]]) -> dict[str, str]:
    """The labels a generation prompt may render: the request annotation, and only in an arm declared oracle.
    Every other arm renders without it, so a template that still names {{requests}} fails to render."""
    return {LABEL_PLACEHOLDER: requests_block(requests)} if requests_in_prompt == ORACLE else {}


def gold_requests_block(requests: list[tuple[str, str, list[str], str | None]]) -> str:
    """The request judge's labels: per request its id, text, gold quotes (numbered) and gold answer if any."""
    out = []
    for rid, text, quotes, gold_answer in requests:
        parts = [f'<request id="{rid}">', f"<text>{text}</text>"]
        parts += [f'<gold n="{i}">\n{q}\n</gold>' for i, q in enumerate(quotes, 1)]
        if gold_answer:
            parts.append(f"<gold_answer>{gold_answer}</gold_answer>")
        out.append("\n".join(parts + ["</request>"]))
    return "\n\n".join(out)


def gold_block(quotes: list[str], gold_answer: str | None) -> str:
    """One request's gold material as the entailment juror reads it: its gold passages (numbered) and gold answer."""
    parts = [f'<gold n="{i}">\n{q}\n</gold>' for i, q in enumerate(quotes, 1)]
    if gold_answer:
        parts.append(f"<gold_answer>{gold_answer}</gold_answer>")
    return "\n".join(parts) or "(no gold material)"


def cited_answer_block(answer: str, citations: list[str], passages: list[tuple[str, list[str]]]) -> str:
    """An answer as the request judge reads it: the text, its citations, and each cited passage (a request item's
    answer with its own citations, without the generator's request label or `supported` flag)."""
    parts = [f"<answer_text>\n{answer}\n</answer_text>", f"<answer_citations>{' '.join(citations)}</answer_citations>"]
    parts += [f'<passage n="{i}" cites="{" ".join(cites)}">\n{text}\n</passage>'
              for i, (text, cites) in enumerate(passages, 1)]
    return "\n".join(parts)

def statements_block(statements: list[str]) -> str:
    return "\n".join(f"[{i}] {s}" for i, s in enumerate(statements, 1))


def numbered_block(tag: str, texts: list[str]) -> str:
    return "\n\n".join(f'<{tag} n="{i}">\n{t}\n</{tag}>' for i, t in enumerate(texts, 1))
