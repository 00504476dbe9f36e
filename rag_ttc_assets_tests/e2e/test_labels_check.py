"""`rag-ttc labels check` and `rag-ttc labels update` on small datasets, as a user runs them, and the validation
script that edits the bundled corpus like a policy change."""

import hashlib
import json
import os
import re
import subprocess
import sys

from rag_ttc_assets_tests.conftest import REPO, write_dataset
from rag_ttc_assets_tests.e2e.test_cli import rag_ttc

NEEDS_PERSON = 3

DOCS = {
    "refunds": "Refunds\n\nA customer may return an item within 30 days of delivery for a full refund.\n\n"
               "Shipping costs are not refunded.\n\nGift cards cannot be returned.",
    "shipping": "Shipping\n\nOrders over 50 euros ship free within the country.\n\nExpress delivery takes two days.",
    "privacy": "Privacy\n\nWe keep order records for seven years, as the tax law requires.",
}
QUOTES = {  # request -> (document, quote)
    "q1.r1": ("refunds", "A customer may return an item within 30 days of delivery for a full refund."),
    "q1.r2": ("refunds", "Shipping costs are not refunded."),
    "q2.r1": ("shipping", "Orders over 50 euros ship free within the country."),
    "q2.r2": ("shipping", "Express delivery takes two days."),
    "q3.r1": ("privacy", "We keep order records for seven years, as the tax law requires."),
    "q3.r2": ("refunds", "Gift cards cannot be returned."),
}


def corpus(docs):
    return {"documents": [{"id": k, "title": k, "text": v} for k, v in docs.items()]}


def questions():
    out = []
    for qid in ("q1", "q2", "q3"):
        reqs = [{"id": r, "text": f"what does {r} say?", "evidence": [{"doc_id": d, "quote": q}]}
                for r, (d, q) in QUOTES.items() if r.startswith(qid)]
        out.append({"id": qid, "text": f"question {qid}?", "targets": [{"doc_id": reqs[0]["evidence"][0]["doc_id"]}],
                    "requests": reqs})
    return out


def edit_corpus(root, docs):
    (root / "datasets" / "shop" / "corpus.json").write_text(json.dumps(corpus(docs), indent=1) + "\n",
                                                            encoding="utf-8")


def labelled_shop(tmp_path):
    write_dataset(tmp_path / "datasets" / "shop", corpus(DOCS), questions(), pilot=["q1"])
    return tmp_path


def check(root, *extra):
    return rag_ttc("labels", "check", "shop", "--datasets-dir", str(root / "datasets"), *extra)


def by_request(out):
    return {r["request"]: r for r in json.loads(out)["results"] if r["kind"] == "quote"}


def test_labels_check_classifies_each_label_after_a_corpus_edit(tmp_path):
    root = labelled_shop(tmp_path)
    code, out, err = check(root)
    assert code == 0, err
    assert "shop: 9 of 9 labels current (9 fresh, 0 relocated)" in out
    assert "6 checked by text alone" in out  # the labels carry no quote_sha256/corpus_digest

    docs = dict(DOCS)
    docs["refunds"] = (docs["refunds"].replace("30 days", "14 days")            # a number changed
                       .replace("\n\nGift cards cannot be returned.", ""))      # moved to another document
    docs["privacy"] += "\n\nGift cards cannot be returned."
    docs["shipping"] = ("Shipping\n\nOrders  over 50 euros ship free within the country.\n\n"  # whitespace
                        "Express delivery takes two working days.")                            # words changed
    edit_corpus(root, docs)
    code, out, err = check(root, "--json")
    assert code == NEEDS_PERSON, err
    got = by_request(out)
    assert {k: v["status"] for k, v in got.items()} == {
        "q1.r1": "changed", "q1.r2": "fresh", "q2.r1": "relocated", "q2.r2": "changed", "q3.r1": "fresh",
        "q3.r2": "relocated"}
    assert got["q3.r2"]["new_doc_id"] == "privacy" and got["q3.r2"]["how"] == "moved to another document"
    assert got["q2.r1"]["new_quote"] == "Orders  over 50 euros ship free within the country."
    assert "[-30-]{+14+}" in got["q1.r1"]["diff"]
    assert json.loads(out)["corpus_changed"] is True

    code, out, err = check(root)
    assert code == NEEDS_PERSON
    assert "questions[0] (id 'q1') request 'q1.r1' evidence[0] (refunds), changed" in out
    assert "4 of 6 labels current" not in out and "7 of 9 labels current (5 fresh, 2 relocated)" in out


def test_labels_update_writes_a_new_version_the_lab_reads_and_keeps_the_old(tmp_path):
    root = labelled_shop(tmp_path)
    folder = root / "datasets" / "shop"
    original = (folder / "evaluation.json").read_bytes()
    docs = dict(DOCS)
    docs["refunds"] = docs["refunds"].replace("30 days", "14 days").replace("\n\nGift cards cannot be returned.", "")
    docs["privacy"] += "\n\nGift cards cannot be returned."
    del docs["shipping"]  # a document removed: its quotes and the target naming it are gone
    edit_corpus(root, docs)
    code, _, err = rag_ttc("validate", str(folder))
    assert code == 1 and "corpus_digest" in err  # the binding refuses the edited corpus, as before

    code, out, err = rag_ttc("labels", "update", "shop", "--datasets-dir", str(root / "datasets"))
    assert code == NEEDS_PERSON, err
    assert (folder / "labels" / "evaluation.v1.json").read_bytes() == original
    new = json.loads((folder / "labels" / "evaluation.v2.json").read_text(encoding="utf-8"))
    assert (folder / "evaluation.json").read_bytes() == (folder / "labels" / "evaluation.v2.json").read_bytes()
    log = json.loads((folder / "labels" / "evaluation.v2.log.json").read_text(encoding="utf-8"))
    assert [(x["label"], x["from"]["doc_id"], x["to"]["doc_id"]) for x in log["relocated"]] == [
        ("questions[2] (id 'q3') request 'q3.r2' evidence[0]", "refunds", "privacy")]
    assert sorted((x["label"], x["status"]) for x in log["stale"]) == [
        ("questions[0] (id 'q1') request 'q1.r1' evidence[0]", "changed"),
        ("questions[1] (id 'q2') request 'q2.r1' evidence[0]", "gone"),
        ("questions[1] (id 'q2') request 'q2.r2' evidence[0]", "gone"), ("questions[1] (id 'q2') targets[0]", "gone")]
    cbytes = (folder / "corpus.json").read_bytes()
    digest = "sha256:" + hashlib.sha256(cbytes).hexdigest()
    assert new["corpus_digest"] == digest
    ev = {r["id"]: r["evidence"][0] for q in new["questions"] for r in q["requests"]}
    assert ev["q3.r2"]["doc_id"] == "privacy" and ev["q3.r2"]["corpus_digest"] == digest
    assert ev["q3.r2"]["quote_sha256"] == "sha256:" + hashlib.sha256(b"Gift cards cannot be returned.").hexdigest()
    assert ev["q1.r1"]["stale"] == "changed" and "14" not in ev["q1.r1"]["quote"]  # kept as labelled

    # The lab reads the new version: stale labels out of every measurement, and said so.
    code, out, err = rag_ttc("validate", str(folder), "--json")
    assert code == 0, err
    v = json.loads(out)
    assert v["questions"] == 2 and v["requests"] == 3  # q2 lost both requests; q1 keeps r2
    assert v["labels"]["requests_excluded"] == ["q1.r1", "q2.r1", "q2.r2"]
    assert v["labels"]["questions_excluded"] == ["q2"]
    code, out, _ = rag_ttc("validate", str(folder))
    assert "5 of 9 labels current, 4 excluded as changed or gone" in out

    # A second update finds nothing new to write and never rewrites a version.
    code, out, _ = rag_ttc("labels", "update", "shop", "--datasets-dir", str(root / "datasets"))
    assert code == NEEDS_PERSON and "nothing to update" in out
    assert sorted(p.name for p in (folder / "labels").iterdir()) == [
        "evaluation.v1.json", "evaluation.v2.json", "evaluation.v2.log.json"]


def test_labels_check_bad_input_names_file_record_and_field(tmp_path):
    root = labelled_shop(tmp_path)
    folder = root / "datasets" / "shop"
    # A corpus with duplicate document IDs: refused, naming both records.
    docs = corpus(DOCS)
    docs["documents"].append({"id": "refunds", "title": "x", "text": "Gift cards cannot be returned."})
    (folder / "corpus.json").write_text(json.dumps(docs), encoding="utf-8")
    code, out, err = check(root)
    assert code == 1 and "Traceback" not in err
    assert "corpus.json: documents[3] (id 'refunds'): id: duplicate document id 'refunds' (also documents[0])" in err

    # A quote in several places and not in its document: ambiguous, every place listed, nothing guessed.
    d = dict(DOCS)
    d["refunds"] = d["refunds"].replace("\n\nShipping costs are not refunded.", "")
    d["shipping"] += "\n\nShipping costs are not refunded."
    d["privacy"] += "\n\nShipping costs are not refunded."
    edit_corpus(root, d)
    code, out, err = check(root, "--json")
    assert code == NEEDS_PERSON
    r = by_request(out)["q1.r2"]
    assert r["status"] == "ambiguous" and sorted(p["doc_id"] for p in r["places"]) == ["privacy", "shipping"]
    code, out, err = rag_ttc("labels", "update", "shop", "--datasets-dir", str(root / "datasets"))
    new = json.loads((folder / "evaluation.json").read_text(encoding="utf-8"))
    q1 = {r["id"]: r["evidence"][0] for r in new["questions"][0]["requests"]}
    assert q1["q1.r2"] == {"doc_id": "refunds", "quote": "Shipping costs are not refunded.", "stale": "ambiguous"}

    # A quote edited by hand after it was stamped: said so, naming file, record and field; update refuses.
    ev = json.loads((folder / "evaluation.json").read_text(encoding="utf-8"))
    ev["questions"][0]["requests"][0]["evidence"][0]["quote"] = "A customer may return an item"
    (folder / "evaluation.json").write_text(json.dumps(ev), encoding="utf-8")
    code, out, err = check(root)
    assert code == NEEDS_PERSON
    assert ("evaluation.json: questions[0] (id 'q1') request 'q1.r1': evidence[0].quote_sha256: does not match the "
            "quote") in out
    before = (folder / "evaluation.json").read_bytes()
    code, out, err = rag_ttc("labels", "update", "shop", "--datasets-dir", str(root / "datasets"))
    assert code == 1 and "labels not updated" in err and (folder / "evaluation.json").read_bytes() == before

    # A malformed labels file: named, no traceback.
    (folder / "evaluation.json").write_text("{", encoding="utf-8")
    code, out, err = check(root)
    assert code == 1 and "evaluation.json: line 1 column 2: (json): malformed JSON" in err and "Traceback" not in err


def test_labels_update_leaves_a_labels_file_edited_while_it_ran(tmp_path, monkeypatch):
    """The labels file changes between the read and the replace: evaluation.json is left as the person wrote it."""
    from rag_ttc_assets.cli import label_versions, main

    root = labelled_shop(tmp_path)
    folder = root / "datasets" / "shop"
    docs = dict(DOCS)
    docs["privacy"] += "\n\nGift cards cannot be returned."
    docs["refunds"] = docs["refunds"].replace("\n\nGift cards cannot be returned.", "")
    edit_corpus(root, docs)
    real = label_versions.check_labels

    def check_then_someone_edits(*a, **k):
        out = real(*a, **k)
        (folder / "evaluation.json").write_text((folder / "evaluation.json").read_text() + " ", encoding="utf-8")
        return out

    monkeypatch.setattr(label_versions, "check_labels", check_then_someone_edits)
    # In this process the CLI exports --datasets-dir as RAG_TTC_DATASETS: restored after the test, or the worker's
    # later tests would read this test's datasets folder.
    for env in ("RAG_TTC_ARMS", "RAG_TTC_DATASETS", "RAG_TTC_HOME", "DAGSTER_HOME"):
        monkeypatch.setenv(env, os.environ.get(env, ""))
        if not os.environ[env]:
            monkeypatch.delenv(env)
    assert main(["labels", "update", "shop", "--datasets-dir", str(root / "datasets")]) == 1
    edited_by_person = (folder / "evaluation.json").read_text(encoding="utf-8")
    assert edited_by_person.endswith(" ")  # the person's edit, not overwritten
    assert not (folder / "labels").exists()  # refused before any version was written


def test_policy_change_validation_script_finds_exactly_the_edited_labels(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "edit_corpus_like_a_policy_change.py"),
                           "--out", str(tmp_path), "--json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    m = json.loads(proc.stdout)
    assert all(m["edits"][k] >= 10 for k in ("number", "removed", "moved", "typo")), m["edits"]
    assert m["needs_person"]["precision"] == m["needs_person"]["recall"] == 1.0
    assert m["relocated"]["precision"] == m["relocated"]["recall"] == 1.0
    assert m["relocated"]["right_document"] == m["relocated"]["expected"] > 0
    assert m["fresh_left_fresh"] == m["unaffected"] > 0
    code, out, err = rag_ttc("labels", "check", "pyref", "--datasets-dir", str(tmp_path))
    assert code == NEEDS_PERSON, err
    assert f"{m['statuses']['changed']} changed" in out


def latest_labels_check(dagster_home):
    from dagster import AssetCheckKey, AssetKey, DagsterInstance

    with DagsterInstance.from_config(dagster_home) as instance:
        rec = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [AssetCheckKey(AssetKey("labels"), "labels_current")])
        return list(rec.values())[0].event.dagster_event.event_specific_data


def test_after_an_update_the_lab_measures_current_labels_only_and_says_so(mini_lab, tmp_path):
    """A passage removed from the mini corpus: after `labels update`, run and hitrate leave its request out and say
    so, and the labels_current check of the labels asset fails (a warning the UI shows)."""
    folder = tmp_path / "datasets" / "mini"
    env = {"DAGSTER_HOME": str(tmp_path / "dh")}
    # The mini dataset: 7 answerable questions, 11 requests quoting gold evidence, 11 targets; test_cli's step-line
    # test sees labels_current pass on it.
    c = json.loads((folder / "corpus.json").read_text(encoding="utf-8"))
    ev = json.loads((folder / "evaluation.json").read_text(encoding="utf-8"))
    gone = next(q for q in ev["questions"] if q["id"] == "mini-06")["requests"][0]["evidence"][0]
    doc = next(d for d in c["documents"] if d["id"] == gone["doc_id"])
    doc["text"] = doc["text"].replace(gone["quote"], "")
    (folder / "corpus.json").write_text(json.dumps(c, indent=1), encoding="utf-8")
    code, out, err = rag_ttc("labels", "update", "mini")
    assert code == NEEDS_PERSON, err

    code, out, err = rag_ttc("run", "bm25-only", "--stage", "retrieval", env=env)
    assert code == 0, err
    assert ("bm25-only: 21 of 22 labels current, 1 excluded as changed or gone (1 requests, 1 questions left out"
            in out), out
    assert re.search(r"^bm25-only  labels_current +\d+\.\d s  \(check of labels: FAILED\)$", err, re.M), err
    code, out, err = rag_ttc("hitrate", "bm25-only", env=env)
    assert code == 0, err
    assert out.startswith("bm25-only: 6 questions with gold evidence, 10 requests\n"
                          "21 of 22 labels current, 1 excluded as changed or gone (1 requests, 1 questions left out")
    check = latest_labels_check(env["DAGSTER_HOME"])
    assert check.passed is False
    assert check.metadata["labels"].value.startswith("21 of 22 labels current (21 fresh, 0 relocated), 1 changed")


def test_a_labels_update_reruns_the_labels_and_what_reads_them_never_the_corpus_side(mini_lab, tmp_path):
    """`rag-ttc run` twice with a `labels update` between (the corpus unchanged: the update binds every label to
    it, a new labels version): the second run reruns the `labels` asset, whose data version is the labels' digest,
    and what reads labels (retrieval rows onward), and leaves the corpus binding, chunks and indexes as they were;
    the third runs nothing."""
    env = {"DAGSTER_HOME": str(tmp_path / "dh")}
    code, out, err = rag_ttc("run", "bm25-only", "--stage", "retrieval", "--json", env=env)
    assert code == 0, err
    first = json.loads(out)["arms"]["bm25-only"]
    assert first["ran"][:2] == ["corpus_binding", "labels"] and "chunks" in first["ran"]
    code, out, err = rag_ttc("labels", "update", "mini")
    assert code == 0, err
    assert "written: mini/labels/evaluation.v2.json (0 relocated, 0 marked stale" in out, out

    code, out, err = rag_ttc("run", "bm25-only", "--stage", "retrieval", "--json", env=env)
    assert code == 0, err
    again = json.loads(out)["arms"]["bm25-only"]
    assert again["ran"] == ["labels", "imported_source", "retrieval_rows", "retrieval_summary", "admitted_contexts"]
    assert again["why"]["labels"] == "arm_config/labels has a new data version (labels file changed)"
    assert again["retrieval"] == first["retrieval"]  # only hashes stamped: the same measurement
    code, out, err = rag_ttc("run", "bm25-only", "--stage", "retrieval", "--json", env=env)
    assert code == 0 and json.loads(out)["arms"]["bm25-only"]["ran"] == [], err


def test_labels_check_checks_the_derived_requests_quotes_and_says_what_it_does_not_check(tmp_path):
    """derived_requests.json's gold quotes are classified like the evaluation's (a removed passage: gone, exit 3);
    the human labels files are named as not checked, and why."""
    root = labelled_shop(tmp_path)
    folder = root / "datasets" / "shop"
    derived = {"evaluation_digest": "sha256:whatever", "derived": {"by": "local/claims-v1"}, "questions": [
        {"id": "q9", "status": "derived", "requests": [
            {"id": "q9.d1", "text": "free shipping?", "evidence": [{"doc_id": "shipping", "quote": DOCS["shipping"]
                                                                    .split("\n\n")[1]}]},
            {"id": "q9.d2", "text": "records?", "evidence": [{"doc_id": "privacy", "quote": DOCS["privacy"]
                                                               .split("\n\n")[1]}]}]},
        {"id": "q8", "status": "fault", "error": "timeout"}]}
    (folder / "derived_requests.json").write_text(json.dumps(derived), encoding="utf-8")
    code, out, err = check(root)
    assert code == 0, err
    assert "derived_requests.json (requests derived from gold answers;" in out
    assert "shop derived_requests.json: 2 of 2 labels current (2 fresh, 0 relocated)" in out
    assert "human labels (judge-agreement's JSON Lines file, the annotation page's) are not checked" in out

    edit_corpus(root, {**DOCS, "privacy": "Privacy\n\nRecords are deleted after a year."})
    code, out, err = check(root, "--json")
    assert code == NEEDS_PERSON, err
    rep = json.loads(out)
    assert [(r["request"], r["status"]) for r in rep["derived_requests"]["results"]] == [
        ("q9.d1", "fresh"), ("q9.d2", "gone")]
    assert rep["not_checked"].startswith("human labels")
