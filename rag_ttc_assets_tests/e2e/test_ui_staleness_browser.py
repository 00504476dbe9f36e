"""Staleness after an arms-file edit, in a real browser: `dagster dev` on the mini lab, headless Chromium.

One arm is materialized from the UI ("Materialize all…"), another with `rag-ttc run` into the same Dagster
home. Then the arm's `evidence_k` is edited in the lab's copy of the arms file and the definitions are
reloaded from the UI ("Reload definitions"). The partition view of `admitted_contexts` shows the partition
unsynced, with the observed configuration that changed as the cause; `chunks` and the indexes stay fresh,
the other arm's partition is untouched, and `rag-ttc run` on the arm then runs exactly the stale assets.
Screenshots as in test_ui_browser.py (RAG_TTC_UPDATE_SCREENSHOTS=1 copies them into docs/screenshots/).
"""

from __future__ import annotations

import json
import re
import time

import pytest

from rag_ttc_assets.defs.graph import STAGES, deps
from rag_ttc_assets_tests.conftest import MINI_ARMS
from rag_ttc_assets_tests.e2e.test_ui_browser import ARM as UI_ARM
from rag_ttc_assets_tests.e2e.test_ui_browser import (VIEWPORT, add_run_config, launch_one_run, run_ids,  # noqa: F401
                                                      screenshots, select_arm, ui_session)
from rag_ttc_assets_tests.support.browser import BROWSER, sync_api
from rag_ttc_assets_tests.support.reliability import cli

ARM, OTHER = UI_ARM, "evidence-k-5"
ALL = list(STAGES["all"])
STATUS = """query($path: [String!]!, $p: String!) { assetNodeOrError(assetKey: {path: $path}) {
  ... on AssetNode { staleStatus(partition: $p) staleCauses(partition: $p) { key { path } reason } } } }"""
OBSERVED = """query($path: [String!]!, $p: String!) { assetOrError(assetKey: {path: $path}) {
  ... on Asset { assetObservations(partitions: [$p], limit: 1) { partition } } } }"""

pytestmark = [
    pytest.mark.slow,
    *BROWSER,
]


def with_downstream(name: str) -> list[str]:
    out = [name]
    for n in ALL:  # topological order
        if any(d in out for d in deps()[n]):
            out.append(n)
    return [n for n in ALL if n in out]


STALE_AFTER_EDIT = with_downstream("admitted_contexts")


def statuses(dev, arm: str) -> dict[str, str]:
    return {n: dev.graphql(STATUS, {"path": [n], "p": arm})["assetNodeOrError"]["staleStatus"] for n in ALL}


def wait_for(predicate, what: str, timeout_s: float = 120):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(1.0)
    raise AssertionError(f"not within {timeout_s:.0f} s: {what}")


def test_an_arms_edit_marks_exactly_the_affected_partition_assets_stale(mini_lab, screenshots):  # noqa: F811
    env = {"RAG_TTC_ARMS": str(mini_lab.arms_file), "RAG_TTC_DATASETS": str(mini_lab.datasets_dir),
           "RAG_TTC_HOME": str(mini_lab.home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with ui_session(mini_lab, screenshots, VIEWPORT) as ui:
        dev, page, open_, shot, phase = ui.dev, ui.page, ui.open_, ui.shot, ui.phase
        env["DAGSTER_HOME"] = str(dev.dagster_home)
        # The sensor observes every arm's configuration once the daemon runs it.
        wait_for(lambda: dev.graphql(OBSERVED, {"path": ["arm_config", "chunks"], "p": ARM}
                                     )["assetOrError"]["assetObservations"], "arm_config observed")
        phase("first observation")

        # 1. One arm from the UI: everything upstream of run_record (the whole arm), Materialize all… in-process.
        open_("/asset-groups")
        page.locator(".CodeMirror").first.click()
        # (phoenix_annotations, after failure_flow, is no input of run_record: named beside it.)
        page.keyboard.type('(+key:"run_record" or key:"phoenix_annotations") and not group:"arm_config"')
        page.keyboard.press("Enter")
        page.get_by_role("button", name="Materialize all…").click()
        dialog = page.get_by_role("dialog").filter(has_text="Launch runs to materialize")
        sync_api.expect(dialog.get_by_text(f"Launch runs to materialize {len(ALL)} assets")).to_be_visible()
        select_arm(page, dialog)  # test_ui_browser's ARM is this test's
        add_run_config(page, dialog, "execution: {config: {in_process: {}}}")
        before = run_ids(dev)
        launch_one_run(dialog)
        run = wait_for(lambda: [r for r in dev.graphql("{ runsOrError(limit: 10) { ... on Runs { results { runId } } } }"
                                                       )["runsOrError"]["results"] if r["runId"] not in before],
                       "the launched run", 60)[0]
        assert dev.wait_for_run(run["runId"], timeout_s=300) == "SUCCESS", dev.log_text()[-6000:]
        phase("arm run (UI)")
        # 2. Another arm from the terminal, into the same Dagster home.
        code, out, err = cli("run", OTHER, env=env)
        assert code == 0, err[-3000:]
        assert statuses(dev, ARM) == statuses(dev, OTHER) == {n: "FRESH" for n in ALL}
        phase("other arm run (CLI)")

        # 3. Edit the arm's evidence_k (3 -> 4) in the lab's arms file; Reload definitions from the UI.
        mini_lab.arms_file.write_text(MINI_ARMS.replace(f"  {ARM}: {{}}", f"  {ARM}: {{evidence_k: 4}}"))
        open_("/assets")
        page.get_by_role("button", name="Reload definitions").click()
        stale = wait_for(lambda: (s := statuses(dev, ARM))["admitted_contexts"] == "STALE" and s,
                         "admitted_contexts stale after the reload")
        phase("reload and observation")
        assert [n for n in ALL if stale[n] == "STALE"] == STALE_AFTER_EDIT
        assert {stale[n] for n in ("corpus_binding", "chunks", "representations", "bm25_index", "vector_index",
                                   "retrieval_rows", "retrieval_summary")} == {"FRESH"}
        assert statuses(dev, OTHER) == {n: "FRESH" for n in ALL}  # the other partition untouched
        causes = dev.graphql(STATUS, {"path": ["admitted_contexts"], "p": ARM})["assetNodeOrError"]["staleCauses"]
        assert causes == [{"key": {"path": ["arm_config", "admitted_contexts"]}, "reason": "has a new data version"}]

        # 4. What the UI shows: the partition unsynced, its cause; chunks and the other arm fresh.
        open_(f"/assets/admitted_contexts?view=partitions&partition={ARM}")
        tag = page.get_by_text("Unsynced (1)")
        sync_api.expect(tag).to_be_visible()
        tag.hover()
        popover = page.get_by_text("has a new data version")
        sync_api.expect(popover).to_be_visible()
        sync_api.expect(page.get_by_role("link", name="asset arm_config / admitted_contexts")).to_be_visible()
        shot("09-stale-after-arms-edit")
        for name, arm in (("chunks", ARM), ("vector_index", ARM), ("admitted_contexts", OTHER)):
            open_(f"/assets/{name}?view=partitions&partition={arm}")
            sync_api.expect(page.get_by_text("Materialized", exact=True).first).to_be_visible()
            sync_api.expect(page.get_by_text(re.compile(r"^Unsynced"))).to_have_count(0)
        # The changed field: the observed configuration's latest event, on its Events tab.
        open_("/assets/arm_config/admitted_contexts?view=events")
        sync_api.expect(page.get_by_text("evidence_k: 3 -> 4").first).to_be_visible()
        shot("10-arm-config-observation")
        phase("UI checks")

        # 5. `rag-ttc run` on the arm runs exactly the stale assets, and then nothing is stale.
        code, out, err = cli("run", ARM, "--json", env=env)
        assert code == 0, err[-3000:]
        ran = json.loads(out)["arms"][ARM]
        assert ran["ran"] == STALE_AFTER_EDIT, ran["why"]
        assert ran["why"]["admitted_contexts"] == ("arm_config/admitted_contexts has a new data version "
                                                   "(evidence_k: 3 -> 4)")
        assert statuses(dev, ARM) == statuses(dev, OTHER) == {n: "FRESH" for n in ALL}
        phase("rag-ttc run")
