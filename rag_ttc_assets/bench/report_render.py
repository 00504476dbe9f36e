"""`rag-ttc bench --only report`: how long headless Chromium takes to render the 5,000-case report against a plain
HTML table of the same rows, in the same browser, alternating; and (report only) how long filtering the list takes."""

from __future__ import annotations

import os
from pathlib import Path

from rag_ttc_assets.bench.harness import Stopwatch, Target, alternate, item
from rag_ttc_assets.bench.bench_registry import measurement
from rag_ttc_assets.report.html import render
from rag_ttc_assets.report.synthetic import plain_table, synthetic_pair_model

CASES = 5000
SEED = 18
CHROMIUM = Path(os.environ.get("RAG_TTC_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
PAINTED = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(performance.now()))))"


@measurement("report")
def bench_report(spec, base: Path, repeat: int) -> dict:
    product_name = f"the case report of {CASES} synthetic cases (report.html.render), first screen painted"
    reference_name = "a plain HTML table of the same rows, painted"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as e:
        return item("report", [], None, "cost", None, product_name, None, notes=[str(e)],
                    detail="skipped: playwright is not installed")
    if not CHROMIUM.exists():
        return item("report", [], None, "cost", None, product_name, None, notes=[f"{CHROMIUM} is missing"],
                    detail="skipped: no chromium")
    folder = base / "report"
    folder.mkdir(parents=True, exist_ok=True)
    report = synthetic_pair_model(CASES, SEED)
    page_path, table_path = folder / "report.html", folder / "table.html"
    page_path.write_text(render(report), encoding="utf-8")
    table_path.write_text(plain_table(report), encoding="utf-8")
    filters: list[float] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            def product():
                page = browser.new_page()
                with Stopwatch() as sw:
                    page.goto(page_path.as_uri())
                    page.wait_for_selector("body[data-ready='1']", state="attached")
                    page.evaluate(PAINTED)
                # Filtering all 5,000 cases: the time from the change to the repainted list (in the page's clock).
                filters.append(page.evaluate("""() => { const t = performance.now();
                    const s = document.getElementById('f-text'); s.value = 'syn-01';
                    s.dispatchEvent(new Event('input'));
                    return new Promise(r => requestAnimationFrame(() => r(performance.now() - t))); }"""))
                page.close()
                return sw.timing

            def reference():
                page = browser.new_page()
                with Stopwatch() as sw:
                    page.goto(table_path.as_uri())
                    page.evaluate(PAINTED)
                page.close()
                return sw.timing

            prod, ref = alternate("report", product, reference, repeat)
        finally:
            browser.close()
    size = page_path.stat().st_size
    filter_ms = sorted(filters)[len(filters) // 2]
    return item("report", prod, ref, "cost", Target("<=", 2.0), product_name, reference_name, cases=CASES,
                report_bytes=size, table_bytes=table_path.stat().st_size, filter_ms=filter_ms,
                detail=f"{CASES} cases, {size / 1e6:.1f} MB; filtering the list repaints in {filter_ms:.0f} ms")
