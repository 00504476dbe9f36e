"""One click from the Dagster UI to the diagnosis: `rag-ttc serve-reports` on 127.0.0.1 and a real `dagster dev`
with RAG_TTC_REPORTS_URL pointing at it (as `make dev` starts them); the `diagnosis` asset materialized from the
UI's GraphQL; in Chromium, its page_url in the asset's metadata is clicked, the diagnosis page opens over HTTP, and
a number's link there opens the pair report filtered to exactly its cases."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

from rag_ttc_assets_tests.conftest import REPO, mini_corpus, mini_questions, write_dataset
from rag_ttc_assets_tests.e2e.test_diagnosis import ARMS
from rag_ttc_assets_tests.e2e.test_multiprocess_queue import LAUNCH, LOCATIONS
from rag_ttc_assets_tests.support.browser import BROWSER, CHROMIUM, CHROMIUM_ARGS, sync_api
from rag_ttc_assets_tests.support.dagster_dev import DagsterDev, free_port
from rag_ttc_assets_tests.support.reliability import cli, cli_start, kill_group, lab_env

pytestmark = [pytest.mark.slow, *BROWSER]


def _wait_http(url: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_from_the_asset_metadata_in_the_ui_to_the_diagnosis_and_its_cases(tmp_path):
    corpus = mini_corpus()
    write_dataset(tmp_path / "datasets" / "mini", corpus, mini_questions(corpus))
    (tmp_path / "arms.yaml").write_text(ARMS, encoding="utf-8")
    env = lab_env(tmp_path)
    for args in (("run", "baseline", "evidence-k-5", "--family", "context"), ("compare", "--all")):
        code, _, err = cli(*args, env=env, timeout=900)
        assert code == 0, err[-4000:]
    port = free_port()
    server = cli_start("serve-reports", "--port", str(port), env=env, out=tmp_path / "serve")
    base = f"http://127.0.0.1:{port}"
    try:
        dev_env = {k: env[k] for k in ("RAG_TTC_ARMS", "RAG_TTC_DATASETS", "RAG_TTC_HOME")}
        with DagsterDev(REPO, {**dev_env, "RAG_TTC_REPORTS_URL": base}, timeout_s=240) as dev:
            dev.graphql("mutation { setNuxSeen }")
            location = dev.graphql(LOCATIONS)["workspaceOrError"]["locationEntries"][0]["name"]
            result = dev.graphql(LAUNCH, {"p": {"selector": {"repositoryLocationName": location,
                                                             "repositoryName": "__repository__",
                                                             "jobName": "diagnosis_job"}}})["launchRun"]
            assert result["__typename"] == "LaunchRunSuccess", result
            assert dev.wait_for_run(result["run"]["runId"], timeout_s=600) == "SUCCESS", dev.log_text()[-4000:]
            url = f"{base}/comparisons/diagnosis.html"
            _wait_http(url)
            with sync_api.sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
                try:
                    page = browser.new_page(viewport={"width": 1280, "height": 900})
                    page.set_default_timeout(60_000)
                    page.goto(dev.url + "/assets/diagnosis", wait_until="networkidle")
                    link = page.locator(f"a[href='{url}']").first
                    link.scroll_into_view_if_needed()
                    with page.context.expect_page() as opened:
                        link.click()
                    report = opened.value
                    report.wait_for_selector("body[data-ready='1']", state="attached")
                    assert report.url == url
                    diagnosis = json.loads(urllib.request.urlopen(f"{base}/comparisons/diagnosis.json").read())
                    s = next(s for sec in diagnosis["sections"] for s in sec["sentences"]
                             if s["rule"] == "pair.largest_transitions" and s["inputs"]["a"] == "context-700")
                    name = next(n for n in s["links"] if n.startswith("cell."))
                    report.locator(f"[data-sentence='{s['id']}'] a[data-number='{name}']").click()
                    report.wait_for_selector("body[data-ready='1']", state="attached")
                    assert report.url.startswith(f"{base}/comparisons/context-700--context-4000.html#")
                    pair = json.loads(urllib.request.urlopen(
                        f"{base}/comparisons/context-700--context-4000.json").read())
                    cell = next(c for c in pair["transitions"]["cells"] if c["key"] == name[len("cell."):])
                    shown = sorted(r.get_attribute("data-case") for r in report.locator("tr.case").all())
                    assert shown == cell["cases"]
                finally:
                    browser.close()
    finally:
        kill_group(server)
