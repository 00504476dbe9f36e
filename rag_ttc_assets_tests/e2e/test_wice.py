"""`rag-ttc convert-wice` on a small set invented here in WiCE's data/entailment_retrieval/claim layout (dev and test
files, claims supported, partially supported and not supported, several valid sets of supporting sentences, an
empty one), then the converted arm run and `rag-ttc judge-agreement` on its per-claim labels (one label per claim:
no ceiling), the support judge's kappa and accuracy recomputed by hand from the labels and the judge's own rows;
bad input refused naming the file, the line and the field, with nothing written."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import polars as pl
import pytest

from rag_ttc_assets_tests.e2e.test_cli import rag_ttc
from rag_ttc_assets_tests.e2e.test_judge_agreement import _kappa, _pearson
from rag_ttc_assets_tests.e2e.test_realsumm import run_and_measure

ARTICLE_RIVER = ["(meta data) TITLE: The Oldbrook River - Town Archive", "Skip to content",
                 "The Oldbrook River rises in the Karn hills.", "It flows for 212 kilometres to the sea.",
                 "The river was dredged in 1931.", "Salmon returned to the river in 1995."]
ARTICLE_SINGER = ["Mara Tell is a folk singer from Dunmore.", "She released her first album, Grey Tide, in 2004.",
                  "The album sold well in Ireland.", "", "She has toured with the Harbour Band."]
ARTICLE_MILL = ["The Kettle Mill was built in 1820 by the Ashby family.", "It ground wheat until 1950.",
                "Today the mill is a museum."]
# split -> records, in WiCE's fields
RECORDS = {
    "dev": [
        {"label": "supported", "supporting_sentences": [[2, 3], [3]],
         "claim": "The Oldbrook River flows for 212 kilometres to the sea.", "evidence": ARTICLE_RIVER,
         "meta": {"id": "dev00001", "claim_title": "Oldbrook River", "claim_section": "Course.",
                  "claim_context": "The Oldbrook is a river."}},
        {"label": "partially_supported", "supporting_sentences": [[1]],
         "claim": "Mara Tell released Grey Tide in 2004 and won a national prize for it.",
         "evidence": ARTICLE_SINGER,
         "meta": {"id": "dev00002", "claim_title": "Mara Tell", "claim_section": "Career."}},
        {"label": "not_supported", "supporting_sentences": [[]],
         "claim": "Salmon vanished from the Oldbrook River in 1995.", "evidence": ARTICLE_RIVER,
         "meta": {"id": "dev00003", "claim_title": "Oldbrook River", "claim_section": ""}},
    ],
    "test": [
        {"label": "supported", "supporting_sentences": [[0]],
         "claim": "The Kettle Mill was built in 1820 by the Ashby family.", "evidence": ARTICLE_MILL,
         "meta": {"id": "test00001", "claim_title": "Kettle Mill", "claim_section": "History."}},
        {"label": "not_supported", "supporting_sentences": [[]],
         "claim": "The Kettle Mill was powered by steam engines from Sheffield.", "evidence": ARTICLE_MILL,
         "meta": {"id": "test00002", "claim_title": "Kettle Mill", "claim_section": "History."}},
    ],
}


def write_wice(root: Path, records: dict | None = None) -> Path:
    folder = root / "entailment_retrieval" / "claim"
    folder.mkdir(parents=True)
    for split, recs in (records or RECORDS).items():
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return root


def test_convert_wice_run_its_arm_and_measure_the_support_judge_against_the_labels(tmp_path):
    src = write_wice(tmp_path / "data")
    lab = tmp_path / "lab"
    code, out, err = rag_ttc("convert-wice", str(src), "--out", str(lab), "--json")
    assert code == 0, err
    made = json.loads(out)
    records = RECORDS["dev"] + RECORDS["test"]
    assert (made["documents"], made["questions"], made["requests"], made["requests_with_quote"]) == (5, 5, 5, 3)
    assert (made["systems"], made["answers"], made["claims"], made["labels"]) == (1, 5, 5, 5)
    assert made["arms"] == ["wikipedia"] and "no annotator ceiling" in made["annotators"]
    assert made["support_shares"] == {"supported": 0.4, "partially_supported": 0.2, "not_supported": 0.4}
    evaluation = json.loads((lab / "datasets" / "wice" / "evaluation.json").read_text())
    q = {x["id"]: x for x in evaluation["questions"]}
    assert list(q) == [r["meta"]["id"] for r in records]
    assert q["dev00001"]["text"] == "What does the cited source say about Oldbrook River (Course)?"
    assert q["dev00003"]["text"] == "What does the cited source say about Oldbrook River?"
    # The located sentences of every valid set, merged, are the request's gold quotes; none for an empty set.
    assert q["dev00001"]["requests"] == [{"id": "dev00001.claim", "text": records[0]["claim"], "evidence": [
        {"doc_id": "dev00001", "quote": ARTICLE_RIVER[2]}, {"doc_id": "dev00001", "quote": ARTICLE_RIVER[3]}]}]
    assert q["dev00003"]["requests"][0]["evidence"] == []
    corpus = {d["id"]: d for d in json.loads((lab / "datasets" / "wice" / "corpus.json").read_text())["documents"]}
    assert corpus["dev00002"]["text"] == "\n".join(s for s in ARTICLE_SINGER if s)
    rows = {r["query_id"]: r for r in json.loads((lab / "systems" / "wikipedia.json").read_text())["results"]}
    assert rows["test00002"]["response"] == records[4]["claim"]
    assert rows["test00002"]["retrieved_context"] == [{"doc_id": "test00002", "text": "\n".join(ARTICLE_MILL)}]
    got = [json.loads(x) for x in (lab / "labels.jsonl").read_text().splitlines()]
    assert got == [{"kind": "claim", "question": r["meta"]["id"], "arm": "wikipedia", "claim": 1, "text": r["claim"],
                    "support": r["label"], "annotator": "wice"} for r in records]
    assert "Kamoi, Goyal, Rodriguez, Durrett" in (lab / "README.md").read_text()
    code, _, err = rag_ttc("validate", str(lab / "datasets" / "wice"))
    assert code == 0, err

    env, report = run_and_measure(lab, tmp_path, ["wikipedia"])
    cl = report["claim_labels"]
    jv = pl.read_parquet(lab / ".rag_ttc" / "store" / "arms" / "wikipedia" / "judge_verdicts.parquet")
    verdict, faith = {}, {}
    for r in jv.iter_rows(named=True):
        vs = json.loads(r["verdicts"])
        assert len(vs) == len(r["statements"]) == 1  # each claim one statement
        verdict[r["query_id"]] = vs[0]["supported"]
        faith[r["query_id"]] = r["faithfulness"]
    pairs = [(r["label"] == "supported", verdict[r["meta"]["id"]]) for r in records]
    assert len({j for _, j in pairs}) > 1 and len({h for h, _ in pairs}) > 1
    (judge,) = cl["rows"]  # one label per claim: no ceiling row
    assert (judge["rater"], judge["n"], judge["not_measured"]) == ("support judge local/lexical", 5, 0)
    assert judge["accuracy"] == pytest.approx(sum(h == j for h, j in pairs) / 5)
    assert judge["kappa"] == pytest.approx(_kappa(pairs))
    assert cl["annotator_pairs_sharing_no_item"] == 0 and cl["majority"]["items_with_two_or_more_labels"] == 0
    (answers,) = cl["answers"]["rows"]
    assert answers["pearson"]["r"] == pytest.approx(
        _pearson([faith[r["meta"]["id"]] for r in records], [float(h) for h, _ in pairs]))
    code, out, err = rag_ttc("judge-agreement", str(lab / "labels.jsonl"), env=env, cwd=lab)
    assert code == 0, err
    assert "per-claim support labels (5 labels by wice;" in out
    assert "no ceiling: one annotator (wice), one label per claim" in out


@pytest.mark.parametrize("edit, message", [
    (lambda r: r["dev"][1].__setitem__("supporting_sentences", [[1], [9]]),
     "dev.jsonl: line 2 (id dev00002): field 'supporting_sentences[1][0]': 9 is not an index into 'evidence' (0..4)"),
    (lambda r: r["test"][0].__setitem__("label", "refuted"),
     "test.jsonl: line 1 (id test00001): field 'label': 'refuted', one of"),
    (lambda r: r["test"][1]["meta"].__setitem__("id", "dev00003"),
     "test.jsonl: line 2 (id dev00003): field 'meta.id': already on dev.jsonl line 3"),
    (lambda r: r["dev"][0].pop("claim"), "dev.jsonl: line 1 (id dev00001): field 'claim': a non-empty string"),
])
def test_convert_wice_refuses_bad_input_naming_file_line_and_field(tmp_path, edit, message):
    records = copy.deepcopy(RECORDS)
    edit(records)
    src = write_wice(tmp_path / "data", records)
    code, out, err = rag_ttc("convert-wice", str(src), "--out", str(tmp_path / "lab"))
    assert code != 0
    assert message in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "lab").exists()
