"""An arm's contract, judge and request-judge summaries from its rows (lists of dicts, one per answer row or
request): data in, data out. The assets read the tables and write these next to them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from rag_ttc_assets.judging import statement_judge
from rag_ttc_assets.core.contract import (ABSTAINED, FREE_TEXT, NO_ANSWER, PARSED_FROM, VALID, contract_sums_close,
                                          summarize_contract)
from rag_ttc_assets.core.measured import (NO_SUPPORT_JUDGE, MeasuredMean, denominator_fields, gold_reason,
                                          measured_mean, reason_of)
from rag_ttc_assets.core.tables import Table

# The rows each summary reads, by their tables' declared column names.
CON, JV, RJ = Table.CONTRACT_RESULTS.c, Table.JUDGE_VERDICTS.c, Table.REQUEST_JUDGMENTS.c

OFFLINE_BASELINES = frozenset({"local/extractive", "local/lexical", "local/contextual", "local/coverage",
                               "local/bertscore", "local/learned"})
# The offline request judges' rules (judging.request_judge), versioned: a change of rule is a change of instrument
# (core.compare_guards.instrument_drift) and of their replies' cache keys. Declared here, where no numpy loads,
# because the code location's instrument reads it. /1: content-word recall >= 0.5; /2: topic-weighted recall >= 0.5,
# and a contradicting sentence addresses the request (docs/judges.md, "A better offline judge"); /3: the verdicts of /2,
# each with its `coverage` (the share of the request's gold material the answer carries, what the verdict thresholds).
# `local/bertscore` (a third juror, BERTScore recall) was added under /3: its rules are new, not a change of another's.
# /4: names, numbers, dates and units normalised before matching (core.text.normalize), a number changed only when
# each text states one the other does not, and the statement judge (local/lexical's statements) checks clauses.
# /5: a statement in a gold quote's own words never contradicts the gold (judging.lexical_judge.quoted_from_gold): under /4
# a clause of a quoted gold sentence matched another gold sentence and was flagged, the gold judge's false alarms rose.
# These rules are also the cache key of local/lexical's statement and gold verdicts (adapters.local_providers.rules_of).
REQUEST_JUDGE_RULES = "request-judge-rules/5"
# `local/learned` (judging.learned_judge) reads the other three's measurements through a fitted model: their rules are its
# features, and its fitted parameters (a versioned file, its digest) are part of its instrument beside them.
OFFLINE_REQUEST_JUDGES = frozenset({"local/lexical", "local/coverage", "local/bertscore",
                                    "local/learned"})  # the judges those rules are

# The request judge's row statuses: judged, or a judge_* status (not measured).
JUDGED = "judged"
# `judge: none` on an arm: no support judge (no statement, faithfulness or gold judge) runs; its rows say so.
NO_JUDGE = "none"


class _Model(Protocol):
    @property
    def model(self) -> str: ...


class ArmModels(Protocol):
    """What these summaries read of an arm's config (a core.arms.ArmConfig, which imports this module lazily, so it is
    named by its shape here): its supply, generator and judge."""

    @property
    def supply(self) -> str: ...

    @property
    def generator(self) -> _Model: ...

    @property
    def judge(self) -> _Model: ...


def has_support_judge(cfg: ArmModels) -> bool:
    """Whether the arm's support judge (statements, faithfulness, gold) runs: not with `judge: none`."""
    return cfg.judge.model != NO_JUDGE


def is_offline_baseline(model: str) -> bool:
    """Our extractive answerer, lexical judge, coverage juror and contextual representation builder, and a panel of
    only those; `local/smollm2` is a real (small) language model."""
    if model.startswith("panel["):
        return all(m in OFFLINE_BASELINES for m in model.split(": ", 1)[1].split(", "))
    return model in OFFLINE_BASELINES


def _mean(values: list[Any]) -> float:
    return float(sum(values) / len(values)) if values else 0.0


def contract_summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Total, valid, parse failures, contract failures by reason, abstentions, provider faults, and whether they
    add up to the total."""
    s = summarize_contract([(r[CON.status], r[CON.reason]) for r in results])
    # The answers delivered: contract-valid, and an imported arm's free-text answers (read whole, no contract).
    valid = [r for r in results if r[CON.status] in (VALID, FREE_TEXT)]
    # Where each parsed reply's object was found (core.contract.PARSED_FROM); rows with no object count in none.
    found = Counter(r.get(CON.parsed_from) for r in results if r.get(CON.parsed_from))
    return {**s.model_dump(),
            "mean_answer_chars": _mean([r[CON.answer_chars] for r in valid]),
            "mean_cited_chunks": _mean([len(r[CON.citation_chunk_ids]) for r in valid]),
            "parsed_from": {where: found.get(where, 0) for where in PARSED_FROM},
            "sums_close": contract_sums_close(s)}


@dataclass(frozen=True)
class JudgeDenominators:
    """The support judge's three means over every answer row, each with its denominator (judge_denominators)."""

    faithfulness: MeasuredMean
    relevance: MeasuredMean
    gold_supported: MeasuredMean


def judge_denominators(verdicts: list[dict[str, Any]]) -> JudgeDenominators:
    """core.measured.measured_mean of faithfulness, relevance and gold support over every answer row, each
    unmeasured row counted under the reason its status gives (invalid, abstained, judge_error, budget, ...)."""
    rows = {r[JV.query_id]: r for r in verdicts}
    reasons = {q: reason_of(r[JV.status]) for q, r in rows.items()}
    return JudgeDenominators(
        faithfulness=measured_mean({q: r[JV.faithfulness] for q, r in rows.items()}, reasons),
        relevance=measured_mean({q: r[JV.answer_relevance] for q, r in rows.items()}, reasons),
        gold_supported=measured_mean({q: r[JV.gold_supported] for q, r in rows.items()},
                                     {q: gold_reason(r[JV.status], r[JV.judge_error]) if r[JV.gold_supported] is None
                                      else None for q, r in rows.items()}),
    )


def generator_models(cfg: ArmModels, answer_models: Iterable[str | None]) -> tuple[str, ...]:
    """The models that wrote an arm's answers: its generator; for an imported arm, the system's own as its traces
    name them on the answer rows (`answer_models`, self-reported), never the lab's generator setting, which an
    imported arm does not read."""
    if cfg.supply != "imported":
        return (cfg.generator.model,)
    return tuple(sorted({m for m in answer_models if m}))


def generator_label(cfg: ArmModels, answer_models: Iterable[str | None]) -> str:
    """generator_models as one name: an imported arm's as `imported: <its traces' models>`, or `imported (model not
    recorded)` when its source names none."""
    if cfg.supply != "imported":
        return cfg.generator.model
    models = generator_models(cfg, answer_models)
    return "imported: " + ", ".join(models) if models else "imported (model not recorded)"


def judge_summary(cfg: ArmModels, verdicts: list[dict[str, Any]],
                  answer_models: Iterable[str | None]) -> dict[str, Any]:
    """Judged, abstained and invalid rows, the means with their denominators, the judge and generator models
    (`answer_models`: the answer rows' models, which name an imported arm's generator; generator_models)."""
    answer_models = list(answer_models)
    statuses = Counter(r[JV.status] for r in verdicts)
    gold = [r for r in verdicts if r[JV.contradicts_gold] is not None]
    m = judge_denominators(verdicts)
    return {
        "answer_rows": len(verdicts),
        "judged": sum(1 for r in verdicts if r[JV.judged]),
        "abstained": statuses[ABSTAINED],  # a Counter: 0 when none
        # An imported arm's questions the system never answered (no_trace, no_answer_span) are unanswered, and a
        # row no support judge was asked about (`judge: none`) unjudged: neither is an invalid answer.
        "invalid": sum(n for s, n in statuses.items() if s not in ("judged", "no_statements", "abstained",
                                                                   *NO_ANSWER, NO_SUPPORT_JUDGE)
                       and not s.startswith("judge_")),
        "unanswered": {s: statuses[s] for s in NO_ANSWER if statuses.get(s)},
        "support_judge": has_support_judge(cfg),
        "judge_failures": sum(n for s, n in statuses.items() if s.startswith("judge_")),
        "statuses": dict(statuses),
        "mean_faithfulness": m.faithfulness.mean,
        **denominator_fields("faithfulness", m.faithfulness),
        "mean_relevance": m.relevance.mean,
        **denominator_fields("relevance", m.relevance),
        "gold_judged": len(gold),
        # Without a support judge no answer was read against the gold: not measured, never 0.
        "contradicts_gold": sum(1 for r in gold if r[JV.contradicts_gold]) if has_support_judge(cfg) else None,
        "mean_gold_supported": m.gold_supported.mean,
        **denominator_fields("gold_supported", m.gold_supported),
        "judge_model": cfg.judge.model,
        "generator_model": generator_label(cfg, answer_models),
        "same_model_as_generator": cfg.judge.model in generator_models(cfg, answer_models),
        "offline_baseline_judge": is_offline_baseline(cfg.judge.model),
        "provider_calls": sum(r[JV.judge_provider_calls] for r in verdicts),
        "cache_hits": sum(r[JV.judge_cache_hits] for r in verdicts),
        # Per judge call ("statements:json", "verdicts:fenced", ...): where its reply's object was found.
        "parsed_from": dict(sorted(Counter(p for r in verdicts for p in r.get(JV.judge_parsed_from) or []).items())),
    }


def request_judge_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The request judge's rows: judged, not measured (judge_* statuses), verdicts, provider calls."""
    statuses = Counter(r[RJ.status] for r in rows)
    verdicts = Counter(r[RJ.verdict] for r in rows if r[RJ.verdict] is not None)
    return {"requests": len(rows), "judged": statuses.get(JUDGED, 0),
            "not_measured": sum(n for s, n in statuses.items() if s.startswith("judge_")),
            "statuses": dict(statuses), "verdicts": {v: verdicts.get(v, 0) for v in statement_judge.REQUEST_VERDICTS},
            "provider_calls": sum(r[RJ.judge_provider_calls] for r in rows),
            "cache_hits": sum(r[RJ.judge_cache_hits] for r in rows),
            # Tokens and cost as for the generator (stages.generation.calls_summary): summed over the calls made;
            # a row whose call was answered (tokens counted) by a model with no known price is unpriced (its cost
            # unknown); a fault's row has no tokens and no cost.
            "input_tokens": sum(r.get(RJ.judge_input_tokens) or 0 for r in rows),
            "output_tokens": sum(r.get(RJ.judge_output_tokens) or 0 for r in rows),
            "cost_usd": float(sum(r.get(RJ.judge_cost_usd) or 0.0 for r in rows)),
            "unpriced_rows": sum(1 for r in rows if r.get(RJ.judge_input_tokens) is not None
                                 and r.get(RJ.judge_cost_usd) is None),
            # One reply per question (each of its request rows repeats it), or per request for an entailment judge
            # (each row its own messages): where its object was found.
            "parsed_from": dict(sorted(Counter({(r[RJ.query_id], r.get(RJ.judge_messages_digest)):
                                                r[RJ.judge_parsed_from] for r in rows
                                                if r.get(RJ.judge_parsed_from)}.values()).items()))}
