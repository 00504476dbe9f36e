"""`rag-ttc convert-pyramid` on a small set built here in Lite2-3Pyramid's data layout (three documents, three systems
whose file stems are not arm names as they stand, SCU lines with trailing tabs and an empty field, files with and
without a final newline), then the converted arms run and `rag-ttc judge-agreement` on their labels (one aggregated
label per item: no ceiling), its kappa, accuracy and per-answer Pearson recomputed by hand from the constructed
labels and the judge's own rows; and bad input refused naming the file, the line and the field, with nothing
written."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
import yaml

from rag_ttc_assets_tests.e2e.test_cli import rag_ttc
from rag_ttc_assets_tests.e2e.test_judge_agreement import _kappa, _pearson
from rag_ttc_assets_tests.e2e.test_realsumm import run_and_measure

IDS = ["xsum101", "xsum202", "xsum303"]
DOCUMENTS = [
    "The city council approved a new bridge over the river on Monday. Construction will start in May and cost 40 "
    "million dollars. The mayor said the bridge would cut traffic in the old town.",
    "A rare white tiger was born at the national zoo last week. The cub weighs two kilograms and is healthy. "
    "Visitors can see the cub from June.",
    "The football club sacked its manager after five defeats in a row. The assistant coach will lead the team until "
    "the end of the season.",
]
REFERENCES = [
    "The council approved a 40 million dollar bridge, to be built from May.",
    "A white tiger cub, healthy and weighing two kilograms, was born at the national zoo.",
    "The club sacked its manager after five defeats; the assistant coach takes over.",
]
# SCUs.txt lines as written: trailing tabs, an empty field in the middle (both dropped).
SCU_LINES = [
    "The council approved a bridge.\tConstruction starts in May.\tThe bridge costs 40 million dollars.\t",
    "A white tiger cub was born.\t\tThe cub weighs two kilograms\tThe cub is healthy.\tThe cub was born at the "
    "national zoo.\t",
    "The club sacked its manager.\tThe assistant coach takes over.",
]
SCUS = [[f for f in line.split("\t") if f] for line in SCU_LINES]
# System file stem -> (arm name, summaries, labels per example: one 0/1 per SCU).
SYSTEMS = {
    "BertSum_Abs": ("bertsum-abs", [
        "The city council approved a new bridge. Construction starts in May.",
        "A white tiger cub was born at the national zoo last week.",
        "The football club sacked its manager after five defeats in a row.",
    ], ["110", "1001", "10"]),
    "t5.large": ("t5-large", [
        "The mayor said the bridge would cut traffic in the old town.",
        "The cub weighs two kilograms and is healthy.",
        "The assistant coach will lead the team until the end of the season.",
    ], ["000", "0110", "01"]),
    "ptgen": ("ptgen", [
        "The bridge will cost 40 million dollars.",
        "Visitors can see the tiger cub from June.",
        "The club sacked its manager and the assistant coach takes over.",
    ], ["101", "1000", "11"]),
}


def write_pyramid(root: Path) -> Path:
    """The files `convert-pyramid` reads, in Lite2-3Pyramid's data/PyrXSum layout and formats."""
    (root / "summaries").mkdir(parents=True)
    (root / "labels").mkdir()
    (root / "ids.txt").write_text("\n".join(IDS))  # no final newline, as in the repository
    (root / "documents.txt").write_text("\n".join(DOCUMENTS) + "\n")
    (root / "references.txt").write_text("\n".join(REFERENCES))
    (root / "SCUs.txt").write_text("\n".join(SCU_LINES) + "\n")
    for stem, (_, summaries, labels) in SYSTEMS.items():
        (root / "summaries" / f"{stem}.summary").write_text("\n".join(summaries))
        (root / "labels" / f"{stem}.label").write_text("\n".join("\t".join(lab) for lab in labels) + "\n")
    return root


def expected_labels() -> list[dict]:
    return [{"arm": arm, "question": q, "request": f"{q}.scu{k}", "addressed": v == "1"}
            for arm, _, labels in SYSTEMS.values() for q, lab in zip(IDS, labels) for k, v in enumerate(lab, 1)]


def test_convert_pyramid_run_its_arms_and_measure_the_judge_against_the_labels(tmp_path):
    src = write_pyramid(tmp_path / "PyrXSum")
    lab = tmp_path / "lab"
    code, out, err = rag_ttc("convert-pyramid", str(src), "--out", str(lab), "--name", "pyrmini", "--json")
    assert code == 0, err
    made = json.loads(out)
    expected = expected_labels()
    assert (made["documents"], made["questions"], made["requests"]) == (3, 3, 9)
    assert (made["systems"], made["summaries"], made["labels"], made["labelled_items"]) == (3, 9, 27, 27)
    assert made["items_by_label_count"] == {"1": 27}
    assert made["arms"] == ["bertsum-abs", "ptgen", "t5-large"]
    assert "no annotator ceiling" in made["annotators"]
    # Requests: the SCUs, empty fields dropped, numbered by position; a quote only where the SCU is verbatim.
    evaluation = json.loads((lab / "datasets" / "pyrmini" / "evaluation.json").read_text())
    q2 = evaluation["questions"][1]
    assert (q2["id"], q2["text"], q2["gold_answer"]) == ("xsum202", "Summarize the key facts of this document.",
                                                         REFERENCES[1])
    assert [(r["id"], r["text"], r["gold_answer"]) for r in q2["requests"]] == [
        (f"xsum202.scu{k}", t, t) for k, t in enumerate(SCUS[1], 1)]
    quoted = [(r["id"], r["evidence"]) for q in evaluation["questions"] for r in q["requests"] if r["evidence"]]
    assert quoted == [("xsum202.scu2", [{"doc_id": "xsum202", "quote": "The cub weighs two kilograms"}])]
    assert made["requests_with_quote"] == 1
    corpus = json.loads((lab / "datasets" / "pyrmini" / "corpus.json").read_text())
    assert [d["id"] for d in corpus["documents"]] == IDS and corpus["documents"][2]["text"] == DOCUMENTS[2]
    arms = yaml.safe_load((lab / "arms.yaml").read_text())
    assert arms["defaults"]["dataset"] == "pyrmini"
    assert set(arms["arms"]) == {"bertsum-abs", "ptgen", "t5-large"}
    assert arms["arms"]["t5-large"]["source"] == {"file": "systems/t5-large.json", "format": "ragchecker",
                                                  "answer_format": "free_text", "citation_style": "none"}
    rows = json.loads((lab / "systems" / "t5-large.json").read_text())["results"]
    assert [r["response"] for r in rows] == SYSTEMS["t5.large"][1]
    assert rows[0]["retrieved_context"] == [{"doc_id": "xsum101", "text": DOCUMENTS[0]}]
    labels_path = lab / "labels.jsonl"
    got = [json.loads(x) for x in labels_path.read_text().splitlines()]
    assert {(r["kind"], r["annotator"]) for r in got} == {("request", "majority")}
    key = lambda r: (r["arm"], r["question"], r["request"])  # noqa: E731
    assert sorted((key(r), r["addressed"]) for r in got) == sorted((key(r), r["addressed"]) for r in expected)
    readme = (lab / "README.md").read_text()
    assert "Zhang, Bansal" in readme and "no annotator ceiling" in readme and "aggregated labels" in readme
    code, _, err = rag_ttc("validate", str(lab / "datasets" / "pyrmini"))
    assert code == 0, err

    env, report = run_and_measure(lab, tmp_path, made["arms"])
    rep = report["request_labels"]
    assert rep["annotators"] == ["majority"]

    # The judge's own rows.
    verdict = {}
    for arm in made["arms"]:
        rj = pl.read_parquet(lab / ".rag_ttc" / "store" / "arms" / arm / "request_judgments.parquet")
        assert set(rj["status"]) == {"judged"}
        verdict |= {(arm, r["query_id"], r["request_id"]): r["addressed"] for r in rj.iter_rows(named=True)}
    assert len(verdict) == 27
    (judge,) = rep["rows"]  # the judge only: one label per item, no ceiling row
    assert judge["kind"] == "judge" and judge["n"] == 27 and judge["not_measured"] == 0
    pairs = [(r["addressed"], verdict[key(r)]) for r in expected]
    assert len({j for _, j in pairs}) > 1 and any(h != j for h, j in pairs)
    assert judge["accuracy"] == pytest.approx(sum(h == j for h, j in pairs) / len(pairs))
    assert judge["kappa"] == pytest.approx(_kappa(pairs))
    assert len(judge["disagreements"]) == sum(h != j for h, j in pairs)
    assert not [r for r in rep["majority"]["rows"] if r["kind"] == "ceiling"]
    # Completeness per answer: the judge's share of the answer's requests against the labels' share.
    per_answer: dict[tuple, list[tuple[bool, bool]]] = {}
    for r in expected:
        per_answer.setdefault(key(r)[:2], []).append((verdict[key(r)], r["addressed"]))
    x = [sum(j for j, _ in v) / len(v) for v in per_answer.values()]
    y = [sum(h for _, h in v) / len(v) for v in per_answer.values()]
    levels = report["request_completeness"]["levels"]
    # The judge (read twice: by its share of requests addressed, and graded by their mean coverage), and beside it
    # the reference scorer (the plain content-word recall of the reference summary): no ceiling row.
    assert sorted(r["kind"] for rs in levels.values() for r in rs) == ["judge"] * 4 + ["reference"] * 2
    (answer,) = [r for r in levels["answer"] if r["kind"] == "judge" and not r["rater"].endswith("(graded)")]
    assert answer["n"] == 9 and answer["pearson"]["r"] == pytest.approx(_pearson(x, y))
    (arm_level,) = [r for r in levels["arm"] if r["kind"] == "judge" and not r["rater"].endswith("(graded)")]
    assert arm_level["n"] == 3
    (graded,) = [r for r in levels["answer"] if r["rater"] == answer["rater"] + " (graded)"]
    assert graded["n"] == 9 and graded["not_measured"] == 0
    (reference,) = [r for r in levels["answer"] if r["kind"] == "reference"]
    assert reference["n"] == 9 and reference["not_measured"] == 0

    code, out, err = rag_ttc("judge-agreement", str(labels_path), env=env, cwd=lab)
    assert code == 0, err
    assert "completeness from the per-request labels" in out and "no ceiling" in out
    assert " ceiling " not in out and "an annotator vs the others" not in out


def _convert(src: Path, out: Path, *extra: str):
    return rag_ttc("convert-pyramid", str(src), "--out", str(out), "--name", "pyrmini", *extra)


@pytest.mark.parametrize("case", ["label_count", "label_value", "summary_without_labels", "labels_without_summary",
                                  "line_count", "empty_scu_line", "unknown_system", "bad_name"])
def test_bad_pyramid_input_names_the_file_the_line_and_the_field_and_writes_nothing(tmp_path, case):
    src = write_pyramid(tmp_path / "PyrXSum")
    label = src / "labels" / "ptgen.label"
    extra: tuple[str, ...] = ()
    if case == "label_count":
        label.write_text("1\t0\t1\n1\t0\t0\n1\t1\n")
        want = f"{label}: line 2: field 'labels': 3 labels, but line 2 of SCUs.txt (example xsum202) has 4 SCUs"
    elif case == "label_value":
        label.write_text("1\t0\t1\n1\t0\t0\t0\n1\t2\n")
        want = f"{label}: line 3: field 'label 2': '2', 0 (absent) or 1 (present)"
    elif case == "summary_without_labels":
        label.unlink()
        want = f"{src / 'summaries' / 'ptgen.summary'}: no label file labels/ptgen.label"
    elif case == "labels_without_summary":
        (src / "labels" / "extra_system.label").write_text("1\t0\t1\n1\t0\t0\t0\n1\t1\n")
        want = f"{src / 'labels' / 'extra_system.label'}: no summary file summaries/extra_system.summary"
    elif case == "line_count":
        (src / "references.txt").write_text("\n".join(REFERENCES[:2]) + "\n")
        want = f"{src / 'references.txt'}: line 3: field 'reference': missing (2 lines, 3 expected"
    elif case == "empty_scu_line":
        (src / "SCUs.txt").write_text("\n".join([SCU_LINES[0], "\t", SCU_LINES[2]]) + "\n")
        want = f"{src / 'labels' / 'BertSum_Abs.label'}: line 2: field 'labels': 4 labels, but line 2 of SCUs.txt (example xsum202) has no SCU"
    elif case == "unknown_system":
        extra = ("--systems", "ptgen,nope")
        want = "--systems: unknown system 'nope'; the systems are bertsum-abs, ptgen, t5-large"
    else:
        code, _, err = rag_ttc("convert-pyramid", str(src), "--out", str(tmp_path / "out"), "--name", "Pyr/X")
        assert code == 1 and "--name: 'Pyr/X' is not a valid dataset name" in err
        assert not (tmp_path / "out").exists()
        return
    code, _, err = _convert(src, tmp_path / "out", *extra)
    assert code == 1 and want in err, err
    assert not (tmp_path / "out").exists()


def test_convert_pyramid_a_subset_of_systems(tmp_path):
    src = write_pyramid(tmp_path / "PyrXSum")
    code, out, err = _convert(src, tmp_path / "out", "--systems", "t5.large", "--json")
    assert code == 0, err
    assert json.loads(out)["arms"] == ["t5-large"]
    got = [json.loads(x) for x in (tmp_path / "out" / "labels.jsonl").read_text().splitlines()]
    assert len(got) == 9 and {r["arm"] for r in got} == {"t5-large"}
