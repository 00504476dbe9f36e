"""Reading the two-stage judge's outputs (seed section 3.4) and scoring judged rows.

Faithfulness = supported statements / statements, per judged row. Relevance is the judge's
answer-level rating. Gold verdicts carry `contradicts_gold` beside `supported`; the two are
separate axes and never averaged together.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rag_ttc_assets.core.contract import load_json_object


class StatementVerdict(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    statement: int
    text: str = ""
    supported: bool
    evidence: list[int] = Field(default_factory=list)
    reason: str = ""
    contradicts_gold: bool | None = None


class JudgeParseError(ValueError):
    pass


def parse_statements(raw_text: str | None) -> list[str]:
    obj, error = load_json_object(raw_text)
    if obj is None:
        raise JudgeParseError(f"statements: {error}")
    statements = obj.get("statements")
    if not isinstance(statements, list) or not all(isinstance(s, str) for s in statements):
        raise JudgeParseError("statements: field 'statements' must be a list of strings")
    return [s.strip() for s in statements if s.strip()]


M = TypeVar("M", bound=BaseModel)


def _validated(model: type[M], items: list[Any], kind: str) -> list[M]:
    """Each reply item as `model`; the first invalid one a JudgeParseError naming its place and field
    (`requests: item 2, field 'coverage': Input should be less than or equal to 1`)."""
    out = []
    for k, it in enumerate(items, 1):
        try:
            out.append(model.model_validate(it))
        except ValidationError as e:
            err = e.errors()[0]
            field = ", ".join(f"field {x!r}" if isinstance(x, str) else f"[{x}]" for x in err["loc"])
            raise JudgeParseError(f"{kind}: item {k}{', ' + field if field else ''}: {err['msg']}") from None
    return out


def parse_verdicts(raw_text: str | None, n_statements: int, gold: bool = False) -> tuple[list[StatementVerdict],
                                                                                      float | None]:
    """Verdicts for statements 1..n (exactly one each) and the answer relevance (None in gold mode)."""
    obj, error = load_json_object(raw_text)
    if obj is None:
        raise JudgeParseError(f"verdicts: {error}")
    if not isinstance(obj.get("verdicts"), list):
        raise JudgeParseError("verdicts: field 'verdicts' must be a list of objects")
    verdicts = _validated(StatementVerdict, obj["verdicts"], "verdicts")
    numbers = sorted(v.statement for v in verdicts)
    if numbers != list(range(1, n_statements + 1)):
        raise JudgeParseError(f"verdicts: expected one verdict for each statement 1..{n_statements}, got {numbers}")
    if gold and any(v.contradicts_gold is None for v in verdicts):
        raise JudgeParseError("verdicts: gold verdicts need 'contradicts_gold' for every statement")
    relevance = None
    if not gold:
        rel = obj.get("answer_relevance")
        if not isinstance(rel, (int, float)) or isinstance(rel, bool) or not 0 <= rel <= 1:
            raise JudgeParseError("verdicts: 'answer_relevance' must be a number in [0, 1]")
        relevance = float(rel)
    return sorted(verdicts, key=lambda v: v.statement), relevance


def faithfulness(verdicts: list[StatementVerdict]) -> float | None:
    """Supported share of the statements; undefined (None) for an answer with no statements."""
    if not verdicts:
        return None
    return sum(v.supported for v in verdicts) / len(verdicts)


REQUEST_VERDICTS = ("consistent", "contradicts", "not_addressed", "not_verifiable")


class RequestJudgment(BaseModel):
    """The request judge's reply for one labelled request (prompt kind judge_requests)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    request: str
    addressed: bool
    excerpt: str = ""
    cited_chunk_ids: list[str] = Field(default_factory=list)
    verdict: str
    reason: str = ""
    # The share (0..1) of the request's gold material the answer carries, as the offline judges measure it (the
    # number their `addressed` thresholds); None from a judge that does not report one.
    coverage: float | None = Field(default=None, ge=0.0, le=1.0)


def parse_request_judgments(raw_text: str | None, request_ids: list[str]) -> list[RequestJudgment]:
    """Exactly one judgment per labelled request, in `request_ids` order. A reply that does not parse, omits a
    request, names one twice or names one that does not exist, or gives a verdict outside REQUEST_VERDICTS (or
    one that disagrees with `addressed`) is a JudgeParseError: not measured, never "not addressed"."""
    obj, error = load_json_object(raw_text)
    if obj is None:
        raise JudgeParseError(f"requests: {error}")
    items = obj.get("requests")
    if not isinstance(items, list):
        raise JudgeParseError("requests: field 'requests' must be a list of objects")
    judged = _validated(RequestJudgment, items, "requests")
    named = [j.request for j in judged]
    unknown = sorted(set(named) - set(request_ids))
    if unknown:
        raise JudgeParseError(f"requests: names request(s) {unknown} that this question does not have")
    twice = sorted({r for r in named if named.count(r) > 1})
    if twice:
        raise JudgeParseError(f"requests: judges request(s) {twice} more than once")
    missing = [r for r in request_ids if r not in named]
    if missing:
        raise JudgeParseError(f"requests: omits request(s) {missing}")
    for j in judged:
        if j.verdict not in REQUEST_VERDICTS:
            raise JudgeParseError(f"requests: {j.request}: verdict {j.verdict!r} is not one of {list(REQUEST_VERDICTS)}")
        if (j.verdict == "not_addressed") == j.addressed:
            raise JudgeParseError(f"requests: {j.request}: addressed is {j.addressed} but the verdict is {j.verdict!r}")
    by_id = {j.request: j for j in judged}
    return [by_id[r] for r in request_ids]
