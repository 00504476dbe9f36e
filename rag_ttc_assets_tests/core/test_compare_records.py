"""The pair report as a record: what it writes is what it reads back, key for key; the fields only `rag-ttc compare`
or the plots add are left out until set; a hand-edited file with a wrong, missing or unknown field fails naming the
file and the field."""

from __future__ import annotations

import json

import pytest

from rag_ttc_assets.core.compare_records import OPTIONAL, PairReport, PairReportError, read_pair_report
from rag_ttc_assets.labelling.label_drift import LabelDrift
from rag_ttc_assets_tests.diagnosis.test_diagnosis import report, values

FIRST = ["a", "b", "n", "metrics", "buckets", "catastrophic", "p_adjust", "transitions", "per_case",
         "per_case_graded", "changed_parameters", "not_read", "token_latency", "supply", "admitted_sets", "headline",
         "label_drift", "instruments", "instrument_drift", "representation_era", "label_use", "completeness_measured",
         "evaluation_digests"]


def _pair() -> PairReport:
    n = 12
    a = values(n, lambda i: float(i % 2), lambda i: 1.0)
    b = values(n, lambda i: 1.0 if i < 10 else -1.5, lambda i: 1.0)  # two catastrophic cases
    return report("base", "wide", a, b, lambda i: "ok", lambda i: "ok", {"evidence_k": [5, 8]})


def test_the_json_written_reads_back_as_the_same_report_key_for_key():
    rep = _pair()
    out = rep.to_json()
    assert list(out) == FIRST  # the optional fields only when set
    assert list(out["metrics"]["completeness"])[-1] == "not_measured"
    assert list(out["catastrophic"][0]) == ["case_id", "a", "b", "delta", "branches_a", "branches_b"]
    text = json.dumps(out, indent=1)
    back = read_pair_report(text, "base--wide.json")
    assert back == rep and json.dumps(back.to_json(), indent=1) == text
    drawn = rep.model_copy(update={"plots": {"buckets": "base--wide-buckets.png"}})
    assert list(drawn.to_json()) == FIRST + ["plots"] and set(OPTIONAL) - set(drawn.to_json()) == {
        "labels_differ", "completeness_corrected"}


@pytest.mark.parametrize("drift", [
    LabelDrift(digests={"base": "sha256:a", "wide": "sha256:b"}, files={"base": "e.json", "wide": "f.json"},
               differ=["question q1 targets"]),
    LabelDrift(digests={"base": "sha256:a", "wide": "sha256:b"}, files={"base": None, "wide": "f.json"}, differ=None,
               why_not="the labels version of base is kept neither in the dataset"),
])
def test_the_labels_that_differ_are_written_in_their_order_and_read_back(drift):
    rep = _pair().model_copy(update={"labels_differ": drift})
    out = rep.to_json()
    assert list(out["labels_differ"]) == ["digests", "files", "differ"] + (["why_not"] if drift.why_not else [])
    assert read_pair_report(json.dumps(out), "base--wide.json") == rep


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["metrics"]["valid"].update(n="many"), "metrics.valid.n"),
    (lambda d: d["transitions"]["cells"][0].pop("key"), "transitions.cells.0.key"),
    (lambda d: d.update(headlines="completeness"), "headlines"),
])
def test_a_hand_edited_pair_report_fails_naming_the_file_and_the_field(edit, field):
    out = _pair().to_json()
    edit(out)
    with pytest.raises(PairReportError) as e:
        read_pair_report(json.dumps(out), "store/comparisons/base--wide.json")
    assert str(e.value).startswith("store/comparisons/base--wide.json: not a pair report: ") and field in str(e.value)
