"""The case report colours a metric's delta by the metric's direction (core.compare_metrics.DIRECTIONS): a rise in input
tokens or latency is a cost, shown as a loss, while a rise in valid answers is a gain. Checked in Debian's Chromium
on a rendered page whose metrics are evidence-k-8's against baseline (+0.031 valid, +465 input tokens, +0.19 s)."""

from __future__ import annotations

import pytest

from rag_ttc_assets.core.compare_metrics import DIRECTIONS, KINDS
from rag_ttc_assets.diagnosis.diagnosis_sentences import outcome
from rag_ttc_assets.report.html import render
from rag_ttc_assets.report.synthetic import synthetic_pair_model
from rag_ttc_assets_tests.support.browser import BROWSER, CHROMIUM, CHROMIUM_ARGS, sync_api

pytestmark = BROWSER


def _metric(delta: float) -> dict:
    return {"n": 258, "of": 258, "mean_a": 1.0, "mean_b": 1.0 + delta, "mean_delta": delta, "ci_low": None,
            "ci_high": None, "p_value": 0.01, "p_adjusted": 0.02, "significant": True, "test": "sign_flip_exact",
            "gains": 1, "losses": 0, "ties": 257}


def test_every_compared_metric_has_a_direction_and_costs_lose_when_they_rise():
    assert set(KINDS) <= set(DIRECTIONS)
    assert outcome("input_tokens", 465.0) == "loss" and outcome("latency_s", 0.19) == "loss"
    assert outcome("valid", 0.031) == "gain" and outcome("completeness", -0.1) == "loss"
    assert outcome("input_tokens", -3.0) == "gain" and outcome("valid", 0.0) == "tie" and outcome("valid", None) is None
    with pytest.raises(KeyError):
        outcome("no_such_metric", 1.0)


def test_the_page_colours_token_and_latency_rises_as_losses(tmp_path):
    from rag_ttc_assets.core import compare_metrics

    report = synthetic_pair_model(20)
    report["directions"] = compare_metrics.DIRECTIONS
    report["comparison"]["metrics"] = {"valid": _metric(0.031), "input_tokens": _metric(465.2),
                                       "latency_s": _metric(0.19), "completeness": _metric(-0.05)}
    path = tmp_path / "pair.html"
    path.write_text(render(report), encoding="utf-8")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(path.as_uri())
            page.wait_for_selector("body[data-ready='1']", state="attached")
            classes = {m: page.locator(f"tr[data-metric='{m}'] td[data-field='mean_delta']").get_attribute("class")
                       for m in ("valid", "input_tokens", "latency_s", "completeness")}
        finally:
            browser.close()
    assert "gain" in classes["valid"].split(), classes
    for m in ("input_tokens", "latency_s", "completeness"):
        assert "loss" in classes[m].split() and "gain" not in classes[m].split(), (m, classes)


PLANT = '<img src="x" onerror="window.__pwned = 1"><script>window.__pwned = 2</script></li></ul><b>bold</b>'


def test_the_diagnosis_page_puts_record_text_on_the_page_as_text(tmp_path):
    from rag_ttc_assets.diagnosis.diagnosis_sentences import Sentence
    from rag_ttc_assets.diagnosis.diagnosis_page import write_page

    s = Sentence("exec.baseline_flow").t(f"arm {PLANT} loses ").n("lost", 3, "count", {
        "url": "pair.html", "filter": {"cases": PLANT}}).about([PLANT, "q-1"]).done("s1")
    s["snippet"] = f"arms:\n  x: {{prompt: '{PLANT}'}}\n"
    from rag_ttc_assets.diagnosis.diagnosis_records import Diagnosis

    d = Diagnosis.model_validate({
        "baseline": "b", "arms": [], "families": [], "pairs": [], "p_adjust": None, "alpha": 0.05, "min_paired": 10,
        "human_labels": None, "sections": [{"id": "summary", "title": f"Summary {PLANT}", "sentences": [s]},
                                           {"id": "decisions", "title": "Decision table", "sentences": []}]})
    path = write_page(d, tmp_path / "diagnosis.html", f"title {PLANT}")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(path.as_uri())
            page.wait_for_selector("body[data-ready='1']", state="attached")
            assert page.evaluate("window.__pwned") is None
            assert page.locator("img, b, script:not([type]):not([id])").count() <= 1  # only the page's own script
            assert page.locator("img").count() == 0 and page.locator("b").count() == 0
            sentence = page.locator("[data-sentence='s1']")
            assert sentence.inner_text().startswith(s["text"])
            assert page.locator("h1").inner_text() == f"title {PLANT}"
            assert PLANT in page.locator("pre.snippet").inner_text()
            href = sentence.locator("a[data-number='lost']").get_attribute("href")
            assert href.startswith("pair.html#cases=") and "<" not in href
        finally:
            browser.close()
