"""The public human-labelled sets themselves (LFQA-Verification, WiCE; not committed: third-party data), read from
the folder RAG_TTC_HUMAN_LABELS names (.ci/run sets it when the CI machine keeps them beside the clone): a small
slice of each converted by `rag-ttc convert-lfqa` / `convert-wice`, its arms run and `rag-ttc judge-agreement` on
its labels, checked for structure and sanity (every label read, every claim measured or counted, figures in range,
the people above chance with each other), never for figures of the sets. Without the variable the tests skip,
naming it; with it, a folder without the sets fails, naming what is missing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rag_ttc_assets_tests.e2e.test_cli import rag_ttc
from rag_ttc_assets_tests.e2e.test_realsumm import run_and_measure

HUMAN_LABELS_ENV = "RAG_TTC_HUMAN_LABELS"
SETS = {"lfqa": ("lfqa-verification", "annotations"), "wice": ("wice", "entailment_retrieval/claim")}


def _set(name: str) -> Path:
    root = os.environ.get(HUMAN_LABELS_ENV)
    if not root:
        pytest.skip(f"{HUMAN_LABELS_ENV} is not set: it names the folder of public human-labelled sets "
                    f"({', '.join(f'{d}/' for d, _ in SETS.values())}; not committed: .ci/run sets it when the machine "
                    "keeps them in a folder beside the clone)")
    folder, inner = SETS[name]
    path = Path(root) / folder
    if not (path / inner).is_dir():
        pytest.fail(f"{HUMAN_LABELS_ENV}={root}: {path / inner} is missing", pytrace=False)
    return path


def _in_range(r: dict) -> None:
    assert r["n"] > 0
    assert -1 <= r["kappa"] <= 1 and 0 <= r["accuracy"] <= 1
    assert sum(v for row in r["confusion"].values() for v in row.values()) == r["n"]


def test_the_variable_is_set_by_ci_when_the_folder_exists():
    ci = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text()
    assert all(name in ci for name in (HUMAN_LABELS_ENV, "human_labels"))


def test_lfqa_slice_converted_run_and_measured(tmp_path):
    src = _set("lfqa")
    lab = tmp_path / "lfqa"
    code, out, err = rag_ttc("convert-lfqa", str(src), "--out", str(lab), "--limit", "5",
                             "--systems", "webgpt,gpt3-whudoc", "--json")
    assert code == 0, err
    made = json.loads(out)
    assert made["questions"] == 5 and made["systems"] == 2 and made["answers"] == 10
    assert made["labels"] == 3 * made["claims"] and made["claims_by_label_count"] == {"3": made["claims"]}
    assert sum(made["support_shares"].values()) == pytest.approx(1)
    _, report = run_and_measure(lab, tmp_path, made["arms"])
    cl = report["claim_labels"]
    assert cl["labels"] == made["labels"] and cl["annotators"] == ["a1", "a2", "a3"]
    judge, *ceiling = cl["rows"]
    assert judge["rater"] == "support judge local/lexical"
    _in_range(judge)
    assert judge["n"] + judge["not_measured"] == made["labels"]
    assert judge["not_measured"] <= 0.05 * made["labels"]  # a claim the judge drops (no content word) is rare
    assert [r["rater"] for r in ceiling] == ["a1 vs a2", "a1 vs a3", "a2 vs a3"]
    for r in ceiling:
        _in_range(r)
        assert r["n"] == made["claims"] and r["kappa"] > 0  # people agree above chance
        assert r["three_way"]["n"] == made["claims"]
    kinds = {(r["rater"], r["kind"]) for r in cl["majority"]["rows"]}
    assert {("an annotator vs the others", "ceiling"), ("support judge local/lexical vs the others", "judge")} <= kinds
    answers = {r["rater"]: r for r in cl["answers"]["rows"]}
    assert answers["support judge local/lexical"]["n"] + answers["support judge local/lexical"]["not_measured"] == 10
    for r in answers.values():
        assert r["pearson"]["r"] is None or -1 <= r["pearson"]["r"] <= 1


def test_wice_slice_converted_run_and_measured(tmp_path):
    src = _set("wice")
    lab = tmp_path / "wice"
    code, out, err = rag_ttc("convert-wice", str(src), "--out", str(lab), "--limit", "6", "--json")
    assert code == 0, err
    made = json.loads(out)
    assert (made["questions"], made["answers"], made["claims"], made["labels"]) == (6, 6, 6, 6)
    assert made["requests_with_quote"] <= 6 and made["documents"] == 6
    _, report = run_and_measure(lab, tmp_path, ["wikipedia"])
    cl = report["claim_labels"]
    (judge,) = cl["rows"]  # one label per claim: no ceiling
    _in_range(judge)
    assert judge["n"] + judge["not_measured"] == 6
    assert cl["majority"]["items_with_two_or_more_labels"] == 0
    (answers,) = cl["answers"]["rows"]
    assert answers["n"] + answers["not_measured"] == 6
