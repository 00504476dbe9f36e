"""`rag-ttc annotate`: the labelling page on two materialized arms of the mini lab (one run for the whole module),
one document and question carrying planted markup. The server's endpoints in process (fast), the command as a user
starts it, and one browser session (Debian's Chromium through Playwright): ten requests labelled from the keyboard,
a gold quote highlighted, a request split, reload and resume, the labels file checked record by record, a second
annotator, `judge-agreement` on both, the planted `<script>` run nowhere, a few pairwise labels from the keyboard
(names hidden until labelled, undo, resume), the `/labels-check` page after a passage is removed. Screenshots land
in tmp; with RAG_TTC_UPDATE_SCREENSHOTS=1 the page's is copied into docs/screenshots/.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rag_ttc_assets_tests.conftest import MINI_DEFAULTS, REPO, mini_corpus, mini_questions, write_dataset
from rag_ttc_assets_tests.support.browser import BROWSER, CHROMIUM, CHROMIUM_ARGS, sync_api
from rag_ttc_assets_tests.support.reliability import cli, lab_env

PLANT = ('The frobnicate statement rewrites the loop. <script>window.__pwned = 1</script> '
         '<img src="x" onerror="window.__pwned = 2"> <b>bold</b>')


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("annotate")
    corpus = mini_corpus()
    corpus["documents"].append({"id": "frobnicate", "title": "The frobnicate",
                                "text": PLANT + "\n\n" + PLANT.replace("rewrites", "repeats"), "metadata": {}})
    questions = mini_questions(corpus) + [{
        "id": "mini-50", "text": "What does the frobnicate statement do? <script>window.__pwned = 3</script>",
        "answerable": True, "targets": [{"doc_id": "frobnicate", "relevance": 1}],
        "requests": [{"id": "mini-50.r1", "text": "What does the frobnicate statement do?",
                      "evidence": [{"doc_id": "frobnicate", "quote": "The frobnicate statement rewrites the loop."}]}]}]
    write_dataset(root / "datasets" / "mini", corpus, questions)
    (root / "arms.yaml").write_text(MINI_DEFAULTS + "arms:\n  baseline: {}\n  tight: {context_runes: 700}\n",
                                    encoding="utf-8")
    env = lab_env(root)
    code, _, err = cli("run", "baseline", "tight", env=env, timeout=900)
    assert code == 0, err[-4000:]
    return root, env


def _annotator(root: Path, labels: Path, name: str, sample: Path | None = None, seed: int = 0):
    from rag_ttc_assets.cli.annotate import _labels_check
    from rag_ttc_assets.cli.annotate_session import Annotator, LabelFiles
    from rag_ttc_assets.labelling.annotate_stage import Source
    from rag_ttc_assets.lab import Lab
    from rag_ttc_assets.stages.resolve import ArmInputs

    lab = Lab.from_env(arms_file=root / "arms.yaml", datasets_dir=root / "datasets", home=root / "home")
    source = Source(lab.store, lab.runs, {a: ArmInputs(lab, a).inspected() for a in ("baseline", "tight")}, sample)
    return Annotator(source, LabelFiles(labels), name, _labels_check(lab, ["baseline", "tight"]), seed=seed)


@pytest.fixture
def served(lab, tmp_path):
    """An in-process server of the page (ann1) writing tmp_path/labels.jsonl; yields (annotator, call)."""
    from rag_ttc_assets.cli.annotate import make_server
    import threading

    ann = _annotator(lab[0], tmp_path / "labels.jsonl", "ann1")
    server = make_server(ann, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def call(method, path, body=None, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=30)
        data = json.dumps(body).encode() if body is not None else None
        c.request(method, path, data, {"Content-Type": "application/json", **(headers or {})})
        r = c.getresponse()
        text = r.read().decode()
        return r.status, (json.loads(text) if r.getheader("Content-Type", "").startswith("application/json")
                          else text), r
    try:
        yield ann, call
    finally:
        server.shutdown()
        server.server_close()


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_endpoints_write_the_log_and_the_labels_two_tabs_keep_both_and_bad_changes_are_refused(served, tmp_path):
    ann, call = served
    i = next(k for k, it in enumerate(ann.source.items) if (it.arm, it.question) == ("baseline", "mini-50"))
    # Two tabs label the same request: the later write wins in the labels file, both stay in the log.
    assert call("POST", "/api/label", {"item": i, "request": "mini-50.r1", "case": "not_answered"})[0] == 200
    status, body, _ = call("POST", "/api/label", {"item": i, "request": "mini-50.r1", "case": "answered_supported",
                                                  "quote": "rewrites the loop", "quote_chunk_id": "frobnicate#chunk-0"})
    assert status == 200 and body["seq"] == 2
    log = _records(tmp_path / "labels.log.jsonl")
    assert [c["case"] for c in log] == ["not_answered", "answered_supported"]
    (rec,) = _records(tmp_path / "labels.jsonl")
    v = ann.source.view(i)
    assert rec["kind"] == "request" and rec["arm"] == "baseline" and rec["row"] == "mini-50"
    assert (rec["addressed"], rec["verdict"], rec["case"]) == (True, "consistent", "answered_supported")
    assert rec["quote_chunk_id"] == "frobnicate#chunk-0" and rec["quote_doc_id"] == "frobnicate"
    import hashlib
    assert rec["quote_sha256"] == "sha256:" + hashlib.sha256(b"rewrites the loop").hexdigest()
    assert rec["chunk_ids"] == v["admitted_chunk_ids"] and rec["run_id"] == ann.source.run_ids["baseline"]
    binding = json.loads((ann.source.store.root / "arms" / "baseline" / "binding.json").read_text())
    assert rec["corpus_digest"] == binding["corpus_digest"] and rec["log_seq"] == 2
    # A highlight outside any chunk (across two, or in the answer): refused with a message, nothing written.
    for bad in ({"quote": "rewrites the loop", "quote_chunk_id": None},
                {"quote": "no such words in the chunk", "quote_chunk_id": "frobnicate#chunk-0"}):
        status, body, _ = call("POST", "/api/label", {"item": i, "request": "mini-50.r1", **bad})
        assert status == 400 and "select text within a single chunk" in body["error"], body
    for body, want in (({"item": 999, "request": "x"}, "item: 999 is not a row"),
                       ({"item": i, "request": "mini-50.r9", "case": "not_answered"}, "no request 'mini-50.r9'"),
                       ({"item": i, "request": "mini-50.r1", "case": "maybe"}, "pick one of the four cases")):
        status, out, _ = call("POST", "/api/label", body)
        assert status == 400 and want in out["error"], out
    assert len(_records(tmp_path / "labels.log.jsonl")) == 2
    # Not JSON (a cross-site form), another Host (DNS rebinding): refused.
    assert call("POST", "/api/label", {"item": i}, {"Content-Type": "text/plain"})[0] == 415
    assert call("GET", f"/item/{i}", headers={"Host": "evil.example:80"})[0] == 403
    # The page: planted markup escaped, the judge's verdict shown only once labelled, CSP runs only its script.
    status, page, r = call("GET", f"/item/{i}")
    assert status == 200 and "<script>window" not in page and "&lt;script&gt;window.__pwned = 3" in page
    assert "script-src 'nonce-" in r.getheader("Content-Security-Policy")
    assert "show the judge's verdict" in page and 'class="judge hidden">local/lexical' in page
    status, other, _ = call("GET", f"/item/{i + 1}")
    assert "hidden until you label" in other and 'class="judge hidden"' not in other
    # Undo takes back the last change (the log keeps the undo); the labels file follows.
    assert call("POST", "/api/undo", {})[0] == 200
    assert [r["case"] for r in _records(tmp_path / "labels.jsonl")] == ["not_answered"]
    assert [c["op"] for c in _records(tmp_path / "labels.log.jsonl")] == ["label", "label", "undo"]
    # A rerun replaced the row: the label is kept and flagged as on an older run.
    ann.source.run_ids["baseline"] = "a-newer-run"
    page = call("GET", f"/item/{i}")[1]
    assert "labelled on an older run" in page and "the label is kept" in page
    assert [r["case"] for r in _records(tmp_path / "labels.jsonl")] == ["not_answered"]
    # A change cut by a crash mid-line: skipped when read, and the next change still lands whole on its own line.
    with open(tmp_path / "labels.log.jsonl", "a", encoding="utf-8") as f:
        f.write('{"seq": 3, "op": "lab')
    assert call("POST", "/api/label", {"item": i, "request": "mini-50.r1", "note": "after a crash"})[0] == 200
    lines = (tmp_path / "labels.log.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines[-2] == '{"seq": 3, "op": "lab' and json.loads(lines[-1])["note"] == "after a crash"
    assert _records(tmp_path / "labels.jsonl")[0]["note"] == "after a crash"


def test_request_edits_split_merge_reword_add(served, tmp_path):
    ann, call = served
    q = ann.source.items[0].question
    reqs = [r["id"] for r in ann.source.view(0)["requests"]]
    assert len(reqs) >= 2, reqs
    assert call("POST", "/api/edit", {"item": 0, "edit": "split", "from": [reqs[0]], "texts": ["part a", "part b"]})[0] \
        == 200
    assert call("POST", "/api/edit", {"item": 0, "edit": "merge", "from": [f"{reqs[0]}.s1", f"{reqs[0]}.s2"],
                                      "texts": ["a and b"]})[0] == 200
    assert call("POST", "/api/edit", {"item": 0, "edit": "reword", "from": [reqs[1]], "texts": ["said again"]})[0] \
        == 200
    assert call("POST", "/api/edit", {"item": 0, "edit": "add", "from": [], "texts": ["one more"]})[0] == 200
    status, out, _ = call("POST", "/api/edit", {"item": 0, "edit": "split", "from": [reqs[0]], "texts": ["x", "y"]})
    assert status == 400 and f"has no request {reqs[0]!r} (now)" in out["error"]  # split away already
    from rag_ttc_assets.labelling.annotation import replay
    now = ann.requests(0, replay(ann.files.read()))
    assert [(r.id, r.origin) for r in now[:2]] == [(f"{q}.m1", "merged"), (f"{reqs[1]}.r1", "reworded")]
    assert (now[-1].id, now[-1].text) == (f"{q}.a1", "one more")
    assert call("POST", "/api/label", {"item": 0, "request": f"{q}.m1", "case": "answered_unsupported"})[0] == 200
    recs = _records(tmp_path / "labels.jsonl")
    assert [r["edit"] for r in recs if r["kind"] == "request_edit"] == ["split", "merge", "reword", "add"]
    (label,) = [r for r in recs if r["kind"] == "request"]
    assert (label["origin"], label["request_text"], label["from"]) == ("merged", "a and b",
                                                                       [f"{reqs[0]}.s1", f"{reqs[0]}.s2"])
    assert (label["addressed"], label["verdict"]) == (True, "not_verifiable")


def test_pairwise_view_hides_the_arms_writes_pair_labels_as_displayed_and_judge_agreement_reads_them(served, lab,
                                                                                                    tmp_path):
    ann, call = served
    root, env = lab
    # One pair per question both arms answered; A/B drawn per question from the seed: both orders occur, and the
    # order is the same whichever way round the arms are given.
    from rag_ttc_assets.labelling.annotation import pair_order
    assert [p.question for p in ann.pairs] == [it.question for it in ann.source.items if it.arm == "baseline"]
    assert {p.a for p in ann.pairs} == {"baseline", "tight"}
    assert all(pair_order(0, p.question, ("tight", "baseline")) == (p.a, p.b) for p in ann.pairs)
    for p in ann.pairs:
        assert [ann.source.items[r].arm for r in p.rows] == [p.a, p.b]
    # Before labelling: both answers side by side, the arms' names nowhere on the page.
    status, page, _ = call("GET", "/pair/0")
    answers = [(ann.source.view(r).get("contract") or {}).get("answer") for r in ann.pairs[0].rows]
    assert status == 200 and "hidden until you label" in page and 'class="arm"' not in page
    assert "baseline" not in page and "tight" not in page
    import html as _html
    assert page.index(_html.escape(answers[0])) < page.index(_html.escape(answers[1]))  # A left, B right
    assert call("GET", "/pairwise")[2].getheader("Location") == "/pair/0"
    # Bad changes refused, nothing written.
    for body, want in (({"pair": 0}, "pick which answer is more complete first"),
                       ({"pair": 0, "completeness": 3}, "completeness: 3 is not an integer from -2 to 2"),
                       ({"pair": 0, "completeness": True}, "is not an integer"),
                       ({"pair": len(ann.pairs)}, f"pair: {len(ann.pairs)} is not a pair of this page")):
        status, out, _ = call("POST", "/api/pair", body)
        assert status == 400 and want in out["error"], out
    assert not (tmp_path / "labels.log.jsonl").exists()
    # ann1 labels every pair (two tabs on pair 0: the later wins), a note, an undo; resume and progress follow.
    values = [(-2, -1, 0, 1, 2)[k % 5] for k in range(len(ann.pairs))]
    assert call("POST", "/api/pair", {"pair": 0, "completeness": 1})[0] == 200
    for k, v in enumerate(values):
        assert call("POST", "/api/pair", {"pair": k, "completeness": v})[0] == 200
    assert call("POST", "/api/pair", {"pair": 1, "note": "B lists more steps"})[0] == 200
    assert call("POST", "/api/pair", {"pair": 2, "completeness": -values[2] or 2})[0] == 200
    assert call("POST", "/api/undo", {})[0] == 200
    status, page, _ = call("GET", "/pair/0")
    assert f"{len(ann.pairs)} of {len(ann.pairs)} pairs labelled" in page
    assert f'arm <b class="arm">{ann.pairs[0].a}</b>' in page and "names are shown now" in page
    recs = _records(tmp_path / "labels.jsonl")  # in order of their last change: pair 1's note came last
    assert len(recs) == len(ann.pairs) and len(_records(tmp_path / "labels.log.jsonl")) == len(ann.pairs) + 4
    assert recs[-1]["question"] == ann.pairs[1].question
    recs = sorted(recs, key=lambda r: [p.question for p in ann.pairs].index(r["question"]))
    for k, (rec, p) in enumerate(zip(recs, ann.pairs)):
        assert (rec["kind"], rec["question"], rec["annotator"]) == ("pair", p.question, "ann1")
        assert rec["labels"] == {"completeness": values[k]} and rec["order_seed"] == 0
        assert rec["note"] == ("B lists more steps" if k == 1 else "")
        for side, arm, row in zip(("a", "b"), (p.a, p.b), p.rows):
            binding = json.loads((ann.source.store.root / "arms" / arm / "binding.json").read_text())
            answer = (ann.source.view(row).get("contract") or {}).get("answer")
            import hashlib
            assert rec[side] == {"arm": arm, "row": p.question, "run_id": ann.source.run_ids[arm],
                                 "answer_sha256": "sha256:" + hashlib.sha256(answer.encode()).hexdigest(),
                                 "corpus_digest": binding["corpus_digest"]}
            assert rec[side]["run_id"]
    # ann2 sees another A/B order (seed 1) and judges every pair as ann1 did: its labels are ann1's, negated where
    # its sides are swapped; judge-agreement reads each with its own a and b, so the ceiling is a perfect 1.
    ann2 = _annotator(root, tmp_path / "labels.jsonl", "ann2", seed=1)
    flipped = 0
    for k, p in enumerate(ann2.pairs):
        same = p.a == ann.pairs[k].a
        flipped += not same
        ann2.pair({"pair": k, "completeness": values[k] if same else -values[k]})
    assert 0 < flipped < len(ann.pairs)
    assert [r["order_seed"] for r in _records(tmp_path / "labels.jsonl")][-1] == 1
    code, out, err = cli("judge-agreement", str(tmp_path / "labels.jsonl"), "--json", env=env)
    assert code == 0, err[-3000:]
    rows = {r["rater"]: r for r in json.loads(out)["pair_labels"]["completeness"]["rows"]}
    judge = next(r for name, r in rows.items() if name.startswith("request judge") and "(graded)" not in name)
    assert judge["n"] + judge["not_measured"] == 2 * len(ann.pairs) and judge["n"] > 0
    assert rows["ann1 vs ann2"]["n"] == len(ann.pairs) and rows["ann1 vs ann2"]["pearson"]["r"] == pytest.approx(1.0)
    # The command: --pairwise takes two arms.
    code, _out, err = cli("annotate", "baseline", "--pairwise", "--annotator", "a", "--port", "0", env=env,
                          timeout=120)
    assert code == 1 and "--pairwise: two arms" in err and "Traceback" not in err, err


def test_sample_file_orders_the_rows_and_carries_probability_and_stratum(lab, tmp_path):
    root, env = lab
    sample = tmp_path / "sample.jsonl"
    sample.write_text(json.dumps({"arm": "tight", "question": "mini-03", "run_id": None, "stratum": "ok/agree",
                                  "probability": 0.25}) + "\n" +
                      json.dumps({"arm": "baseline", "question": "mini-01", "run_id": None, "stratum": "miss",
                                  "probability": 0.5}) + "\n", encoding="utf-8")
    ann = _annotator(root, tmp_path / "labels.jsonl", "ann1", sample)
    assert [(it.arm, it.question) for it in ann.source.items] == [("tight", "mini-03"), ("baseline", "mini-01")]
    rid = ann.source.view(0)["requests"][0]["id"]
    ann.label({"item": 0, "request": rid, "case": "not_answered"})
    (rec,) = _records(tmp_path / "labels.jsonl")
    assert (rec["arm"], rec["probability"], rec["stratum"]) == ("tight", 0.25, "ok/agree")
    # Bad sample files and arms: the command names the file, line and field, no traceback.
    for text, want in (('{"arm": "tight", "question": "nope"}\n', "line 1: question: arm 'tight' has no answer row"),
                       ('{"arm": "tight", "question": "mini-03", "probability": 2}\n', "line 1: probability"),
                       ("{oops\n", "line 1: malformed JSON")):
        sample.write_text(text, encoding="utf-8")
        code, out, err = cli("annotate", "baseline", "tight", "--annotator", "a", "--sample", str(sample),
                             "--port", "0", env=env, timeout=120)
        assert code == 1 and str(sample) in err and want in err and "Traceback" not in err, err


def test_budget_draws_the_sample_the_page_serves_and_its_labels_carry_the_probabilities(lab, tmp_path):
    """`annotate --budget N` is `sample-labels` then `--sample`: N rows of each arm, the sample written beside the
    labels, the page serving exactly those rows with their strata and probabilities."""
    root, env = lab
    labels = tmp_path / "lab.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "rag_ttc_assets.cli", "annotate", "baseline", "tight",
                             "--annotator", "ann1", "--labels", str(labels), "--budget", "2", "--sample-seed", "3",
                             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**{k: v for k, v in os.environ.items() if not k.startswith("RAG_TTC_")}, **env},
                            cwd=REPO)
    try:
        lines = [proc.stdout.readline() for _ in range(3)]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    sample = tmp_path / "lab.sample.jsonl"
    picked = _records(sample)
    assert [p["arm"] for p in picked] == ["baseline", "baseline", "tight", "tight"], picked
    assert all(0 < p["probability"] <= 1 and p["stratum"] for p in picked)
    assert lines[0].startswith("2 of ") and f"sample: {sample}" in lines[0], lines  # --labels given whole
    assert lines[2].startswith("labelling page at http://127.0.0.1:") and "4 rows of baseline, tight" in lines[2], lines
    ann = _annotator(root, tmp_path / "labels.jsonl", "ann1", sample)
    assert [(it.arm, it.question, it.probability) for it in ann.source.items] == \
        [(p["arm"], p["question"], p["probability"]) for p in picked]
    code, out, err = cli("annotate", "baseline", "--annotator", "a", "--budget", "2", "--sample", str(sample),
                         env=env, timeout=120)
    assert code == 1 and "--budget and --sample: give one" in err and "Traceback" not in err, err


def _start(env: dict, labels: Path, annotator: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "rag_ttc_assets.cli", "annotate", "baseline", "tight",
                             "--annotator", annotator, "--labels", str(labels), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**{k: v for k, v in os.environ.items() if not k.startswith("RAG_TTC_")}, **env},
                            cwd=REPO)
    line = proc.stdout.readline()
    assert line.startswith("labelling page at http://127.0.0.1:"), line + proc.stderr.read()
    return proc, line.split(" ")[3].rstrip("/")


@pytest.mark.slow
@pytest.mark.parametrize("_", [pytest.param(0, marks=BROWSER)])
def test_label_in_the_browser_resume_two_annotators_and_judge_agreement(lab, tmp_path, _):
    root, env = lab
    labels = tmp_path / "labels.jsonl"
    proc, url = _start(env, labels, "ann1")
    shots = tmp_path / "shots"
    shots.mkdir()
    keys = ["1", "3", "2", "1", "4", "3", "1", "1", "3", "2"]
    try:
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url + "/")
            assert page.url.endswith("/item/0")
            labelled = []  # (item, request, key) in order
            while len(labelled) < 10:
                todo = page.locator(".req[data-labelled='0']")
                if todo.count() == 0:
                    with page.expect_navigation():
                        page.keyboard.press("j")
                    continue
                rid = todo.first.get_attribute("data-request")
                assert page.locator(".req.focus").get_attribute("data-request") == rid  # focus on the first unlabelled
                assert "hidden until you label" in todo.first.inner_text()  # no verdict before the person's
                with page.expect_navigation():
                    page.keyboard.press(keys[len(labelled)])
                labelled.append((int(page.locator("body").get_attribute("data-item")), rid, keys[len(labelled)]))
            assert "10 of" in page.locator("#progress").inner_text()
            # The judge's verdict: present now, revealed by the toggle only.
            done = page.locator(".req[data-labelled='1']").first
            assert not done.locator(".judge").is_visible()
            done.locator("button.reveal").click()
            assert done.locator(".judge").is_visible() and "verdict" in done.locator(".judge").inner_text()
            # Highlight a quote in a cited chunk of the first labelled row and make it the first request's gold quote.
            item0, rid0, _k = labelled[0]
            page.goto(f"{url}/item/{item0}")
            box = page.locator("#admitted .chunk-text").first
            chunk_id = box.get_attribute("data-chunk")
            quote = page.evaluate("""(el) => { const w = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
                const n = w.nextNode(); const r = document.createRange(); r.setStart(n, 4); r.setEnd(n, 34);
                const s = window.getSelection(); s.removeAllRanges(); s.addRange(r); return s.toString(); }""",
                                  box.element_handle())
            with page.expect_navigation():
                page.locator(f".req[data-request='{rid0}'] button.use-quote").click()
            assert page.locator(f".req[data-request='{rid0}'] .quote").inner_text() == quote
            # A highlight outside any chunk (in the answer): refused with a message on the page.
            page.evaluate("""() => { const el = document.getElementById('answer'); const r = document.createRange();
                r.selectNodeContents(el); const s = window.getSelection(); s.removeAllRanges(); s.addRange(r); }""")
            page.locator(f".req[data-request='{rid0}'] button.use-quote").click()
            # Waited on through Playwright's selector engine: a polled JavaScript string (wait_for_function) is an eval,
            # which the page's Content Security Policy refuses, and it failed when the message was not there at once.
            sync_api.expect(page.locator("#msg")).to_contain_text("outside any chunk")
            # Split an unlabelled request of the resume row into two (the page asks for each part).
            page.goto(url + "/")
            resume_item = int(page.locator("body").get_attribute("data-item"))
            # resumes where it stopped: the first row with a request left, every row before it done
            assert resume_item in (max(i for i, _r, _k in labelled), max(i for i, _r, _k in labelled) + 1)
            assert f"{resume_item} of {page.locator('body').get_attribute('data-items')} rows done" in \
                page.locator("#progress").inner_text()
            split = page.locator(".req[data-labelled='0']").first.get_attribute("data-request")
            answers = iter(["first part of it", "second part of it"])
            page.on("dialog", lambda d: d.accept(next(answers)))
            with page.expect_navigation():
                page.locator(f".req[data-request='{split}'] button.split").click()
            assert page.locator(f".req[data-request='{split}.s1'] .rtext").inner_text() == "first part of it"
            page.screenshot(path=str(shots / "annotate.png"), full_page=False)
            # Reload: everything is still there.
            page.reload()
            assert page.locator(f".req[data-request='{split}.s2']").count() == 1
            assert "10 of" in page.locator("#progress").inner_text()
            # The planted markup shows as text and runs nowhere.
            planted = next(i for i in range(int(page.locator("body").get_attribute("data-items")))
                           if "mini-50" in page.goto(f"{url}/item/{i}").text())
            assert planted is not None
            assert page.evaluate("window.__pwned") is None
            assert "<script>window.__pwned = 3</script>" in page.locator("#question").inner_text()
            assert "<script>window.__pwned = 1</script>" in page.locator("#answer").inner_text()
            assert page.evaluate("document.querySelectorAll('#answer *, #question *, .chunk-text :not(mark), [onerror]').length") == 0
            # The pairwise view on the same server: names hidden, 5 then 1 from the keyboard, j, u undoes the last.
            page.goto(url + "/pairwise")
            assert page.url.endswith("/pair/0") and page.locator(".arm").count() == 0
            assert "hidden until you label" in page.inner_text("body")
            with page.expect_navigation():
                page.keyboard.press("5")
            assert page.locator(".arm").count() == 2 and "1 of" in page.locator("#progress").inner_text()
            shown = [page.locator("#side-a .arm").inner_text(), page.locator("#side-b .arm").inner_text()]
            with page.expect_navigation():
                page.keyboard.press("j")
            with page.expect_navigation():
                page.keyboard.press("1")
            assert "2 of" in page.locator("#progress").inner_text()
            with page.expect_navigation():
                page.keyboard.press("u")
            assert "1 of" in page.locator("#progress").inner_text() and page.locator(".arm").count() == 0
            page.goto(url + "/pairwise")
            assert page.url.endswith("/pair/1")  # resumes at the first pair not labelled
            assert errors == []
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    # The labels file, record by record: the split, then one label per request labelled, the quote on the first.
    recs = _records(labels)
    edits = [r for r in recs if r["kind"] == "request_edit"]
    assert [(e["edit"], e["from"], [x["text"] for x in e["into"]]) for e in edits] == [
        ("split", [split], ["first part of it", "second part of it"])]
    got = [r for r in recs if r["kind"] == "request"]
    from rag_ttc_assets.labelling.annotation import CASES
    by_key = {d["key"]: c for c, d in CASES.items()}
    assert len(got) == 10
    seen = {(r["request"]): r for r in got}
    for item, rid, key in labelled:
        r = seen[rid]
        assert (r["case"], r["addressed"], r["verdict"]) == (by_key[key], CASES[by_key[key]]["addressed"],
                                                             CASES[by_key[key]]["verdict"])
        assert r["annotator"] == "ann1" and r["origin"] == "dataset" and r["run_id"]
        assert r["quote"] == (quote if rid == rid0 else None)
    assert seen[rid0]["quote_chunk_id"] == chunk_id
    (pair,) = [r for r in recs if r["kind"] == "pair"]  # the second pair's label undone
    assert (pair["annotator"], pair["labels"], [pair["a"]["arm"], pair["b"]["arm"]]) == ("ann1", {"completeness": 2},
                                                                                         shown)
    # A second annotator labels the same requests (through the command's server, over HTTP), three differently.
    proc, url2 = _start(env, labels, "ann2")
    try:
        for n, (item, rid, key) in enumerate(labelled):
            case = by_key[key] if n >= 3 else ("not_answered" if CASES[by_key[key]]["addressed"]
                                               else "answered_supported")
            c = http.client.HTTPConnection("127.0.0.1", int(url2.rsplit(":", 1)[1]), timeout=30)
            c.request("POST", "/api/label", json.dumps({"item": item, "request": rid, "case": case}),
                      {"Content-Type": "application/json"})
            assert c.getresponse().status == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    code, out, err = cli("judge-agreement", str(labels), "--json", env=env)
    assert code == 0, err[-3000:]
    rep = json.loads(out)
    assert rep["request_edits"] == {"edits": 1, "labels_not_compared": 0}
    ceiling = next(r for r in rep["request_labels"]["rows"] if r["rater"] == "ann1 vs ann2")
    assert ceiling["n"] == 10 and ceiling["accuracy"] == pytest.approx(7 / 10)
    if os.environ.get("RAG_TTC_UPDATE_SCREENSHOTS") == "1":
        shutil.copy(shots / "annotate.png", REPO / "docs" / "screenshots" / "annotate.png")


def test_ui_metadata_names_the_command_and_the_case_report_links_the_page(lab, tmp_path):
    from dagster import AssetKey, DagsterInstance

    _root, env = lab
    with DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        records = instance.fetch_materializations(AssetKey("request_judgments"), limit=10).records
    meta = {r.asset_materialization.partition: r.asset_materialization.metadata for r in records}
    assert meta["baseline"]["annotate"].value == "rag-ttc annotate baseline --annotator NAME"
    out = tmp_path / "report.html"
    code, _, err = cli("report", "baseline", "tight", "--out", str(out),
                       env={**env, "RAG_TTC_ANNOTATE_URL": "http://127.0.0.1:3002"})
    assert code == 0, err[-3000:]
    data = json.loads(out.read_text(encoding="utf-8").split('id="report-data">', 1)[1].split("</script>", 1)[0])
    assert data["annotate"] == {"command": "rag-ttc annotate baseline tight --annotator NAME",
                                "url": "http://127.0.0.1:3002"}


def t95(*terms) -> float:
    """Student's t quantile of a 95% interval, with the Welch-Satterthwaite degrees of freedom of the variance
    terms (v, d): (sum v)^2 / sum (v^2 / d), as labelling/ppi.py draws every interval from labels."""
    from scipy.stats import t

    return float(t.ppf(0.975, sum(v for v, _ in terms) ** 2 / sum(v ** 2 / d for v, d in terms)))


def _judge_reading(root: Path) -> tuple[dict, dict]:
    """By hand from the request_judgments tables: arm -> question -> the share of its requests the judge found
    addressed (an abstained request: not addressed; a row with any other unjudged request: left out), and arm ->
    question -> its request ids."""
    import polars as pl

    f, reqs = {}, {}
    for arm in ("baseline", "tight"):
        rows = pl.read_parquet(root / "home" / "store" / "arms" / arm / "request_judgments.parquet").rows(named=True)
        by = {}
        for r in rows:
            by.setdefault(r["query_id"], []).append(r)
        reqs[arm] = {q: [r["request_id"] for r in rs] for q, rs in by.items()}
        f[arm] = {q: sum(r["status"] == "judged" and bool(r["addressed"]) for r in rs) / len(rs)
                  for q, rs in by.items() if all(r["status"] in ("judged", "abstained") for r in rs)}
    return f, reqs


def _label_file(path: Path, people: dict[str, dict[str, list[bool]]], reqs: dict) -> Path:
    """Per-request labels: arm -> question -> the person's `addressed` for each of its requests, in order."""
    path.write_text("".join(json.dumps({"kind": "request", "arm": arm, "question": q, "request": r,
                                        "addressed": v, "annotator": "p1"}) + "\n"
                            for arm, qs in people.items() for q, vals in qs.items()
                            for r, v in zip(reqs[arm][q], vals)), encoding="utf-8")
    return path


def _mean_var(xs: list[float]) -> tuple[float, float]:
    m = sum(xs) / len(xs)
    return m, sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def test_accept_decides_and_says_how_many_more_labels_would(lab, tmp_path):
    """`rag-ttc accept tight --against baseline` on constructed labels whose answer is known. (1) People label every
    row both arms answer: baseline addressed everything, tight nothing; the corrected difference is then the
    people's, exactly -1, and the arm is rejected. (2) Three questions labelled in both arms, the people agreeing
    with the judge except on tight's answers to the first two (none addressed): the paired
    estimator, its decision and the number of labels that would decide, computed here by hand."""
    import polars as pl

    root, env = lab
    f, reqs = _judge_reading(root)
    common = sorted(set(f["baseline"]) & set(f["tight"]))
    d = [f["tight"][q] - f["baseline"][q] for q in common]
    mean_d, var_d = _mean_var(d)
    big_n = len(common)
    assert big_n >= 6

    every = _label_file(tmp_path / "every.jsonl", {
        "baseline": {q: [True] * len(reqs["baseline"][q]) for q in common},
        "tight": {q: [False] * len(reqs["tight"][q]) for q in common}}, reqs)
    code, out, err = cli("accept", "tight", "--against", "baseline", "--labels", str(every), "--json", env=env)
    assert code == 0, err
    rep = json.loads(out)
    assert rep["estimator"] == "paired" and (rep["rows"], rep["labelled"]) == (big_n, big_n)
    assert rep["judge"]["mean"] == pytest.approx(mean_d) and rep["ppi"]["mean"] == pytest.approx(-1.0)
    se = (var_d / big_n + var_d / big_n) ** 0.5  # the rectifier d + 1 varies as d does
    q = t95((var_d / big_n, big_n - 1), (var_d / big_n, big_n - 1))
    assert rep["ppi"]["high"] == pytest.approx(-1 + q * se) and rep["decision"] == "reject"
    assert Path(rep["plot"]).is_file() and Path(rep["report"]).is_file()
    assert json.loads(Path(rep["report"]).read_text())["ppi"] == rep["ppi"]

    labelled = common[:3]
    people = {arm: {} for arm in ("baseline", "tight")}
    for arm in ("baseline", "tight"):
        rows = {(r["query_id"], r["request_id"]): r for r in pl.read_parquet(
            root / "home" / "store" / "arms" / arm / "request_judgments.parquet").rows(named=True)}
        for q in labelled:
            people[arm][q] = [rows[(q, r)]["status"] == "judged" and bool(rows[(q, r)]["addressed"])
                              for r in reqs[arm][q]]
    people["tight"][labelled[0]] = [False] * len(reqs["tight"][labelled[0]])
    people["tight"][labelled[1]] = [False] * len(reqs["tight"][labelled[1]])
    three = _label_file(tmp_path / "three.jsonl", people, reqs)
    y = {arm: {q: sum(v) / len(v) for q, v in people[arm].items()} for arm in people}
    rect = [(f["tight"][q] - f["baseline"][q]) - (y["tight"][q] - y["baseline"][q]) for q in labelled]
    mean_r, var_r = _mean_var(rect)
    theta = mean_d - mean_r
    a = var_d / big_n
    half = t95((a, big_n - 1), (var_r / 3, 2)) * (a + var_r / 3) ** 0.5
    want_decision = "accept" if theta - half > 0 else "reject" if theta + half < 0 else "undecided"
    # the smallest n whose interval, the variances held, would exclude 0: counted up
    want_n = next((n for n in range(2, 10 ** 5)
                   if t95((a, big_n - 1), (var_r / n, n - 1)) * (a + var_r / n) ** 0.5 < abs(theta)), None)
    assert want_decision == "undecided" and want_n is not None, (theta, half, want_n)  # the case this data builds
    code, out, err = cli("accept", "tight", "--against", "baseline", "--labels", str(three), env=env)
    assert code == 0, err
    assert f"paired: both arms answer the same {big_n} questions; the rectifier over the 3 labelled" in out
    (line,) = [x for x in out.splitlines() if x.startswith("prediction-powered")]
    assert f"{theta:+.3f} [{theta - half:+.3f}, {theta + half:+.3f}]" in line and want_decision in line, out
    assert f"labels that would decide: n = {want_n} labelled rows (in both arms), {want_n - 3} more" in out, out
    assert f"plot: {root / 'home' / 'store' / 'comparisons' / 'baseline--tight-accept-width.png'}" in out

    # compare --labels: the completeness line carries the same corrected difference beside the judge's; the JSON too.
    code, out, err = cli("compare", "baseline", "tight", "--labels", str(three), env=env)
    assert code == 0, err
    (line,) = [x for x in out.splitlines() if "corrected by" in x]
    assert "corrected by 3 human labels (prediction-powered, paired)" in line
    assert f"{theta:+.3f} [{theta - half:+.3f}, {theta + half:+.3f}]" in line and f"judge {mean_d:+.3f}" in line


def test_accept_and_compare_refuse_bad_labels_naming_the_file(lab, tmp_path, monkeypatch, capsys):
    """Bad input through the command's entry point (in process: no subprocess per case): the file, record and field
    named, exit 1, no traceback; compare without --labels prints no corrected line."""
    from rag_ttc_assets.cli import main

    root, env = lab
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    _, reqs = _judge_reading(root)
    q = sorted(reqs["baseline"])[0]
    only_baseline = _label_file(tmp_path / "one.jsonl", {"baseline": {q: [True] * len(reqs["baseline"][q])}}, reqs)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "request", "arm": "tight", "question": "nope", "request": "x", "addressed": true, '
                   '"annotator": "p1"}\n{oops\n', encoding="utf-8")
    default = root / "home" / "store" / "annotations" / "labels.jsonl"
    assert not default.exists()
    for args, want in (
            ([], f"{default}: (file): (file): labels file not found"),
            (["--labels", str(tmp_path / "nope.jsonl")], "nope.jsonl: (file): (file): labels file not found"),
            (["--labels", str(empty)], f"{empty}: (file): (file): the labels file is empty"),
            (["--labels", str(bad)], f"{bad}: line 2: (json): malformed JSON"),
            (["--labels", str(only_baseline)], f"{only_baseline}: (file): (file): no per-request labels of arm "
                                               "'tight'"),
            (["--labels", str(only_baseline), "--alpha", "2"], "--alpha must be in (0, 1)")):
        capsys.readouterr()
        assert main(["accept", "tight", "--against", "baseline", *args]) == 1, args
        err = capsys.readouterr().err
        assert want in err and "Traceback" not in err, err
    assert main(["accept", "tight", "--against", "tight", "--labels", str(bad)]) == 1
    assert "name two different arms" in capsys.readouterr().err
    assert main(["compare", "baseline", "tight", "--labels", str(only_baseline)]) == 1
    assert "no per-request labels of arm 'tight'" in capsys.readouterr().err
    assert main(["compare", "baseline", "tight"]) == 0
    out = capsys.readouterr().out
    assert "completeness read graded" in out and "corrected by" not in out
    # compare --json carries it: every row both arms answered labelled, baseline all addressed, tight none: -1.
    f, _ = _judge_reading(root)
    common = sorted(set(f["baseline"]) & set(f["tight"]))
    every = _label_file(tmp_path / "every.jsonl", {
        "baseline": {q: [True] * len(reqs["baseline"][q]) for q in common},
        "tight": {q: [False] * len(reqs["tight"][q]) for q in common}}, reqs)
    assert main(["compare", "baseline", "tight", "--json", "--labels", str(every)]) == 0
    got = json.loads(capsys.readouterr().out)["completeness_corrected"]
    assert (got["estimator"], got["labelled"], got["decision"]) == ("paired", len(common), "reject")
    assert got["ppi"]["mean"] == pytest.approx(-1.0)


def test_labels_check_page_lists_changed_and_gone_quotes_with_a_link_for_repair(served, lab, tmp_path):
    """Last in the module: it edits the lab's corpus (restored after). Also `labels check --human` on the page's
    labels: a highlighted quote the edit changed needs a person."""
    ann, call = served
    corpus_file = lab[0] / "datasets" / "mini" / "corpus.json"
    before = corpus_file.read_bytes()
    i = next(k for k, it in enumerate(ann.source.items) if it.question == "mini-50")
    assert call("POST", "/api/label", {"item": i, "request": "mini-50.r1", "case": "answered_supported",
                                       "quote": "The frobnicate statement rewrites the loop.",
                                       "quote_chunk_id": "frobnicate#chunk-0"})[0] == 200
    human = str(tmp_path / "labels.jsonl")
    code, out, err = cli("labels", "check", "mini", "--human", human, "--json", env=lab[1])
    assert code == 0 and json.loads(out)["human_labels"]["counts"]["fresh"] == 1, err
    try:
        status, page, _ = call("GET", "/labels-check")
        assert status == 200 and "every label is current" in page
        corpus = json.loads(before)
        doc = next(d for d in corpus["documents"] if d["id"] == "frobnicate")
        doc["text"] = doc["text"].replace("rewrites the loop", "rewrites the <i>whole</i> loop")
        corpus_file.write_text(json.dumps(corpus), encoding="utf-8")
        status, page, _ = call("GET", "/labels-check")
        assert status == 200 and 'data-status="changed"' in page and f'href="/item/{i}"' in page
        assert "<ins>&lt;i&gt;" in page and "<i>" not in page  # the difference marked, the text escaped
        code, out, err = cli("labels", "check", "mini", "--human", human, "--json", env=lab[1])
        (res,) = json.loads(out)["human_labels"]["results"]
        assert code == 3 and res["status"] == "changed" and res["doc_id"] == "frobnicate", err
        assert res["label"].startswith(f"{human}: line 1 (ann1, arm baseline")
    finally:
        corpus_file.write_bytes(before)

