"""How a comparison reads in every table: the `rag-ttc compare` lines, the `arm_comparisons` summary (the UI's
metadata), the case report. Pure text from compare_two's pair report (core.compare_records.PairReport)."""

from __future__ import annotations

from rag_ttc_assets.core.compare_records import PairMetric, PairReport
from rag_ttc_assets.core.measured import reasons_text


def era_text(report: PairReport) -> str:
    """"same", or the representation fields that differ between the arms (and whether chunking or prompt did too)."""
    era = report.representation_era
    if not era.differ:
        return "same"
    return f"differ: {', '.join(era.differ)}" + (f"; with {', '.join(era.confounded)}" if era.confounded else "")


def significant_metrics(report: PairReport) -> str:
    """The metrics whose difference is significant on the adjusted p-value, or "none"."""
    return ", ".join(m for m, v in report.metrics.items() if v.significant) or "none"


def paired_text(metric: PairMetric) -> str:
    """"7 of 11 (a: abstained 2; b: abstained 1, judge_error 1)": paired cases, of how many, why the rest dropped."""
    why = "; ".join(f"{side}: {reasons_text(r)}" for side, r in (("a", metric.not_measured.a),
                                                                 ("b", metric.not_measured.b)) if r)
    return f"{metric.n} of {metric.of}" + (f" ({why})" if why else "")


def p_adjust_text(report: PairReport) -> str:
    p = report.p_adjust
    return f"{p.method}: {p.method_name}; alpha {p.alpha}; over {p.m} p-values ({p.family})"
