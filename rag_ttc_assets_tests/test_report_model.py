"""The case report's pure parts: the page model (report.model) and the JSON blob's escaping (report.html)."""

import json

import pytest

from rag_ttc_assets.core.case_comparison import buckets
from rag_ttc_assets.core.compare_records import Bucket
from rag_ttc_assets.report.html import render, script_json
from rag_ttc_assets.report.model import bucket_of, chunk_state, differing_chunks, segments
from rag_ttc_assets.report.synthetic import synthetic_pair_model


def test_script_json_cannot_close_the_element_and_reads_back_the_same():
    obj = {"text": "</script><script>alert(1)</script><!-- & ]]> \u2028", "n": [1, 2.5]}
    blob = script_json(obj)
    for bad in ("<", ">", "&", "\u2028"):
        assert bad not in blob
    assert json.loads(blob) == obj


def test_render_holds_one_data_blob_and_a_csp_pinning_the_script():
    page = render(synthetic_pair_model(3, seed=1) | {"title": "</title><script>x()</script>"})
    assert page.count("<script") == 2 and "<script>x()" not in page
    assert "script-src 'sha256-" in page and "default-src 'none'" in page


def test_segments_reference_chunk_texts_and_join_back():
    texts = {"c1": "alpha " * 10, "c2": "beta " * 10, "short": "tiny"}
    msg = "Evidence:\n" + texts["c2"] + "\n--\n" + texts["c1"] + " tiny end"
    parts = segments(msg, texts, ["c1", "c2", "short"])
    assert parts == ["Evidence:\n", {"chunk": "c2"}, "\n--\n", {"chunk": "c1"}, " tiny end"]
    assert "".join(texts[p["chunk"]] if isinstance(p, dict) else p for p in parts) == msg
    assert segments("no chunk here", texts, ["c1"]) == ["no chunk here"]


def test_chunk_state_and_the_differing_chunks():
    ctx = {"admitted_chunk_ids": ["a"], "omitted_chunk_ids": ["o"], "selected_chunk_ids": ["a", "o", "s"]}
    assert [chunk_state(c, ctx) for c in "aosr"] == ["admitted", "omitted", "selected", "ranked"]
    row = lambda cid, state, cited=False, excerpt=(): [cid, 1, 1, state, cited, list(excerpt), []]  # noqa: E731
    a = {"ranked": [row("x", "admitted", True, ["q.r1"]), row("y", "admitted"), row("z", "ranked")]}
    b = {"ranked": [row("x", "admitted", True), row("y", "admitted"), row("w", "ranked")]}
    # x lost r1's excerpt citation; z and w were ranked by one arm only.
    assert differing_chunks(a, b) == ["w", "x", "z"]


def test_bucket_of_agrees_with_the_bucket_counts():
    deltas = [-1.0, -0.5, -0.3, -0.05, 0.0, 0.0, 0.1, 0.2, 0.7, 1.0, 1.5]
    rows = buckets(deltas)
    labels = [bucket_of(d, rows) for d in deltas]
    assert {b.label: b.count for b in rows if b.count} == {lab: labels.count(lab) for lab in set(labels)}
    assert bucket_of(-0.5, rows) == "loss (0.1, 0.5]" and bucket_of(1.5, rows) == "gain > 1.0"
    assert bucket_of(None, rows) is None


def test_synthetic_cases_carry_their_transitions():
    m = synthetic_pair_model(50, seed=2)
    cells = {c["key"]: set(c["cases"]) for c in m["comparison"]["transitions"]["cells"]}
    for case in m["cases"]:
        assert all(case["id"] in cells[k] for k in case["transitions"])
    with pytest.raises(ValueError, match="no bucket"):
        bucket_of(0.5, [Bucket(label="tie", side="tie", low=None, high=None, count=0, sum=0.0)])


def test_the_report_package_never_imports_dagster():
    from rag_ttc_assets_tests.test_purity import PACKAGE, dagster_imports

    sources = sorted((PACKAGE / "report").glob("*.py"))
    assert len(sources) >= 5
    assert [f for p in sources for f in dagster_imports(p.read_text(encoding="utf-8"), str(p))] == []
