"""A sweep as a backfill and the arm comparison, in a real browser: `dagster dev` on the mini lab, headless Chromium.

What a user does to run a family and compare its arms from the UI: on the asset graph, select every
per-arm asset, "Materialize all…", pick the family's partitions ("Select all" after filtering by the
family's prefix) and launch one backfill (in-process executor set in the dialog's config editor, as
`rag-ttc sweep --in-process` does); follow it from the Runs page to the backfill's page until every
partition succeeded; then materialize `arm_comparisons` from its page and read the comparison table
and the plots (Markdown images) in the materialization's metadata. Every launch goes through the UI;
GraphQL only finds the backfill and the run the UI launched, and waits for them.

The lab is the mini lab with its comparison set to the family's two arms, so the backfill
materializes everything `arm_comparisons` reads. Screenshots: 07-backfill.png (per-partition runs),
07-backfill-assets.png (per-asset partition counts), 08-comparison-plots.png; where they land and
when they are copied into docs/screenshots/ is as in test_ui_browser.py. Skipped without a browser.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from rag_ttc_assets.core.compare_records import read_pair_report
from rag_ttc_assets.defs.graph import STAGES
from rag_ttc_assets_tests.conftest import MINI_ARMS, REPO
from rag_ttc_assets_tests.e2e.test_ui_browser import (  # noqa: F401 (screenshots: the fixture)
    add_run_config, run_ids, screenshots, ui_session)
from rag_ttc_assets_tests.support.browser import BROWSER, sync_api
from rag_ttc_assets_tests.support.dagster_dev import DagsterDev

FAMILY = "context"
ARMS = ["context-700", "context-4000"]
PER_ARM_ASSETS = list(STAGES["all"])
# Completeness read graded first, then the share addressed, as the run table and `compare A B` read it.
COMPARISON_COLUMNS = ["a", "b", "n", "graded_a", "graded_b", "graded_delta", "graded_paired", "graded_p",
                      "graded_p_adj", "addressed_a", "addressed_b", "valid_delta", "valid_p", "valid_p_adj",
                      "completeness_delta", "completeness_paired", "completeness_p", "completeness_p_adj",
                      "significant", "catastrophic", "representations"]
VIEWPORT = {"width": 1440, "height": 900}
TALL = {"width": 1440, "height": 2000}  # room below the metadata table for the centred image dialog
BACKFILL_S = 600  # two arms, every stage, two runs at a time on a busy 2-core machine (~2 min idle)
RUN_S = 240

pytestmark = [
    pytest.mark.slow,
    *BROWSER,
]

BACKFILLS = "{ partitionBackfillsOrError(limit: 20) { ... on PartitionBackfills { results { id } } } }"
BACKFILL = """query($id: String!) { partitionBackfillOrError(backfillId: $id) { __typename
  ... on PartitionBackfill { status isAssetBackfill partitionNames assetSelection { path }
    runs { runId status runConfigYaml tags { key value } assetSelection { path } }
    assetBackfillData { assetBackfillStatuses { ... on AssetPartitionsStatusCounts {
      assetKey { path } numPartitionsTargeted numPartitionsMaterialized numPartitionsFailed
      numPartitionsInProgress } } }
  } } }"""
BACKFILL_FINISHED = ("COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED")


def whole_lab_assets(lab) -> list[str]:
    """The assets that are not per arm (no partitions; the arm_config group's observable sources aside): what the
    selection leaves out so that "Materialize all…" targets exactly the per-arm assets."""
    from rag_ttc_assets.definitions import build_definitions  # late: builds Definitions for the test's lab only

    graph = build_definitions(lab).resolve_asset_graph()
    keys = [k for k in graph.get_all_asset_keys() if graph.get(k).group_name != "arm_config"]
    return sorted(k.path[-1] for k in keys if graph.get(k).partitions_def is None)


def backfill_ids(dev: DagsterDev) -> set[str]:
    return {b["id"] for b in dev.graphql(BACKFILLS)["partitionBackfillsOrError"]["results"]}


def new_backfill(dev: DagsterDev, before: set[str], timeout_s: float = 60) -> str:
    """The one backfill launched since `before`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        fresh = backfill_ids(dev) - before
        if fresh:
            assert len(fresh) == 1, f"expected one new backfill, got {fresh}"
            return fresh.pop()
        time.sleep(0.5)
    raise AssertionError(f"no backfill appeared within {timeout_s} s of clicking Launch backfill")


def wait_for_backfill(dev: DagsterDev, backfill_id: str, timeout_s: float = BACKFILL_S) -> dict:
    """Poll until the backfill daemon has marked the backfill finished and all of its runs have ended."""
    deadline = time.monotonic() + timeout_s
    b: dict = {}
    while time.monotonic() < deadline:
        b = dev.graphql(BACKFILL, {"id": backfill_id})["partitionBackfillOrError"]
        if b["status"] in BACKFILL_FINISHED and all(r["status"] in ("SUCCESS", "FAILURE", "CANCELED")
                                                    for r in b["runs"]):
            return b
        time.sleep(2.0)
    raise AssertionError(f"backfill {backfill_id} still {b.get('status')} after {timeout_s} s: "
                         f"{[(r['runId'], r['status']) for r in b.get('runs', [])]}\n{dev.log_text()[-6000:]}")


def partition_of(run: dict) -> str | None:
    return next((t["value"] for t in run["tags"] if t["key"] == "dagster/partition"), None)


def lines(locator) -> list[str]:
    return [s.strip() for s in locator.inner_text().splitlines() if s.strip()]


def test_sweep_as_a_backfill_from_the_ui_then_compare_the_arms(mini_lab, screenshots):
    # The mini lab compares baseline with evidence-k-5; here the family's own two arms, which the backfill builds.
    arms_text = MINI_ARMS.replace("  - [baseline, evidence-k-5]", f"  - [{ARMS[0]}, {ARMS[1]}]")
    assert arms_text != MINI_ARMS and f"{FAMILY}:" in arms_text
    mini_lab.arms_file.write_text(arms_text, encoding="utf-8")
    from rag_ttc_assets.adapters.input_files import load_arms

    assert load_arms(mini_lab.arms_file).family(FAMILY) == ARMS

    with ui_session(mini_lab, screenshots, VIEWPORT) as ui:
        dev, page, open_, shot, phase = ui.dev, ui.page, ui.open_, ui.shot, ui.phase
        expect = sync_api.expect
        # 1. Asset graph: select every per-arm asset, Materialize all…, the family's partitions, in-process.
        open_("/asset-groups")
        page.locator(".CodeMirror").first.click()  # the "Search and filter assets" selection editor
        page.keyboard.type(" and ".join(["not group:\"arm_config\"", *(f'not key:"{k}"' for k in whole_lab_assets(mini_lab))]))
        page.keyboard.press("Enter")
        page.get_by_role("button", name="Materialize all…").click()
        dialog = page.get_by_role("dialog").filter(has_text="Launch runs to materialize")
        expect(dialog.get_by_text(f"Launch runs to materialize {len(PER_ARM_ASSETS)} assets")).to_be_visible()
        dialog.get_by_text("Select a partition or create one").click()
        page.get_by_placeholder("Filter partitions").fill(f"{FAMILY}-")
        for arm in ARMS:
            expect(page.get_by_role("menuitem").filter(has_text=arm).first).to_be_visible()
        page.get_by_role("menuitem").filter(has_text=re.compile(rf"^Select all \({len(ARMS)}\)$")).click()
        dialog.get_by_text(re.compile(r"^Launch runs to materialize")).click()  # close the partition picker
        expect(page.get_by_placeholder("Filter partitions")).to_be_hidden()
        expect(dialog.get_by_text(f"{len(ARMS)} partitions", exact=True)).to_be_visible()
        add_run_config(page, dialog, "execution: {config: {in_process: {}}}")
        launch = dialog.get_by_role("button", name="Launch backfill")  # more than one partition: a backfill
        expect(launch).to_be_enabled()
        before = backfill_ids(dev)
        runs_before = run_ids(dev)
        launch.click()
        expect(dialog).to_have_count(0)
        backfill_id = new_backfill(dev, before)
        expect(page.get_by_text(f"Created backfill {backfill_id}")).to_be_visible()  # the UI's toast
        phase("backfill launched (UI: Materialize all…)")

        # 2. Runs → the backfill's row → its page; wait for the backfill (GraphQL), then read it in the UI.
        page.get_by_role("link", name="Runs").first.click()  # the navigation's Runs
        link = page.locator(f'a[href="/runs/b/{backfill_id}"]').first
        expect(link).to_be_visible()
        link.click()
        expect(page).to_have_url(re.compile(rf"/runs/b/{backfill_id}"))
        b = wait_for_backfill(dev, backfill_id)
        assert b["status"] == "COMPLETED_SUCCESS", b
        assert b["isAssetBackfill"] and sorted(b["partitionNames"]) == sorted(ARMS), b
        assert {k["path"][-1] for k in b["assetSelection"]} == set(PER_ARM_ASSETS)
        assert sorted(partition_of(r) for r in b["runs"]) == sorted(ARMS), b["runs"]
        assert not set(r["runId"] for r in b["runs"]) & runs_before
        for r in b["runs"]:
            assert r["status"] == "SUCCESS", r
            assert "in_process" in r["runConfigYaml"], r["runConfigYaml"]  # the dialog's config reached it
        for s in b["assetBackfillData"]["assetBackfillStatuses"]:
            assert (s["numPartitionsTargeted"], s["numPartitionsMaterialized"], s["numPartitionsFailed"],
                    s["numPartitionsInProgress"]) == (2, 2, 0, 0), s
        for arm in ARMS:
            assert mini_lab.store.arm_path(arm, "failure_flow.json").is_file(), arm
        phase("backfill completed")

        page.reload(wait_until="networkidle")
        expect(page.get_by_text("Partition selection", exact=True)).to_be_visible()
        for arm in ARMS:
            expect(page.get_by_text(arm, exact=True).first).to_be_visible()
        status_tag = page.get_by_text("Status", exact=True).first.locator("xpath=following-sibling::div[1]")
        expect(status_tag).to_have_text("Succeeded")  # COMPLETED_SUCCESS
        for name in PER_ARM_ASSETS:  # Overview: per asset, partitions targeted / in progress / succeeded / failed
            row = page.locator('[class*="rowGrid"]').filter(has=page.locator(f'a[href^="/assets/{name}"]'))
            expect(row).to_have_count(1)
            row.scroll_into_view_if_needed()
            assert lines(row)[-4:] == ["2", "0", "2", "0"], (name, lines(row))
        page.mouse.wheel(0, -2000)
        shot("07-backfill-assets")
        page.get_by_role("tab", name="Runs").click()
        for arm in ARMS:  # Runs: one run per partition, each Success
            row = page.locator('[class*="rowGrid"]').filter(has=page.get_by_text(f"partition: {arm}", exact=True))
            expect(row).to_have_count(1)
            expect(row.get_by_text("Success", exact=True)).to_be_visible()
        shot("07-backfill")
        phase("backfill page")

        # 3. arm_comparisons from its own page: Materialize (not partitioned: one run, no dialog).
        open_("/assets/arm_comparisons")
        runs_before = run_ids(dev)
        page.get_by_role("button").filter(has_text=re.compile(r"^Materialize$")).click()
        expect(page.get_by_text(re.compile(r"^Launched run [0-9a-f]{8}$"))).to_be_visible()
        fresh = [r for r in dev.graphql("{ runsOrError(limit: 50) { ... on Runs { results { runId } } } }")
                 ["runsOrError"]["results"] if r["runId"] not in runs_before]
        assert len(fresh) == 1, fresh
        status = dev.wait_for_run(fresh[0]["runId"], timeout_s=RUN_S)
        assert status == "SUCCESS", f"arm_comparisons run ended {status}\n{dev.log_text()[-6000:]}"
        path = mini_lab.store.comparisons_dir / f"{ARMS[0]}--{ARMS[1]}.json"
        report = json.loads(path.read_text())
        typed = read_pair_report(path.read_text(), str(path))  # what the table's text functions read
        assert 'id="report-data"' in (mini_lab.store.comparisons_dir / f"{ARMS[0]}--{ARMS[1]}.html").read_text()
        phase("arm_comparisons run (UI: Materialize)")

        # 4. The materialization's metadata (Events tab): the comparison table, then a plot.
        open_("/assets/arm_comparisons")  # afresh: the page it was launched from may still think it runs
        page.get_by_role("button", name="Hide navigation").click()  # room for the table's twenty-one columns
        page.get_by_role("tab", name="Events").click()
        expect(page.get_by_text(f"Materialized in run {fresh[0]['runId'][:8]}")).to_be_visible()
        expect(page.get_by_text("is currently refreshing this asset")).to_have_count(0)
        table = page.locator("table").filter(has=page.get_by_role("columnheader", name="completeness_delta")).last
        expect(table).to_be_visible()
        assert [c.strip() for c in table.get_by_role("columnheader").all_inner_texts()] == COMPARISON_COLUMNS
        expect(page.get_by_text(f"report/{ARMS[0]}--{ARMS[1]}", exact=True).first).to_be_attached()  # the case report
        rows = table.locator("tbody tr")
        expect(rows).to_have_count(1)  # one row per compared pair
        cells = [c.strip() for c in rows.first.get_by_role("cell").all_inner_texts()]
        m, read, g = report["metrics"], report["completeness_measured"], report["metrics"]["graded_completeness"]
        from rag_ttc_assets.core.measured import addressed_text, graded_text
        from rag_ttc_assets.report.comparison_text import era_text, paired_text, significant_metrics

        read = typed.completeness_measured
        assert cells == [ARMS[0], ARMS[1], str(report["n"]), graded_text(read[ARMS[0]]), graded_text(read[ARMS[1]]),
                         f"{g['mean_delta']:.4f}", paired_text(typed.metrics["graded_completeness"]),
                         f"{g['p_value']:.4f}", f"{g['p_adjusted']:.4f}",
                         addressed_text(read[ARMS[0]]), addressed_text(read[ARMS[1]]), f"{m['valid']['mean_delta']:.4f}",
                         f"{m['valid']['p_value']:.4f}", f"{m['valid']['p_adjusted']:.4f}",
                         f"{m['completeness']['mean_delta']:.4f}", paired_text(typed.metrics["completeness"]),
                         f"{m['completeness']['p_value']:.4f}", f"{m['completeness']['p_adjusted']:.4f}",
                         significant_metrics(typed), str(len(report["catastrophic"])), era_text(typed)], cells

        page.set_viewport_size(TALL)
        for key, alt in (("failure_flow_plot", "failure flow"), (f"sweep_{FAMILY}", f"sweep {FAMILY}")):
            row = page.get_by_role("row").filter(has=page.get_by_text(key, exact=True))
            row.get_by_text("[Show Markdown]").click()
            md = page.get_by_role("dialog").filter(has_text=key)
            img = md.get_by_role("img", name=alt)
            expect(img).to_be_visible()
            img.evaluate("i => i.decode()")  # resolves once the data: URI has been decoded
            size = img.evaluate("i => [i.complete, i.naturalWidth, i.naturalHeight]")
            assert size[0] and size[1] > 0 and size[2] > 0, (key, size)
            if key != f"sweep_{FAMILY}":
                md.get_by_role("button", name="Close").click()
                expect(md).to_have_count(0)
        box = md.bounding_box()
        shot("08-comparison-plots", clip={"x": 0, "y": 0, "width": TALL["width"],
                                           "height": min(TALL["height"], box["y"] + box["height"] + 24)})
        phase("comparison metadata")
