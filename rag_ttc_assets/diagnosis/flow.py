"""The failure flow (seed sections 8 and 9.2, second seed): for each request of an answerable question, the
FIRST boundary at which its support disappeared.  Every request lands in exactly one branch, checked in order:

  not_retrieved       no supporting chunk in the ranked list.  This includes requests with no supporting chunk
                      at all in this arm's chunking (no gold evidence, or quotes no chunk covers) and requests
                      of questions that never reached retrieval: support that does not exist was not retrieved.
  missed_by_ann       (an arm with an approximate vector index, core.ann) not ranked, but a supporting chunk is in
                      the ranked list the arm would have had with the exact vector list in place of the approximate
                      one: the index's search lost it. Missed by both lists, it stays not_retrieved.
  cut_by_evidence_k   ranked, but no supporting chunk in the evidence_k prefix (selected).
  omitted_by_context  selected, but no supporting chunk admitted under the context budget.
  contract_failure    no parsed answer (no contract row, parse failure, provider fault such as timeout or
                      budget_exhausted, schema failure), or contract status contract_failure.  It comes before the
                      answer's own branches because an unparsed row's content cannot be observed, and a parsed
                      contract_failure row was rejected before any of it could count.
  not_measured        the request judge could not judge the request (a judge fault or unparseable reply): not a
                      boundary of the system, and never counted as not answered.
  not_addressed       the request judge found no part of the (valid or abstained) answer that addresses the
                      request: the prompt-coverage failure.  An abstention addresses nothing, so it lands here.
  admitted_not_cited  addressed, but the judge's excerpt cites no admitted chunk holding the request's evidence.
  judged_unsupported  addressed and cited, but the request judge's verdict is `contradicts`, or the row was judged
                      (judged=true) and no statement is supported for this request: with gold verdicts, no verdict
                      with supported=true cites one of the request's gold quotes; without them, faithfulness == 0
                      against the admitted evidence, or no statements at all.
  ok                  otherwise, including rows whose statement-judge call failed (a judge failure is no verdict).

An imported arm (imported.import_source: another system's traces) names its boundaries after what the trace shows, in the
same order: `no_trace` (the system never answered the question) and `no_retrieval_span` (the trace has no RETRIEVER
span: retrieval was not measured, never counted as not_retrieved) first, then not_retrieved (the RETRIEVER span's
documents), `cut_by_reranker` (retrieved, not in the RERANKER span's output), `no_answer_span` (selected, but the
trace has no LLM span: neither its prompt nor an answer is known), `not_in_prompt` (selected, not in the LLM span's
input messages), then the answer's branches as above. A free-text answer (contract status `free_text`) is read as an answer. A lab arm never lands in
these five branches.

Accounting (second seed: a miss is not automatically a wrong answer, nor a hit a right one), per request
from completeness, a partition of each branch (precedence top down):
  not_measured  the request judge did not measure it (or, answered and not contradicting, its support: no gold
                quotes);
  wrong         contradicts_gold, or answered but not supported;
  acceptable    answered and supported;
  unanswered    not answered.

Hit rate over ALL cases: a question hits when every request's gold evidence was admitted; a case whose
evidence never arrived is a miss whatever the reason, and the denominator is every answerable question,
including those with no ranked list at all.  Request level: admitted requests over all requests.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from rag_ttc_assets.core.answer_rows import Contract, Coverage, Judgment, Row
from rag_ttc_assets.diagnosis.completeness import (RequestOutcome, coverage_by_request, gold_numbers, gold_verdicts,
                                                   parsed_answer, request_outcomes)
from rag_ttc_assets.core.contract import ABSTAINED, FREE_TEXT, NO_ANSWER_SPAN, NO_TRACE, VALID
from rag_ttc_assets.core.measured import NO_GOLD_QUOTES, measured_mean
from rag_ttc_assets.core.records import Question
from rag_ttc_assets.core.tables import Table

JV = Table.JUDGE_VERDICTS.c

FLOW_BRANCHES = ("no_trace", "no_retrieval_span", "not_retrieved", "missed_by_ann", "cut_by_evidence_k",
                 "cut_by_reranker", "no_answer_span", "omitted_by_context", "not_in_prompt", "contract_failure",
                 "not_measured", "not_addressed", "admitted_not_cited", "judged_unsupported", "ok")
# The branches only an imported arm lands in, and the lab boundary each imported one stands at.
IMPORTED_BRANCHES = ("no_trace", "no_retrieval_span", "cut_by_reranker", "not_in_prompt", "no_answer_span")
LAB_BOUNDARY = {"cut_by_reranker": "cut_by_evidence_k", "not_in_prompt": "omitted_by_context"}
QUALITIES = ("acceptable", "wrong", "unanswered", "not_measured")
Quality = Literal["acceptable", "wrong", "unanswered", "not_measured"]
Branch = Literal["no_trace", "no_retrieval_span", "not_retrieved", "missed_by_ann", "cut_by_evidence_k",
                 "cut_by_reranker", "no_answer_span", "omitted_by_context", "not_in_prompt", "contract_failure",
                 "not_measured", "not_addressed", "admitted_not_cited", "judged_unsupported", "ok"]


class FlowRow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    query_id: str
    request_id: str
    branch: Branch
    admitted: bool
    answered: bool | None
    supported: bool | None
    contradicts_gold: bool | None
    quality: Quality


class Accounted(Protocol):
    """What the branch accounting reads of a flow row or a lookup case."""

    @property
    def branch(self) -> str: ...

    @property
    def quality(self) -> str: ...


def _judged_unsupported(question: Question, request_id: str, judge_row: Row | None) -> bool:
    """The gold judge (the answer's judge_verdicts row) found none of the request's gold texts supported."""
    if judge_row is None or judge_row.get(JV.judged) is not True:
        return False
    verdicts = gold_verdicts(judge_row)
    if verdicts:
        mine = gold_numbers(question, request_id)
        return not any(v.supported and mine & set(v.evidence) for v in verdicts)
    faith = judge_row.get(JV.faithfulness)
    return faith is None or faith == 0


def flow_branch(question: Question, coverage_row: Row | Coverage, contract_row: Row | Contract | None,
                judge_row: Row | None, outcome: RequestOutcome, imported: bool = False,
                retrieval_status: str = "ok") -> Branch:
    """The branch of the request that `coverage_row` names, given its completeness outcome. `imported`: the arm's
    rows come from another system's traces (its branch names; `retrieval_status` from its retrieval row). The
    coverage and contract rows as read from their tables, or their records (core.answer_rows)."""
    given = coverage_row if isinstance(coverage_row, Coverage) else Coverage.of(coverage_row)
    contract = contract_row if contract_row is None or isinstance(contract_row, Contract) else Contract.of(contract_row)
    status = contract.status if contract is not None else None
    if imported and (status == NO_TRACE or retrieval_status == NO_TRACE):
        return "no_trace"
    if imported and retrieval_status == "no_retrieval_span":
        return "no_retrieval_span"
    cov = coverage_by_request(question, [given])[given.request_id]
    if not cov.ranked:
        # Only an approximate index's rows carry exact_ranked (core.admission.coverage_rows): None elsewhere.
        return "missed_by_ann" if cov.exact_ranked else "not_retrieved"
    if not cov.selected:
        return "cut_by_reranker" if imported else "cut_by_evidence_k"
    if imported and status == NO_ANSWER_SPAN:  # no LLM span: what its prompt held is unknown
        return "no_answer_span"
    if not cov.admitted:
        return "not_in_prompt" if imported else "omitted_by_context"
    if contract is None or not parsed_answer(contract) or status not in (VALID, ABSTAINED, FREE_TEXT):
        return "contract_failure"
    if not outcome.measured:
        return "not_measured"
    if not outcome.answered:
        return "not_addressed"
    if not outcome.cited_supporting:
        return "admitted_not_cited"
    if outcome.contradicts_gold or _judged_unsupported(question, cov.request_id, judge_row):
        return "judged_unsupported"
    return "ok"


def quality(o: RequestOutcome) -> Quality:
    if not o.measured:
        return "not_measured"
    if o.contradicts_gold or (o.answered and o.supported is False):
        return "wrong"
    if o.answered and o.supported is None:  # no gold quotes: acceptable or wrong is not measured
        return "not_measured"
    return "acceptable" if o.answered else "unanswered"


def flow_rows(question: Question, coverage_rows: Iterable[Row], contract_row: Row | None,
              judge_row: Row | None, judgment_rows: Iterable[Row | Judgment] = (), imported: bool = False,
              retrieval_status: str = "ok") -> list[FlowRow]:
    """One row per request of an answerable question; missing coverage rows count as nothing ranked."""
    coverage = coverage_by_request(question, coverage_rows)
    contract = None if contract_row is None else Contract.of(contract_row)
    out = []
    for o in request_outcomes(question, coverage.values(), contract, judgment_rows):
        out.append(FlowRow(query_id=o.query_id, request_id=o.request_id,
                           branch=flow_branch(question, coverage[o.request_id], contract, judge_row, o,
                                              imported, retrieval_status),
                           admitted=o.evidence_admitted, answered=o.answered, supported=o.supported,
                           contradicts_gold=o.contradicts_gold, quality=quality(o)))
    return out


def branch_accounting(items: Sequence[Accounted], branches: Iterable[str]) -> tuple[dict[str, int], dict[str, dict[str, int]], bool]:
    """Items (each with `branch` and `quality`) per branch, and per branch per answer quality, every branch and
    quality present; and whether each branch's qualities add up to its count. Shared by the failure flow
    (requests) and the lookup flow (cases)."""
    counts = dict.fromkeys(branches, 0)
    accounting = {b: dict.fromkeys(QUALITIES, 0) for b in counts}
    for item in items:
        counts[item.branch] += 1
        accounting[item.branch][item.quality] += 1
    return counts, accounting, all(sum(accounting[b].values()) == counts[b] for b in counts)


def flow_table(rows: Iterable[FlowRow]) -> dict[str, Any]:
    """Requests per branch (every branch present), the total, and per branch acceptable/wrong/unanswered."""
    rows = list(rows)
    counts, accounting, accounting_closes = branch_accounting(rows, FLOW_BRANCHES)
    return {
        **counts,
        "total": len(rows),
        "closes": sum(counts.values()) == len(rows),
        "accounting": accounting,
        "accounting_closes": accounting_closes,
    }


def hit_rate(rows: Iterable[FlowRow], without_gold_quotes: Collection[tuple[str, str]] = ()) -> dict[str, Any]:
    """Retrieval hit rate over every case given: question hit = all its requests' evidence admitted.

    A case whose evidence never arrived is a miss, not an unmeasured row. A request with no gold quote
    (`without_gold_quotes`: (query_id, request_id)) has no evidence to arrive: it is not measured (`no_gold_quotes`),
    never a miss, and a question none of whose requests has one is not measured either. The denominators are
    stated, as beside every mean (core.measured)."""
    rows = list(rows)
    without = set(without_gold_quotes)
    question_hit: dict[str, bool | None] = {}
    for r in rows:
        if (r.query_id, r.request_id) in without:
            question_hit.setdefault(r.query_id, None)
            continue
        prior = question_hit.get(r.query_id)
        question_hit[r.query_id] = (True if prior is None else prior) and r.admitted
    questions = measured_mean({q: None if h is None else float(h) for q, h in question_hit.items()},
                              {q: NO_GOLD_QUOTES for q, h in question_hit.items() if h is None})
    keys = [(r.query_id, r.request_id) for r in rows]
    requests = measured_mean({k: None if k in without else float(r.admitted) for k, r in zip(keys, rows)},
                             {k: NO_GOLD_QUOTES for k in keys if k in without})
    return {
        "hits": sum(1 for h in question_hit.values() if h), "cases": len(question_hit), "hit_rate": questions.mean,
        "measured": questions.measured, "of": questions.of, "not_measured": questions.not_measured,
        "request_hits": sum(r.admitted for k, r in zip(keys, rows) if k not in without), "request_cases": len(rows),
        "request_hit_rate": requests.mean, "request_measured": requests.measured, "request_of": requests.of,
        "request_not_measured": requests.not_measured,
    }
