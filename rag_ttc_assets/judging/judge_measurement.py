"""Judges measured where the truth is known by construction (the gold judge and the request judge alike).

  sensitivity   planted-falsehood arms: of the answers that repeat a planted falsehood (core.counterfactual.repeats),
                the share the gold judge flags contradicts_gold; of the planted requests whose answer repeats the
                falsehood, the share the request judge's verdict calls `contradicts`.
  false alarms  any arm: of the answers that quote a request's gold evidence verbatim (whitespace-normalised) and
                repeat no planted claim, the share the gold judge flags contradicts_gold; of those requests, the
                share the request judge calls `contradicts`.

Only contract-valid rows count (the judges see no other), and each share is over the rows that judge measured
(gold verdicts present; a request judged), with its numerator and denominator beside it. Shares of nothing are None.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rag_ttc_assets.core.contract import VALID
from rag_ttc_assets.core.counterfactual import Planted, repeats
from rag_ttc_assets.core.records import Question


def _flat(text: str) -> str:
    return " ".join(text.split())


def quotes_verbatim(answer: str, quote: str) -> bool:
    return bool(quote.strip()) and _flat(quote) in _flat(answer)


def _share(flagged: int, of: int) -> dict[str, Any]:
    return {"flagged": flagged, "of": of, "share": flagged / of if of else None}


def judge_measurement(questions: Iterable[Question], contracts: Mapping[str, dict[str, Any]],
                      gold_rows: Mapping[str, dict[str, Any]], judgments: Mapping[str, list[dict[str, Any]]],
                      planted: Mapping[str, list[Planted]]) -> dict[str, Any]:
    """Sensitivity and false alarms of the gold judge and the request judge (see the module docstring)."""
    gold_hits = gold_n = req_hits = req_n = 0
    gold_fa = gold_fa_n = req_fa = req_fa_n = 0
    for q in questions:
        c = contracts.get(q.id)
        if not c or c.get("status") != VALID or not c.get("answer"):
            continue
        answer = c["answer"]
        contradicts = (gold_rows.get(q.id) or {}).get("contradicts_gold")
        verdicts = {r["request_id"]: r.get("verdict") for r in judgments.get(q.id, []) if r.get("status") == "judged"}
        repeated = [p for p in planted.get(q.id, []) if repeats(answer, p)]
        if repeated:
            if contradicts is not None:
                gold_n += 1
                gold_hits += bool(contradicts)
            for rid in dict.fromkeys(p.request_id for p in repeated):
                if rid in verdicts:
                    req_n += 1
                    req_hits += verdicts[rid] == "contradicts"
            continue
        quoting = [r.id for r in q.requests if any(quotes_verbatim(answer, e.quote) for e in r.evidence)]
        if not quoting:
            continue
        if contradicts is not None:
            gold_fa_n += 1
            gold_fa += bool(contradicts)
        for rid in quoting:
            if rid in verdicts:
                req_fa_n += 1
                req_fa += verdicts[rid] == "contradicts"
    return {"sensitivity": {"gold_judge": _share(gold_hits, gold_n), "request_judge": _share(req_hits, req_n)},
            "false_alarms": {"gold_judge": _share(gold_fa, gold_fa_n), "request_judge": _share(req_fa, req_fa_n)}}
