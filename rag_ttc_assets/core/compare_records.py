"""The paired comparison of two arms as records: core.case_comparison's statistics of one metric (`MetricComparison`), of the
headline's cases (`Bucket`, `Catastrophic`) and of the family its p-values were adjusted over (`PAdjustment`), the
report core.case_comparison.compare_arms returns (`ComparisonReport`), and the pair report `arm_comparisons` writes to
`<a>--<b>.json` in the store's comparisons folder (`PairReport`: that report with, beside each metric, why its
dropped cases were undefined, and the context a reader needs: the failure flow's transitions, the per-case values,
the changed parameters, the supply numbers, the instruments and the guards' findings).

The second seed's note is the reason for all of it: "report the cases, not only the mean", so a few catastrophic
cases cannot hide behind a flat mean, and "per-case deltas, hit rate over all cases, contradictions of the gold
evidence, tokens" beside it.

`PairReport.to_json` is the JSON object written, key for key and in the same order as the dicts it replaces;
`read_pair_report` reads one back, and a file with a wrong or missing field fails naming the file and the field.

Pure: pydantic only, no I/O.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from rag_ttc_assets.labelling.accept_records import CorrectedDifference
from rag_ttc_assets.labelling.label_drift import LabelDrift
from rag_ttc_assets.core.records import invalid_fields


class Record(BaseModel):
    """A comparison record: no undeclared field, never changed once built (model_copy(update=...) makes another)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# -- core.case_comparison's statistics ---------------------------------------------------------------------------------------

class MetricComparison(Record):
    """One metric compared case by case, delta_i = b_i - a_i over the cases defined in both arms (core.case_comparison)."""

    n: int  # paired cases: defined (present, not None) in both arms
    mean_a: float | None  # over the paired cases; None when n == 0
    mean_b: float | None
    mean_delta: float | None  # b - a
    ci_low: float | None  # 95% paired bootstrap percentile interval of the mean delta
    ci_high: float | None
    p_value: float | None  # raw; None when n == 0
    test: str | None  # "sign_flip_exact", "sign_flip_monte_carlo" or "mcnemar_exact"; None when n == 0
    gains: int  # delta > eps
    losses: int  # delta < -eps
    ties: int
    sum_gains: float
    sum_losses: float
    undefined: int  # cases dropped: absent from, or None in, either arm
    b01: int | None = None  # binary only: a=0, b=1 (b fixed it)
    b10: int | None = None  # binary only: a=1, b=0 (b broke it)
    of: int = 0  # cases of either arm: n + undefined
    undefined_a: int = 0  # dropped: undefined in a only
    undefined_b: int = 0  # dropped: undefined in b only
    undefined_both: int = 0  # dropped: undefined in both
    p_adjusted: float | None = None  # over the report's family (p_adjust); None when p_value is None
    significant: bool | None = None  # p_adjusted <= alpha: the only reading that states an effect


class PAdjustment(Record):
    """How the p-values were adjusted together (core.multiple_testing): a sweep of many pairs is held to the
    family's error rate, not each pair to its own."""

    method: str  # "holm" or "bh"
    method_name: str
    alpha: float
    m: int  # the p-values adjusted together
    family: str  # which: "the metrics of this comparison" or "every pair and metric of arm_comparisons"


class Bucket(Record):
    """How a flat mean is made: the headline's deltas by |delta| size, gains and losses apart, and the ties."""

    label: str  # "loss > 1.0", "loss (0.5, 1.0]", ..., "tie", "gain (0, 0.1]", ...
    side: Literal["loss", "tie", "gain"]
    low: float | None  # |delta| in (low, high]; None on the tie row
    high: float | None  # None on the open top bucket and the tie row
    count: int
    sum: float


class Catastrophic(Record):
    """A catastrophic case of the headline metric: delta <= -threshold (the few cases a flat mean hides)."""

    case_id: str
    a: float  # the headline's value in arm a
    b: float  # and in arm b
    delta: float  # b - a


class ComparisonReport(Record):
    """core.case_comparison.compare_arms: every metric compared, the headline's buckets and catastrophic cases."""

    a: str
    b: str
    n: int  # paired cases of the headline metric
    metrics: dict[str, MetricComparison]
    buckets: list[Bucket]  # headline metric
    catastrophic: list[Catastrophic]  # headline metric, worst first
    p_adjust: PAdjustment

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict: {"a", "b", "n", "metrics": {name: {...}}, "buckets": [...], "catastrophic": [...]}.

        A dict, not a string: writing it is I/O and belongs to the caller.
        """
        return self.model_dump(mode="json")


# -- the pair report -------------------------------------------------------------------------------------------------

class NotMeasured(Record):
    """Why a metric's dropped cases were undefined, per arm: reason -> cases (core.measured's reasons; a case absent
    from an arm is a missing row there)."""

    a: dict[str, int]
    b: dict[str, int]


class PairMetric(MetricComparison):
    """One metric of a pair report: core.case_comparison's statistics and why the dropped cases were not measured."""

    not_measured: NotMeasured


class CatastrophicCase(Catastrophic):
    """A catastrophic case with the failure-flow branches of its requests in each arm ("<request_id>:<branch>")."""

    branches_a: list[str]
    branches_b: list[str]


class TransitionCell(Record):
    """The requests whose branch is `a` in arm a and `b` in arm b (core.transitions)."""

    a: str  # a failure-flow branch, or "absent" when the request is missing from arm a
    b: str
    key: str  # "a->b"
    count: int
    requests: list[str]
    cases: list[str]  # their question ids, sorted


class Transitions(Record):
    """The failure flow as a diff: per request, its branch in a against b (core.transitions.transitions)."""

    rows: list[str]  # branches of a
    columns: list[str]  # branches of b
    total: int  # requests of either arm
    changed: int  # requests whose branch differs
    cells: list[TransitionCell]  # one per non-empty (a, b) pair, in row then column order


class CaseValues(Record):
    """A metric's value for one case in each arm; None: undefined there."""

    a: float | None
    b: float | None


class AB(Record):
    """A number in arm a and in arm b; None: not measured (an imported system may record no tokens)."""

    a: float | None
    b: float | None


class ABDelta(AB):
    """A number in each arm and its difference b - a."""

    delta: float | None


class TokenLatency(Record):
    """The cost beside the quality: tokens and latency, and the parameters a difference is attributed to."""

    mean_input_tokens: ABDelta  # the input_tokens metric's means
    p95_latency_s: AB  # over the cases' latencies
    attributed_to: list[str]  # the changed parameters (the fields an arm never reads left out)


class SupplyNumbers(Record):
    """The second seed's numbers beside the per-case deltas, for one arm (stages.arm_comparisons.supply_numbers)."""

    supply: str  # supply mode
    hit_rate: float | None  # over all cases (the lookup flow's for tool arms)
    hits: int
    cases: int
    contradicts_gold: int | None  # answers contradicting the gold evidence; None without a support judge
    mean_input_tokens: float | None  # per request; None: no answer row recorded its token usage
    p95_latency_s: float | None
    lookup_calls: int


class AdmittedSets(Record):
    """Evidence position: when every admitted set is identical, any change is the order's doing."""

    identical: int  # questions whose admitted chunk set is the same in both arms
    questions: int
    position_only: bool  # identical == questions


class RepresentationEra(Record):
    """The representations each arm's indexes were built from, and whether they differ (core.eras.era_change)."""

    differ: list[str]  # the representation fields that differ
    confounded: list[str]  # chunking or the prompt changed too
    allowed: bool  # an era change with a confound, let through by --allow-era-change
    line: str  # as `rag-ttc compare` prints it
    representations: dict[str, dict[str, Any]]  # arm -> its representations record, as it ran


class CompletenessRead(Record):
    """An arm's completeness numbers as its request_completeness.json holds them (None: a file written before the
    field existed)."""

    requests_measured: int | None
    requests_total: int | None
    questions_measured: int | None
    questions_total: int | None
    requests_answered: int | None
    completeness_measured: int | None
    completeness_not_measured: dict[str, int] | None  # reason -> questions
    requests_answered_share: float | None
    graded_completeness: float | None  # mean coverage of the measured requests graded
    requests_graded: int | None


# The fields only `rag-ttc compare` or the plots add: left out of the JSON when not set.
OPTIONAL = ("labels_differ", "completeness_corrected", "plots")


class PairReport(Record):
    """The pair report `arm_comparisons` writes (stages.arm_comparisons.compare_two, adjusted over the sweep by
    core.case_comparison.adjust_reports), which the case report, `rag-ttc compare` and the written diagnosis read: a
    ComparisonReport's fields first, then the context."""

    a: str
    b: str
    n: int  # paired cases of the headline metric
    metrics: dict[str, PairMetric]  # each with why its dropped cases were undefined
    buckets: list[Bucket]  # headline metric
    catastrophic: list[CatastrophicCase]  # headline metric, worst first, with each case's branches
    p_adjust: PAdjustment  # over the report's metrics, or over the sweep (core.case_comparison.adjust_reports)
    transitions: Transitions
    per_case: dict[str, CaseValues]  # the headline's value per case in each arm
    per_case_graded: dict[str, CaseValues]  # completeness read graded per case (mean request coverage)
    changed_parameters: dict[str, list[Any]]  # field -> [a's value, b's], "<absent>" where unset
    not_read: dict[str, list[str]]  # arm -> the fields it never reads (its source's own), when any
    token_latency: TokenLatency
    supply: dict[str, SupplyNumbers]  # arm -> its supply numbers
    admitted_sets: AdmittedSets
    headline: str  # the metric n, the buckets and the catastrophic cases are read on
    label_drift: bool  # the arms were measured on different label versions (--allow-label-drift let it pass)
    instruments: dict[str, dict[str, Any]]  # arm -> its request judge (model, prompt, digest, rules, ...)
    instrument_drift: list[str]  # the instrument fields that differ, when --allow-instrument-drift let it pass
    representation_era: RepresentationEra
    label_use: dict[str, str]  # arm -> none, oracle, counterfactual-...
    completeness_measured: dict[str, CompletenessRead]
    evaluation_digests: dict[str, str | None]  # arm -> the labels' digest it was measured on
    labels_differ: LabelDrift | None = None  # `rag-ttc compare` with label drift: which labels differ
    completeness_corrected: CorrectedDifference | None = None  # `rag-ttc compare --labels`: corrected by people
    plots: dict[str, str] | None = None  # diagnosis.flow_plots_stage.pair_plots: plot name -> path

    def to_json(self) -> dict[str, Any]:
        """The JSON object written to `<a>--<b>.json`: every field in order, the optional ones (OPTIONAL) only when
        set."""
        out = self.model_dump(mode="json")
        for key in OPTIONAL:
            if out[key] is None:
                del out[key]
        return out

    def headline_metric(self) -> PairMetric | None:
        """The headline's comparison (None: a report without it)."""
        return self.metrics.get(self.headline)


class PairReportError(ValueError):
    """A stored pair report that is not one: names the file and the field."""


def read_pair_report(text: str, source: str) -> PairReport:
    """A pair report from its JSON text (`source`: the file it was read from, named in the error)."""
    try:
        return PairReport.model_validate(json.loads(text))
    except ValidationError as e:
        where = invalid_fields(e)
        raise PairReportError(f"{source}: not a pair report: {where}") from None
