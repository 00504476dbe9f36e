"""Acceptance by people (issue 44 item 4; `rag-ttc accept`, and `rag-ttc compare --labels`): the judge's difference
in completeness between two arms, the people's over the labelled rows, and the prediction-powered difference that
corrects the judge with the labels (labelling/ppi.py; two arms labelling/ppi_difference.py), with the decision it supports
and how many labels would make one.

Completeness here is the share of a row's requests addressed, read the same way by the judge (its per-request
verdicts, as `judge-agreement` reads them) and by the people (the per-request labels' `addressed`), so that the
rectifier compares like with like. This module only reads: the labels reach no generator and no retrieval.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_ttc_assets.adapters.store import ArmJson, ArtifactStore, atomic_write_bytes
from rag_ttc_assets.core import compare_guards
from rag_ttc_assets.labelling import human_labels as hl
from rag_ttc_assets.labelling import ppi, ppi_difference
from rag_ttc_assets.labelling.accept_records import (CORRECTED_DIFFERENCE, AcceptReport, IndependentDifference,
                                                     PairedDifference, Projection)
from rag_ttc_assets.core.arms_file import Arms
from rag_ttc_assets.judging.judge_agreement_stage import ArmJudgments, catalog, read_arm_rows, read_judgments, row_completeness
from rag_ttc_assets.stages.reports import labels_used

WHAT = "completeness (the share of a row's requests addressed)"


def default_labels(store: ArtifactStore) -> Path:
    """Where `rag-ttc annotate` writes labels unless told otherwise."""
    return store.root / "annotations" / "labels.jsonl"


def _problem(path: Path, msg: str, record: str = "(file)", fld: str = "(file)") -> hl.LabelsError:
    return hl.LabelsError([hl.LabelProblem(str(path), record, fld, msg)])


@dataclass(frozen=True)
class CorrectionInputs:
    """What corrected_difference reads for ARM - BASELINE: each arm's request judge as an instrument (as its request
    completeness summary recorded it), the labels digest each ran with (None: not read, no drift check), the labels
    file's text (None: no such file) and the catalog it is checked against (None: not read, the file being missing or
    empty), and what the judges recorded of both arms (judging.judge_agreement_stage.read_judgments)."""

    arm: str
    base: str
    labels_file: Path
    instruments: dict[str, Any]
    evaluation_digests: dict[str, str] | None
    labels_text: str | None
    catalog: hl.Catalog | None
    judgments: dict[str, ArmJudgments]


def read_correction(store: ArtifactStore, arms_file: Path, datasets_dir: Path, arms: Arms, arm: str, base: str,
                    labels_path: Path, check_drift: bool = True) -> CorrectionInputs:
    """What corrected_difference reads of the store and the labels file; the labels digests only to `check_drift`."""
    instruments = {x: store.read_arm_json(x, ArmJson.REQUEST_COMPLETENESS)["request_judge"] for x in (arm, base)}
    digests = {x: labels_used(store, x)["evaluation_digest"] for x in (base, arm)} if check_drift else None
    text = labels_path.read_text(encoding="utf-8") if labels_path.is_file() else None
    cat = catalog(read_arm_rows(store, datasets_dir, arms), arms_file) if text and text.strip() else None
    return CorrectionInputs(arm, base, labels_path, instruments, digests, text, cat, read_judgments(store, {arm, base}))


def checked_labels(path: Path, text: str | None, cat: hl.Catalog | None) -> tuple[hl.Labels, list[dict]]:
    """The labels file's checked labels (labelling.human_labels.parse_labels) and its raw records (their probabilities);
    LabelsError when the file is missing, empty or bad."""
    if text is None:
        raise _problem(path, "labels file not found (label rows with `rag-ttc annotate`, or pass --labels FILE)")
    if not text.strip():
        raise _problem(path, "the labels file is empty: no labels to correct the judge with")
    if cat is None:  # read_correction reads the catalog whenever the file has labels
        raise ValueError(f"{path}: labels without the catalog of arms to check them against")
    labels = hl.parse_labels(text, str(path), cat)
    records = [json.loads(x) for x in text.splitlines() if x.strip()]
    return labels, records


def _judge_rows(judgments: dict[str, ArmJudgments]) -> dict[str, tuple[str, dict[str, float], int]]:
    """arm -> (the request judge's rater name, question -> its completeness of the row, how many rows it did not
    measure), as every labelled correction reads it (judging.judge_agreement_stage.row_completeness: abstentions 0, a row
    with a failed request left out and counted); of several request judges, the one that measured most rows."""
    judges = row_completeness(judgments)
    out = {}
    for arm in judgments:
        best = None
        for name, by_row in judges.items():
            scored = {q: s for (a, q), s in by_row.items() if a == arm}
            rows = {q: s for q, s in scored.items() if s is not None}
            if rows and (best is None or len(rows) > len(best[1])):
                best = (name, rows, len(scored) - len(rows))
        if best is None:
            raise FileNotFoundError(f"arm {arm!r} has no request judgments: run it first (rag-ttc run {arm})")
        out[arm] = best
    return out


def corrected_difference(inputs: CorrectionInputs, alpha: float = 0.05, allow_instrument_drift: bool = False
                         ) -> PairedDifference | IndependentDifference:
    """ARM - BASELINE: the judge's difference over all rows, the people's over the labelled rows, the
    prediction-powered one with its interval (paired where both arms answer the same questions and at least two of
    them are labelled in both; else each arm's own estimate, independent), and the decision each supports.
    Refused, as `compare` refuses, when the arms' request judges differ (instrument drift) or their labels
    versions do (label drift), unless read without its labels digests (read_correction's check_drift)."""
    arm, base, labels_path, instruments = inputs.arm, inputs.base, inputs.labels_file, inputs.instruments
    if inputs.evaluation_digests is not None:
        compare_guards.instrument_drift(base, instruments[base], arm, instruments[arm], allow_instrument_drift)
        compare_guards.label_drift(inputs.evaluation_digests[base], inputs.evaluation_digests[arm], False)
    labels, records = checked_labels(labels_path, inputs.labels_text, inputs.catalog)
    judged = _judge_rows(inputs.judgments)
    f = {x: judged[x][1] for x in (arm, base)}
    human = ppi.human_row_completeness([lb for lb in labels.requests if lb.arm in (arm, base)])
    for x in (arm, base):
        if not human.get(x):
            raise _problem(labels_path, f"no per-request labels of arm {x!r}: the corrected difference needs labels "
                                        f"of both arms ({arm} and {base}); label some of its rows "
                                        f"(rag-ttc sample-labels {x} --budget N, then rag-ttc annotate)")
    y = {x: {q: v for q, v in human[x].items() if q in f[x]} for x in (arm, base)}
    not_measured = {x: sorted(set(human[x]) - set(f[x])) for x in (arm, base)}
    sampling = ppi.recorded_sampling(records)
    p = {x: sampling.of(x)[0] for x in (arm, base)}
    s = {x: sampling.of(x)[1] for x in (arm, base)}
    common = set(f[arm]) & set(f[base])
    both = [q for q in common if q in y[arm] and q in y[base]]
    est = None
    if common and len(both) >= 2:
        est = ppi_difference.paired_difference(f[arm], f[base], y[arm], y[base], p[arm], p[base], alpha, s[arm], s[base])
        why = (f"paired: both arms answer the same {len(common)} questions; the rectifier over the {len(both)} "
               "labelled in both arms")
    if est is None:
        why = ("independent (difference_estimate): " +
               ("the arms answer no question in common" if not common else
                f"only {len(both)} question(s) labelled in both arms (the paired estimator needs two)"))
        est = ppi_difference.independent_difference(f[arm], f[base], y[arm], y[base], p[arm], p[base], alpha, s[arm], s[base])
    if est is None:
        short = [x for x in (arm, base) if len(y[x]) < 2]
        raise _problem(labels_path, "fewer than two labelled rows the judge measured in arm(s) "
                                    + ", ".join(f"{x!r} ({len(y[x])})" for x in short)
                                    + ": no interval can be drawn; label more rows")
    return CORRECTED_DIFFERENCE.validate_python({
            "arm": arm, "baseline": base, "labels_file": str(labels_path), "alpha": alpha, "measure": WHAT,
            "judge_rater": {x: judged[x][0] for x in (arm, base)},
            "instruments": instruments, "estimator_why": why,
            "labelled_per_arm": {x: len(y[x]) for x in (arm, base)},
            "rows_not_measured_whole": {x: judged[x][2] for x in (arm, base)},
            "labels_on_rows_not_measured": not_measured, **est,
            "decision": ppi_difference.decision(est["ppi"]), "judge_decision": ppi_difference.decision(est["judge"]),
            "human_decision": ppi_difference.decision(est["human"])})


def projection(est: PairedDifference | IndependentDifference, alpha: float) -> Projection:
    """How many labelled rows would make the decision: the projected width of the corrected and the people-only
    interval as n grows (labelling.ppi_difference.projected_width), and the smallest n at which one of that width around the
    current estimate excludes 0 (labelling.ppi_difference.labels_needed)."""
    n, big_n = est.labelled, est.rows
    mean, hmean = est.ppi.mean, est.human.mean
    # The variances as the estimator realised them: se_now^2 = fixed + rect / n_now, so that width(n_now) is the
    # interval's own width. With uniform labels rect is var_n(r) exactly; weighted by the sampling probabilities
    # it carries their design effect (projecting more labels drawn the same way). The quantile is Student's t with
    # the Satterthwaite degrees of freedom, as the estimators draw it (labelling.ppi_difference.projected_width).
    fixed, fixed_df = est.variance.fixed, est.variance.fixed_df
    se, hse = est.ppi.se, est.human.se
    if se is None or hse is None:  # two labelled rows at least (corrected_difference): never taken
        raise ValueError("an estimate without a standard error: no width to project")
    rect = max(0.0, n * (se ** 2 - fixed))
    human_var = n * hse ** 2
    needed = ppi_difference.labels_needed(mean, fixed, rect, alpha, fixed_df)
    needed_h = ppi_difference.labels_needed(hmean, 0.0, human_var, alpha)
    why_none = None
    if needed is None:
        q = ppi.quantile(alpha, fixed_df)
        why_none = ("no number of labels: the estimate is 0" if mean == 0 else
                    "no number of labels: the judge's whole-set variance alone spans 0 "
                    f"(t*sqrt(var_f/N) = {q * fixed ** 0.5:.4f} >= |estimate| {abs(mean):.4f})")
    top = max(big_n, n * 2, min(needed or 0, 20 * max(big_n, 1)), 10)
    ns = list(range(2, top + 1, max(1, (top - 2) // 200)))
    return Projection.model_validate({
            "labels_needed": needed, "more_labels": None if needed is None else max(0, needed - n),
            "reachable": needed is not None and needed <= big_n, "why_none": why_none,
            "human_labels_needed": needed_h, "width_now": _width(est),
            "width_that_decides": 2 * abs(mean),
            "formula": "width(n) = 2 t sqrt(var_f/N + var_rect/n), t of the Satterthwaite degrees of freedom",
            "variances": {"fixed": fixed, "fixed_df": fixed_df, "rectifier": rect, "human": human_var},
            "curve": {"n": ns,
                      "ppi": [float(w) for w in ppi_difference.projected_width(fixed, rect, ns, alpha, fixed_df)],
                      "human": [float(w) for w in ppi_difference.projected_width(0.0, human_var, ns, alpha)]}})


def _width(est: PairedDifference | IndependentDifference) -> float:
    """The corrected interval's width now."""
    if est.ppi.high is None or est.ppi.low is None:  # two labelled rows at least: never taken
        raise ValueError("an estimate without an interval: no width")
    return est.ppi.high - est.ppi.low


def accept(inputs: CorrectionInputs, out_dir: Path, alpha: float = 0.05,
           allow_instrument_drift: bool = False) -> AcceptReport:
    """The acceptance report: corrected_difference and its projection, the width plot and the JSON written in
    `out_dir`, the store's comparisons folder (paths in `plot` and `report`)."""
    from rag_ttc_assets.adapters import plots  # late: matplotlib, only when a plot is drawn

    est = corrected_difference(inputs, alpha, allow_instrument_drift)
    pr = projection(est, alpha)
    arm, base = inputs.arm, inputs.base
    if hasattr(out_dir, "mkdir"):
        out_dir.mkdir(parents=True, exist_ok=True)
    plot = str(plots.interval_widths(
        out_dir / f"{base}--{arm}-accept-width.png", pr.curve.n,
        {"prediction-powered (judge + labels)": pr.curve.ppi, "people alone": pr.curve.human},
        est.labelled, pr.width_that_decides,
        f"accept {arm} vs {base}: {round(100 * (1 - alpha))}% interval width of the completeness difference"))
    path = out_dir / f"{base}--{arm}-accept.json"
    rep = AcceptReport(difference=est, projection=pr, plot=plot, report=str(path))
    atomic_write_bytes(path, json.dumps(rep.to_json(), indent=1, default=str).encode("utf-8"), mode=0o644)
    return rep
