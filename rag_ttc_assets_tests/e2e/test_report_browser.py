"""The case report in a real browser: `rag-ttc run` and `rag-ttc report` as a user types them, then the HTML file
opened from disk in headless Chromium (Debian's, through Playwright), clicked through and checked against the
comparison JSON written beside it.

The pair lab is the bundled corpus with a cut of its evaluation (the cases of the `judged_unsupported ->
admitted_not_cited` transition of baseline vs evidence-k-8 on the full evaluation, and a few others): each case's
retrieval, answer and judgments depend on its own question only, so they are the bundled run's. Screenshots land
in tmp_path/report-shots; with RAG_TTC_UPDATE_SCREENSHOTS=1 they are copied into docs/screenshots/ for the
README.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import polars as pl
import pytest
import yaml

from rag_ttc_assets_tests.conftest import PYREF, REPO, mini_corpus, mini_questions, write_dataset
from rag_ttc_assets_tests.support.browser import BROWSER, CHROMIUM, CHROMIUM_ARGS, sync_api
from rag_ttc_assets_tests.support.reliability import cli, lab_env

pytestmark = [
    pytest.mark.slow,
    *BROWSER,
]

DISPLACED = "judged_unsupported -> admitted_not_cited"  # a cited request whose citation moved at K=8
CASES = ["pyref-a-046", "pyref-b-010", "pyref-b-066", "pyref-a-116", "pyref-b-020", "pyref-a-001", "pyref-a-002",
         "pyref-a-003", "pyref-a-004", "pyref-b-001"]
PLANT = ('The frobnicate statement rewrites the loop. <script>window.__pwned = 1</script> '
         '<img src="x" onerror="window.__pwned = 2"> </table></td></tr><b>bold</b> <!-- comment')


def _lab(root: Path, dataset: str, corpus: dict, questions: list[dict], arms: dict, defaults: dict) -> dict:
    write_dataset(root / "datasets" / dataset, corpus, questions)
    (root / "arms.yaml").write_text(yaml.safe_dump({"defaults": {"dataset": dataset, **defaults}, "arms": arms,
                                                    "comparisons": [list(arms)]}, sort_keys=False))
    env = lab_env(root)
    code, _, err = cli("run", *arms, env=env, timeout=900)
    assert code == 0, err[-4000:]
    return env


def _report(env: dict, *arms: str) -> Path:
    code, out, err = cli("report", *arms, env=env)
    assert code == 0, err[-4000:]
    return REPO / out.strip().splitlines()[-1].split("report: ", 1)[1].split(" (", 1)[0]  # relative to REPO, or absolute


@pytest.fixture(scope="module")
def pair_lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("report-pair")
    corpus = json.loads((PYREF / "corpus.json").read_text(encoding="utf-8"))
    questions = [q for q in json.loads((PYREF / "evaluation.json").read_text(encoding="utf-8"))["questions"]
                 if q["id"] in CASES]
    arms = yaml.safe_load((REPO / "arms.yaml").read_text(encoding="utf-8"))
    env = _lab(root, "pyref-cut", corpus, questions, {a: arms["arms"][a] for a in ("baseline", "evidence-k-8")},
               {k: v for k, v in arms["defaults"].items() if k != "dataset"})
    return root, env


@pytest.fixture
def browser():
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def _open(browser, path: Path):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready='1']", state="attached")
    return page, errors


def _shots(tmp_path: Path) -> Path:
    folder = tmp_path / "report-shots"
    folder.mkdir(exist_ok=True)
    return folder


def _publish(paths: list[Path]) -> None:
    if os.environ.get("RAG_TTC_UPDATE_SCREENSHOTS") == "1":
        docs = REPO / "docs" / "screenshots"
        docs.mkdir(parents=True, exist_ok=True)
        for p in paths:
            shutil.copy(p, docs / p.name)


def four(x) -> str:
    return "–" if x is None else f"{x:.4f}"


def displaced_chunks(store: Path, case: str, requests: list[str]) -> set[str]:
    """Chunks holding a request's evidence that its judge excerpt cited in baseline and no longer cites at K=8."""
    def table(arm, name):
        return pl.read_parquet(store / "arms" / arm / f"{name}.parquet").filter(pl.col("query_id") == case)

    supporting = {r["request_id"]: set(r["supporting_chunk_ids"]) for r in
                  table("baseline", "request_coverage").iter_rows(named=True)}
    cites = {arm: {r["request_id"]: set(r["cited_chunk_ids"] or []) for r in
                   table(arm, "request_judgments").iter_rows(named=True)} for arm in ("baseline", "evidence-k-8")}
    return {c for r in requests if r.startswith(case + ".")
            for c in (cites["baseline"][r] & supporting[r]) - cites["evidence-k-8"][r]}


def test_pair_report_matrix_cell_lists_the_json_cases_and_highlights_the_displaced_citation(pair_lab, browser,
                                                                                            tmp_path):
    root, env = pair_lab
    path = _report(env, "baseline", "evidence-k-8")
    comparison = json.loads(path.with_suffix(".json").read_text())
    cells = {c["key"]: c for c in comparison["transitions"]["cells"]}
    assert DISPLACED in cells, sorted(cells)
    page, errors = _open(browser, path)
    shots = _shots(tmp_path)

    # Every number of the matrix is the JSON's; empty cells (ok -> admitted_not_cited here) are empty in both.
    for td in page.locator("#matrix td.cell").all():
        key = td.get_attribute("data-key")
        assert td.inner_text() == (str(cells[key]["count"]) if key in cells else "·"), key
    assert page.locator(f"td[data-col-total='admitted_not_cited']").inner_text() == str(
        sum(c["count"] for c in cells.values() if c["b"] == "admitted_not_cited"))
    # A sample of the metrics and buckets.
    for metric in ("completeness", "valid", "input_tokens"):
        m = comparison["metrics"][metric]
        row = page.locator(f"tr[data-metric='{metric}']")
        for field in ("mean_a", "mean_b", "mean_delta", "p_value", "p_adjusted"):
            assert row.locator(f"td[data-field='{field}']").inner_text() == four(m[field]), (metric, field)
        assert row.locator("td[data-field='paired']").inner_text() == f"{m['n']} of {m['of']}"
    for b in comparison["buckets"]:
        row = page.locator(f"tr[data-bucket='{b['label']}']")
        assert row.locator("td[data-field='count']").inner_text() == str(b["count"])
        assert row.locator("td[data-field='sum']").inner_text() == four(b["sum"])

    # Click the cell: the case list is exactly the cases the JSON lists for that transition.
    page.locator(f"td[data-key='{DISPLACED}']").click()
    cell = cells[DISPLACED]
    sync_api.expect(page.locator("#case-count")).to_have_attribute("data-count", str(len(cell["cases"])))
    shown = [tr.get_attribute("data-case") for tr in page.locator("tr.case").all()]
    assert sorted(shown) == cell["cases"]
    page.locator("#matrix").screenshot(path=shots / "report-matrix.png")

    # Expand one: the chunk whose citation the request lost is highlighted, in both arms.
    case = cell["cases"][0]
    page.locator(f"tr.case[data-case='{case}']").click()
    detail = page.locator(f"td.detail[data-detail='{case}']")
    sync_api.expect(detail).to_be_visible()
    displaced = displaced_chunks(root / "home" / "store", case, cell["requests"])
    assert displaced, f"{case}: no displaced citation in the store"
    for arm in ("baseline", "evidence-k-8"):
        for chunk in displaced:
            row = detail.locator(f"div.side[data-arm='{arm}'] tr[data-chunk='{chunk}']")
            assert "differs" in (row.get_attribute("class") or ""), (arm, chunk)
    for r in cell["requests"]:
        if r.startswith(case + "."):
            assert detail.locator(f"div.side[data-arm='baseline'] tr[data-request='{r}'] td.branch").inner_text() \
                == "judged_unsupported"
            assert detail.locator(f"div.side[data-arm='evidence-k-8'] tr[data-request='{r}'] td.branch").inner_text() \
                == "admitted_not_cited"
    detail.evaluate("e => e.scrollIntoView()")  # the case's top: its requests and both arms' chunks
    page.screenshot(path=shots / "report-case.png")

    # The bucket filter lists as many cases as the JSON's bucket counts.
    page.locator("#f-clear").click()
    tie = next(b for b in comparison["buckets"] if b["side"] == "tie")
    page.locator("#f-bucket").select_option(tie["label"])
    sync_api.expect(page.locator("#case-count")).to_have_attribute("data-count", str(tie["count"]))
    assert errors == []
    _publish([shots / "report-matrix.png", shots / "report-case.png"])


def test_one_arm_report_shows_the_failure_flow_and_cases_by_branch(pair_lab, browser):
    root, env = pair_lab
    page, errors = _open(browser, _report(env, "baseline"))
    flow = json.loads((root / "home" / "store" / "arms" / "baseline" / "failure_flow.json").read_text())
    for branch in ("not_addressed", "judged_unsupported", "ok"):
        assert page.locator(f"tr[data-branch='{branch}'] td[data-field='count']").inner_text() == str(flow[branch])
    assert f"{flow['hit_rate']['hits']} of {flow['hit_rate']['cases']} questions" in page.locator("#hit-rate").inner_text()
    page.locator("tr[data-branch='judged_unsupported'] button").click()
    rows = pl.read_parquet(root / "home" / "store" / "arms" / "baseline" / "failure_flow.parquet")
    expected = sorted(set(rows.filter(pl.col("branch") == "judged_unsupported")["query_id"].to_list()))
    sync_api.expect(page.locator("#case-count")).to_have_attribute("data-count", str(len(expected)))
    assert sorted(tr.get_attribute("data-case") for tr in page.locator("tr.case").all()) == expected
    assert page.locator("img.plot").count() == 1
    assert errors == []


def test_planted_markup_in_a_document_and_an_answer_shows_as_text_and_runs_nothing(tmp_path, browser):
    corpus = mini_corpus()
    corpus["documents"].append({"id": "frobnicate", "title": "The frobnicate </title><script>x()</script>",
                                "text": PLANT + "\n\n" + PLANT.replace("rewrites", "repeats"), "metadata": {}})
    questions = mini_questions(corpus)[:2] + [{
        "id": "mini-50", "text": "What does the frobnicate statement do? <script>window.__pwned = 3</script>",
        "answerable": True, "targets": [{"doc_id": "frobnicate", "relevance": 1}],
        "requests": [{"id": "mini-50.r1", "text": "What does the frobnicate statement do? </table>",
                      "evidence": [{"doc_id": "frobnicate", "quote": "The frobnicate statement rewrites the loop."}]}]}]
    env = _lab(tmp_path, "planted", corpus, questions, {"baseline": {}, "wider": {"evidence_k": 5}},
               {"chunk_runes": 600, "overlap_runes": 60, "retrieve_k": 10, "evidence_k": 3, "context_runes": 4000})
    answer = pl.read_parquet(tmp_path / "home" / "store" / "arms" / "baseline" / "contract_results.parquet").filter(
        pl.col("query_id") == "mini-50")["answer"][0]
    assert "<script>" in answer, answer  # the planted markup reached the answer, so the page must show it as text
    for arms in (("baseline", "wider"), ("baseline",)):
        path = _report(env, *arms)
        assert "<script>window" not in path.read_text()  # only escaped in the file
        page, errors = _open(browser, path)
        page.locator("#f-text").fill("mini-50")
        page.locator("tr.case[data-case='mini-50']").click()
        detail = page.locator("td.detail[data-detail='mini-50']")
        detail.locator("button.link").filter(has_text="frobnicate#chunk-0").first.click()
        page.locator("details.sent summary").first.click()
        assert page.evaluate("window.__pwned") is None
        assert page.evaluate("document.scripts.length") == 2  # the data blob and the page's own script
        assert page.evaluate("document.querySelectorAll('[onerror], b, img:not(.plot)').length") == 0
        text = detail.inner_text()
        assert "<script>window.__pwned = 1</script>" in text and "</table></td></tr><b>bold</b>" in text
        assert page.locator("table.cases > tbody > tr.detail-row").count() == 1  # the detail stayed in its row
        assert errors == []


def test_arm_comparisons_writes_and_links_the_pair_report(pair_lab, browser):
    root, env = pair_lab
    code, out, err = cli("compare", "--all", "--json", env=env)
    assert code == 0, err[-4000:]
    linked = Path(json.loads(out)["report/baseline--evidence-k-8"])
    assert linked == root / "home" / "store" / "comparisons" / "baseline--evidence-k-8.html"
    comparison = json.loads(linked.with_suffix(".json").read_text())
    assert comparison["p_adjust"]["family"] == "every pair and metric of arm_comparisons"
    page, errors = _open(browser, linked)
    for cell in comparison["transitions"]["cells"]:
        assert page.locator(f"td[data-key='{cell['key']}']").inner_text() == str(cell["count"])
    assert page.locator("tr[data-metric='valid'] td[data-field='p_adjusted']").inner_text() == four(
        comparison["metrics"]["valid"]["p_adjusted"])
    # Sorted by delta (worst first), then the other way by its header; the catastrophic filter is the JSON's list.
    deltas = {c: v["b"] - v["a"] for c, v in comparison["per_case"].items() if None not in (v["a"], v["b"])}
    assert deltas[page.locator("tr.case").first.get_attribute("data-case")] == min(deltas.values())
    page.locator("th[data-sort='delta']").click()
    assert deltas[page.locator("tr.case").first.get_attribute("data-case")] == max(deltas.values())
    page.locator("#f-catastrophic").check()
    sync_api.expect(page.locator("#case-count")).to_have_attribute("data-count", str(len(comparison["catastrophic"])))
    assert sorted(tr.get_attribute("data-case") for tr in page.locator("tr.case").all()) == sorted(
        c["case_id"] for c in comparison["catastrophic"])
    assert errors == []
