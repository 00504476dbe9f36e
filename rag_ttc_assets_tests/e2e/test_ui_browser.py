"""The Dagster UI path in a real browser: `dagster dev` on a small lab, driven by headless Chromium.

What a user does after `make dev`: open the asset graph, select the upstream chain of
`answers` and materialize it for one arm (partition) with "Materialize all…", then materialize
`answers` from its own page, and read the materialization's metadata and lineage there. Every
launch goes through the UI's dialogs; GraphQL only finds the launched runs and waits for them.
The upstream run is set to the in-process executor in the dialog's config editor (the default
multiprocess executor starts a Python per step, ~10 s each here); `answers` runs with the default.

Screenshots land in $RAG_TTC_SCREENSHOTS (default: tmp_path/screenshots); with
RAG_TTC_UPDATE_SCREENSHOTS=1 they are also copied into docs/screenshots/ for the README.
Needs Debian's `chromium` (/usr/bin/chromium, or $RAG_TTC_CHROMIUM) and the `playwright` Python
package; never `playwright install`, which downloads a browser. Skipped when either is missing (failed under
RAG_TTC_REQUIRE_ALL, which .ci/run sets).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from rag_ttc_assets.defs.graph import upstream
from rag_ttc_assets_tests.conftest import REPO
from rag_ttc_assets_tests.support.browser import BROWSER, CHROMIUM, CHROMIUM_ARGS, sync_api
from rag_ttc_assets_tests.support.dagster_dev import DagsterDev

VIEWPORT = {"width": 1280, "height": 800}
ARM = "baseline"
UPSTREAM_OF_ANSWERS = list(upstream("admitted_contexts"))
ACTION_MS = 60_000  # clicks and visibility: the machine has 2 cores and the UI is a large React app
NAVIGATION_MS = 120_000
RUN_S = 240  # per run; on a busy 2-core machine a run takes about a minute

pytestmark = [
    pytest.mark.slow,
    *BROWSER,
]

RUNS = "{ runsOrError(limit: 50) { ... on Runs { results { runId status runConfigYaml tags { key value } } } } }"


def run_ids(dev: DagsterDev) -> set[str]:
    return {r["runId"] for r in dev.graphql(RUNS)["runsOrError"]["results"]}


def new_run(dev: DagsterDev, before: set[str], timeout_s: float = 60) -> dict:
    """The one run launched since `before` (the UI's launch only enqueues it)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        fresh = [r for r in dev.graphql(RUNS)["runsOrError"]["results"] if r["runId"] not in before]
        if fresh:
            assert len(fresh) == 1, f"expected one new run, got {fresh}"
            return fresh[0]
        time.sleep(0.5)
    raise AssertionError(f"no run appeared within {timeout_s} s of clicking Launch")


def assert_run_succeeded(dev: DagsterDev, before: set[str]) -> dict:
    run = new_run(dev, before)
    tags = {t["key"]: t["value"] for t in run["tags"]}
    assert tags.get("dagster/partition") == ARM, tags
    status = dev.wait_for_run(run["runId"], timeout_s=RUN_S)
    assert status == "SUCCESS", f"run {run['runId']} ended {status}\n{dev.log_text()[-6000:]}"
    return run


def select_arm(page, dialog) -> None:
    """In the 'Launch runs to materialize …' dialog: pick exactly one arm partition."""
    dialog.get_by_text("Select a partition or create one").click()
    page.get_by_placeholder("Filter partitions").fill(ARM)
    page.get_by_role("menuitem").filter(has_text=ARM).first.click()  # "Select all (1)" does not match
    dialog.get_by_text(re.compile(r"^Launch runs to materialize")).click()  # close the partition picker
    sync_api.expect(page.get_by_placeholder("Filter partitions")).to_be_hidden()
    sync_api.expect(dialog.get_by_text("1 partition", exact=True)).to_be_visible()
    sync_api.expect(dialog.get_by_text("Upstream data missing")).to_have_count(0)


def add_run_config(page, dialog, yaml_line: str) -> None:
    """Config → Add config → type one line of YAML into the config editor → Save config."""
    dialog.get_by_text("Config", exact=True).click()
    dialog.get_by_text("Add config").click()
    editor = page.get_by_role("dialog").filter(has_text="Config Editor")
    editor.locator(".CodeMirror").first.click()
    page.keyboard.type(yaml_line)
    sync_api.expect(editor.get_by_text("No errors")).to_be_visible()
    editor.get_by_role("button", name="Save config").click()
    sync_api.expect(editor).to_have_count(0)
    sync_api.expect(dialog.get_by_text("Config saved")).to_be_visible()


def launch_one_run(dialog) -> None:
    dialog.get_by_role("button", name="Launch 1 run").click()
    sync_api.expect(dialog).to_have_count(0)


class UI:
    """A page on a real `dagster dev`: open a path, take a screenshot, time a phase."""

    def __init__(self, dev, page, screenshots: Path):
        self.dev, self.page, self.screenshots = dev, page, screenshots
        self.taken: list[Path] = []
        self.errors: list[str] = []
        self.timings: list[tuple[str, float]] = []
        self._clock = time.monotonic()
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def phase(self, name: str) -> None:
        now = time.monotonic()
        self.timings.append((name, now - self._clock))
        self._clock = now

    def open_(self, path: str) -> None:
        self.page.goto(self.dev.url + path, wait_until="networkidle")

    def shot(self, name: str, **kwargs) -> None:
        path = self.screenshots / f"{name}.png"
        self.page.screenshot(path=path, animations="disabled", **kwargs)
        self.taken.append(path)


@contextlib.contextmanager
def ui_session(lab, screenshots: Path, viewport: dict):
    """`dagster dev` on the lab (own DAGSTER_HOME, free port) and headless Chromium on it. On a failure: a
    screenshot, the page errors and the end of the server log; afterwards the phase timings, and with
    RAG_TTC_UPDATE_SCREENSHOTS=1 the screenshots copied into docs/screenshots/."""
    env = {"RAG_TTC_ARMS": str(lab.arms_file), "RAG_TTC_DATASETS": str(lab.datasets_dir),
           "RAG_TTC_HOME": str(lab.home)}
    started = time.monotonic()
    with DagsterDev(REPO, env) as dev, sync_api.sync_playwright() as pw:
        dev.graphql("mutation { setNuxSeen }")  # no "Join the Dagster community" dialog over the page
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=viewport)
        page.set_default_timeout(ACTION_MS)
        page.set_default_navigation_timeout(NAVIGATION_MS)
        sync_api.expect.set_options(timeout=ACTION_MS)
        ui = UI(dev, page, screenshots)
        ui.timings.append(("dagster dev up", time.monotonic() - started))
        try:
            yield ui
        except BaseException:
            try:
                page.screenshot(path=screenshots / "failure.png")
            except Exception as e:  # the page may be gone; the log below still says why
                print(f"no failure screenshot: {e}")
            print(f"failure screenshot: {screenshots / 'failure.png'}; page errors: {ui.errors[:5]}")
            print(dev.log_text()[-6000:])
            raise
        finally:
            browser.close()
    ui.phase("shutdown")
    print("phases: " + ", ".join(f"{name} {secs:.0f} s" for name, secs in ui.timings)
          + f"; page errors: {len(ui.errors)} {ui.errors[:3]}")
    if os.environ.get("RAG_TTC_UPDATE_SCREENSHOTS") == "1":
        docs = REPO / "docs" / "screenshots"
        docs.mkdir(parents=True, exist_ok=True)
        for path in ui.taken:
            shutil.copy(path, docs / path.name)


@pytest.fixture
def screenshots(tmp_path):
    folder = Path(os.environ.get("RAG_TTC_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_materialize_one_arm_from_the_ui_and_read_metadata_and_lineage(mini_lab, screenshots):
    with ui_session(mini_lab, screenshots, VIEWPORT) as ui:
        dev, page, open_, shot, phase = ui.dev, ui.page, ui.open_, ui.shot, ui.phase
        # 1. The asset graph: one collapsed node per stage.
        open_("/asset-groups")
        for group in ("ingest", "indexes", "retrieval", "generation", "evaluation", "diagnostics"):
            sync_api.expect(page.get_by_text(group, exact=True).first).to_be_visible()
        shot("01-asset-graph")
        phase("asset graph")

        # 2. Select everything upstream of answers, expand the stages, Materialize all… for one arm.
        page.locator(".CodeMirror").first.click()  # the "Search and filter assets" selection editor
        page.keyboard.type('+key:"admitted_contexts" and not group:"arm_config"')
        page.keyboard.press("Enter")
        page.get_by_role("button", name="settings", exact=True).click()  # the graph's gear
        page.get_by_role("menuitem").filter(has_text="Expand all groups").click()
        page.keyboard.press("Escape")  # close the settings menu
        sync_api.expect(page.get_by_role("menuitem").filter(has_text="Collapse all groups")).to_be_hidden()
        for name in UPSTREAM_OF_ANSWERS:
            sync_api.expect(page.get_by_text(name, exact=True).first).to_be_visible()
        sync_api.expect(page.get_by_text("answers", exact=True)).to_have_count(0)
        shot("02-upstream-of-answers")
        page.get_by_role("button", name="Materialize all…").click()
        dialog = page.get_by_role("dialog").filter(has_text="Launch runs to materialize")
        sync_api.expect(dialog.get_by_text(f"Launch runs to materialize {len(UPSTREAM_OF_ANSWERS)} assets")
                        ).to_be_visible()
        # In-process: the default multiprocess executor starts a Python per step (~10 s each here).
        select_arm(page, dialog)
        add_run_config(page, dialog, "execution: {config: {in_process: {}}}")
        shot("03-materialize-upstream-dialog")
        before = run_ids(dev)
        launch_one_run(dialog)
        run = assert_run_succeeded(dev, before)
        assert "in_process" in run["runConfigYaml"], run["runConfigYaml"]
        phase("upstream run (UI: Materialize all…)")

        # 3. answers from its own page: Materialize… → one arm → Launch 1 run.
        open_("/assets/answers")
        page.get_by_role("button", name="Materialize…").click()
        confirm = page.get_by_role("dialog").filter(has_text="Are you sure?")
        dialog = page.get_by_role("dialog").filter(has_text="Launch runs to materialize answers")
        sync_api.expect(confirm.or_(dialog)).to_be_visible()
        if confirm.count():  # only shown when the UI thinks an upstream asset was never materialized
            confirm.get_by_role("button", name="Confirm").click()
        sync_api.expect(dialog).to_be_visible()
        select_arm(page, dialog)
        shot("04-materialize-answers-dialog")
        before = run_ids(dev)
        launch_one_run(dialog)
        assert_run_succeeded(dev, before)
        phase("answers run (UI: Materialize…)")

        # 4. The materialization's metadata on the asset page.
        open_("/assets/answers")
        sync_api.expect(page.get_by_text(ARM, exact=True).first).to_be_visible()  # latest materialization's arm
        for key in ("provider_calls", "prompt_digest", "table_digest", "incomplete_rows"):
            sync_api.expect(page.get_by_text(key, exact=True).first).to_be_visible()
        sync_api.expect(page.get_by_text("local/extractive", exact=True).first).to_be_visible()
        page.get_by_text("Metadata", exact=True).first.scroll_into_view_if_needed()
        page.mouse.wheel(0, 120)
        shot("05-answers-metadata")
        phase("metadata")

        # 5. Lineage: upstream of answers.
        page.get_by_role("tab", name="Lineage").click()
        page.get_by_role("button", name="Upstream").click()
        page.wait_for_load_state("networkidle")
        sync_api.expect(page.get_by_text("admitted_contexts", exact=True).first).to_be_visible()
        sync_api.expect(page.get_by_text("answers", exact=True).first).to_be_visible()
        shot("06-answers-lineage")
        phase("lineage")
