"""`rag-ttc convert-realsumm` on a small set built here in REALSumm's on-disk layout (three articles, three systems, one
of them extractive though filed under abs, three or four crowd assignments per HIT, BLANK padding, a HIT whose
statements are in another order than SCUs_list.csv), then the converted arms run and `rag-ttc judge-agreement` on
their labels, its kappa and accuracy recomputed by hand from the constructed labels and the judges' own rows; and
bad input refused naming the file, the row and the field, with nothing written."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
import yaml

from rag_ttc_assets_tests.e2e.test_cli import rag_ttc
from rag_ttc_assets_tests.e2e.test_judge_agreement import _kappa, _pearson
from rag_ttc_assets_tests.support.reliability import cli_in_process

SLOTS = 16
# Three articles (CNN/DM test line numbers 7, 42, 105), tagged and lower-cased as REALSumm's src.txt is.
LINES = [7, 42, 105]
ARTICLES = [
    "<t> the city council approved a new bridge over the river on monday . </t> <t> construction will start in may "
    "and cost 40 million dollars . </t> <t> the mayor said the bridge would cut traffic in the old town . </t>",
    "<t> a rare white tiger was born at the national zoo last week . </t> <t> the cub weighs two kilograms and is "
    "healthy . </t> <t> visitors can see the cub from june . </t>",
    "<t> the football club sacked its manager after five defeats in a row . </t> <t> the assistant coach will lead "
    "the team until the end of the season . </t>",
]
REFERENCES = [
    "<t> The council approved a new bridge . </t> <t> Construction starts in May and costs 40 million dollars . </t>",
    "<t> A white tiger cub was born at the national zoo . </t> <t> Visitors can see the cub from June . </t>",
    "<t> The club sacked its manager after five defeats . </t> <t> The assistant coach takes over . </t>",
]
# SCUs per article (the rest of its 16 slots BLANK); ids are SCUs_list.csv's questionId, 16 per article.
SCUS = {
    "cnndm7": ["The council approved a bridge.", "Construction starts in May.", "The bridge costs 40 million dollars."],
    "cnndm42": ["A white tiger cub was born.", "The cub was born at the national zoo.",
                "Visitors can see the cub from June.", "The cub is healthy."],
    "cnndm105": ["The club sacked its manager.", "The manager lost five games in a row."],
}
SUMMARY = {
    ("bart_out", "cnndm7"): "The city council approved a new bridge . Construction starts in May .",
    ("bart_out", "cnndm42"): "A white tiger cub was born at the national zoo last week .",
    ("bart_out", "cnndm105"): "The football club sacked its manager after five defeats in a row .",
    ("banditsumm_out", "cnndm7"): "the mayor said the bridge would cut traffic in the old town .",
    ("banditsumm_out", "cnndm42"): "visitors can see the cub from june . the cub weighs two kilograms and is healthy .",
    ("banditsumm_out", "cnndm105"): "the assistant coach will lead the team until the end of the season .",
    ("refresh_out", "cnndm7"): "the city council approved a new bridge over the river on monday .",
    ("refresh_out", "cnndm42"): "a rare white tiger was born at the national zoo last week .",
    ("refresh_out", "cnndm105"): "the football club sacked its manager after five defeats in a row .",
}
# Crowd answers per (system, article): one string per assignment, one p/n per SCU in SCUS order.
CROWD = {
    ("bart_out", "cnndm7"): ["ppn", "ppn", "pnn"],
    ("bart_out", "cnndm42"): ["ppnn", "pnnn", "ppnn", "pnnp"],
    ("bart_out", "cnndm105"): ["pp", "pp", "pn"],
    ("banditsumm_out", "cnndm7"): ["nnn", "pnn", "nnn"],
    ("banditsumm_out", "cnndm42"): ["nnpp", "nnpp", "nnpn"],
    ("banditsumm_out", "cnndm105"): ["nn", "nn", "np", "nn"],
    ("refresh_out", "cnndm7"): ["pnn", "pnn", "pnn"],
    ("refresh_out", "cnndm42"): ["ppnn", "ppnn", "pnnn"],
    ("refresh_out", "cnndm105"): ["pp", "pn", "pp"],
}
FILES = {"bart_out": ("abs", "bart_out_Batch_crowd_3.csv"), "banditsumm_out": ("abs", "banditsumm_out.csv"),
         "refresh_out": ("ext", "refresh_out.csv")}
ARM = {"bart_out": "abs-bart-out", "banditsumm_out": "ext-banditsumm-out", "refresh_out": "ext-refresh-out"}
SCORE_DIR = "human_annotations/SCUs_and_annotations"


def qid(article: str, k: int) -> str:
    return str(16 * list(SCUS).index(article) + k)


def _csv(header: list[str], rows: list[list[str]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def write_realsumm(root: Path) -> Path:
    """The files `convert-realsumm` reads, in REALSumm's layout and formats."""
    sel = root / "selected_docs_for_human_eval"
    (sel / "abs" / "ptr_generator").mkdir(parents=True)
    (sel / "abs" / "bart").mkdir(parents=True)
    (sel / "selected_documents.md").write_text(
        "# Aligned test set\n\nThe documents used for human judgment are at the following line numbers (zero "
        f"indexed):\n\n```\n{LINES}\n```\n")
    (sel / "abs" / "ptr_generator" / "src.txt").write_text("\n".join(ARTICLES) + "\n")
    (sel / "abs" / "bart" / "ref.txt").write_text("\n".join(REFERENCES) + "\n")
    scus = []
    for article, texts in SCUS.items():
        for k in range(SLOTS):
            text = texts[k] if k < len(texts) else "BLANK"
            scus.append([article, qid(article, k), text, "Y" if k < len(texts) else "N", "", article, "1"])
    d = root / SCORE_DIR
    d.mkdir(parents=True)
    (d / "SCUs_list.csv").write_text(_csv(
        ["eventId", "questionId", "questionText", "answer", "author", "sourceSummaryId", "forUse"], scus))
    header = ["Input.eventId", "Input.summaryId", "Input.qIdList", "Input.summary_text",
              *(f"Input.statement_{i}" for i in range(1, SLOTS + 1)),
              *(f"Answer.S{i}Answer" for i in range(1, SLOTS + 1)), ""]
    for system, (folder, name) in FILES.items():
        rows = []
        for (s, article), assignments in CROWD.items():
            if s != system:
                continue
            order = list(range(SLOTS))
            if (system, article) == ("bart_out", "cnndm42"):
                order = [3, 0, 2, 1, *range(4, SLOTS)]  # the statements in another order than SCUs_list.csv
            texts = SCUS[article]
            for answers in assignments:
                statements = [texts[k] if k < len(texts) else "BLANK" for k in order]
                # A BLANK slot's answer is noise ('n' or 'p'): the converter skips the slot.
                marks = [answers[k] if k < len(texts) else "pn"[k % 2] for k in order]
                rows.append([article, system, str([qid(article, k) for k in order]), SUMMARY[(system, article)],
                             *statements, *marks, ""])
        out = d / f"SCU_rating_results_{folder}_systems"
        out.mkdir(exist_ok=True)
        (out / name).write_text(_csv(header, rows))
    return root


def crowd_labels() -> list[dict]:
    """The labels the conversion must produce, from the tables above."""
    out = []
    for (system, article), assignments in CROWD.items():
        for pos, answers in enumerate(assignments, 1):
            for k, a in enumerate(answers):
                out.append({"arm": ARM[system], "question": article, "request": f"{article}.scu{qid(article, k)}",
                            "annotator": f"a{pos}", "addressed": a == "p"})
    return out


def _majority(values):
    yes = sum(values)
    return True if 2 * yes > len(values) else False if 2 * yes < len(values) else None


def run_and_measure(lab: Path, tmp_path: Path, arms: list[str]) -> tuple[dict, dict]:
    """`rag-ttc run` of a converted lab folder's arms, then `rag-ttc judge-agreement labels.jsonl --json`: (the
    environment naming the folder's arms file, datasets and store; the report). A panel's step line names what each
    juror judged."""
    env = {"RAG_TTC_ARMS": str(lab / "arms.yaml"), "RAG_TTC_DATASETS": str(lab / "datasets"),
           "RAG_TTC_HOME": str(lab / ".rag_ttc"), "DAGSTER_HOME": str(tmp_path / "dagster_home")}
    os.makedirs(env["DAGSTER_HOME"])
    code, out, err = rag_ttc("run", *arms, env=env, cwd=lab)
    assert code == 0, err
    panel = yaml.safe_load((lab / "arms.yaml").read_text())["defaults"].get("request_judges") or []
    for arm in arms if panel else ():
        [step] = re.findall(rf"^{re.escape(arm)} +request_judgments +\d.* s  \((.*)\)$", err, re.M)
        assert [j for j in panel if f"{j} request-judged " in step] == panel, step
    code, out, err = rag_ttc("judge-agreement", str(lab / "labels.jsonl"), "--json", env=env, cwd=lab)
    assert code == 0, err
    return env, json.loads(out)


def test_convert_realsumm_run_its_arms_and_measure_the_judges_against_the_crowd(tmp_path, capsys):
    src = write_realsumm(tmp_path / "REALSumm")
    lab = tmp_path / "lab"
    code, out, err = rag_ttc("convert-realsumm", str(src), "--out", str(lab),
                             "--request-judges", "local/lexical,local/coverage", "--json")
    assert code == 0, err
    made = json.loads(out)
    expected = crowd_labels()
    assert (made["documents"], made["questions"], made["requests"]) == (3, 3, 9)
    assert (made["systems"], made["summaries"], made["labels"]) == (3, 9, len(expected))
    per_item = Counter((r["arm"], r["question"], r["request"]) for r in expected)
    assert made["labelled_items"] == len(per_item) == 27
    assert made["items_by_label_count"] == {str(k): v for k, v in sorted(Counter(per_item.values()).items())}
    assert made["arms"] == ["abs-bart-out", "ext-banditsumm-out", "ext-refresh-out"]
    assert "positions within a HIT" in made["annotators"]
    # The labels, BLANK slots skipped and the reordered HIT mapped by its qIdList, are the constructed ones.
    labels_path = lab / "labels.jsonl"
    got = [json.loads(x) for x in labels_path.read_text().splitlines()]
    assert all(r["kind"] == "request" for r in got)
    key = lambda r: (r["arm"], r["question"], r["request"], r["annotator"])  # noqa: E731
    assert sorted((key(r), r["addressed"]) for r in got) == sorted((key(r), r["addressed"]) for r in expected)
    evaluation = json.loads((lab / "datasets" / "realsumm" / "evaluation.json").read_text())
    q7 = next(q for q in evaluation["questions"] if q["id"] == "cnndm7")
    assert q7["gold_answer"] == ("The council approved a new bridge . Construction starts in May and costs 40 million "
                                 "dollars .")
    assert [(r["id"], r["text"], r["gold_answer"]) for r in q7["requests"]] == [
        (f"cnndm7.scu{k}", t, t) for k, t in enumerate(SCUS["cnndm7"])]
    corpus = json.loads((lab / "datasets" / "realsumm" / "corpus.json").read_text())
    assert corpus["documents"][0]["text"].startswith("the city council approved")
    assert "<t>" not in corpus["documents"][0]["text"]
    readme = (lab / "README.md").read_text()
    assert "positions within one HIT" in readme and "CC BY 4.0" in readme
    arms = yaml.safe_load((lab / "arms.yaml").read_text())
    assert arms["arms"]["ext-banditsumm-out"]["source"] == {
        "file": "systems/ext-banditsumm-out.json", "format": "ragchecker", "answer_format": "free_text",
        "citation_style": "none"}
    rows = json.loads((lab / "systems" / "ext-banditsumm-out.json").read_text())["results"]
    assert rows[0]["response"] == SUMMARY[("banditsumm_out", "cnndm7")]
    assert rows[0]["retrieved_context"] == [{"doc_id": "cnndm7", "text": corpus["documents"][0]["text"]}]
    code, out, err = rag_ttc("validate", str(lab / "datasets" / "realsumm"))
    assert code == 0, err

    env, full_report = run_and_measure(lab, tmp_path, made["arms"])
    rep = full_report["request_labels"]

    # The judges' own rows: the panel's verdict, and each juror's.
    store = lab / ".rag_ttc" / "store" / "arms"
    verdict: dict[str, dict] = {}
    for arm in made["arms"]:
        rj = pl.read_parquet(store / arm / "request_judgments.parquet")
        assert set(rj["status"]) == {"judged"}
        for r in rj.iter_rows(named=True):
            item = (arm, r["query_id"], r["request_id"])
            verdict.setdefault("panel", {})[item] = r["addressed"]
            for j in json.loads(r["jurors"]):
                verdict.setdefault(f"juror {j['model']}", {})[item] = j["addressed"]
    assert len(verdict["panel"]) == 27
    rows = {r["rater"]: r for r in rep["rows"]}
    (panel,) = [r for name, r in rows.items() if name.startswith("request judge panel[all]")]
    # The constructed labels disagree with the judge somewhere and are not all one value: kappa is defined.
    assert panel["kappa"] is not None and panel["disagreements"]
    for name, judge in (("panel", panel), ("juror local/lexical", rows["juror local/lexical"]),
                        ("juror local/coverage", rows["juror local/coverage"])):
        pairs = [(r["addressed"], verdict[name][(r["arm"], r["question"], r["request"])]) for r in expected]
        assert judge["n"] == len(expected) and judge["not_measured"] == 0
        assert judge["accuracy"] == pytest.approx(sum(h == j for h, j in pairs) / len(pairs))
        if len({j for _, j in pairs}) > 1:
            assert judge["kappa"] == pytest.approx(_kappa(pairs))
        assert len(judge["disagreements"]) == sum(h != j for h, j in pairs)
    # The ceiling: every two positions over the items both labelled (a4 only where a HIT had four assignments).
    by_pos: dict[str, dict] = {}
    for r in expected:
        by_pos.setdefault(r["annotator"], {})[(r["arm"], r["question"], r["request"])] = r["addressed"]
    for x, y in (("a1", "a2"), ("a1", "a4"), ("a3", "a4")):
        shared = sorted(by_pos[x].keys() & by_pos[y].keys())
        c = rows[f"{x} vs {y}"]
        assert c["kind"] == "ceiling" and c["n"] == len(shared)
        pairs = [(by_pos[x][i], by_pos[y][i]) for i in shared]
        assert c["accuracy"] == pytest.approx(sum(a == b for a, b in pairs) / len(pairs))
        assert c["kappa"] == pytest.approx(_kappa(pairs))
    # Against the majority label (ties skipped: a 2-2 item), and one annotator against the others.
    items: dict[tuple, list[bool]] = {}
    for r in expected:
        items.setdefault((r["arm"], r["question"], r["request"]), []).append(r["addressed"])
    m = {r["rater"]: r for r in rep["majority"]["rows"]}
    maj = [(_majority(v), verdict["panel"][i]) for i, v in items.items() if _majority(v) is not None]
    row = m[panel["rater"]]
    assert row["n"] == len(maj) == 26 and row["ties_skipped"] == 1  # bart_out on cnndm42's second SCU: 2-2
    assert row["accuracy"] == pytest.approx(sum(a == b for a, b in maj) / len(maj))
    loo = [(v[k], _majority(v[:k] + v[k + 1:])) for v in items.values() for k in range(len(v))]
    loo = [(x, y) for x, y in loo if y is not None]
    ceiling = m["an annotator vs the others"]
    assert ceiling["n"] == len(loo)
    assert ceiling["accuracy"] == pytest.approx(sum(a == b for a, b in loo) / len(loo))
    assert ceiling["kappa"] == pytest.approx(_kappa(loo))

    # Completeness per answer: the panel's share of the answer's requests against the majority's share, over the
    # items whose majority is defined.
    rows_x, rows_y = {}, {}
    for item, v in items.items():
        if _majority(v) is not None:
            rows_x.setdefault(item[:2], []).append(verdict["panel"][item])
            rows_y.setdefault(item[:2], []).append(_majority(v))
    x = [sum(v) / len(v) for v in rows_x.values()]
    y = [sum(rows_y[k]) / len(rows_y[k]) for k in rows_x]
    (answer,) = [r for r in full_report["request_completeness"]["levels"]["answer"] if r["rater"] == panel["rater"]]
    assert answer["n"] == 9 and len(set(x)) > 1 and len(set(y)) > 1
    assert answer["pearson"]["r"] == pytest.approx(_pearson(x, y))

    code, out, err = rag_ttc("judge-agreement", str(labels_path), env=env, cwd=lab)
    assert code == 0, err
    assert "completeness from the per-request labels" in out
    assert "a1 vs a2" in out and "an annotator vs the others" in out and "juror local/coverage" in out

    # An arm whose panel judged with another request judge prompt (here its rows' digest rewritten as a store judged
    # with an edited prompt would hold them): each juror is then one rater per prompt digest, never pooled.
    first = store / made["arms"][0] / "request_judgments.parquet"
    rj = pl.read_parquet(first)
    (digest,) = set(rj["prompt_digest"])
    other = "sha256:" + "0" * 64
    rj.with_columns(pl.lit(other).alias("prompt_digest")).write_parquet(first)
    # (The command's entry point in this process: judge-agreement ran as a subprocess above.)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(lab)
        code, out, err = cli_in_process("judge-agreement", str(labels_path), "--json", env=env, capsys=capsys)
    assert code == 0, err
    split = {r["rater"]: r for r in json.loads(out)["request_labels"]["rows"]}
    for model in ("local/lexical", "local/coverage"):
        assert f"juror {model}" not in split
        mine, theirs = split[f"juror {model} ({digest[:19]}…)"], split[f"juror {model} ({other[:19]}…)"]
        assert theirs["n"] == sum(r["arm"] == made["arms"][0] for r in expected)
        assert mine["n"] + theirs["n"] == rows[f"juror {model}"]["n"]


def test_bad_realsumm_input_names_the_file_the_row_and_the_field_and_writes_nothing(tmp_path, capsys):
    # `rag-ttc convert-realsumm` through the command's entry point in this process (the test above runs it as a
    # subprocess): an exception escaping it fails the test as a traceback would.
    def rag_ttc(*args):
        return cli_in_process(*args, env={}, capsys=capsys)

    def _convert(src: Path, out: Path):
        return rag_ttc("convert-realsumm", str(src), "--out", str(out))

    src = write_realsumm(tmp_path / "REALSumm")
    crowd = src / SCORE_DIR / "SCU_rating_results_abs_systems" / "bart_out_Batch_crowd_3.csv"
    good = crowd.read_text()

    # A statement that does not match SCUs_list.csv (row 3: the second assignment of the first HIT).
    lines = good.splitlines(keepends=True)
    lines[2] = lines[2].replace("Construction starts in May.", "Construction starts in June.", 1)
    crowd.write_text("".join(lines))
    code, _, err = _convert(src, tmp_path / "out1")
    assert code == 1
    assert (f"{crowd}: row 3: field 'Input.statement_2': 'Construction starts in June.' does not match SCU 1 of "
            f"{SCORE_DIR}/SCUs_list.csv") in err
    assert not (tmp_path / "out1").exists()

    # A crowd file without the column the summaries are read from.
    crowd.write_text(good.replace("Input.summary_text", "Input.summary"))
    code, _, err = _convert(src, tmp_path / "out2")
    assert code == 1 and f"{crowd}: row 1 (header): column 'Input.summary_text' missing" in err
    assert not (tmp_path / "out2").exists()

    # An answer that is neither p nor n on a slot that is not BLANK.
    lines = good.splitlines(keepends=True)
    row = next(csv.reader([lines[1]]))
    row[4 + SLOTS] = "maybe"  # Answer.S1Answer
    lines[1] = _csv(["x"], [row]).split("\n", 1)[1]
    crowd.write_text("".join(lines))
    code, _, err = _convert(src, tmp_path / "out3")
    assert code == 1 and f"{crowd}: row 2: field 'Answer.S1Answer': 'maybe'" in err
    crowd.write_text(good)

    # A missing file.
    (src / SCORE_DIR / "SCUs_list.csv").unlink()
    code, _, err = _convert(src, tmp_path / "out4")
    assert code == 1 and f"{src / SCORE_DIR / 'SCUs_list.csv'}: file not found" in err
    assert not (tmp_path / "out4").exists()

    # An unknown system for --systems names the known ones.
    src2 = write_realsumm(tmp_path / "REALSumm2")
    code, _, err = rag_ttc("convert-realsumm", str(src2), "--out", str(tmp_path / "out5"), "--systems", "abs-nope")
    assert code == 1 and "--systems: unknown system 'abs-nope'; the systems are abs-bart-out, ext-banditsumm-out" in err
    # A subset: only the named systems' arms and labels.
    code, out, err = rag_ttc("convert-realsumm", str(src2), "--out", str(tmp_path / "out6"), "--systems",
                             "ext-banditsumm-out", "--json")
    assert code == 0, err
    assert json.loads(out)["arms"] == ["ext-banditsumm-out"]
    assert list(yaml.safe_load((tmp_path / "out6" / "arms.yaml").read_text())["arms"]) == ["ext-banditsumm-out"]
    got = [json.loads(x) for x in (tmp_path / "out6" / "labels.jsonl").read_text().splitlines()]
    assert len(got) == sum(1 for r in crowd_labels() if r["arm"] == "ext-banditsumm-out")
    assert {r["arm"] for r in got} == {"ext-banditsumm-out"}
