"""`rag-ttc run`'s tables of what the model wrote: where each reply's JSON object was found, the contract failures by
reason, the judges' statuses and the request judge's verdicts, with the same-model flags. Printed when some arm's
replies were not all clean JSON or some arm's generator is a language model, not an offline baseline."""

from __future__ import annotations

from collections.abc import Mapping

from rag_ttc_assets.core.contract import PARSED_FROM
from rag_ttc_assets.core.run_report import ArmView, ContractView, JudgeView, RequestJudgeView
from rag_ttc_assets.core.summaries import is_offline_baseline


def wanted(reports: Mapping[str, ArmView]) -> bool:
    def unclean(c: ContractView) -> bool:
        return bool(c.parse_failures or c.contract_failures
                    or any(n for k, n in (c.parsed_from or {}).items() if k != "json"))

    return any(rep.contract is not None and (unclean(rep.contract)
                                             or not is_offline_baseline(str(rep.generator_model or "")))
               for rep in reports.values())


def _counts(counts: Mapping[str, int] | None) -> str:
    """"a 3, b 1", or "-" when there is nothing to count."""
    shown = [f"{k} {v}" for k, v in (counts or {}).items() if v]
    return ", ".join(shown) or "-"


def reply_tables(reports: Mapping[str, ArmView], text_table) -> str:
    rows = []
    for n, rep in reports.items():
        c = rep.contract or ContractView()
        found = c.parsed_from or {}
        rows.append([n, rep.response_format, *[found.get(k, 0) for k in PARSED_FROM], c.parse_failures,
                     _counts(c.contract_failure_reasons), _counts(c.provider_faults)])
    out = ["answers: where each reply's JSON object was found (none: a parse failure), contract failures by reason:\n"
           + text_table(["arm", "response_format", *PARSED_FROM, "none", "contract_failure_reasons",
                         "provider_faults"], rows)]
    if any(rep.judge is not None for rep in reports.values()):
        rows = []
        for n, rep in reports.items():
            j, rj = rep.judge or JudgeView(), rep.request_judge or RequestJudgeView()
            rows.append([n, j.same_model_as_generator, _counts(j.statuses), _counts(j.parsed_from),
                         rj.same_model_as_generator, _counts(rj.statuses), _counts(rj.verdicts),
                         _counts(rj.parsed_from)])
        out.append("judges: row statuses, where each judge reply's object was found; same_model: the judge is the "
                   "generator's model:\n"
                   + text_table(["arm", "judge_same_model", "judge_statuses", "judge_parsed_from",
                                 "request_judge_same_model", "request_judge_statuses", "request_verdicts",
                                 "request_parsed_from"], rows))
    return "\n\n".join(out)
