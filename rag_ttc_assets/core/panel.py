"""A panel of request judges (an arm's `request_judges`): each juror's verdict per request kept, the panel's verdict
by a declared aggregation, the jurors' agreement with each other, and where they disagree.

  aggregation   over the jurors that measured the request (a juror's fault is its own `not_measured`, never a
                vote): `majority` addressed when more than half of them say so (a tie is not addressed, and the
                jurors disagree); `all` when every one does; `any` when one does. No juror measured it: the panel
                did not either (the first juror's fault status).
  verdict       not_addressed when the panel says not addressed; else the verdict most of the jurors that said
                addressed gave (ties to the earlier juror), with that juror's excerpt, citations and reason.
  coverage      the mean of the measured jurors' coverage (core.request_judge) when each reports one; else None.
  agreement     Fleiss' kappa (statsmodels) over the requests every juror measured, Krippendorff's alpha (the
                krippendorff package, nominal) over those at least two measured, of `addressed`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

AGGREGATIONS = ("majority", "all", "any")
JUDGED = "judged"


def panel_name(models: Sequence[str], aggregation: str) -> str:
    """The panel as one instrument name: two arms with different panels (or aggregations) differ here."""
    return f"panel[{aggregation}]: {', '.join(models)}"


def aggregate(votes: Sequence[bool], aggregation: str) -> bool:
    if aggregation == "majority":
        return sum(votes) * 2 > len(votes)
    if aggregation == "all":
        return all(votes)
    if aggregation == "any":
        return any(votes)
    raise ValueError(f"unknown aggregation {aggregation!r}; one of {list(AGGREGATIONS)}")


def combine(jurors: Sequence[str], rows: Sequence[dict], aggregation: str) -> dict:
    """The panel's row for one request from each juror's row (same order as `jurors`)."""
    kept = [{"model": m, "status": r["status"], "addressed": r["addressed"], "verdict": r["verdict"],
             "coverage": r.get("coverage"), "reason": r["reason"], "judge_error": r.get("judge_error")}
            for m, r in zip(jurors, rows, strict=True)]
    measured = [(i, r) for i, r in enumerate(rows) if r["status"] == JUDGED]
    out = {"jurors": kept, "jurors_measured": len(measured),
           "jurors_disagree": len({bool(r["addressed"]) for _, r in measured}) > 1}
    if not measured:
        first = rows[0]
        return {**out, "status": first["status"], "addressed": None, "verdict": None, "coverage": None, "excerpt": None,
                "cited_chunk_ids": [], "reason": None, "judge_error": first.get("judge_error")}
    addressed = aggregate([bool(r["addressed"]) for _, r in measured], aggregation)
    yes = [(i, r) for i, r in measured if r["addressed"]]
    if addressed:
        counts = Counter(r["verdict"] for _, r in yes)
        verdict = max(counts, key=lambda v: (counts[v], -next(i for i, r in yes if r["verdict"] == v)))
        source = next(r for _, r in yes if r["verdict"] == verdict)
    else:
        verdict, source = "not_addressed", next((r for _, r in measured if not r["addressed"]), measured[0][1])
    votes = ", ".join(f"{jurors[i]} {'yes' if r['addressed'] else 'no'}" for i, r in measured)
    # The panel's coverage: its measured jurors' mean, when every one of them reports one (an LLM juror does not).
    covered = [r.get("coverage") for _, r in measured]
    coverage = round(sum(covered) / len(covered), 4) if all(c is not None for c in covered) else None
    return {**out, "status": JUDGED, "addressed": addressed, "verdict": verdict, "coverage": coverage,
            "excerpt": source["excerpt"] if addressed else "",
            "cited_chunk_ids": list(source["cited_chunk_ids"] or []) if addressed else [],
            "reason": f"{aggregation} of {len(measured)} juror(s) ({votes}): {source['reason']}", "judge_error": None}


def _finite(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def agreement(jurors: Sequence[str], votes: Sequence[Sequence[bool | None]]) -> dict:
    """Fleiss' kappa and Krippendorff's alpha of the jurors' `addressed` (one row per request, one column per juror,
    None where that juror did not measure it)."""
    import krippendorff
    import numpy as np
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    complete = [v for v in votes if all(x is not None for x in v)]
    some = [v for v in votes if sum(x is not None for x in v) >= 2]
    out = {"jurors": list(jurors), "requests": len(votes), "all_measured": len(complete),
           "fleiss_kappa": None, "krippendorff_alpha": None,
           "jurors_disagree": sum(1 for v in votes if len({x for x in v if x is not None}) > 1)}
    if complete:
        table, _ = aggregate_raters(np.array([[int(x) for x in v] for v in complete]), n_cat=2)
        with np.errstate(divide="ignore", invalid="ignore"):
            out["fleiss_kappa"] = _finite(fleiss_kappa(table, method="fleiss"))
    if some:
        data = np.array([[np.nan if x is None else float(x) for x in v] for v in some]).T  # raters x units
        if len({x for v in some for x in v if x is not None}) > 1:
            out["krippendorff_alpha"] = _finite(krippendorff.alpha(reliability_data=data,
                                                                    level_of_measurement="nominal"))
    return out


def juror_view(rows: Sequence[dict], index: int) -> list[dict]:
    """The request rows as juror `index` alone judged them (its status, addressed, verdict): what the flow would be
    had that juror decided."""
    out = []
    for r in rows:
        j = r["jurors"][index]
        out.append({**r, "status": j["status"], "addressed": j["addressed"], "verdict": j["verdict"]})
    return out


def judge_sensitive(branches: Sequence[Mapping[str, str]], measured: Sequence[Mapping[str, bool]],
                    requests: Sequence[str]) -> dict:
    """The requests whose failure-flow branch depends on which juror decided: `branches[j]` is each request's branch
    had juror j alone judged, `measured[j]` whether juror j measured it; over the jurors that measured a request,
    more than one branch. Of all `requests` of the flow."""
    sensitive = [r for r in requests
                 if len({b[r] for b, m in zip(branches, measured, strict=True) if m.get(r)}) > 1]
    return {"requests": len(sensitive), "of": len(requests), "request_ids": sensitive,
            "line": f"judge-sensitive: {len(sensitive)} of {len(requests)}"}
