"""Request-level completeness (seed section 9.3): per request of a question, was it answered, and supported?

Inputs are plain rows (a question's coverage rows, its contract row, its judge row or None), so callers
pass dicts read from Parquet.  For each request of an ANSWERABLE question, a `RequestOutcome`:

  parsed answer     contract status in valid / contract_failure / abstained and answer is not None.
  answered          False without a parsed answer, or when abstained is true.  Otherwise:
                    - the answer has request items: answered iff an item whose "request" equals the
                      request id or its text (exact) has supported=true and a non-blank answer; items
                      that name no item for this request leave it unanswered;
                    - no request items (a lexical attribution baseline, not a semantic judgment):
                      answered iff some sentence of the answer has content-word recall >= 0.5 against
                      one of the request's gold evidence quotes (the share of the quote's content words
                      that the sentence's content words cover), or the answer cites a supporting chunk.
  citations         the citations of this request's items when the answer has request items, else the
                    top-level citation_chunk_ids.
  cited_supporting  some citation is in the request's supporting_chunk_ids.
  evidence_admitted coverage.admitted (some supporting chunk was admitted).
  supported         answered and cited_supporting and the cited supporting chunk was admitted.  A valid
                    row cites only admitted chunks, so cited_supporting implies evidence_admitted; a
                    contract_failure row may cite unadmitted chunks and the contract row does not carry
                    the admitted IDs, so there it is approximated by evidence_admitted.
  case              answered and supported             -> answered_supported
                    answered, not supported            -> answered_unsupported
                    not answered, evidence_admitted    -> not_answered_evidence_admitted
                    not answered, nothing admitted     -> not_answerable_from_admitted
  contradicts_gold  True when a gold verdict with contradicts_gold=true cites one of this request's gold
                    quotes (gold quotes are numbered from 1 over the question's requests in order, each
                    request's quotes in order); False when gold verdicts exist otherwise; None without
                    any.  A contradicting verdict that cites no quote is attributed to no request.

A request without a coverage row (the question never reached retrieval) arrived nowhere: nothing was
ranked, selected or admitted.  For an UNANSWERABLE question, one `AbstentionOutcome`: abstained when the
contract status is "abstained" or every request item (at least one) has supported=false;
correct_abstention = abstained; answered_anyway = a valid row that is not an abstention.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from rag_ttc_assets.core.contract import ABSTAINED, CONTRACT_FAILURE, VALID
from rag_ttc_assets.core.judging import StatementVerdict
from rag_ttc_assets.core.records import Question, Request
from rag_ttc_assets.core.text import content_words, split_sentences

ADDRESS_RECALL = 0.5
CASES = ("answered_supported", "answered_unsupported", "not_answered_evidence_admitted",
         "not_answerable_from_admitted")
Case = Literal["answered_supported", "answered_unsupported", "not_answered_evidence_admitted",
               "not_answerable_from_admitted"]
_PARSED_STATUSES = frozenset({VALID, CONTRACT_FAILURE, ABSTAINED})


class RequestOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    query_id: str
    request_id: str
    answered: bool
    supported: bool
    evidence_admitted: bool
    cited_supporting: bool
    contradicts_gold: bool | None
    case: Case


class AbstentionOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    query_id: str
    abstained: bool
    correct_abstention: bool
    answered_anyway: bool


class QuestionCompleteness(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    query_id: str
    requests: int
    answered: int
    supported: int
    complete: bool


def json_list(value: Any) -> list:
    """A list field as stored: a JSON string (Parquet), a list, or None."""
    if value is None:
        return []
    return list(json.loads(value)) if isinstance(value, str) else list(value)


def parsed_answer(contract_row: dict | None) -> bool:
    return (contract_row is not None and contract_row.get("status") in _PARSED_STATUSES
            and contract_row.get("answer") is not None)


def keyed_items(question: Question, contract_row: dict | None) -> list[dict]:
    """The answer's request items, when they are keyed to this question's requests (by id or exact text).

    Items a model keyed to its own decomposition of the question (no item names a labelled request)
    cannot be attributed to requests; the answer is then read as a whole (top-level citations and
    lexical attribution), as for an answer without items.
    """
    if contract_row is None or not parsed_answer(contract_row):
        return []
    items = json_list(contract_row.get("request_items"))
    keys = {r.id for r in question.requests} | {r.text for r in question.requests}
    return items if any(it.get("request") in keys for it in items) else []


def request_citations(request: Request, contract_row: dict | None, items: list[dict] | None = None) -> list[str]:
    """This request's items' citations when the answer has keyed request items, else the top-level ones."""
    if contract_row is None or not parsed_answer(contract_row):
        return []
    items = json_list(contract_row.get("request_items")) if items is None else items
    if items:
        return [c for it in items if it.get("request") in (request.id, request.text)
                for c in json_list(it.get("citation_chunk_ids"))]
    return json_list(contract_row.get("citation_chunk_ids"))


def coverage_by_request(question: Question, coverage_rows: Iterable[dict]) -> dict[str, dict]:
    """Coverage row per request id; a request without one arrived nowhere (nothing ranked)."""
    ids = {r.id for r in question.requests}
    out = {rid: {"query_id": question.id, "request_id": rid, "has_evidence": False, "supporting_chunk_ids": [],
                 "ranked": False, "selected": False, "admitted": False} for rid in ids}
    seen: set[str] = set()
    for i, row in enumerate(coverage_rows):
        if row["query_id"] != question.id or row["request_id"] not in ids:
            raise ValueError(f"coverage_rows[{i}]: request {row['query_id']}/{row['request_id']} is not a request "
                             f"of question {question.id!r}; pass only that question's coverage rows")
        if row["request_id"] in seen:
            raise ValueError(f"coverage_rows[{i}]: second coverage row for request {row['request_id']!r}")
        seen.add(row["request_id"])
        if (row["admitted"] and not row["selected"]) or (row["selected"] and not row["ranked"]):
            raise ValueError(f"coverage_rows[{i}] ({row['request_id']}): admitted implies selected implies ranked, "
                             f"got ranked={row['ranked']} selected={row['selected']} admitted={row['admitted']}")
        out[row["request_id"]] = {**row, "supporting_chunk_ids": json_list(row.get("supporting_chunk_ids"))}
    return out


def gold_numbers(question: Question, request_id: str) -> set[int]:
    """1-based numbers of a request's gold quotes in the question's gold block."""
    owners = [r.id for r in question.requests for _ in r.evidence]
    return {n for n, owner in enumerate(owners, start=1) if owner == request_id}


def gold_verdicts(judge_row: dict | None) -> list[StatementVerdict]:
    if judge_row is None:
        return []
    return [StatementVerdict.model_validate(v) for v in json_list(judge_row.get("gold_verdicts"))]


def addresses(answer: str, request: Request) -> bool:
    """Some sentence of `answer` covers >= ADDRESS_RECALL of a gold quote's content words."""
    quotes = [words for e in request.evidence if (words := set(content_words(e.quote)))]
    for sentence in split_sentences(answer):
        said = set(content_words(sentence))
        if any(len(words & said) / len(words) >= ADDRESS_RECALL for words in quotes):
            return True
    return False


def _answered(request: Request, contract_row: dict | None, cited_supporting: bool, items: list[dict]) -> bool:
    if contract_row is None or not parsed_answer(contract_row) or contract_row.get("abstained") is True:
        return False
    if items:
        return any(it.get("request") in (request.id, request.text) and it.get("supported") is True
                   and str(it.get("answer") or "").strip() for it in items)
    return addresses(contract_row["answer"], request) or cited_supporting


def request_outcomes(question: Question, coverage_rows: Iterable[dict], contract_row: dict | None,
                     judge_row: dict | None) -> list[RequestOutcome]:
    if not question.answerable:
        raise ValueError(f"question {question.id!r} is unanswerable: use abstention_outcome")
    coverage = coverage_by_request(question, coverage_rows)
    verdicts = gold_verdicts(judge_row)
    items = keyed_items(question, contract_row)
    out = []
    for req in question.requests:
        cov = coverage[req.id]
        cited = any(c in cov["supporting_chunk_ids"] for c in request_citations(req, contract_row, items))
        answered = _answered(req, contract_row, cited, items)
        admitted = bool(cov["admitted"])
        supported = answered and cited and admitted
        mine = gold_numbers(question, req.id)
        contradicts = any(v.contradicts_gold and mine & set(v.evidence) for v in verdicts) if verdicts else None
        if answered:
            case = "answered_supported" if supported else "answered_unsupported"
        else:
            case = "not_answered_evidence_admitted" if admitted else "not_answerable_from_admitted"
        out.append(RequestOutcome(query_id=question.id, request_id=req.id, answered=answered, supported=supported,
                                  evidence_admitted=admitted, cited_supporting=cited, contradicts_gold=contradicts,
                                  case=case))
    return out


def abstention_outcome(question: Question, contract_row: dict | None) -> AbstentionOutcome:
    if question.answerable:
        raise ValueError(f"question {question.id!r} is answerable: use request_outcomes")
    status = contract_row.get("status") if contract_row else None
    items = json_list(contract_row.get("request_items")) if contract_row and parsed_answer(contract_row) else []
    abstained = status == ABSTAINED or (bool(items) and all(it.get("supported") is False for it in items))
    return AbstentionOutcome(query_id=question.id, abstained=abstained, correct_abstention=abstained,
                             answered_anyway=status == VALID and not abstained)


def question_completeness(outcomes: Iterable[RequestOutcome]) -> list[QuestionCompleteness]:
    """One row per question (first-seen order); complete = every request answered_supported."""
    by_question: dict[str, list[RequestOutcome]] = {}
    for o in outcomes:
        by_question.setdefault(o.query_id, []).append(o)
    return [QuestionCompleteness(query_id=qid, requests=len(rows), answered=sum(o.answered for o in rows),
                                 supported=sum(o.supported for o in rows),
                                 complete=all(o.supported for o in rows))
            for qid, rows in by_question.items()]


def completeness_totals(outcomes: Iterable[RequestOutcome], abstention_outcomes: Iterable[AbstentionOutcome]) -> dict:
    outcomes, abstentions = list(outcomes), list(abstention_outcomes)
    questions = question_completeness(outcomes)
    unanswerable = len(abstentions)
    correct = sum(a.correct_abstention for a in abstentions)
    return {
        "requests_total": len(outcomes),
        "requests_answered": sum(o.answered for o in outcomes),
        "requests_supported": sum(o.supported for o in outcomes),
        **{case: sum(o.case == case for o in outcomes) for case in CASES},
        "requests_contradicting_gold": sum(o.contradicts_gold is True for o in outcomes),
        "unanswerable_questions": unanswerable,
        "correct_abstentions": correct,
        "correct_abstention_rate": correct / unanswerable if unanswerable else None,
        "questions_complete": sum(q.complete for q in questions),
        "questions_partial": sum(0 < q.supported < q.requests for q in questions),
        "questions_none": sum(q.supported == 0 for q in questions),
    }
