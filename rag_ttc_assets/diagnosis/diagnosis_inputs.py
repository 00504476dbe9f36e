"""What the written diagnosis (diagnosis.diagnosis) reads, as records: each arm's (`ArmRecord`: the configuration values
and the per-arm summaries' numbers the rules use), each sweep family's (`Family`), and the whole sweep
(`DiagnosisInputs`). diagnosis.diagnosis_inputs_stage.gather builds them from the arms file and the store; the rules read their
attributes, never string keys.

The pair reports (`comparisons`) are core.compare_records.PairReport, the records `arm_comparisons` writes
(adjusted over the sweep by core.case_comparison.adjust_reports); the human labels' corrections of a pair are records too
(`HumanCorrection`, labelling.human_page.pair_corrections), their summary the JSON object labelling.human_page makes.

Pure: pydantic only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rag_ttc_assets.core.compare_records import PairReport


class Record(BaseModel):
    """A diagnosis input: no undeclared field, never changed once built (model_copy(update=...) makes another)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ArmRecord(Record):
    """One arm as the rules read it (diagnosis.diagnosis_inputs_stage.arm_record): its configuration, instruments, failure flow
    (with the cases and requests of each branch), contract, retrieval, admission and completeness numbers."""

    label_use: str  # none, oracle, counterfactual-...: an oracle is an upper bound, a counterfactual a test
    question_set: str
    generator_model: str  # as core.summaries.generator_label names it (an imported arm's: the system's own)
    request_judge_model: str
    offline_generator: bool
    offline_judge: bool
    same_model: bool  # the judge or the request judge is the generator's model
    requests_derived: bool
    flow: dict[str, int]  # requests per branch, in diagnosis.flow.FLOW_BRANCHES' order
    flow_total: int
    flow_cases: dict[str, list[str]]  # the question ids of each branch, sorted
    flow_requests: dict[str, list[str]]  # the request ids of each branch, sorted
    omitted_by_context: int
    valid: int
    recall_10: float | None
    admission_coverage: float | None
    requests_measured: int
    requests_total: int
    requests_supported: int
    # Completeness read two ways (docs/judges.md: graded leads): the mean coverage of the measured requests
    # (requests_graded of them have one) and the share of them addressed.
    graded_completeness: float | None = None
    requests_graded: int = 0
    requests_answered_share: float | None = None


class Interval(Record):
    """A difference b - a and its interval."""

    mean: float
    low: float
    high: float


class HumanCorrection(Record):
    """A compared pair whose two arms both carry per-request human labels, for one request judge that scored both
    (labelling.human_page.pair_corrections): the judge's own completeness difference b - a over all its rows, the difference
    corrected by the labels (labelling.ppi; None: not estimable), and what it rests on."""

    a: str
    b: str
    judge: str
    judge_difference: Interval | None
    corrected: Interval | None
    estimator: str | None  # paired or independent (labelling.ppi_difference); None when not estimable
    labels: int  # the request labels of the two arms
    labelled: dict[str, int]  # rows labelled, per arm
    rows: dict[str, int]  # rows the judge measured whole, per arm
    weighting: str | None  # how the labels were weighted (labelling.ppi_difference: uniform, inverse-probability, ...)


class LabelCorrections(Record):
    """What the `label_corrections` asset hands the diagnosis (labelling.human_page.corrections): the labels file read
    (labelling.human_page's summary; None: no labels file) and, per compared pair whose arms both carry per-request labels and
    per request judge that scored both, the judge's completeness difference corrected by the people's labels."""

    human_labels: dict[str, Any] | None = None
    corrections: list[HumanCorrection] = Field(default_factory=list)


class Family(Record):
    """A sweep family of the arms file, restricted to the diagnosed arms: the parameter it sweeps, its members
    diagnosed (in the arms file's order) and not, and each member's value of the parameter."""

    parameter: str
    members: list[str]
    missing: list[str]
    value_of: dict[str, Any]


class DiagnosisInputs(Record):
    """The sweep diagnosis.diagnosis.diagnose reads."""

    arms: dict[str, ArmRecord]
    families: dict[str, Family] = Field(default_factory=dict)
    comparisons: list[PairReport]  # the pair reports (see the module docstring)
    skipped: list[str] = Field(default_factory=list)  # the pairs not compared, with why
    baseline: str  # the arm whose failure flow the summary reads
    alpha: float
    p_adjust: str
    pages: dict[str, str] = Field(default_factory=dict)  # "pair:<a>--<b>" | "arm:<arm>": a case report's link
    all_configs: dict[str, dict[str, Any]] = Field(default_factory=dict)  # every arm of the file: its flat config
    human_labels: dict[str, Any] | None = None  # labelling.human_page's summary of the labels file read, if any
    human_corrections: list[HumanCorrection] = Field(default_factory=list)  # labelling.human_page.pair_corrections


ArmRecords = Mapping[str, ArmRecord]  # the diagnosed arms' records by name (DiagnosisInputs.arms)
