"""Reading the two-stage judge's outputs (seed section 3.4) and scoring judged rows.

Faithfulness = supported statements / statements, per judged row. Relevance is the judge's
answer-level rating. Gold verdicts carry `contradicts_gold` beside `supported`; the two are
separate axes and never averaged together.
"""

from __future__ import annotations

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


def parse_verdicts(raw_text: str | None, n_statements: int, gold: bool = False) -> tuple[list[StatementVerdict],
                                                                                      float | None]:
    """Verdicts for statements 1..n (exactly one each) and the answer relevance (None in gold mode)."""
    obj, error = load_json_object(raw_text)
    if obj is None:
        raise JudgeParseError(f"verdicts: {error}")
    try:
        verdicts = [StatementVerdict.model_validate(v) for v in obj.get("verdicts", [])]
    except (ValidationError, TypeError) as e:
        raise JudgeParseError(f"verdicts: {str(e).splitlines()[0]}") from None
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
