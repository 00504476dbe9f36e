"""The answer contract: a gate (not a completeness score) giving each generated row exactly one status.

Checked in this order, first failure wins ("valid" = well-formed and citing only admitted evidence):

  provider_status != "ok" (timeout, rate_limited, truncated, ...) -> status = reason = provider_status
  no JSON object found in the text (locate_json_object) -> "parse_failure",
      reason "not JSON: <error>" / "not an object: <json type>"
  object violates the schema (strict types) -> "contract_failure", reason "schema: <field>: missing"
      or "schema: <field>: wrong type, expected <type>" (first error; nested as requests.0.supported)
  then the rules, "contract_failure" unless stated ("cited" = top-level, then request items' citations):
  1. abstained, and anything cited or a request supported -> "abstained yet claiming"
  2. abstained otherwise                      -> status and reason "abstained"
  3. answer blank                             -> "empty answer"
  4. no top-level citation                    -> "missing citations"
  5. a cited id not in admitted_chunk_ids     -> "citation of a chunk that was not admitted: <id>"
  6. a request supported=true, no citation    -> "supported request without citation: requests[<i>]"
  7. otherwise                                -> status "valid", reason ""

Real models wrap the object: the row's `parsed_from` says where it was found, "json" (the whole text),
"fenced" (a ``` code fence) or "prose" (the first object after or among sentences). Nothing is repaired:
an object that is found is checked as it is.

The seed's parse failure ("cannot be parsed as the expected structured response") is drawn at the
syntax layer: an object missing a field is the model breaking the contract.  Rule 1's claim is a
citation or a supported request (prose is not judged).  Extra fields are ignored (providers add them).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

VALID, PARSE_FAILURE, CONTRACT_FAILURE, ABSTAINED = "valid", "parse_failure", "contract_failure", "abstained"
# Set by the citation check (stages.arm_supply), not by check_contract: both attempts failed to cite what was supplied.
ESCALATED = "escalated"
# An imported arm's statuses (imported.import_source): a free-text answer has no contract to check (`free_text`, its
# citations read per the source's citation_style); a trace without an LLM span, or a question without a trace, has no answer.
FREE_TEXT, NO_ANSWER_SPAN, NO_TRACE = "free_text", "no_answer_span", "no_trace"
NO_ANSWER = (NO_ANSWER_SPAN, NO_TRACE)
CONTRACT_STATUSES = frozenset({VALID, PARSE_FAILURE, CONTRACT_FAILURE, ABSTAINED, ESCALATED, FREE_TEXT})

# A text that is one fence and nothing else (no fence inside it).
_FENCE = re.compile(r"\A```(?:json)?\s*((?:(?!```).)*?)\s*```\Z", re.DOTALL | re.IGNORECASE)
_ANY_FENCE = re.compile(r"```(?:json)?(.*?)```", re.DOTALL | re.IGNORECASE)
# Where a reply's JSON object was found (ContractResult.parsed_from, the tables' `parsed_from` column).
JSON, FENCED, PROSE = "json", "fenced", "prose"
PARSED_FROM = (JSON, FENCED, PROSE)
_JSON_TYPES = {dict: "object", list: "array", str: "string", int: "number", float: "number", bool: "boolean"}
_EXPECTED = {"string_type": "string", "bool_type": "boolean", "list_type": "array", "model_type": "object"}


class RequestItem(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)
    request: str
    answer: str
    citation_chunk_ids: list[str]
    supported: bool


class AnswerObject(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)
    answer: str
    citation_chunk_ids: list[str]
    abstained: bool
    requests: list[RequestItem] = Field(default_factory=list)


class ContractResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    status: str
    reason: str
    answer: AnswerObject | None = None
    parsed_from: str | None = None  # one of PARSED_FROM when an object was found, else None


class ContractSummary(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    total: int
    valid: int
    parse_failures: int
    contract_failures: int
    contract_failure_reasons: dict[str, int]
    abstentions: int
    escalated: int = 0
    free_text: int = 0
    no_answer: dict[str, int] = Field(default_factory=dict)
    provider_faults: dict[str, int]


def _schema_reason(error: ValidationError) -> str:
    first = error.errors()[0]
    field, kind = ".".join(str(part) for part in first["loc"]), first["type"]
    if kind == "missing":
        return f"schema: {field}: missing"
    problem = f"wrong type, expected {_EXPECTED.get(kind, kind[:-5])}" if kind.endswith("_type") else first["msg"]
    return f"schema: {field}: {problem}"


def _rules(answer: AnswerObject, admitted_chunk_ids: list[str]) -> tuple[str, str]:
    cited = [*answer.citation_chunk_ids, *(c for item in answer.requests for c in item.citation_chunk_ids)]
    if answer.abstained:
        if cited or any(item.supported for item in answer.requests):
            return CONTRACT_FAILURE, "abstained yet claiming"
        return ABSTAINED, ABSTAINED
    if not answer.answer.strip():
        return CONTRACT_FAILURE, "empty answer"
    if not answer.citation_chunk_ids:
        return CONTRACT_FAILURE, "missing citations"
    admitted = set(admitted_chunk_ids)
    if (stray := next((c for c in cited if c not in admitted), None)) is not None:
        return CONTRACT_FAILURE, f"citation of a chunk that was not admitted: {stray}"
    for i, item in enumerate(answer.requests):
        if item.supported and not item.citation_chunk_ids:
            return CONTRACT_FAILURE, f"supported request without citation: requests[{i}]"
    return VALID, ""


def locate_json_object(raw_text: str | None) -> tuple[dict[str, Any] | None, str, str | None]:
    """(the JSON object in a provider response, why none was found, where it was found: one of PARSED_FROM).

    In order: the whole text; a text that is one ``` fence (its content, or the content's error); the first
    fenced block holding an object; the first `{` from which an object decodes (prose around it). A text that
    is all JSON but not an object is "not an object", not searched further.
    """
    text = (raw_text or "").strip()
    if (whole_fence := _FENCE.match(text)) is not None:
        text, where = whole_fence.group(1), FENCED
    else:
        where = JSON
    if not text:
        return None, "not JSON: empty text", None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        error = f"not JSON: {exc}"
    else:
        if isinstance(obj, dict):
            return obj, "", where
        return None, f"not an object: {_JSON_TYPES.get(type(obj), 'null')}", None
    if where == JSON:
        for block in _ANY_FENCE.finditer(text):
            found = _object_in(block.group(1).strip())
            if found is not None:
                return found, "", FENCED
    decoder = json.JSONDecoder()
    for start in (i for i, ch in enumerate(text) if ch == "{"):
        try:
            obj, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj, "", PROSE
    return None, error, None


def _object_in(text: str) -> dict[str, Any] | None:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def load_json_object(raw_text: str | None) -> tuple[dict[str, Any] | None, str]:
    """The JSON object in a provider response (locate_json_object without where it was found), or (None, why not)."""
    obj, error, _ = locate_json_object(raw_text)
    return obj, error


def check_contract(
    raw_text: str | None, admitted_chunk_ids: list[str], provider_status: str = "ok"
) -> ContractResult:
    if provider_status != "ok":
        if not provider_status.strip() or provider_status in CONTRACT_STATUSES:
            raise ValueError(f"provider_status {provider_status!r} is not a provider status")
        return ContractResult(status=provider_status, reason=provider_status)
    obj, error, where = locate_json_object(raw_text)
    if obj is None:
        return ContractResult(status=PARSE_FAILURE, reason=error)
    try:
        answer = AnswerObject.model_validate(obj)
    except ValidationError as exc:
        return ContractResult(status=CONTRACT_FAILURE, reason=_schema_reason(exc), parsed_from=where)
    status, reason = _rules(answer, admitted_chunk_ids)
    return ContractResult(status=status, reason=reason, answer=answer, parsed_from=where)


def summarize_contract(statuses: list[tuple[str, str]]) -> ContractSummary:
    """Count (status, reason) rows; contract failures are keyed by the reason's text before ':'."""
    counts, reasons, faults, missing = Counter[str](), Counter[str](), Counter[str](), Counter[str]()
    for row, (status, reason) in enumerate(statuses):
        if status in NO_ANSWER:
            missing[status] += 1
        elif status in CONTRACT_STATUSES:
            counts[status] += 1
            if status == CONTRACT_FAILURE:
                reasons[reason.split(":", 1)[0].strip() or "unspecified"] += 1
        elif not status.strip() or status == "ok":
            raise ValueError(f"statuses[{row}]: {status!r} is not a row status")
        else:
            faults[status] += 1
    return ContractSummary(
        total=len(statuses), valid=counts[VALID], parse_failures=counts[PARSE_FAILURE],
        contract_failures=counts[CONTRACT_FAILURE], contract_failure_reasons=dict(sorted(reasons.items())),
        abstentions=counts[ABSTAINED], escalated=counts[ESCALATED], free_text=counts[FREE_TEXT],
        no_answer=dict(sorted(missing.items())), provider_faults=dict(sorted(faults.items())),
    )


def contract_sums_close(summary: ContractSummary) -> bool:
    """Every row lands in exactly one bucket."""
    parts = (summary.valid + summary.parse_failures + summary.contract_failures + summary.abstentions
             + summary.escalated + summary.free_text + sum(summary.no_answer.values()))
    return parts + sum(summary.provider_faults.values()) == summary.total
