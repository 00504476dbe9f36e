"""Answers through litellm and the answer contract for one arm (the support judge of the answers:
judging/statement_judge_stage.py).

Rows are appended to a JSONL file as they finish (flushed per row), so a run that dies keeps
what it finished; the Parquet table is written once the stage completes.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from rag_ttc_assets.core import summaries
from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.contract import ABSTAINED, ESCALATED, VALID, ContractResult, check_contract
from rag_ttc_assets.core.progress import NO_PROGRESS, Progress
from rag_ttc_assets.core.prompts import Prompt, evidence_block, label_values
from rag_ttc_assets.core.records import Question
from rag_ttc_assets.core.run_records import ProviderCalls
from rag_ttc_assets.core.response_formats import answer_reply, response_format
from rag_ttc_assets.core.summaries import is_offline_baseline
from rag_ttc_assets.adapters.table_types import table_frame
from rag_ttc_assets.core.tables import Table
from rag_ttc_assets.stages import arm_supply
from rag_ttc_assets.stages.answer_table import GENERATOR_ROLE
from rag_ttc_assets.core.roles import ANSWERS
from rag_ttc_assets.stages.calls import BUDGET_EXHAUSTED, Caller, pooled
from rag_ttc_assets.stages.retrieval import evidence_pairs
from rag_ttc_assets.stages.row_log import RowLog  # noqa: F401  (the assets open it as stage.RowLog)

if TYPE_CHECKING:
    import polars as pl

# the declared column names (core.tables)
CTX, ANS, CON = Table.ADMITTED_CONTEXTS.c, Table.ANSWERS.c, Table.CONTRACT_RESULTS.c

def answer_messages(prompt: Prompt, q: Question, evidence: list[tuple[str, str]], index_text: str = "",
                    requests_in_prompt: str = "none") -> list[dict]:
    """The generator's messages: the question, the evidence, the title index; the request annotation only in an
    oracle arm (`requests_in_prompt: oracle`)."""
    text = prompt.render(question=q.text, evidence=evidence_block(evidence), title_index=index_text,
                         **label_values(requests_in_prompt, [(r.id, r.text) for r in q.requests]))
    return [{"role": "user", "content": text}]


def generate(cfg: ArmConfig, questions: list[Question], contexts: pl.DataFrame, chunk_text: dict[str, str],
             prompt: Prompt, caller: Caller, log: RowLog | None = None,
             tools: arm_supply.SupplyTools = arm_supply.SupplyTools(), progress: Progress = NO_PROGRESS) -> pl.DataFrame:
    """One row per question. Retrieval and preloaded arms answer over their admitted contexts in one call; tool
    arms run the lookup conversation (stages.arm_supply) and record each call's query and results in `lookups`.
    With citation_check on, a row that fails it is retried once and otherwise marked `escalated`."""
    ctx = {r[CTX.query_id]: r for r in contexts.iter_rows(named=True)}
    if cfg.supply == "tool" and tools.lookup is None:
        raise ValueError("a tool arm needs the lookup tool (SupplyTools.lookup)")

    def one(q: Question) -> dict:
        if cfg.supply == "tool":
            calls, lookups, admitted = arm_supply.tool_conversation(cfg, q, prompt, tools.index_text, caller,
                                                                tools.lookup, chunk_text)
            evidence = [(c, chunk_text[c]) for c in admitted]
        else:
            lookups, admitted = [], ctx[q.id][CTX.admitted_chunk_ids]
            evidence = evidence_pairs(ctx[q.id], chunk_text)
            calls = [caller.call(answer_messages(prompt, q, evidence, tools.index_text, cfg.requests_in_prompt),
                                 response_format=response_format(cfg.response_format, answer_reply(prompt.text)))]
        check, retry = arm_supply.citation_check(cfg, q, calls[-1], evidence, tools.retry_prompt, caller)
        row = {"query_id": q.id, "prompt": prompt.name, "prompt_digest": prompt.digest, "model": cfg.generator.model,
               "provider_role": GENERATOR_ROLE, "offline_baseline": is_offline_baseline(cfg.generator.model),
               "supply": cfg.supply, "admitted_chunk_ids": admitted, "lookups": arm_supply.lookups_json(lookups),
               "lookup_calls": len(lookups), "citation_check": check, **arm_supply.merge_calls(calls + retry)}
        if log is not None:
            log.write(row)
        return row

    if cfg.supply != "tool":  # an offline answerer's texts encoded in one pass (a tool arm's depend on its lookups)
        caller.prefetch([(answer_messages(prompt, q, evidence_pairs(ctx[q.id], chunk_text), tools.index_text,
                                          cfg.requests_in_prompt),
                          response_format(cfg.response_format, answer_reply(prompt.text)), None) for q in questions])
    rows = pooled(one, questions, ANSWERS.workers(cfg), progress, "answering", "answered", "questions")
    return table_frame(Table.ANSWERS, rows)



def calls_summary(df: pl.DataFrame, prefix: str = "") -> ProviderCalls:
    import polars as pl

    cache = df[prefix + "cache_hit"]
    made = df.filter(~cache & (pl.col(prefix + "status") != BUDGET_EXHAUSTED))  # Call.counts_as_provider_call
    latencies = sorted(made[prefix + "latency_s"].to_list())
    if prefix + "provider_turns" in df.columns:  # an imported answer (provider_turns 0): the lab called nothing
        made = made.filter(pl.col(prefix + "provider_turns") > 0)
    return ProviderCalls(
        provider_calls=made.height, cache_hits=int(cache.sum()),
        input_tokens=int(df[prefix + "input_tokens"].fill_null(0).sum()),
        output_tokens=int(df[prefix + "output_tokens"].fill_null(0).sum()),
        mean_input_tokens=float(df[prefix + "input_tokens"].fill_null(0).mean() or 0.0),
        p95_latency_s=float(latencies[int(0.95 * (len(latencies) - 1))]) if latencies else 0.0,
        cost_usd=float(df[prefix + "cost_usd"].fill_null(0).sum()),
        unpriced_rows=int(df[prefix + "cost_usd"].is_null().sum()),
    )


def contract(answers: pl.DataFrame) -> pl.DataFrame:
    rows = []
    for a in answers.iter_rows(named=True):
        res = check_contract(a[ANS.raw_text], a[ANS.admitted_chunk_ids], a[ANS.status])
        if a.get(ANS.citation_check) == arm_supply.ESCALATED and res.status not in (VALID, ABSTAINED):
            # The second seed's escalation: both attempts failed the citation check; no answer is delivered.
            res = ContractResult(status=ESCALATED, reason=f"escalated after one retry: {res.reason}")
        ans = res.answer
        rows.append({
            "query_id": a[ANS.query_id], "status": res.status, "reason": res.reason, "parsed_from": res.parsed_from,
            "answer": ans.answer if ans else None,
            "citation_chunk_ids": list(ans.citation_chunk_ids) if ans else [],
            "abstained": ans.abstained if ans else None,
            "request_items": json.dumps([r.model_dump() for r in ans.requests]) if ans else "[]",
            "answer_chars": len(ans.answer) if ans else 0,
        })
    return table_frame(Table.CONTRACT_RESULTS, rows)


def contract_summary(results: pl.DataFrame) -> dict:
    return summaries.contract_summary(results.to_dicts())
