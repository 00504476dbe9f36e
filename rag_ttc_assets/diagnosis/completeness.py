"""Request-level completeness (seed section 9.3): per request of a question, was it answered, and supported?

One instrument for every arm: `answered` comes from the request judge (the request_judgments rows), which reads
the answer text and its citations, never the generator's own request labels or `supported` flags. What the
generator says about itself is kept beside it as self-reported, and the two are compared (calibration).

Inputs are plain rows (a question's coverage rows, its contract row, its judge row or None, its request-judgment
rows), so callers pass dicts read from Parquet; they are read as records (core.answer_rows: Coverage, Contract,
Judgment) by their tables' declared columns.  For each request of an ANSWERABLE question, a `RequestOutcome`:

  measured          the request judge judged it (status "judged"), or the answer was not contract-valid (an
                    abstention, a parse or contract failure, a provider fault: nothing was delivered, so nothing
                    was answered).  A request-judge fault or unparseable reply (status judge_*) is NOT measured:
                    answered, supported and the calibration fields are then None, never False.
  answered          the judge's `addressed` for a judged request; False for a row that is not contract-valid.
  cited_supporting  the judge's excerpt cites one of the request's supporting_chunk_ids that the answer itself
                    cites (`answer_citations`): a contract-valid answer cites admitted chunks only, so a judge
                    cannot credit a chunk the answer never cited, or one that was never admitted.
  evidence_admitted coverage.admitted (some supporting chunk was admitted).
  supported         answered and cited_supporting and evidence_admitted: addressed, and the excerpt cites an
                    admitted chunk that holds the request's gold evidence.  A request without gold quotes (an
                    imported dataset's, one derived from a gold answer) has no evidence to hold: its support is
                    not measured (supported and cited_supporting None, case `no_gold_quotes`), whatever the answer,
                    so neither is its question's completeness; answered stays measured.
  verdict           the judge's verdict (consistent / contradicts / not_addressed / not_verifiable), None unjudged.
  contradicts_gold  verdict == "contradicts" (False for a measured row the judge did not see; None unmeasured).
  coverage          the judge's coverage of the request (judging.request_judge: the share of its gold material the
                    answer carries; a panel's, its jurors' calibrated mean: judging.panel), for a judged request whose
                    judge reports one; 0.0 for a row that is not contract-valid (nothing delivered); else None (a
                    judge fault, an LLM judge that reports none). Completeness read graded is its mean.
  case              not_measured; no_gold_quotes; answered_supported; answered_unsupported;
                    not_answered_evidence_admitted; not_answerable_from_admitted.
  self_reported_answered / self_reported_supported
                    the generator's own claim, for a contract-valid row (an abstention claims nothing: False):
                    with request items keyed to the labelled requests (an oracle arm), the item's supported=true
                    with a non-blank answer (supported: and it cites a chunk); with items in the model's own
                    words, the claim of the item(s) holding the request judge's excerpt (False when every item
                    is disowned, None when no item can be attributed); without items, the answer's claim as a
                    whole: not abstained (supported: and it cites a chunk).  None for rows that are not
                    contract-valid and not abstentions.
  overclaimed       measured, self-reported answered, and the judge found it not addressed or contradicting.
  underclaimed      measured, self-reported not answered, and the judge found it answered.

A request without a coverage row (the question never reached retrieval) arrived nowhere: nothing was ranked,
selected or admitted.  For an UNANSWERABLE question, one `AbstentionOutcome`: abstained when the contract status
is "abstained" or every request item (at least one) has supported=false; correct_abstention = abstained;
answered_anyway = a valid row that is not an abstention.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict

from rag_ttc_assets.core.answer_rows import Contract, Coverage, Judgment, Row, json_list
from rag_ttc_assets.core.contract import ABSTAINED, CONTRACT_FAILURE, FREE_TEXT, VALID, RequestItem
from rag_ttc_assets.judging.statement_judge import StatementVerdict
from rag_ttc_assets.core.measured import NO_GOLD_QUOTES, MeasuredMean, denominator_fields, measured_mean, reason_of
from rag_ttc_assets.core.records import Question, Request
from rag_ttc_assets.core.tables import Table

__all__ = ["Row", "json_list"]  # re-exported: callers read rows and list columns through these names

CASES = ("answered_supported", "answered_unsupported", "not_answered_evidence_admitted",
         "not_answerable_from_admitted", "not_measured", "no_gold_quotes")
Case = Literal["answered_supported", "answered_unsupported", "not_answered_evidence_admitted",
               "not_answerable_from_admitted", "not_measured", "no_gold_quotes"]
# A free-text answer (an imported arm without the contract) is read as delivered, with the citations its style gives.
_PARSED_STATUSES = frozenset({VALID, CONTRACT_FAILURE, ABSTAINED, FREE_TEXT})
ANSWERED = (VALID, FREE_TEXT)
JUDGED = "judged"
JV, RO = Table.JUDGE_VERDICTS.c, Table.REQUEST_OUTCOMES.c


class RequestOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    query_id: str
    request_id: str
    measured: bool
    judge_status: str
    answered: bool | None
    supported: bool | None
    evidence_admitted: bool
    cited_supporting: bool | None
    verdict: str | None
    contradicts_gold: bool | None
    self_reported_answered: bool | None
    self_reported_supported: bool | None
    overclaimed: bool | None
    underclaimed: bool | None
    case: Case
    coverage: float | None = None


class AbstentionOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    query_id: str
    abstained: bool
    correct_abstention: bool
    answered_anyway: bool


class GradedTotals(TypedDict):
    """Completeness read graded (`graded_totals`): the mean coverage of the requests_graded measured requests."""
    requests_graded: int
    graded_completeness: float | None


class QuestionCompleteness(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    query_id: str
    requests: int
    measured: int
    answered: int
    supported: int
    complete: bool | None  # None when a request of the question was not measured


def parsed_answer(contract: Contract | None) -> bool:
    return contract is not None and contract.status in _PARSED_STATUSES and contract.answer is not None


def keyed_items(question: Question, contract: Contract | None) -> list[RequestItem]:
    """The answer's request items, when they are keyed to this question's requests (by id or exact text).

    Items a model keyed to its own decomposition of the question (no item names a labelled request)
    cannot be attributed to requests; the answer is then read as a whole (top-level citations and
    lexical attribution), as for an answer without items.
    """
    if contract is None or not parsed_answer(contract):
        return []
    items = list(contract.request_items)
    keys = {r.id for r in question.requests} | {r.text for r in question.requests}
    return items if any(it.request in keys for it in items) else []


def coverage_by_request(question: Question, coverage_rows: Iterable[Row | Coverage]) -> dict[str, Coverage]:
    """Coverage per request id (rows as read, or records); a request without one arrived nowhere (nothing ranked)."""
    ids = {r.id for r in question.requests}
    out = {rid: Coverage.nothing(question.id, rid) for rid in ids}
    seen: set[str] = set()
    for i, given in enumerate(coverage_rows):
        c = given if isinstance(given, Coverage) else Coverage.of(given)
        if c.query_id != question.id or c.request_id not in ids:
            raise ValueError(f"coverage_rows[{i}]: request {c.query_id}/{c.request_id} is not a request "
                             f"of question {question.id!r}; pass only that question's coverage rows")
        if c.request_id in seen:
            raise ValueError(f"coverage_rows[{i}]: second coverage row for request {c.request_id!r}")
        seen.add(c.request_id)
        if (c.admitted and not c.selected) or (c.selected and not c.ranked):
            raise ValueError(f"coverage_rows[{i}] ({c.request_id}): admitted implies selected implies ranked, "
                             f"got ranked={c.ranked} selected={c.selected} admitted={c.admitted}")
        out[c.request_id] = c
    return out


def answer_citations(contract_row: Row | Contract | None) -> set[str]:
    """Every chunk the answer cites, top level and request items (contract-valid: admitted chunks only)."""
    contract = _contract(contract_row)
    if contract is None:
        return set()
    cites = set(contract.citation_chunk_ids)
    for it in contract.request_items:
        cites |= set(it.citation_chunk_ids)
    return cites


def gold_texts(question: Question) -> list[tuple[str, str]]:
    """(owning request id, text) of the question's gold block, numbered from 1 in this order: every request's
    gold quotes in request order, then each request's gold answer where the dataset has one."""
    return ([(r.id, e.quote) for r in question.requests for e in r.evidence]
            + [(r.id, r.gold_answer) for r in question.requests if r.gold_answer])


def gold_numbers(question: Question, request_id: str) -> set[int]:
    """1-based numbers of a request's gold texts (quotes, then gold answer) in the question's gold block."""
    return {n for n, (owner, _) in enumerate(gold_texts(question), start=1) if owner == request_id}


def gold_verdicts(judge_row: Row | None) -> list[StatementVerdict]:
    """The gold judge's verdicts of an answer's judge_verdicts row."""
    if judge_row is None:
        return []
    return [StatementVerdict.model_validate(v) for v in json_list(judge_row.get(JV.gold_verdicts))]


def _flat(text: str | None) -> str:
    return " ".join(str(text or "").split())


def self_report(question: Question, request: Request, contract_row: Row | Contract | None,
                judgment_row: Row | Judgment | None = None) -> tuple[bool | None, bool | None]:
    """(self_reported_answered, self_reported_supported): what the generator claims about this request.

    Keyed items (an oracle arm) speak per request. Items in the model's own words are attributed through the
    request judge's excerpt: the claim is that of the item(s) holding it. A request the judge found no excerpt for
    is unattributable (None) unless every item is disowned. An answer without items claims the whole question.
    The rows as read from their tables, or their records (core.answer_rows)."""
    contract = _contract(contract_row)
    judgment = judgment_row if judgment_row is None or isinstance(judgment_row, Judgment) else Judgment.of(judgment_row)
    status = contract.status if contract else None
    if status == ABSTAINED:
        return False, False
    if status != VALID or contract is None or contract.answer is None:  # VALID: a row was read
        return None, None
    keyed = keyed_items(question, contract)
    if keyed:
        mine = [it for it in keyed if it.request in (request.id, request.text)]
        claimed = any(it.supported and it.answer.strip() for it in mine)
        cites = any(it.citation_chunk_ids for it in mine if it.supported)
        return claimed, claimed and cites
    items = contract.request_items
    if not items:
        claimed = contract.abstained is not True
        return claimed, claimed and bool(contract.citation_chunk_ids)
    if not any(it.supported for it in items):
        return False, False
    excerpt = _flat(judgment.excerpt) if judgment is not None and judgment.status == JUDGED else ""
    holding = [it for it in items if excerpt and (a := _flat(it.answer)) and (a in excerpt or excerpt in a)]
    if not holding:
        return None, None
    claimed = any(it.supported for it in holding)
    return claimed, claimed and any(it.citation_chunk_ids for it in holding if it.supported)


def judgments_by_request(question: Question, judgment_rows: Iterable[Row | Judgment]) -> dict[str, Judgment]:
    out: dict[str, Judgment] = {}
    for i, given in enumerate(judgment_rows):
        j = given if isinstance(given, Judgment) else Judgment.of(given)
        if j.query_id != question.id or j.request_id not in {r.id for r in question.requests}:
            raise ValueError(f"request_judgments[{i}]: request {j.query_id}/{j.request_id} is not a request "
                             f"of question {question.id!r}; pass only that question's judgment rows")
        out[j.request_id] = j
    return out


def _contract(row: Row | Contract | None) -> Contract | None:
    return row if row is None or isinstance(row, Contract) else Contract.of(row)


def request_outcomes(question: Question, coverage_rows: Iterable[Row | Coverage], contract_row: Row | Contract | None,
                     judgment_rows: Iterable[Row | Judgment]) -> list[RequestOutcome]:
    """Each request's outcome; the rows as read from their tables, or their records (core.answer_rows)."""
    if not question.answerable:
        raise ValueError(f"question {question.id!r} is unanswerable: use abstention_outcome")
    coverage = coverage_by_request(question, coverage_rows)
    judgments = judgments_by_request(question, judgment_rows)
    contract = _contract(contract_row)
    contract_status = contract.status if contract else "no_answer_row"
    cited_by_answer = answer_citations(contract)
    out: list[RequestOutcome] = []
    for req in question.requests:
        cov = coverage[req.id]
        status: str
        answered: bool | None
        cited: bool | None
        verdict: str | None
        covered: float | None
        supported: bool | None
        contradicts: bool | None
        over: bool | None
        under: bool | None
        case: Case
        j = judgments.get(req.id)
        admitted = bool(cov.admitted)
        if j is not None and j.status == JUDGED:
            status, measured, answered = JUDGED, True, bool(j.addressed)
            cited = answered and any(c in cov.supporting_chunk_ids and c in cited_by_answer
                                     for c in j.cited_chunk_ids)
            verdict = j.verdict
            covered = j.coverage
        elif contract_status not in ANSWERED:
            # Nothing was delivered: measured as not answered, whatever a judge would have said.
            # A contract row's status is a str (a row without one fails RequestOutcome's validation below).
            status = contract_status  # type: ignore[assignment]  # Parquet rows are untyped
            measured, answered, cited, verdict, covered = True, False, False, None, 0.0
        else:
            status = j.status if j is not None else "no_request_judgment"
            measured, answered, cited, verdict, covered = False, None, None, None, None
        claimed, claimed_supported = self_report(question, req, contract, j)
        if measured:
            supported = bool(answered and cited and admitted)
            contradicts = verdict == "contradicts"
            over = None if claimed is None else bool(claimed and (not answered or contradicts))
            under = None if claimed is None else bool(not claimed and answered)
            if not req.evidence:  # no gold quotes: whether it is supported cannot be measured
                supported = cited = None
                case = "no_gold_quotes"
            elif answered:
                case = "answered_supported" if supported else "answered_unsupported"
            else:
                case = "not_answered_evidence_admitted" if admitted else "not_answerable_from_admitted"
        else:
            supported = contradicts = over = under = None
            case = "not_measured"
        out.append(RequestOutcome(query_id=question.id, request_id=req.id, measured=measured, judge_status=status,
                                  answered=answered, supported=supported, evidence_admitted=admitted,
                                  cited_supporting=cited, verdict=verdict, contradicts_gold=contradicts,
                                  self_reported_answered=claimed, self_reported_supported=claimed_supported,
                                  overclaimed=over, underclaimed=under, case=case,
                                  coverage=None if covered is None else float(covered)))
    return out


def abstention_outcome(question: Question, contract_row: Row | Contract | None) -> AbstentionOutcome:
    if question.answerable:
        raise ValueError(f"question {question.id!r} is answerable: use request_outcomes")
    contract = _contract(contract_row)
    status = contract.status if contract else None
    items = contract.request_items if contract and parsed_answer(contract) else ()
    abstained = status == ABSTAINED or (bool(items) and all(not it.supported for it in items))
    return AbstentionOutcome(query_id=question.id, abstained=abstained, correct_abstention=abstained,
                             answered_anyway=status in ANSWERED and not abstained)


def question_completeness(outcomes: Iterable[RequestOutcome]) -> list[QuestionCompleteness]:
    """One row per question (first-seen order); complete = every request answered_supported, None when a request
    was not measured."""
    by_question: dict[str, list[RequestOutcome]] = {}
    for o in outcomes:
        by_question.setdefault(o.query_id, []).append(o)
    return [QuestionCompleteness(query_id=qid, requests=len(rows), measured=sum(o.measured for o in rows),
                                 answered=sum(o.answered is True for o in rows),
                                 supported=sum(o.supported is True for o in rows),
                                 complete=all(o.supported for o in rows) if all(_support_measured(o) for o in rows)
                                 else None)
            for qid, rows in by_question.items()]


def _support_measured(o: RequestOutcome) -> bool:
    """The request judge measured the request and its support could be measured (it has gold quotes)."""
    return o.measured and o.supported is not None


def _reason(o: RequestOutcome) -> str | None:
    """Why a request's completeness is not measured: its judge status's reason, or no gold quotes; None measured."""
    if not o.measured:
        return reason_of(o.judge_status)
    return NO_GOLD_QUOTES if o.supported is None else None


def completeness_value(q: QuestionCompleteness) -> float | None:
    """A question's completeness, supported / requests; None (undefined) unless every request was measured."""
    return q.supported / q.requests if q.complete is not None and q.requests else None


def completeness_denominators(outcomes: Iterable[RequestOutcome]) -> tuple[MeasuredMean, MeasuredMean]:
    """(questions, requests) as core.measured.measured_mean: the mean question completeness (completeness_value)
    over the questions whose every request was measured, and the share of measured requests supported; an
    unmeasured request counts under the reason of its judge status, a question under that of its first unmeasured
    request."""
    outcomes = list(outcomes)
    request_reasons = {(o.query_id, o.request_id): _reason(o) for o in outcomes}
    requests = measured_mean({(o.query_id, o.request_id): float(bool(o.supported)) if _support_measured(o) else None
                              for o in outcomes}, request_reasons)
    first_unmeasured: dict[str, str | None] = {}
    for o in outcomes:
        if not _support_measured(o):
            first_unmeasured.setdefault(o.query_id, request_reasons[(o.query_id, o.request_id)])
    qs = question_completeness(outcomes)
    questions = measured_mean({q.query_id: completeness_value(q) for q in qs},
                              {q.query_id: first_unmeasured.get(q.query_id) for q in qs if q.complete is None})
    return questions, requests


def judge_grades(outcomes: Iterable[RequestOutcome | Row]) -> bool:
    """Whether the request judge reports a coverage: some request it judged has one, or it judged none. A judge that
    reports none (an LLM's) grades nothing, not even the requests nothing was delivered for (their 0.0 is the
    offline judges' reading of an empty answer): its graded completeness is not measured, never 0. Rows are
    RequestOutcome or request_outcomes table rows."""
    graded = [_graded(o) for o in outcomes]
    judged = [coverage for measured, status, coverage in graded if measured and status == JUDGED]
    return not judged or any(coverage is not None for coverage in judged)


def _graded(o: RequestOutcome | Row) -> tuple[bool, str, float | None]:
    """(measured, judge_status, coverage) of an outcome, or of a request_outcomes row."""
    if isinstance(o, RequestOutcome):
        return o.measured, o.judge_status, o.coverage
    return o[RO.measured], o[RO.judge_status], o[RO.coverage]


def graded_totals(outcomes: Iterable[RequestOutcome]) -> GradedTotals:
    """Completeness read graded (the mean of the measured requests' coverage) with its N of M: requests_graded (with
    a coverage) of requests_measured; none graded where the judge reports no coverage (judge_grades)."""
    outcomes = list(outcomes)
    covered = [o.coverage for o in outcomes if o.measured and o.coverage is not None] if judge_grades(outcomes) else []
    return {"requests_graded": len(covered),
            "graded_completeness": (sum(covered) / len(covered)) if covered else None}


def completeness_totals(outcomes: Iterable[RequestOutcome], abstention_outcomes: Iterable[AbstentionOutcome]
                        ) -> dict[str, Any]:
    """Counts over requests and questions; every count of answered or supported is over the measured ones, and
    `requests_measured` of `requests_total` is printed beside every mean. mean_completeness is the mean question
    completeness (the compared metric), with its denominator and the reasons the other questions were not
    measured; requests_not_measured counts the reasons per request."""
    outcomes, abstentions = list(outcomes), list(abstention_outcomes)
    questions = question_completeness(outcomes)
    by_question, by_request = completeness_denominators(outcomes)
    measured_q = [q for q in questions if q.complete is not None]
    unanswerable = len(abstentions)
    correct = sum(a.correct_abstention for a in abstentions)
    measured = [o for o in outcomes if o.measured]
    return {
        "requests_total": len(outcomes),
        "requests_measured": len(measured),
        "requests_answered": sum(o.answered is True for o in outcomes),
        # answered of the measured requests (the share judge-agreement's `addressed` reads), shown where
        # completeness is not measured (no gold quotes) so what was measured stays visible.
        "requests_answered_share": (sum(o.answered is True for o in measured) / len(measured)) if measured else None,
        # Completeness read graded: the mean coverage of the measured requests that have one (requests_graded of
        # requests_measured; a judge that reports no coverage, an LLM's, grades none). Beside the share answered.
        **graded_totals(outcomes),
        "requests_support_measured": sum(_support_measured(o) for o in outcomes),
        "requests_supported": sum(o.supported is True for o in outcomes),
        **{case: sum(o.case == case for o in outcomes) for case in CASES},
        "requests_contradicting_gold": sum(o.contradicts_gold is True for o in outcomes),
        "self_reported_answered": sum(o.self_reported_answered is True for o in measured),
        "self_reported_supported": sum(o.self_reported_supported is True for o in measured),
        # Measured requests whose claim cannot be attributed (items in the model's own words, no excerpt).
        "self_report_unattributed": sum(o.self_reported_answered is None for o in measured),
        "overclaimed": sum(o.overclaimed is True for o in outcomes),
        "underclaimed": sum(o.underclaimed is True for o in outcomes),
        "unanswerable_questions": unanswerable,
        "correct_abstentions": correct,
        "correct_abstention_rate": correct / unanswerable if unanswerable else None,
        "questions_total": len(questions),
        "questions_measured": len(measured_q),
        "questions_complete": sum(q.complete is True for q in measured_q),
        "questions_partial": sum(0 < q.supported < q.requests for q in measured_q),
        "questions_none": sum(q.supported == 0 for q in measured_q),
        # Requests the request judge did not measure, by reason; and those whose support was not measured (the
        # same, and the requests without gold quotes).
        "requests_not_measured": dict(sorted(Counter(reason_of(o.judge_status) for o in outcomes
                                                     if not o.measured).items())),
        "requests_support_not_measured": by_request.not_measured,
        "mean_completeness": by_question.mean,
        **denominator_fields("completeness", by_question),
    }
