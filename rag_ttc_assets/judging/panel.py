"""A panel of request judges (an arm's `request_judges`): each juror's verdict per request kept, the panel's verdict
by a declared aggregation, the jurors' agreement with each other, and where they disagree.

  calibrated    each juror's coverage (judging.request_judge: the share its verdict thresholds) put on one scale, on
                which every juror's own `addressed` threshold t is 0.5 (calibrate): c * 0.5 / t below t,
                0.5 + (c - t) * 0.5 / (1 - t) from t up; monotone, 0 stays 0 and 1 stays 1. The jurors' coverages are
                on different scales (the BERTScore juror's threshold is 0.65, the word-reading jurors' 0.5, 0.6 on a
                request without gold material), so their raw mean is no reading. A juror's calibrated coverage says
                what its verdict says: a request it calls addressed below its threshold (a sentence making the claim
                changed: `contradicts`) is at 0.5. A juror without a threshold (an LLM's, which reports no coverage)
                has none. Kept beside the raw one in the jurors' rows (`coverage`, `calibrated_coverage`).
  aggregation   over the jurors that measured the request (a juror's fault is its own `not_measured`, never a
                vote): `majority` addressed when more than half of them say so (a tie is not addressed, and the
                jurors disagree); `all` when every one does; `any` when one does; `mean` when the mean of their
                calibrated coverages is >= 0.5 (a juror without one counts its verdict, 1 or 0). No juror measured
                it: the panel did not either (the first juror's fault status).
  verdict       not_addressed when the panel says not addressed; else the verdict most of the jurors that said
                addressed gave (ties to the earlier juror), with that juror's excerpt, citations and reason.
  coverage      the mean of the measured jurors' calibrated coverage when each has one; else None.

The rules above are versioned (PANEL_RULES, part of a panel's instrument): /1 averaged the raw coverages and had no
`mean`; /2 calibrates them and adds `mean`.
  agreement     Fleiss' kappa (statsmodels) over the requests every juror measured, Krippendorff's alpha (the
                krippendorff package, nominal) over those at least two measured, of `addressed`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypedDict, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from rag_ttc_assets.core.answer_rows import Judgment, Row, json_list
from rag_ttc_assets.core.tables import Table

RJ = Table.REQUEST_JUDGMENTS.c
AGGREGATIONS = ("majority", "all", "any", "mean")
JUDGED = "judged"
PANEL_RULES = "panel-rules/2"
CALIBRATED_THRESHOLD = 0.5


class JurorVote(BaseModel):
    """A juror's verdict on one request as the panel keeps it (the `jurors` JSON of a request_judgments row)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    status: str
    addressed: bool | None
    verdict: str | None
    coverage: float | None = None
    # Kept since PANEL_RULES /2: a store written before has none (not the same as None: `mean` cannot be recomputed).
    calibrated_coverage: float | None = None
    reason: str | None = None
    judge_error: str | None = None

    @property
    def calibrated_kept(self) -> bool:
        return "calibrated_coverage" in self.model_fields_set


class PanelRow(BaseModel):
    """The panel's verdict on one request: its request_judgments row's judge fields, each juror's kept beside."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    jurors: list[JurorVote]
    jurors_measured: int
    jurors_disagree: bool
    status: str
    addressed: bool | None
    verdict: str | None
    coverage: float | None
    excerpt: str | None
    cited_chunk_ids: list[str] = Field(default_factory=list)
    reason: str | None
    judge_error: str | None


class Recombined(TypedDict):
    """The panel's `addressed` and `verdict` under another aggregation (recombine)."""
    addressed: bool
    verdict: str


class Agreement(TypedDict):
    """The jurors' agreement (agreement)."""
    jurors: list[str]
    requests: int
    all_measured: int
    fleiss_kappa: float | None
    krippendorff_alpha: float | None
    jurors_disagree: int


class JudgeSensitive(TypedDict):
    """The requests whose failure-flow branch depends on the juror (judge_sensitive)."""
    requests: int
    of: int
    request_ids: list[str]
    line: str


@dataclass(frozen=True)
class _JurorRow:
    """A juror's request_judgments row, as the panel reads it."""

    status: str
    addressed: bool | None
    verdict: str | None
    coverage: float | None
    excerpt: str | None
    cited_chunk_ids: list[str] | None
    reason: str | None
    judge_error: str | None

    @classmethod
    def of(cls, row: Row) -> _JurorRow:
        return cls(status=row[RJ.status], addressed=row[RJ.addressed], verdict=row[RJ.verdict],
                   coverage=row.get(RJ.coverage), excerpt=row.get(RJ.excerpt),
                   cited_chunk_ids=row.get(RJ.cited_chunk_ids), reason=row[RJ.reason],
                   judge_error=row.get(RJ.judge_error))


class _Vote(Protocol):
    @property
    def addressed(self) -> bool | None: ...

    @property
    def verdict(self) -> str | None: ...


V = TypeVar("V", bound=_Vote)


def address_threshold(model: str, has_gold: bool) -> float | None:
    """The coverage at which juror `model` calls a request addressed (judging.request_judge's rules; `has_gold`: whether
    the request has gold material), None for a juror without one here (an LLM's: it reports no coverage; the learned
    juror's is its fitted parameters', which the request judge stage reads)."""
    from rag_ttc_assets.judging import request_judge as rj  # late: it loads numpy and the lexical judge's rules

    if model == "local/bertscore":
        return rj.SOFT_ADDRESS_RECALL
    if model in ("local/lexical", "local/coverage"):
        return rj.ADDRESS_RECALL if has_gold else rj.REQUEST_TERM_RECALL
    return None


def calibrate(coverage: float | None, threshold: float | None, addressed: bool | None = None) -> float | None:
    """`coverage` on the panel's one scale, where `threshold` is 0.5: piecewise linear through (0, 0), (t, 0.5) and
    (1, 1), four decimals. `addressed` (the juror's verdict), when it says addressed below the threshold (a
    contradiction found whatever the coverage), lifts it to 0.5, so the calibrated coverage is >= 0.5 exactly when
    the juror says addressed. None without a coverage or a threshold."""
    if coverage is None or threshold is None or not 0 < threshold < 1:
        return None
    c = min(1.0, max(0.0, float(coverage)))
    out = c * 0.5 / threshold if c < threshold else 0.5 + (c - threshold) * 0.5 / (1 - threshold)
    if addressed and out < CALIBRATED_THRESHOLD:
        out = CALIBRATED_THRESHOLD
    return round(out, 4)


def panel_name(models: Sequence[str], aggregation: str) -> str:
    """The panel as one instrument name: two arms with different panels (or aggregations) differ here."""
    return f"panel[{aggregation}]: {', '.join(models)}"


def aggregate(votes: Sequence[bool], aggregation: str, calibrated: Sequence[float | None] | None = None) -> bool:
    """The panel's `addressed` from its measured jurors' votes (and, for `mean`, their calibrated coverages, None
    for a juror without one: its vote counts 1 or 0)."""
    if aggregation == "mean":
        scores = [float(v) if c is None else c for v, c in zip(votes, calibrated or [None] * len(votes), strict=True)]
        return bool(scores) and sum(scores) / len(scores) >= CALIBRATED_THRESHOLD
    if aggregation == "majority":
        return sum(votes) * 2 > len(votes)
    if aggregation == "all":
        return all(votes)
    if aggregation == "any":
        return any(votes)
    raise ValueError(f"unknown aggregation {aggregation!r}; one of {list(AGGREGATIONS)}")


def combine(jurors: Sequence[str], rows: Sequence[Row], aggregation: str,
            thresholds: Sequence[float | None] | None = None) -> PanelRow:
    """The panel's row for one request from each juror's request_judgments row (same order as `jurors`);
    `thresholds`: each juror's `addressed` threshold for this request (address_threshold; None: no calibrated
    coverage)."""
    limits = list(thresholds) if thresholds is not None else [None] * len(jurors)
    read = [_JurorRow.of(r) for r in rows]
    kept = [JurorVote(model=m, status=r.status, addressed=r.addressed, verdict=r.verdict, coverage=r.coverage,
                      calibrated_coverage=(calibrate(r.coverage, t, r.addressed) if r.status == JUDGED else None),
                      reason=r.reason, judge_error=r.judge_error)
            for m, r, t in zip(jurors, read, limits, strict=True)]
    measured = [(i, r) for i, r in enumerate(read) if r.status == JUDGED]
    disagree = len({bool(r.addressed) for _, r in measured}) > 1
    if not measured:
        first = read[0]
        return PanelRow(jurors=kept, jurors_measured=0, jurors_disagree=disagree, status=first.status,
                        addressed=None, verdict=None, coverage=None, excerpt=None, cited_chunk_ids=[], reason=None,
                        judge_error=first.judge_error)
    calibrated = [kept[i].calibrated_coverage for i, _ in measured]
    addressed, verdict, source = _decide(measured, calibrated, aggregation)
    votes = ", ".join(f"{jurors[i]} {'yes' if r.addressed else 'no'}"
                      + (f" {c:.2f}" if aggregation == "mean" and (c := calibrated[k]) is not None else "")
                      for k, (i, r) in enumerate(measured))
    if aggregation == "mean":
        scores = [float(bool(r.addressed)) if c is None else c
                  for (_, r), c in zip(measured, calibrated, strict=True)]
        mean = sum(scores) / len(scores)
        votes += f"; calibrated mean {_shown(mean)} {'>=' if addressed else '<'} {CALIBRATED_THRESHOLD:.2f}"
    # The panel's coverage: its measured jurors' calibrated mean, when every one of them has one (an LLM's has not).
    known = [c for c in calibrated if c is not None]
    coverage = round(sum(known) / len(known), 4) if len(known) == len(calibrated) else None
    return PanelRow(jurors=kept, jurors_measured=len(measured), jurors_disagree=disagree, status=JUDGED,
                    addressed=addressed, verdict=verdict, coverage=coverage,
                    excerpt=source.excerpt if addressed else "",
                    cited_chunk_ids=list(source.cited_chunk_ids or []) if addressed else [],
                    reason=f"{aggregation} of {len(measured)} juror(s) ({votes}): {source.reason}", judge_error=None)


def _decide(measured: Sequence[tuple[int, V]], calibrated: Sequence[float | None], aggregation: str
            ) -> tuple[bool, str, V]:
    """(addressed, verdict, the juror row the verdict comes from) over the measured jurors' (index, row)."""
    addressed = aggregate([bool(r.addressed) for _, r in measured], aggregation, calibrated)
    yes = [(i, r) for i, r in measured if r.addressed]
    if addressed:
        counts = Counter(r.verdict for _, r in yes)
        verdict = max(counts, key=lambda v: (counts[v], -next(i for i, r in yes if r.verdict == v)))
        return True, verdict, next(r for _, r in yes if r.verdict == verdict)  # type: ignore[return-value]
    return False, "not_addressed", next((r for _, r in measured if not r.addressed), measured[0][1])


def recombine(kept: Sequence[Mapping[str, Any] | JurorVote], aggregation: str) -> Recombined | None:
    """The panel's `addressed` and `verdict` for one request under `aggregation`, from its jurors' kept rows (the
    `jurors` of a request_judgments row, parsed, or JurorVotes: no juror judges again); None when no juror measured
    it. `mean` needs each measured juror's calibrated coverage as kept (a store written before PANEL_RULES /2 has
    none: None)."""
    votes = [j if isinstance(j, JurorVote) else JurorVote.model_validate(j) for j in kept]
    measured = [(i, j) for i, j in enumerate(votes) if j.status == JUDGED]
    if not measured:
        return None
    calibrated = [j.calibrated_coverage for _, j in measured]
    if aggregation == "mean" and not all(j.calibrated_kept for _, j in measured):
        return None
    addressed, verdict, _ = _decide(measured, calibrated, aggregation)
    return {"addressed": addressed, "verdict": verdict}


def _shown(x: float) -> str:
    """A calibrated mean as a reason states it: two decimals, four where two would read as the threshold itself
    from the other side (0.4996 is not 0.50)."""
    return f"{x:.4f}" if round(x, 2) == CALIBRATED_THRESHOLD and x != CALIBRATED_THRESHOLD else f"{x:.2f}"


def _finite(x: Any) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def agreement(jurors: Sequence[str], votes: Sequence[Sequence[bool | None]]) -> Agreement:
    """Fleiss' kappa and Krippendorff's alpha of the jurors' `addressed` (one row per request, one column per juror,
    None where that juror did not measure it)."""
    import krippendorff
    import numpy as np
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa  # type: ignore[import-untyped]

    complete = [v for v in votes if all(x is not None for x in v)]
    some = [v for v in votes if sum(x is not None for x in v) >= 2]
    kappa: float | None = None
    alpha: float | None = None
    if complete:
        table, _ = aggregate_raters(np.array([[int(bool(x)) for x in v] for v in complete]), n_cat=2)
        with np.errstate(divide="ignore", invalid="ignore"):
            kappa = _finite(fleiss_kappa(table, method="fleiss"))
    if some:
        data = np.array([[np.nan if x is None else float(x) for x in v] for v in some]).T  # raters x units
        if len({x for v in some for x in v if x is not None}) > 1:
            alpha = _finite(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))
    return {"jurors": list(jurors), "requests": len(votes), "all_measured": len(complete),
            "fleiss_kappa": kappa, "krippendorff_alpha": alpha,
            "jurors_disagree": sum(1 for v in votes if len({x for x in v if x is not None}) > 1)}


def juror_view(rows: Sequence[Row], index: int) -> list[Judgment]:
    """The request_judgments rows (their `jurors` JSON, or parsed) as juror `index` alone judged them (its status,
    addressed, verdict): what the flow would be had that juror decided."""
    out = []
    for r in rows:
        j = JurorVote.model_validate(json_list(r[RJ.jurors])[index])
        row = Judgment.of(r)
        out.append(Judgment(query_id=row.query_id, request_id=row.request_id, status=j.status, addressed=j.addressed,
                            excerpt=row.excerpt, cited_chunk_ids=row.cited_chunk_ids, verdict=j.verdict,
                            coverage=row.coverage))
    return out


def judge_sensitive(branches: Sequence[Mapping[str, str]], measured: Sequence[Mapping[str, bool]],
                    requests: Sequence[str]) -> JudgeSensitive:
    """The requests whose failure-flow branch depends on which juror decided: `branches[j]` is each request's branch
    had juror j alone judged, `measured[j]` whether juror j measured it; over the jurors that measured a request,
    more than one branch. Of all `requests` of the flow."""
    sensitive = [r for r in requests
                 if len({b[r] for b, m in zip(branches, measured, strict=True) if m.get(r)}) > 1]
    return {"requests": len(sensitive), "of": len(requests), "request_ids": sensitive,
            "line": f"judge-sensitive: {len(sensitive)} of {len(requests)}"}
