"""`rag-ttc convert-lfqa` on a small set invented here in LFQA-Verification's data/ layout (two questions, two
systems: one labelled against WebGPT's documents, one against the human documents with an answer repeating a
sentence), then the converted arms run and `rag-ttc judge-agreement` on the per-claim labels: the support judge's
kappa and accuracy against every label, the annotators with each other, the majority readings and the per-answer
faithfulness correlation recomputed by hand from the constructed labels and the judge's own rows; bad input
refused naming the file, the record and the field, with nothing written."""

from __future__ import annotations

import copy
import json
from itertools import combinations
from pathlib import Path

import polars as pl
import pytest
import yaml

from rag_ttc_assets_tests.e2e.test_cli import rag_ttc
from rag_ttc_assets_tests.e2e.test_judge_agreement import _kappa, _pearson
from rag_ttc_assets_tests.e2e.test_realsumm import run_and_measure

QUESTIONS = {7: "Why do cats purr when they are happy?", 12: "How do bridges stay up in strong wind?",
             99: "A question nobody annotated?"}
WEBGPT_DOCS = {
    7: [("webgpt:70", "Cats - Vet Notes", "Cats purr by vibrating the muscles of the larynx. A purr can mean "
                                          "contentment but also pain or stress."),
        ("webgpt:71", "Purring", "Kittens purr while nursing so that the mother knows they are fed.")],
    12: [("webgpt:120", "Bridge design", "Engineers test bridge decks in wind tunnels. Long bridges use heavy "
                                         "dampers that absorb the swaying motion.")],
}
HUMAN_DOCS = {
    7: [("human:7", "Why cats purr", "Domestic cats purr at a frequency between 25 and 150 hertz.")],
    12: [("human:12", "Wind and bridges", "The Tacoma Narrows bridge collapsed in 1940 because of wind.")],
}
S, P, N = "supported", "partially", "not_supported"
# annotation file stem -> question -> [(sentence, three labels)]
ANNOTATIONS = {
    "webgpt": {
        7: [("Cats purr by vibrating the muscles of the larynx.", (S, S, S)),
            ("A purr can mean contentment but also pain or stress.", (S, S, P)),
            ("Cats learned to purr from lions in ancient Egypt.", (N, N, N))],
        12: [("Engineers test bridge decks in wind tunnels.", (S, S, S)),
             ("Long bridges use heavy dampers that absorb the swaying motion.", (S, P, S)),
             ("Every bridge built after 1990 is made of carbon fibre.", (N, P, N))],
    },
    "gpt3_whudoc": {
        7: [("Domestic cats purr at a frequency between 25 and 150 hertz.", (S, S, S)),
            ("Purring heals broken bones within a week.", (N, N, P)),
            ("Purring heals broken bones within a week.", (N, P, N))],  # a sentence repeated: two claims
        12: [("The Tacoma Narrows bridge collapsed in 1940 because of wind.", (S, S, N)),
             ("Modern bridges are painted red to resist wind.", (N, N, N))],
    },
}
ARMS = {"webgpt": "webgpt", "gpt3_whudoc": "gpt3-whudoc"}
SUPPORT = {S: "supported", P: "partially_supported", N: "not_supported"}


def write_lfqa(root: Path, annotations: dict | None = None) -> Path:
    """The files `convert-lfqa` reads, in LFQA-Verification's data/ layout and formats (each answer's sentences
    listed twice, `answers` and `annotations`, as the set does; the question ids are not in file order)."""
    (root / "annotations").mkdir(parents=True)
    (root / "docs").mkdir()
    for stem, by_q in (annotations or ANNOTATIONS).items():
        records = [{"question_id": q, "question": QUESTIONS[q], "answers": [s for s, _ in sents],
                    "annotations": [{"labels": list(labs), "answer": s} for s, labs in sents]}
                   for q, sents in sorted(by_q.items(), reverse=True)]
        (root / "annotations" / f"annotations-{stem}.json").write_text(json.dumps(records, indent=1))
    for source, docs in (("webgpt", WEBGPT_DOCS), ("human", HUMAN_DOCS)):
        records = [{"question_id": q, "question": QUESTIONS[q],
                    "docs": [{"doc_id": i, "title": t, "text": x} for i, t, x in ds]} for q, ds in docs.items()]
        records.append({"question_id": 99, "question": QUESTIONS[99],
                        "docs": [{"doc_id": "x", "title": "", "text": "unused"}]})
        (root / "docs" / f"docs-{source}.json").write_text(json.dumps(records))
    return root


def expected_labels() -> list[dict]:
    return [{"arm": ARMS[stem], "question": f"eli5-{q}", "claim": k, "text": s, "support": SUPPORT[lab],
             "annotator": f"a{i}"}
            for stem, by_q in ANNOTATIONS.items() for q, sents in by_q.items()
            for k, (s, labs) in enumerate(sents, 1) for i, lab in enumerate(labs, 1)]


def majority(values):
    yes = sum(values)
    return True if 2 * yes > len(values) else False if 2 * (len(values) - yes) > len(values) else None


def test_convert_lfqa_run_its_arms_and_measure_the_support_judge_against_the_people(tmp_path):
    src = write_lfqa(tmp_path / "data")
    lab = tmp_path / "lab"
    code, out, err = rag_ttc("convert-lfqa", str(src), "--out", str(lab), "--json")
    assert code == 0, err
    made = json.loads(out)
    expected = expected_labels()
    assert (made["documents"], made["questions"], made["requests"]) == (5, 2, 2)
    assert (made["systems"], made["answers"], made["claims"], made["labels"]) == (2, 4, 11, 33)
    assert made["claims_by_label_count"] == {"3": 11}
    assert made["arms"] == ["gpt3-whudoc", "webgpt"]
    assert "positions" in made["annotators"]
    evaluation = json.loads((lab / "datasets" / "lfqa" / "evaluation.json").read_text())
    assert [(q["id"], q["text"]) for q in evaluation["questions"]] == [("eli5-7", QUESTIONS[7]),
                                                                       ("eli5-12", QUESTIONS[12])]
    corpus = {d["id"]: d for d in json.loads((lab / "datasets" / "lfqa" / "corpus.json").read_text())["documents"]}
    assert set(corpus) == {"eli5-7.webgpt1", "eli5-7.webgpt2", "eli5-12.webgpt1", "eli5-7.human1", "eli5-12.human1"}
    # Each arm's retrieved context is the documents its sentences were labelled against; the answer its sentences,
    # one a paragraph.
    rows = {r["query_id"]: r for r in json.loads((lab / "systems" / "gpt3-whudoc.json").read_text())["results"]}
    assert rows["eli5-7"]["retrieved_context"] == [{"doc_id": "eli5-7.human1", "text": HUMAN_DOCS[7][0][2]}]
    assert rows["eli5-7"]["response"] == "\n\n".join(s for s, _ in ANNOTATIONS["gpt3_whudoc"][7])
    rows = {r["query_id"]: r for r in json.loads((lab / "systems" / "webgpt.json").read_text())["results"]}
    assert [c["doc_id"] for c in rows["eli5-7"]["retrieved_context"]] == ["eli5-7.webgpt1", "eli5-7.webgpt2"]
    labels_path = lab / "labels.jsonl"
    got = [json.loads(x) for x in labels_path.read_text().splitlines()]
    assert {r.pop("kind") for r in got} == {"claim"}
    canon = lambda r: json.dumps(r, sort_keys=True)  # noqa: E731
    assert sorted(map(canon, got)) == sorted(map(canon, expected))
    readme = (lab / "README.md").read_text()
    assert "Chen, Xu, Arora, Choi" in readme and "no licence" in readme
    assert yaml.safe_load((lab / "arms.yaml").read_text())["defaults"]["judge"] == {"model": "local/lexical"}
    code, _, err = rag_ttc("validate", str(lab / "datasets" / "lfqa"))
    assert code == 0, err

    env, report = run_and_measure(lab, tmp_path, made["arms"])
    cl = report["claim_labels"]
    assert cl["annotators"] == ["a1", "a2", "a3"] and cl["labels"] == 33

    # The judge's own rows: every sentence is one statement, in order, so claim k's verdict is statement k's.
    verdict, faith = {}, {}
    for arm in made["arms"]:
        jv = pl.read_parquet(lab / ".rag_ttc" / "store" / "arms" / arm / "judge_verdicts.parquet")
        for r in jv.iter_rows(named=True):
            sents = [s for s, _ in ANNOTATIONS[next(k for k, v in ARMS.items() if v == arm)][int(r["query_id"][5:])]]
            assert list(r["statements"]) == sents
            for v in json.loads(r["verdicts"]):
                verdict[(arm, r["query_id"], v["statement"])] = v["supported"]
            faith[(arm, r["query_id"])] = r["faithfulness"]
    assert len(verdict) == 11
    key = lambda r: (r["arm"], r["question"], r["claim"])  # noqa: E731
    pairs = [(r["support"] == "supported", verdict[key(r)]) for r in expected]
    assert len({j for _, j in pairs}) > 1 and any(h != j for h, j in pairs)
    judge, *ceiling = cl["rows"]
    assert (judge["rater"], judge["kind"], judge["n"], judge["not_measured"]) == (
        "support judge local/lexical", "judge", 33, 0)
    assert judge["accuracy"] == pytest.approx(sum(h == j for h, j in pairs) / len(pairs))
    assert judge["kappa"] == pytest.approx(_kappa(pairs))
    assert len(judge["disagreements"]) == sum(h != j for h, j in pairs)
    # The annotators with each other, binary and three-way.
    by = {(r["annotator"], key(r)): r["support"] for r in expected}
    items = sorted({key(r) for r in expected})
    assert [r["rater"] for r in ceiling] == ["a1 vs a2", "a1 vs a3", "a2 vs a3"]
    for row, (x, y) in zip(ceiling, combinations(["a1", "a2", "a3"], 2)):
        both = [(by[(x, i)] == "supported", by[(y, i)] == "supported") for i in items]
        assert row["kind"] == "ceiling" and row["n"] == 11
        assert row["kappa"] == pytest.approx(_kappa(both))
        assert row["three_way"]["accuracy"] == pytest.approx(sum(by[(x, i)] == by[(y, i)] for i in items) / 11)
    # Against the majority: the judge against each claim's majority; each label against the other two's.
    values = {i: [by[(a, i)] == "supported" for a in ("a1", "a2", "a3")] for i in items}
    m = {r["rater"]: r for r in cl["majority"]["rows"]}
    mj = [(majority(v), verdict[i]) for i, v in values.items()]
    assert m["support judge local/lexical"]["kappa"] == pytest.approx(_kappa(mj))
    loo = [(majority(v[:k] + v[k + 1:]), v[k], verdict[i]) for i, v in values.items() for k in range(3)
           if majority(v[:k] + v[k + 1:]) is not None]
    assert m["an annotator vs the others"]["n"] == len(loo)
    assert m["an annotator vs the others"]["accuracy"] == pytest.approx(sum(a == b for a, b, _ in loo) / len(loo))
    assert m["support judge local/lexical vs the others"]["accuracy"] == pytest.approx(
        sum(a == c for a, _, c in loo) / len(loo))
    # Per answer: the judge's faithfulness against the majority's supported share.
    answers = {r["rater"]: r for r in cl["answers"]["rows"]}
    rows_ = sorted(faith)
    people = [sum(majority(values[i]) for i in items if i[:2] == row) / sum(1 for i in items if i[:2] == row)
              for row in rows_]
    assert answers["support judge local/lexical"]["n"] == 4
    assert answers["support judge local/lexical"]["pearson"]["r"] == pytest.approx(
        _pearson([faith[r] for r in rows_], people))
    assert answers["an annotator vs the others"]["kind"] == "ceiling"

    code, out, err = rag_ttc("judge-agreement", str(labels_path), env=env, cwd=lab)
    assert code == 0, err
    assert "per-claim support labels (33 labels by a1, a2, a3;" in out
    assert "faithfulness per answer from the per-claim labels (4 answers)" in out
    assert "an annotator vs the others" in out

    # A labels file with a claim whose text is not in the answer, and an unknown support value: both named.
    bad = tmp_path / "bad.jsonl"
    first = {"kind": "claim", **expected[0]}
    bad.write_text(json.dumps(first | {"text": "Cats are dogs."}) + "\n"
                   + json.dumps(first | {"support": "maybe", "annotator": "a9"}) + "\n")
    code, out, err = rag_ttc("judge-agreement", str(bad), env=env, cwd=lab)
    assert code != 0
    assert "bad.jsonl: line 1: text: 'Cats are dogs.' does not occur in arm 'webgpt'" in err, err
    assert "bad.jsonl: line 2: support: 'maybe'" in err, err


@pytest.mark.parametrize("edit, message", [
    (lambda a: a["webgpt"][7].__setitem__(1, ("A purr can mean contentment.", (S, "maybe", S))),
     "annotations-webgpt.json: record 1 (question_id 7): field 'annotations[1].labels[1]': 'maybe', one of"),
    (lambda a: a["gpt3_whudoc"][12].__setitem__(0, ("   ", (S, S, S))),
     "annotations-gpt3_whudoc.json: record 0 (question_id 12): field 'annotations[0].answer': the sentence"),
    (lambda a: a["gpt3_whudoc"].__setitem__(99, [("Something.", (S, S, S))]),
     "annotations-gpt3_whudoc.json: question_id 99: no record for it in"),
])
def test_convert_lfqa_refuses_bad_input_naming_file_record_and_field(tmp_path, edit, message):
    annotations = copy.deepcopy(ANNOTATIONS)
    edit(annotations)
    src = write_lfqa(tmp_path / "data", annotations)
    if 99 in annotations["gpt3_whudoc"]:  # the human documents have no record for question 99
        docs = [r for r in json.loads((src / "docs" / "docs-human.json").read_text()) if r["question_id"] != 99]
        (src / "docs" / "docs-human.json").write_text(json.dumps(docs))
    code, out, err = rag_ttc("convert-lfqa", str(src), "--out", str(tmp_path / "lab"))
    assert code != 0
    assert message in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "lab").exists()
