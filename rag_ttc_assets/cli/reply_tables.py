"""`rag-ttc run`'s tables of what the model wrote: where each reply's JSON object was found, the contract failures by
reason, the judges' statuses and the request judge's verdicts, with the same-model flags. Printed when some arm's
replies were not all clean JSON or some arm's generator is a language model, not an offline baseline."""

from __future__ import annotations

from rag_ttc_assets.core.contract import PARSED_FROM
from rag_ttc_assets.core.summaries import is_offline_baseline


def wanted(reports: dict[str, dict]) -> bool:
    def unclean(rep: dict) -> bool:
        c = rep.get("contract") or {}
        return bool(c.get("parse_failures") or c.get("contract_failures")
                    or any(n for k, n in (c.get("parsed_from") or {}).items() if k != "json"))

    return any("contract" in rep and (unclean(rep) or not is_offline_baseline(str(rep.get("generator_model", ""))))
               for rep in reports.values())


def _counts(counts: dict | None) -> str:
    """"a 3, b 1", or "-" when there is nothing to count."""
    shown = [f"{k} {v}" for k, v in (counts or {}).items() if v]
    return ", ".join(shown) or "-"


def reply_tables(reports: dict[str, dict], text_table) -> str:
    rows = []
    for n, rep in reports.items():
        c = rep.get("contract") or {}
        found = c.get("parsed_from") or {}
        no_object = c.get("parse_failures")
        rows.append([n, rep.get("response_format"), *[found.get(k, 0) for k in PARSED_FROM], no_object,
                     _counts(c.get("contract_failure_reasons")), _counts(c.get("provider_faults"))])
    out = ["answers: where each reply's JSON object was found (none: a parse failure), contract failures by reason:\n"
           + text_table(["arm", "response_format", *PARSED_FROM, "none", "contract_failure_reasons",
                         "provider_faults"], rows)]
    if any("judge" in rep for rep in reports.values()):
        rows = []
        for n, rep in reports.items():
            j, rj = rep.get("judge") or {}, rep.get("request_judge") or {}
            rows.append([n, j.get("same_model_as_generator"), _counts(j.get("statuses")), _counts(j.get("parsed_from")),
                         rj.get("same_model_as_generator"), _counts(rj.get("statuses")), _counts(rj.get("verdicts")),
                         _counts(rj.get("parsed_from"))])
        out.append("judges: row statuses, where each judge reply's object was found; same_model: the judge is the "
                   "generator's model:\n"
                   + text_table(["arm", "judge_same_model", "judge_statuses", "judge_parsed_from",
                                 "request_judge_same_model", "request_judge_statuses", "request_verdicts",
                                 "request_parsed_from"], rows))
    return "\n\n".join(out)
