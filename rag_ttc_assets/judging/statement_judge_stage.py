"""The support judge of an arm's answers (the statement judge), two stages and the gold beside them: statements
extracted from each contract-valid answer, then verdicts against the admitted evidence, then against the gold
evidence (judging.statement_judge parses each reply, judging.judge_inputs hands an offline judge the records its prompt is
rendered from); its summary and its measurement against planted claims. The answers themselves:
stages/generation.py.

Rows are appended to a JSONL file as they finish (flushed per row), so a run that dies keeps what it finished; the
Parquet table is written once the stage completes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from rag_ttc_assets.adapters.table_types import table_frame
from rag_ttc_assets.core import summaries
from rag_ttc_assets.judging import statement_judge
from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.diagnosis.completeness import gold_texts
from rag_ttc_assets.core.contract import FREE_TEXT, VALID, locate_json_object
from rag_ttc_assets.core.counterfactual import Planted
from rag_ttc_assets.judging.judge_inputs import ExtractStatements, VerifyAgainstGold, VerifyStatements
from rag_ttc_assets.judging.judge_measurement import judge_measurement
from rag_ttc_assets.core.measured import NO_SUPPORT_JUDGE, Counts, measured_text
from rag_ttc_assets.core.progress import NO_PROGRESS, Progress
from rag_ttc_assets.core.prompts import Prompt, numbered_block, statements_block
from rag_ttc_assets.core.records import Question
from rag_ttc_assets.core.response_formats import response_format
from rag_ttc_assets.core.roles import JUDGE
from rag_ttc_assets.core.tables import Table
from rag_ttc_assets.stages.calls import Call, Caller, pooled
from rag_ttc_assets.stages.retrieval import evidence_pairs
from rag_ttc_assets.stages.row_log import RowLog  # noqa: F401  (the judge asset opens it as stage.RowLog)

if TYPE_CHECKING:
    import polars as pl

# the declared column names (core.tables)
CTX, ANS, CON = Table.ADMITTED_CONTEXTS.c, Table.ANSWERS.c, Table.CONTRACT_RESULTS.c
JV, RJ = Table.JUDGE_VERDICTS.c, Table.REQUEST_JUDGMENTS.c


JUDGE_CALLS = ("statements", "verdicts", "gold")


def parsed_from(calls: list[Call], names: tuple[str, ...]) -> list[str]:
    """"<call>:<where>" for each call that returned text: where its JSON object was found (core.contract.PARSED_FROM),
    or "none" when it had none (the row's judge_parse_failure)."""
    return [f"{name}:{locate_json_object(call.raw_text)[2] or 'none'}"
            for name, call in zip(names, calls) if call.status == "ok"]


def _parsed_call(call: Call, parse):
    """(status, parsed) for a judge call: a provider fault or unparseable output is a row status."""
    if call.status != "ok":
        return f"judge_{call.status}", None
    try:
        return "ok", parse(call.raw_text)
    except statement_judge.JudgeParseError as e:
        return "judge_parse_failure", str(e)


@dataclass(frozen=True)
class JudgePrompts:
    """The support judge's prompts: statements, their verdicts against the admitted evidence, against the gold."""

    statements: Prompt
    verdicts: Prompt
    gold: Prompt

    def items(self) -> list[tuple[str, Prompt]]:
        """(name, prompt) of each, in JUDGE_CALLS order (the judge asset's prompt_digests)."""
        return [("statements", self.statements), ("verdicts", self.verdicts), ("gold", self.gold)]


@dataclass(frozen=True)
class SupportVerdicts:
    """What the support judge found of one valid answer (_judge_valid): a judge_verdicts row's judged fields, each
    as the row holds it when the judge stopped before it (a fault, no statements, a gold judge's failure)."""

    status: str
    judged: bool = False
    statements: list[str] = field(default_factory=list)
    verdicts: str = "[]"  # JSON: the statement verdicts
    faithfulness: float | None = None
    answer_relevance: float | None = None
    gold_verdicts: str = "[]"  # JSON: the verdicts against the gold
    gold_supported: float | None = None
    contradicts_gold: bool | None = None
    judge_error: str | None = None


def judge(cfg: ArmConfig, questions: list[Question], contracts: pl.DataFrame, contexts: pl.DataFrame,
          chunk_text: dict[str, str], prompts: JudgePrompts, caller: Caller | None,
          log: RowLog | None = None, progress: Progress = NO_PROGRESS) -> pl.DataFrame:
    """Statements, then verdicts against the admitted evidence, then verdicts against the gold evidence.

    Rows that are not contract-valid keep their status and are not judged: the judge never repairs. With `judge:
    none` (no support judge, `caller` None) nothing is called: an answer row's status is `no_support_judge`.
    """
    support_judge = summaries.has_support_judge(cfg)
    if support_judge and caller is None:
        raise ValueError("a support judge needs its caller")
    qs = {q.id: q for q in questions}
    ctx = {r[CTX.query_id]: r for r in contexts.iter_rows(named=True)}

    def one(c: dict) -> dict:
        q = qs[c[CON.query_id]]
        calls: list[Call] = []
        if c[CON.status] in (VALID, FREE_TEXT) and not support_judge:
            found = SupportVerdicts(status=NO_SUPPORT_JUDGE)
        elif c[CON.status] in (VALID, FREE_TEXT):
            found = _judge_valid(q, c[CON.answer], [t for _, t in evidence_pairs(ctx[q.id], chunk_text)],
                                 prompts, caller, calls, cfg.response_format)
        else:  # not contract-valid: its status kept, unjudged
            found = SupportVerdicts(status=c[CON.status])
        row = {"query_id": q.id, "status": found.status, "judged": found.judged, "statements": found.statements,
               "verdicts": found.verdicts, "faithfulness": found.faithfulness,
               "answer_relevance": found.answer_relevance, "gold_verdicts": found.gold_verdicts,
               "gold_supported": found.gold_supported, "contradicts_gold": found.contradicts_gold,
               "judge_error": found.judge_error, "judge_model": cfg.judge.model,
               "judge_parsed_from": parsed_from(calls, JUDGE_CALLS),
               # An offline judge (local/lexical) calls no provider: its calls are not provider calls.
               "judge_provider_calls": (0 if caller is None or caller.offline_baseline
                                        else sum(k.counts_as_provider_call for k in calls)),
               "judge_cache_hits": sum(k.cache_hit for k in calls),
               "judge_input_tokens": sum(k.input_tokens or 0 for k in calls),
               "judge_output_tokens": sum(k.output_tokens or 0 for k in calls),
               "judge_messages_digests": [k.messages_digest for k in calls]}  # what each judge call was sent
        if log is not None:
            log.write(row)
        return row

    # Every answer row counts, judged or not: the total is known up front and a rate over rows is the step's.
    # "judged 280 answers"; with `judge: none`, "no support judge (judge: none), 280 answers unjudged".
    words = (("judging", "judged", "answers") if support_judge
             else ("recording", "no support judge (judge: none),", "answers unjudged"))
    if support_judge and caller is not None:  # an offline judge's texts encoded in one pass
        valid = [c for c in contracts.rows(named=True) if c[CON.status] in (VALID, FREE_TEXT)]
        caller.prefetch(chains=[_statement_chain(qs[c[CON.query_id]], c[CON.answer],
                                                 [t for _, t in evidence_pairs(ctx[c[CON.query_id]], chunk_text)],
                                                 prompts, cfg.response_format) for c in valid])
    rows = pooled(one, contracts.rows(named=True), JUDGE.workers(cfg), progress, *words)
    return table_frame(Table.JUDGE_VERDICTS, rows)


def _statement_chain(q: Question, answer: str, evidence: list[str], prompts: JudgePrompts, mode: str):
    """(first call's messages, its response_format, the chain): `_judge_valid`'s calls for one answer in its order,
    through a `reply` that stands for the judge (Caller.prefetch)."""
    def chain(reply) -> None:
        try:
            statements = statement_judge.parse_statements(reply(ExtractStatements.of(q.text, answer)))
        except statement_judge.JudgeParseError:
            return
        if statements:
            reply(VerifyStatements.of(q.text, statements, evidence))
            gold = [text for _, text in gold_texts(q)]
            if gold:
                reply(VerifyAgainstGold.of(q.text, statements, gold))

    first = [{"role": "user", "content": prompts.statements.render(question=q.text, answer=answer)}]
    return first, response_format(mode, "statements"), chain


def _judge_valid(q: Question, answer: str, evidence: list[str], prompts: JudgePrompts, caller: Caller,
                 calls: list[Call], mode: str) -> SupportVerdicts:
    # Each call is handed the records its prompt is rendered from (judging.judge_inputs): an offline judge reads those.
    call = caller.call([{"role": "user", "content": prompts.statements.render(question=q.text, answer=answer)}],
                       response_format=response_format(mode, "statements"),
                       judge_input=ExtractStatements.of(q.text, answer))
    calls.append(call)
    status, statements = _parsed_call(call, statement_judge.parse_statements)
    if status != "ok":
        return SupportVerdicts(status=status, judge_error=statements if isinstance(statements, str) else call.error)
    if not statements:
        return SupportVerdicts(status="no_statements", judged=True)
    block = statements_block(statements)
    call = caller.call([{"role": "user", "content": prompts.verdicts.render(
        question=q.text, statements=block, evidence=numbered_block("evidence", evidence))}],
        response_format=response_format(mode, "verdicts"),
        judge_input=VerifyStatements.of(q.text, statements, evidence))
    calls.append(call)
    status, parsed = _parsed_call(call, lambda raw: statement_judge.parse_verdicts(raw, len(statements)))
    if status != "ok":
        return SupportVerdicts(status=status, statements=statements,
                               judge_error=parsed if isinstance(parsed, str) else call.error)
    verdicts, relevance = parsed
    out = SupportVerdicts(status="judged", judged=True, statements=statements,
                          verdicts=json.dumps([v.model_dump(exclude={"contradicts_gold"}) for v in verdicts]),
                          faithfulness=statement_judge.faithfulness(verdicts), answer_relevance=relevance)
    gold = [text for _, text in gold_texts(q)]
    if gold:
        call = caller.call([{"role": "user", "content": prompts.gold.render(
            question=q.text, statements=block, gold=numbered_block("gold", gold))}],
            response_format=response_format(mode, "gold_verdicts"),
            judge_input=VerifyAgainstGold.of(q.text, statements, gold))
        calls.append(call)
        status, parsed = _parsed_call(call, lambda raw: statement_judge.parse_verdicts(raw, len(statements), gold=True))
        if status == "ok":
            gv, _ = parsed
            out = replace(out, gold_verdicts=json.dumps([v.model_dump() for v in gv]),
                          gold_supported=statement_judge.faithfulness(gv), contradicts_gold=any(v.contradicts_gold for v in gv))
        else:
            out = replace(out, judge_error=f"gold judge: {parsed if isinstance(parsed, str) else call.error}")
    return out


JUDGE_MEANS = ("faithfulness", "relevance", "gold_supported")


def denominator_metadata(summary: dict) -> dict[str, str]:
    """"<name>/measured": "37 measured of 50 (not measured: abstained 10, invalid 3)" for each judge mean."""
    return {f"{n}/measured": measured_text(Counts(measured=summary[f"{n}_measured"], of=summary[f"{n}_of"],
                                                 not_measured=summary[f"{n}_not_measured"])) for n in JUDGE_MEANS}


def judge_summary(cfg: ArmConfig, verdicts: pl.DataFrame, answers: pl.DataFrame) -> dict:
    """core.summaries.judge_summary; `answers`' models name an imported arm's generator."""
    return summaries.judge_summary(cfg, verdicts.to_dicts(), answers[ANS.model].to_list())


def measure_judges(cfg: ArmConfig, questions: list[Question], contracts: pl.DataFrame, verdicts: pl.DataFrame,
                   judgments: pl.DataFrame, contexts: pl.DataFrame) -> dict:
    """judging.judge_measurement over an arm's tables: planted claims from admitted_contexts (planted-falsehood)."""
    by_q: dict[str, list[dict]] = {}
    for r in judgments.iter_rows(named=True):
        by_q.setdefault(r[RJ.query_id], []).append(r)
    planted = {r[CTX.query_id]: [Planted(**p) for p in json.loads(r.get(CTX.planted) or "[]")]
               for r in contexts.iter_rows(named=True)}
    return judge_measurement(questions, {r[CON.query_id]: r for r in contracts.iter_rows(named=True)},
                             {r[JV.query_id]: r for r in verdicts.iter_rows(named=True)}, by_q, planted)
