"""The request judge for one arm: per request of every answerable question, addressed or not, the excerpt and its
citations, and a verdict against the gold material; one instrument (model and prompt digest) for every arm.

The judge sees the question, the labelled requests with their gold quotes and gold answers, and the answer text
with its citations (each request item's answer and citations as a passage, without the generator's request label
or `supported` flag). Rows that are not contract-valid keep their status and are not judged; a judge fault or an
unparseable reply is a row status (`judge_*`): not measured, never "not addressed".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag_ttc_assets.judging import entailment, statement_judge
from rag_ttc_assets.core.arms import ENTAILMENT, ArmConfig
from rag_ttc_assets.diagnosis.completeness import json_list
from rag_ttc_assets.judging.judge_inputs import GoldRequest, JudgeRequests
from rag_ttc_assets.core.contract import FREE_TEXT, VALID, locate_json_object
from rag_ttc_assets.core.progress import NO_PROGRESS, Progress
from rag_ttc_assets.core.prompts import Prompt, cited_answer_block, gold_block, gold_requests_block
from rag_ttc_assets.core.records import Question, Request
from rag_ttc_assets.core.response_formats import response_format
from rag_ttc_assets.core import summaries
from rag_ttc_assets.core.summaries import (JUDGED, OFFLINE_REQUEST_JUDGES, REQUEST_JUDGE_RULES as RULES,
                                           is_offline_baseline)
from rag_ttc_assets.core.roles import REQUEST_JUDGE
from rag_ttc_assets.stages.calls import Caller, pooled
from rag_ttc_assets.judging import panel
from rag_ttc_assets.core.request_derivation import derivation_of
from rag_ttc_assets.judging.juror_records import kept_jurors
from rag_ttc_assets.judging.panel import panel_name
from rag_ttc_assets.adapters.learned_juror import MODEL as LEARNED, load_parameters, uses_learned_juror
from rag_ttc_assets.adapters.table_types import table_frame
from rag_ttc_assets.core.tables import Table

if TYPE_CHECKING:
    import polars as pl

PARSE_FAILURE = "judge_parse_failure"
CON, RJ = Table.CONTRACT_RESULTS.c, Table.REQUEST_JUDGMENTS.c  # the declared column names (core.tables)


def _answer_view(contract_row: dict) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The answer's citations and its passages (each request item's answer with its own citations, or the whole
    answer with the answer's), as every request judge reads them."""
    items = json_list(contract_row.get(CON.request_items))
    citations = list(contract_row.get(CON.citation_chunk_ids) or [])
    passages = ([(str(it.get("answer") or ""), [str(c) for c in json_list(it.get("citation_chunk_ids"))])
                 for it in items if str(it.get("answer") or "").strip()]
                or [(contract_row[CON.answer], citations)])
    return citations, passages


def request_judge_messages(prompt: Prompt, q: Question, contract_row: dict) -> list[dict]:
    """The messages the request judge is sent for one contract-valid answer."""
    citations, passages = _answer_view(contract_row)
    labelled = [(r.id, r.text, [e.quote for e in r.evidence], r.gold_answer) for r in q.requests]
    return [{"role": "user", "content": prompt.render(
        question=q.text, gold_requests=gold_requests_block(labelled),
        answer=cited_answer_block(contract_row[CON.answer], citations, passages))}]


def request_judge_input(q: Question, contract_row: dict) -> JudgeRequests:
    """What an offline request judge reads for one contract-valid answer: the records `request_judge_messages`
    renders, as the prompt's reader sees them (judging.judge_inputs)."""
    citations, passages = _answer_view(contract_row)
    return JudgeRequests.of(q.text, [GoldRequest.of(r.id, r.text, [e.quote for e in r.evidence], r.gold_answer)
                                     for r in q.requests], contract_row[CON.answer], citations, passages)


def entailment_messages(prompt: Prompt, q: Question, r: Request, contract_row: dict) -> list[dict]:
    """The messages an entailment juror is sent for one request of one contract-valid answer."""
    citations, passages = _answer_view(contract_row)
    return [{"role": "user", "content": prompt.render(
        question=q.text, request=f"[{r.id}] {r.text}", gold=gold_block([e.quote for e in r.evidence], r.gold_answer),
        answer=cited_answer_block(contract_row[CON.answer], citations, passages))}]


def _entailment_rows(cfg: ArmConfig, q: Question, c: dict, base: dict, prompt: Prompt, caller: Caller) -> list[dict]:
    """One row per request of `q`, each judged by its own call (judging.entailment): a fault, a reply that is not the
    schema's object, or a quote not in the answer is the row's status, the reply kept in its error."""
    rows = []
    for r in q.requests:
        row = {**base, "request_id": r.id, "prompt_digest": prompt.digest}
        if c[CON.status] in (VALID, FREE_TEXT):
            _, passages = _answer_view(c)
            call = caller.call(entailment_messages(prompt, q, r, c),
                               response_format=response_format(cfg.response_format, "entailment"))
            row.update(judge_provider_calls=int(call.counts_as_provider_call), judge_cache_hits=int(call.cache_hit),
                       judge_input_tokens=call.input_tokens, judge_output_tokens=call.output_tokens,
                       judge_cost_usd=call.cost_usd, judge_messages_digest=call.messages_digest)
            if call.status != "ok":
                row.update(status=f"judge_{call.status}", judge_error=call.error)
            else:
                row["judge_parsed_from"] = locate_json_object(call.raw_text)[2] or "none"
                try:
                    e = entailment.parse_entailment(call.raw_text, [c[CON.answer], *(t for t, _ in passages)])
                except statement_judge.JudgeParseError as err:
                    row.update(status=PARSE_FAILURE, judge_error=f"{err}; the reply: {call.raw_text!r}")
                except entailment.SpanNotInAnswer as err:
                    row.update(status=entailment.SPAN_NOT_IN_ANSWER, judge_error=f"{err}; the reply: {call.raw_text!r}")
                else:
                    # The quote's citations: those of the passages it occurs in.
                    cited = [x for t, cites in passages if e.addressed and entailment.span_in(e.excerpt, [t])
                             for x in cites]
                    row.update(status=JUDGED, addressed=e.addressed, excerpt=e.excerpt,
                               cited_chunk_ids=list(dict.fromkeys(cited)), verdict=e.verdict, coverage=e.coverage,
                               reason=e.reason)
        rows.append(row)
    return rows


def judge_requests(cfg: ArmConfig, questions: list[Question], contracts: pl.DataFrame, prompt: Prompt,
                   caller: Caller, log=None, progress: Progress = NO_PROGRESS, juror: str | None = None,
                   entailment_prompt: Prompt | None = None) -> pl.DataFrame:
    """One row per request of every answerable question, in question then request order. `juror`: a panel's
    juror, named in the progress it reports. A judge of kind entailment uses `entailment_prompt`."""
    if cfg.request_judge.kind == ENTAILMENT and entailment_prompt is None:
        raise ValueError(f"request judge {cfg.request_judge.model!r} is of kind entailment: pass its prompt")
    rows_by_q = {r[CON.query_id]: r for r in contracts.iter_rows(named=True)}
    answerable = [q for q in questions if q.answerable and q.requests]

    def one(q: Question) -> list[dict]:
        c = rows_by_q.get(q.id) or {"status": "no_answer_row"}
        base = {"query_id": q.id, "status": c[CON.status], "addressed": None, "excerpt": None, "cited_chunk_ids": [],
                "verdict": None, "coverage": None, "reason": None, "judge_error": None,
                "request_judge_model": cfg.request_judge.model,
                "prompt_digest": prompt.digest, "judge_provider_calls": 0, "judge_cache_hits": 0,
                "judge_input_tokens": None, "judge_output_tokens": None, "judge_cost_usd": None,
                "judge_messages_digest": None, "judge_parsed_from": None}
        if cfg.request_judge.kind == ENTAILMENT:
            rows = _entailment_rows(cfg, q, c, base, entailment_prompt, caller)
            if log is not None:
                for row in rows:
                    log.write(row)
            return rows
        judged: list[statement_judge.RequestJudgment] | None = None
        if c[CON.status] in (VALID, FREE_TEXT):
            call = caller.call(request_judge_messages(prompt, q, c),
                               response_format=response_format(cfg.response_format, "request_judgments"),
                               judge_input=request_judge_input(q, c))
            base.update(judge_provider_calls=int(call.counts_as_provider_call and not caller.offline_baseline),
                        judge_cache_hits=int(call.cache_hit), judge_input_tokens=call.input_tokens,
                        judge_output_tokens=call.output_tokens, judge_cost_usd=call.cost_usd,
                        judge_messages_digest=call.messages_digest)
            if call.status != "ok":
                base.update(status=f"judge_{call.status}", judge_error=call.error)
            else:
                base["judge_parsed_from"] = locate_json_object(call.raw_text)[2] or "none"
                try:
                    judged = statement_judge.parse_request_judgments(call.raw_text, [r.id for r in q.requests])
                    base["status"] = JUDGED
                except statement_judge.JudgeParseError as e:
                    base.update(status=PARSE_FAILURE, judge_error=str(e))
        rows = []
        for i, r in enumerate(q.requests):
            row = {**base, "request_id": r.id}
            if i:  # the question's one call is counted on its first request row
                row.update(judge_provider_calls=0, judge_cache_hits=0, judge_input_tokens=None,
                           judge_output_tokens=None, judge_cost_usd=None)
            if judged is not None:
                j = judged[i]
                row.update(addressed=j.addressed, excerpt=j.excerpt, cited_chunk_ids=list(j.cited_chunk_ids),
                           verdict=j.verdict, coverage=j.coverage, reason=j.reason)
            rows.append(row)
        if log is not None:
            for row in rows:
                log.write(row)
        return rows

    if cfg.request_judge.kind != ENTAILMENT:  # an offline judge's texts encoded in one pass
        valid = [(q, rows_by_q[q.id]) for q in answerable
                 if q.id in rows_by_q and rows_by_q[q.id][CON.status] in (VALID, FREE_TEXT)]
        caller.prefetch([(request_judge_messages(prompt, q, c),
                          response_format(cfg.response_format, "request_judgments"), request_judge_input(q, c))
                         for q, c in valid])
    doing, done = ("request-judging", "request-judged") if juror is None else (
        f"request-judging by {juror}", f"{juror} request-judged")
    rows = [row for rs in pooled(one, answerable, REQUEST_JUDGE.workers(cfg), progress, doing, done, "questions")
            for row in rs]
    return table_frame(Table.REQUEST_JUDGMENTS, rows)


def judge_panel(cfg: ArmConfig, questions: list[Question], contracts: pl.DataFrame, prompt: Prompt,
                callers: list[Caller], log=None, progress: Progress = NO_PROGRESS,
                entailment_prompt: Prompt | None = None) -> pl.DataFrame:
    """A panel's rows (judging.panel): each juror judges every answer as the one request judge would (its faults its
    own rows' statuses), then per request the panel's verdict, every juror's kept in `jurors` (JSON) beside
    `jurors_disagree`; the provider calls and cache hits are the jurors' summed."""
    import json

    models = [j.model for j in cfg.request_judges]
    per_juror = [judge_requests(cfg.model_copy(update={"request_judge": juror}), questions, contracts, prompt, c,
                                log, progress, juror=juror.model, entailment_prompt=entailment_prompt).to_dicts()
                 for juror, c in zip(cfg.request_judges, callers, strict=True)]
    name = panel.panel_name(models, cfg.request_judge_aggregation)
    # Each request's gold material decides the word-reading jurors' threshold (judging.panel.address_threshold).
    has_gold = {(q.id, r.id): bool([e.quote for e in r.evidence if e.quote] or r.gold_answer)
                for q in questions for r in q.requests}
    # The learned juror's threshold is its fitted parameters' (its coverage is its probability).
    learned_threshold = load_parameters().threshold if LEARNED in models else None
    rows = []
    for i, first in enumerate(per_juror[0]):
        votes = [rs[i] for rs in per_juror]
        gold = has_gold.get((first["query_id"], first["request_id"]), True)
        combined = panel.combine(models, votes, cfg.request_judge_aggregation,
                                 [learned_threshold if m == LEARNED else panel.address_threshold(m, gold)
                                  for m in models]).model_dump()
        row = {**first, **{k: v for k, v in combined.items() if k != "jurors"}, "request_judge_model": name,
               "jurors": json.dumps(combined["jurors"], ensure_ascii=False)}
        for k in (RJ.judge_provider_calls, RJ.judge_cache_hits):
            row[k] = sum(v[k] for v in votes)
        for k in (RJ.judge_input_tokens, RJ.judge_output_tokens, RJ.judge_cost_usd):
            row[k] = sum(v[k] or 0 for v in votes) if any(v[k] is not None for v in votes) else None
        rows.append(row)
    return table_frame(Table.REQUEST_JUDGMENTS, rows, RJ.jurors_measured, RJ.jurors_disagree, RJ.jurors)


def panel_summary(cfg: ArmConfig, df: pl.DataFrame) -> dict | None:
    """The jurors' agreement (judging.panel.agreement), or None for one request judge."""
    if not cfg.request_judges or RJ.jurors not in df.columns:
        return None
    rows = [kept_jurors(v) for v in df[RJ.jurors].to_list()]
    votes = [[j.addressed if j.status == JUDGED else None for j in row] for row in rows]
    votes = [v for v in votes if any(x is not None for x in v)]  # rows no juror judged (not contract-valid) out
    # Each juror's faults (judge_* statuses: its own not-measured, never a vote).
    faults = {m: 0 for m in (j.model for j in cfg.request_judges)}
    for row in rows:
        for j in row:
            faults[j.model] += j.status.startswith("judge_")
    return {**panel.agreement([j.model for j in cfg.request_judges], votes),
            "aggregation": cfg.request_judge_aggregation, "juror_not_measured": faults}


def instrument(cfg: ArmConfig, prompt: Prompt, questions: list[Question] | None = None,
               entailment_prompt: Prompt | None = None) -> dict:
    """The request judge as an instrument: what must be equal for two arms' completeness to be comparable, with
    how the requests it judged were derived from gold answers (core.request_derivation; None: hand-written). An arm
    with entailment jurors (or judge) adds `entailment`: which jurors, and their prompt's name and digest."""
    entailed = [j.model for j in cfg.entailment_jurors]
    if entailed and entailment_prompt is None:
        raise ValueError(f"entailment juror(s) {entailed}: the instrument needs their prompt")

    model = (panel_name([j.model for j in cfg.request_judges], cfg.request_judge_aggregation) if cfg.request_judges
             else cfg.request_judge.model)
    # The call parameters (temperature, ...) change an LLM judge's verdicts, so they are part of the instrument;
    # recorded only when set, so an instrument without them reads as before.
    params = ([dict(j.params) for j in cfg.request_judges] if any(j.params for j in cfg.request_judges)
              else None) if cfg.request_judges else (dict(cfg.request_judge.params) or None)
    # The offline request judges' rules are versioned (core.summaries.REQUEST_JUDGE_RULES): rules changed under one name
    # are another instrument. Recorded when a judge or juror is one of them.
    models = [j.model for j in cfg.request_judges] if cfg.request_judges else [cfg.request_judge.model]
    rules = RULES if any(m in OFFLINE_REQUEST_JUDGES for m in models) else None
    # The learned juror's fitted parameters (judging.learned_judge: the file and its digest): a refit is another
    # instrument.
    learned = load_parameters().instrument() if uses_learned_juror(cfg) else None
    return {"model": model, "prompt": prompt.name, "prompt_digest": prompt.digest,
            "offline_baseline": is_offline_baseline(model), **({"rules": rules} if rules else {}),
            **({"learned": learned} if learned else {}),
            **({"jurors": [j.model for j in cfg.request_judges], "aggregation": cfg.request_judge_aggregation,
                "panel_rules": panel.PANEL_RULES} if cfg.request_judges else {}),
            **({"params": params} if params else {}),
            **({"entailment": {"jurors": entailed, "prompt": entailment_prompt.name,
                               "prompt_digest": entailment_prompt.digest}} if entailed else {}),
            "requests_derived": derivation_of(questions or [])}


def request_judge_summary(df: pl.DataFrame) -> dict:
    return summaries.request_judge_summary(df.to_dicts())
