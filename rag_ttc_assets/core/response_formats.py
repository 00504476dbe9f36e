"""The JSON schemas of the replies the lab asks for, as OpenAI-style `response_format` values.

An arm with `response_format: json_schema` (the default) sends one with every answer and judge call, so a server
that constrains decoding (llama.cpp's grammar, OpenAI's structured outputs) can only write an object of that shape;
`response_format: none` sends none (free decoding). The schemas say what the prompts ask for and nothing about one
question: no chunk IDs, no request IDs, so a constrained reply can still cite a chunk that was not admitted, and the
contract still catches it. The parsers (core.contract, judging.statement_judge) check every reply either way: a schema is a
request to the server, not a guarantee.
"""

from __future__ import annotations

from typing import Any

from rag_ttc_assets.judging.statement_judge import REQUEST_VERDICTS

JSON_SCHEMA, NONE = "json_schema", "none"

_STRING: dict[str, Any] = {"type": "string"}
_BOOLEAN: dict[str, Any] = {"type": "boolean"}
_STRINGS: dict[str, Any] = {"type": "array", "items": _STRING}
_INTEGERS: dict[str, Any] = {"type": "array", "items": {"type": "integer"}}


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties) if required is None else required,
            "additionalProperties": False}


# core.contract.AnswerObject, as the prompt asks for it: `requests` (optional in the contract) only when the prompt's
# reply format shows it (the multipart, tool and restated-evidence prompts). Every field of each is required.
ANSWER = _object({"answer": _STRING, "citation_chunk_ids": _STRINGS, "abstained": _BOOLEAN})
ANSWER_WITH_REQUESTS = _object({**ANSWER["properties"], "requests": {"type": "array", "items": _object(
    {"request": _STRING, "answer": _STRING, "citation_chunk_ids": _STRINGS, "supported": _BOOLEAN})}})
STATEMENTS = _object({"statements": _STRINGS})
_VERDICT = {"statement": {"type": "integer"}, "text": _STRING, "supported": _BOOLEAN, "evidence": _INTEGERS,
            "reason": _STRING}
VERDICTS = _object({"verdicts": {"type": "array", "items": _object(_VERDICT)}, "answer_relevance": {"type": "number"}})
GOLD_VERDICTS = _object({"verdicts": {"type": "array", "items": _object(
    {**_VERDICT, "contradicts_gold": _BOOLEAN})}})
REQUEST_JUDGMENTS = _object({"requests": {"type": "array", "items": _object(
    {"request": _STRING, "addressed": _BOOLEAN, "excerpt": _STRING, "cited_chunk_ids": _STRINGS,
     "verdict": {"type": "string", "enum": list(REQUEST_VERDICTS)}, "reason": _STRING})}})
# The entailment juror's reply for one request (judging.entailment; prompt kind judge_entailment).
ENTAILMENT = _object({"addressed": _BOOLEAN, "supported": _BOOLEAN, "contradicts": _BOOLEAN, "quote": _STRING,
                      "coverage": {"type": "number"}, "reason": _STRING})  # coverage in [0, 1]: the parser checks

SCHEMAS = {"answer": ANSWER, "answer_with_requests": ANSWER_WITH_REQUESTS, "statements": STATEMENTS, "verdicts": VERDICTS, "gold_verdicts": GOLD_VERDICTS,
           "request_judgments": REQUEST_JUDGMENTS, "entailment": ENTAILMENT}


def answer_reply(prompt_text: str) -> str:
    """The answer schema's name for a generation prompt: with request items when its reply format shows them."""
    return "answer_with_requests" if '"requests"' in prompt_text else "answer"


def _all_required(schema: dict[str, Any]) -> bool:
    """OpenAI's strict mode needs every property of every object required."""
    if schema.get("type") == "object" and set(schema.get("required", [])) != set(schema.get("properties", {})):
        return False
    children = [*schema.get("properties", {}).values(), *([schema["items"]] if "items" in schema else [])]
    return all(_all_required(c) for c in children)


def response_format(mode: str, name: str) -> dict[str, Any] | None:
    """The `response_format` to send for reply `name` (a key of SCHEMAS) under an arm's mode; None for "none"."""
    if mode == NONE:
        return None
    if mode != JSON_SCHEMA:
        raise ValueError(f"response_format mode {mode!r} is not one of {[JSON_SCHEMA, NONE]}")
    schema = SCHEMAS[name]
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": _all_required(schema)}}
