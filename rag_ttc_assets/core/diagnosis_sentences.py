"""The sentence record every rule of the written diagnosis (core.diagnosis) builds, how its numbers read in the
text, and what the rules read of a sweep's arm records and pair reports (links to case reports, branch counts,
label use, whether a metric was tested, or could be measured at all).

A `Sentence` is text pieces and named numbers, each with its kind (`shown`), its link to the cases behind it, the
test and its raw and adjusted p-value when it states an effect, and the cases and requests it is about; `done`
makes it the JSON-able dict diagnosis.json keeps.

Pure: records (core.diagnosis_inputs) and the pair reports' dicts in, dicts and text out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rag_ttc_assets.core.diagnosis_inputs import ArmRecords
from rag_ttc_assets.core.flow import FLOW_BRANCHES

QUALITY = ("completeness", "valid", "faithfulness")  # what a request's answer is worth, higher is better
RETRIEVAL = ("recall_10", "recip_rank", "ndcg_cut_10")
MIN_PAIRED = 10  # fewer paired cases than this: no test is read, the finding says so


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

    def __init__(self, rule: str, inputs: Mapping[str, Any] | None = None):
        self.rule = rule
        self.inputs = dict(inputs or {})
        self.parts: list[Any] = []
        self.numbers: dict[str, Any] = {}
        self.kinds: dict[str, str] = {}
        self.links: dict[str, dict] = {}
        self.test: str | None = None
        self.p_value: float | None = None
        self.p_adjusted: float | None = None
        self.cases: set[str] = set()
        self.requests: set[str] = set()

    def t(self, text: str) -> Sentence:
        self.parts.append(text)
        return self

    def n(self, name: str, value: Any, kind: str, link: Mapping | None = None) -> Sentence:
        if name in self.numbers:
            raise ValueError(f"rule {self.rule}: number {name!r} twice")
        self.numbers[name] = value
        self.kinds[name] = kind
        if link:
            self.links[name] = dict(link)
        self.parts.append({"n": name})
        return self

    def tested(self, metric: Mapping) -> Sentence:
        self.test, self.p_value, self.p_adjusted = metric.get("test"), metric.get("p_value"), metric.get("p_adjusted")
        return self

    def about(self, cases: Sequence[str] = (), requests: Sequence[str] = ()) -> Sentence:
        self.cases.update(cases)
        self.requests.update(requests)
        return self

    def done(self, sid: str) -> dict:
        text = "".join(p if isinstance(p, str) else shown(self.kinds[p["n"]], self.numbers[p["n"]])
                       for p in self.parts)
        return {"id": sid, "rule": self.rule, "text": text, "parts": self.parts, "inputs": self.inputs,
                "numbers": self.numbers, "kinds": self.kinds,
                "shown": {k: shown(self.kinds[k], v) for k, v in self.numbers.items()}, "links": self.links,
                "test": self.test, "p_value": self.p_value, "p_adjusted": self.p_adjusted,
                "cases": sorted(self.cases), "requests": sorted(self.requests)}


# -- reading the inputs ------------------------------------------------------------------------------------------

def pair_link(rep: Mapping, pages: Mapping[str, str], **filt: str) -> dict | None:
    url = pages.get(f"pair:{rep['a']}--{rep['b']}")
    return {"url": url, "filter": filt} if url else None


def arm_link(arm: str, pages: Mapping[str, str], **filt: str) -> dict | None:
    url = pages.get(f"arm:{arm}")
    return {"url": url, "filter": filt} if url else None


def branch_counts(rep: Mapping) -> tuple[dict[str, int], dict[str, int]]:
    """Requests per branch in a and in b, from the transition matrix's cells."""
    ca, cb = dict.fromkeys(FLOW_BRANCHES, 0), dict.fromkeys(FLOW_BRANCHES, 0)
    for cell in rep["transitions"]["cells"]:
        if cell["a"] in ca:
            ca[cell["a"]] += cell["count"]
        if cell["b"] in cb:
            cb[cell["b"]] += cell["count"]
    return ca, cb


def changed_text(rep: Mapping) -> str:
    return ", ".join(f"{k} {_v(v[0])} -> {_v(v[1])}" for k, v in rep["changed_parameters"].items()) or "nothing"


def _v(x: Any) -> str:
    return "absent" if x == "<absent>" else str(x)


def label_kind(arms: ArmRecords, arm: str) -> str:
    use = arms[arm].label_use if arm in arms else "none"
    return "oracle" if use == "oracle" else ("counterfactual" if use.startswith("counterfactual") else "none")


def significant_quality(rep: Mapping) -> list[str]:
    return [m for m in QUALITY if (rep["metrics"].get(m) or {}).get("significant")]


def tested_enough(rep: Mapping, metric: str) -> bool:
    return (rep["metrics"].get(metric) or {}).get("n", 0) >= MIN_PAIRED


def oracle_arm(rep: Mapping, arms: ArmRecords) -> str:
    return next(x for x in (rep["b"], rep["a"]) if label_kind(arms, x) == "oracle")


# Why a metric cannot be measured for a whole arm, not a case's fault: no gold quotes (completeness), no support
# judge (faithfulness: `judge: none`). core.measured's reasons.
UNMEASURABLE = ("no_gold_quotes", "no_support_judge")


def unmeasurable(rep: Mapping, metric: str) -> str | None:
    """"not measured: no gold quotes" when the metric's cases were dropped for an arm's own reason (UNMEASURABLE) in
    either arm of the pair: such a metric is not measured, never a small sample or a zero."""
    why = (rep["metrics"].get(metric) or {}).get("not_measured") or {}
    found = [r for r in UNMEASURABLE if any((why.get(side) or {}).get(r) for side in ("a", "b"))]
    return "not measured: " + ", ".join(r.replace("_", " ") for r in found) if found else None
