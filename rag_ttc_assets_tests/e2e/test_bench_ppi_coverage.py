"""`rag-ttc bench --only ppi_coverage` (issue 44, Validation): the prediction-powered 95% interval of labelling/ppi.py, on
a constructed arm whose judges are biased by a known amount, covers the truth in at least 94% of 1,000 samples and is
narrower than the human-only interval at the same number of labels; an estimator that drops the rectifier fails the
same check. Every setting is held to the target, n = 20 included: the intervals take Student's t with the
Satterthwaite degrees of freedom (with the normal quantile the noisy judge's n = 20 covered 0.936 to 0.938,
docs/judges.md "Does the corrected interval cover?"). The LFQA-Verification part runs when RAG_TTC_HUMAN_LABELS names the sets'
folder (on the first question: its figures are the bench's, the test checks the rows against the labels file)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rag_ttc_assets.bench import ppi_coverage
from rag_ttc_assets_tests.conftest import REPO


def test_bench_prints_coverage_and_width_ratio_per_setting_and_meets_the_target(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "rag_ttc_assets.bench", "--only", "ppi_coverage", "--json", "--home",
         str(tmp_path / "home")], capture_output=True, text=True, cwd=REPO, timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))})
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout)["items"]["ppi_coverage"]
    rows = r["settings"]
    assert {(s["setting"], s["n"]) for s in rows} == {
        (f"judge {j}, {how}", n) for j in ppi_coverage.JUDGES for how in ("uniform", "stratified") for n in (20, 50, 100)}
    assert all(s["repeats"] == 1000 for s in rows) and len(r["notes"]) == len(rows)
    y, _ = ppi_coverage.constructed_set()
    assert all(s["truth"] == pytest.approx(float(y.mean())) for s in rows)
    for s in rows:
        assert s["coverage"] >= 0.94 and s["width_ratio"] < 1, s
    assert r["verdict"] == "meets"


def test_an_estimator_without_the_rectifier_fails_the_same_check():
    def judge_only(f_all, y, f_lab, alpha=0.05):  # the judge's mean, the PPI interval's width: no correction
        from rag_ttc_assets.labelling.ppi import ppi_mean
        theta, lo, hi = ppi_mean(f_all, y, f_lab, alpha)
        mean = np.broadcast_to(np.asarray(f_all).mean(axis=-1), theta.shape)
        return mean, mean - (theta - lo), mean + (hi - theta)

    def judge_only_weighted(f, y, labelled, strata, probability, alpha=0.05):
        from rag_ttc_assets.labelling.ppi import ppi_mean_stratified
        theta, lo, hi = ppi_mean_stratified(f, y, labelled, strata, probability, alpha)
        mean = np.broadcast_to(np.asarray(f).mean(axis=-1), theta.shape)
        return mean, mean - (theta - lo), mean + (hi - theta)

    rows = ppi_coverage.constructed_study(sizes=(50,), ppi=judge_only, ppi_weighted=judge_only_weighted)
    assert len(rows) == 4 and all(s.coverage < 0.94 and not s.meets for s in rows)  # +0.15, uncorrected


def test_lfqa_slice_rows_are_the_labels_and_the_judge(tmp_path, monkeypatch):
    root = os.environ.get(ppi_coverage.HUMAN_LABELS_ENV)
    if not root:
        pytest.skip(f"{ppi_coverage.HUMAN_LABELS_ENV} is not set: it names the folder of public human-labelled sets "
                    "(lfqa-verification/)")
    lfqa = Path(root) / "lfqa-verification"
    monkeypatch.setenv(ppi_coverage.CACHE_ENV, str(tmp_path / "cache"))
    rows, about = ppi_coverage.lfqa_study(lfqa, sizes=(20,), limit=1)
    assert len(list((tmp_path / "cache").glob("lfqa-*.json"))) == 1
    assert ppi_coverage.lfqa_study(lfqa, sizes=(20,), limit=1) == (rows, about)  # read back from the cache
    files = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((lfqa / "annotations").glob("annotations-*.json"))]
    first = sorted({rec["question_id"] for recs in files for rec in recs})[:1]
    labels = [lab for recs in files for rec in recs if rec["question_id"] in first
              for a in rec["annotations"] for lab in a["labels"]]
    assert about.labels == len(labels) and about.questions == 1 and about.answers == 6
    assert about.claims + about.dropped == len(labels) // 3
    assert 0 <= about.judge_mean <= 1 and 0 < about.truth < 1
    assert [(s.setting, s.n, s.repeats) for s in rows] == [
        ("judge support judge local/lexical, uniform", 20, 1000), ("judge support judge local/lexical, stratified", 20, 1000)]
    assert all(0 <= s.coverage <= 1 and s.width_ratio > 0 for s in rows)


def test_a_folder_without_the_set_is_a_clear_error_naming_the_variable_and_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv(ppi_coverage.HUMAN_LABELS_ENV, str(tmp_path))
    monkeypatch.setenv(ppi_coverage.CACHE_ENV, str(tmp_path / "cache"))
    with pytest.raises(SystemExit) as e:
        ppi_coverage.bench_ppi_coverage_lfqa(None, tmp_path, 1)
    msg = str(e.value)
    assert msg.startswith(f"rag-ttc: error: bench ppi_coverage_lfqa: {ppi_coverage.HUMAN_LABELS_ENV}={tmp_path}: ")
    assert str(tmp_path / "lfqa-verification" / "annotations") in msg and "annotations-<system>.json" in msg
