"""The sentence record every rule of the written diagnosis (diagnosis.diagnosis) builds, how its numbers read in the
text, and what the rules read of a sweep's arm records and pair reports (links to case reports, branch counts,
label use, whether a metric was tested, or could be measured at all).

A `Sentence` is text pieces and named numbers, each with its kind (`shown`), its link to the cases behind it, the
test and its raw and adjusted p-value when it states an effect, and the cases and requests it is about; `done`
makes it the JSON-able dict diagnosis.json keeps.

Pure: records (diagnosis.diagnosis_inputs, core.compare_records) in, dicts and text out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from rag_ttc_assets.core.compare_metrics import DIRECTIONS
from rag_ttc_assets.core.compare_records import MetricComparison, PairMetric, PairReport
from rag_ttc_assets.diagnosis.diagnosis_inputs import ArmRecords
from rag_ttc_assets.diagnosis.flow import FLOW_BRANCHES

QUALITY = ("completeness", "valid", "faithfulness")  # what a request's answer is worth, higher is better
RETRIEVAL = ("recall_10", "recip_rank", "ndcg_cut_10")
MIN_PAIRED = 10  # fewer paired cases than this: no test is read, the finding says so

Link = dict[str, Any]  # {"url": a case report, "filter": {name: value}}: the cases behind a number
Part = str | dict[str, str]  # a text piece, or {"n": name} for a named number


def outcome(metric: str, delta: float | None, tie_eps: float = 1e-12) -> Literal["gain", "loss", "tie"] | None:
    """Whether a change of `metric` by `delta` (b - a) is a gain or a loss, read by the metric's direction (a rise in
    a cost is a loss); None when the delta is undefined. A metric without a direction raises KeyError."""
    direction = DIRECTIONS[metric]
    if delta is None:
        return None
    if abs(delta) <= tie_eps:
        return "tie"
    return "gain" if (delta > 0) == (direction == "higher_is_better") else "loss"


# -- numbers as shown --------------------------------------------------------------------------------------------

def shown(kind: str, value: Any) -> str:
    """How a number reads in the text; diagnosis.md and the page show exactly this string, diagnosis.json keeps
    both. Kinds: count, rate (0..1 or a mean), delta (a metric's b - a), tokens / seconds (a cost's delta), p."""
    if value is None:
        return "undefined"
    if kind == "count":
        return str(int(value))
    if kind == "rate":
        return f"{value:.3f}"
    if kind == "delta":
        return f"{value:+.3f}"
    if kind == "tokens":
        return f"{value:+.0f}"
    if kind == "seconds":
        return f"{value:+.2f}"
    if kind == "p":
        return f"{value:.2g}" if value < 0.001 else f"{value:.3f}"
    if kind == "value":
        return str(value)
    raise ValueError(f"unknown number kind {kind!r}")


def delta_kind(metric: str) -> str:
    return {"input_tokens": "tokens", "latency_s": "seconds"}.get(metric, "delta")


class Sentence:
    """A sentence under construction: text pieces and numbers, each number named, with its kind and link."""

    def __init__(self, rule: str, inputs: Mapping[str, Any] | None = None) -> None:
        self.rule = rule
        self.inputs = dict(inputs or {})
        self.parts: list[Part] = []
        self.numbers: dict[str, Any] = {}
        self.kinds: dict[str, str] = {}
        self.links: dict[str, Link] = {}
        self.test: str | None = None
        self.p_value: float | None = None
        self.p_adjusted: float | None = None
        self.cases: set[str] = set()
        self.requests: set[str] = set()

    def t(self, text: str) -> Sentence:
        self.parts.append(text)
        return self

    def n(self, name: str, value: Any, kind: str, link: Mapping[str, Any] | None = None) -> Sentence:
        if name in self.numbers:
            raise ValueError(f"rule {self.rule}: number {name!r} twice")
        self.numbers[name] = value
        self.kinds[name] = kind
        if link:
            self.links[name] = dict(link)
        self.parts.append({"n": name})
        return self

    def tested(self, metric: MetricComparison | None) -> Sentence:
        """The test and its raw and adjusted p-value behind the effect stated (none when the metric is absent)."""
        if metric is not None:
            self.test, self.p_value, self.p_adjusted = metric.test, metric.p_value, metric.p_adjusted
        return self

    def about(self, cases: Sequence[str] = (), requests: Sequence[str] = ()) -> Sentence:
        self.cases.update(cases)
        self.requests.update(requests)
        return self

    def done(self, sid: str) -> dict[str, Any]:
        text = "".join(p if isinstance(p, str) else shown(self.kinds[p["n"]], self.numbers[p["n"]])
                       for p in self.parts)
        return {"id": sid, "rule": self.rule, "text": text, "parts": self.parts, "inputs": self.inputs,
                "numbers": self.numbers, "kinds": self.kinds,
                "shown": {k: shown(self.kinds[k], v) for k, v in self.numbers.items()}, "links": self.links,
                "test": self.test, "p_value": self.p_value, "p_adjusted": self.p_adjusted,
                "cases": sorted(self.cases), "requests": sorted(self.requests)}


# -- reading the inputs ------------------------------------------------------------------------------------------

def pair_link(rep: PairReport, pages: Mapping[str, str], **filt: str) -> Link | None:
    url = pages.get(f"pair:{rep.a}--{rep.b}")
    return {"url": url, "filter": filt} if url else None


def arm_link(arm: str, pages: Mapping[str, str], **filt: str) -> Link | None:
    url = pages.get(f"arm:{arm}")
    return {"url": url, "filter": filt} if url else None


def branch_counts(rep: PairReport) -> tuple[dict[str, int], dict[str, int]]:
    """Requests per branch in a and in b, from the transition matrix's cells."""
    ca, cb = dict.fromkeys(FLOW_BRANCHES, 0), dict.fromkeys(FLOW_BRANCHES, 0)
    for cell in rep.transitions.cells:
        if cell.a in ca:
            ca[cell.a] += cell.count
        if cell.b in cb:
            cb[cell.b] += cell.count
    return ca, cb


def changed_text(rep: PairReport) -> str:
    return ", ".join(f"{k} {_v(v[0])} -> {_v(v[1])}" for k, v in rep.changed_parameters.items()) or "nothing"


def _v(x: Any) -> str:
    return "absent" if x == "<absent>" else str(x)


def label_kind(arms: ArmRecords, arm: str) -> str:
    use = arms[arm].label_use if arm in arms else "none"
    return "oracle" if use == "oracle" else ("counterfactual" if use.startswith("counterfactual") else "none")


def significant_quality(rep: PairReport) -> list[str]:
    return [m for m in QUALITY if (v := rep.metrics.get(m)) is not None and v.significant]


def paired_n(metric: MetricComparison | None) -> int:
    """The metric's paired cases; 0 when the report has no such metric."""
    return metric.n if metric is not None else 0


def headline_n(rep: PairReport) -> int:
    """The headline metric's paired cases (0 when absent)."""
    return paired_n(rep.headline_metric())


def tested_enough(rep: PairReport, metric: str) -> bool:
    return paired_n(rep.metrics.get(metric)) >= MIN_PAIRED


def oracle_arm(rep: PairReport, arms: ArmRecords) -> str:
    return next(x for x in (rep.b, rep.a) if label_kind(arms, x) == "oracle")


# Why a metric cannot be measured for a whole arm, not a case's fault: no gold quotes (completeness), no support
# judge (faithfulness: `judge: none`). core.measured's reasons.
UNMEASURABLE = ("no_gold_quotes", "no_support_judge")


def unmeasurable(rep: PairReport, metric: str) -> str | None:
    """"not measured: no gold quotes" when the metric's cases were dropped for an arm's own reason (UNMEASURABLE) in
    either arm of the pair: such a metric is not measured, never a small sample or a zero."""
    m: PairMetric | None = rep.metrics.get(metric)
    why = (m.not_measured.a, m.not_measured.b) if m is not None else ()
    found = [r for r in UNMEASURABLE if any(side.get(r) for side in why)]
    return "not measured: " + ", ".join(r.replace("_", " ") for r in found) if found else None
