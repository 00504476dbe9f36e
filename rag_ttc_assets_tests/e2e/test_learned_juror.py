"""The learned juror (`local/learned`) through the user's path: `rag-ttc run` on the mini lab with a panel including
it and with it as an arm's one request judge (0 provider calls, named as an offline baseline, every verdict read off
its probability and threshold, which its reason states), its parameters file's digest in the instrument (a refit is
another instrument: `compare` refuses the pair), a corrupted parameters file refused naming the file and the field;
and the training script on a tiny set in Lite2-3Pyramid's layout (records invented here) writing a parameters file
that loads."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from rag_ttc_assets.adapters import learned_juror as lf
from rag_ttc_assets.judging import learned_judge as lj
from rag_ttc_assets_tests.conftest import MINI_DEFAULTS, mini_corpus, mini_questions, write_dataset
from rag_ttc_assets_tests.e2e.test_cli import REPO, rag_ttc
from rag_ttc_assets_tests.e2e.test_pyramid import write_pyramid

ARMS = MINI_DEFAULTS + """arms:
  panel: {request_judges: [local/lexical, local/learned]}
  learned: {request_judge: {model: local/learned}}
"""
PROBABILITY = re.compile(r"probability (\d\.\d+) (>=|<) (\d\.\d\d)")


def _lab(tmp_path: Path) -> dict:
    corpus = mini_corpus()
    write_dataset(tmp_path / "datasets" / "mini", corpus, mini_questions(corpus))
    (tmp_path / "arms.yaml").write_text(ARMS, encoding="utf-8")
    env = {"RAG_TTC_DATASETS": str(tmp_path / "datasets"), "RAG_TTC_ARMS": str(tmp_path / "arms.yaml"),
           "RAG_TTC_HOME": str(tmp_path / "home"), "DAGSTER_HOME": str(tmp_path / "dagster_home")}
    os.makedirs(env["DAGSTER_HOME"])
    return env


def _verdicts(store: Path, arm: str) -> list[dict]:
    """The learned juror's verdicts of the arm: a panel's juror's, or the one request judge's rows."""
    out = []
    for r in pl.read_parquet(store / arm / "request_judgments.parquet").iter_rows(named=True):
        if r.get("jurors"):
            out += [j for j in json.loads(r["jurors"]) if j["model"] == "local/learned"]
        else:
            out.append(r)
    return out


def test_the_learned_juror_runs_in_a_panel_and_alone_its_parameters_digest_is_its_instrument(tmp_path):
    env = _lab(tmp_path)
    code, out, err = rag_ttc("run", "panel", "learned", env=env)
    assert code == 0, err
    assert "local/learned is an offline baseline juror" in out and "0 provider calls" in out
    store = tmp_path / "home" / "store" / "arms"
    shipped = lf.load_parameters(lf.PARAMETERS)
    digest = "sha256:" + hashlib.sha256(lf.PARAMETERS.read_bytes()).hexdigest()
    for arm in ("panel", "learned"):
        summary = json.loads((store / arm / "request_judge_summary.json").read_text())
        inst = summary["request_judge"]
        assert inst["learned"]["digest"] == digest and inst["learned"]["parameters"] == "learned_juror.json"
        assert inst["offline_baseline"] is True and summary["provider_calls"] == 0
        verdicts = [v for v in _verdicts(store, arm) if v["status"] == "judged"]
        assert len(verdicts) >= 10
        assert any(v["addressed"] for v in verdicts) and any(not v["addressed"] for v in verdicts)
        for v in verdicts:
            # Every verdict is its probability against the threshold, and its reason says so in the same words.
            p, op, t = PROBABILITY.search(v["reason"]).groups()
            assert float(t) == pytest.approx(shipped.threshold)
            assert (op == ">=") == (float(p) >= shipped.threshold)
            if v["verdict"] != "contradicts":
                assert v["addressed"] == (op == ">=") == (v["coverage"] >= shipped.threshold)
            assert 0 <= v["coverage"] <= 1

    # A refit (another parameters file, here the shipped one with another threshold) makes the arm's judgments
    # stale and is another instrument: `compare` refuses the pair, naming the fitted parameters.
    refit = json.loads(lf.PARAMETERS.read_text())
    refit["threshold"] = 0.9 if shipped.threshold < 0.8 else 0.2
    other = tmp_path / "refit.json"
    other.write_text(json.dumps(refit), encoding="utf-8")
    code, out, err = rag_ttc("run", "learned", env={**env, lf.ENV: str(other)})
    assert code == 0, err
    assert "learned: ran " in out and "up to date" not in out
    inst = json.loads((store / "learned" / "request_judge_summary.json").read_text())["request_judge"]
    assert inst["learned"]["digest"] == "sha256:" + hashlib.sha256(other.read_bytes()).hexdigest() != digest
    assert inst["learned"]["parameters"] == "refit.json"
    # The refit's replies were not served from the shipped fit's cache: its verdicts follow its own threshold.
    for v in _verdicts(store, "learned"):
        if v["status"] == "judged" and v["verdict"] != "contradicts":
            assert v["addressed"] == (v["coverage"] >= refit["threshold"])
    code, _, err = rag_ttc("compare", "panel", "learned", env=env)
    assert code == 1 and "instrument drift" in err and "learned: panel {" in err
    code, out, err = rag_ttc("compare", "panel", "learned", "--allow-instrument-drift", "--json", env=env)
    assert code == 0, err
    assert json.loads(out)["instrument_drift"] == ["model", "panel_rules", "learned"]  # a panel against one judge

    # A corrupted parameters file: refused before anything runs, naming the file and the field; no traceback.
    broken = dict(refit, coefficients=[*refit["coefficients"][:2], "x", *refit["coefficients"][3:]])
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(broken), encoding="utf-8")
    code, out, err = rag_ttc("run", "learned", "--force", env={**env, lf.ENV: str(bad)})
    assert code == 1 and "Traceback" not in err
    assert f"{bad}: field 'coefficients[2]': expected a finite number, got 'x'" in err
    bad.write_text(json.dumps({**refit, "features": refit["features"][:-1]}), encoding="utf-8")
    code, out, err = rag_ttc("run", "learned", "--force", env={**env, lf.ENV: str(bad)})
    assert code == 1 and f"{bad}: field 'features': expected" in err and "Traceback" not in err


def test_the_shipped_parameters_file_is_checked_field_by_field(tmp_path):
    juror = lf.load_parameters()
    assert juror.features == lj.FEATURES and 0 < juror.threshold < 1
    assert juror.meta["trained_on"] and juror.meta["rules"]
    raw = json.loads(lf.PARAMETERS.read_text())
    for field, value, said in (("threshold", 1.5, "field 'threshold': expected a probability"),
                               ("format", "learned-juror/0", "field 'format': expected 'learned-juror/1'"),
                               ("intercept", None, "field 'intercept': expected a finite number"),
                               ("scaler", {"mean": raw["scaler"]["mean"], "scale": [0] * len(lj.FEATURES)},
                                "field 'scaler.scale[0]': expected a positive number")):
        path = tmp_path / f"{field}.json"
        path.write_text(json.dumps({**raw, field: value}), encoding="utf-8")
        with pytest.raises(lj.LearnedJurorError, match=re.escape(f"{path}: {said}")):
            lf.load_parameters(path)
    path = tmp_path / "truncated.json"
    path.write_bytes(lf.PARAMETERS.read_bytes()[:40])
    with pytest.raises(lj.LearnedJurorError, match=re.escape(f"{path}: not a JSON parameters file")):
        lf.load_parameters(path)


def test_the_training_script_fits_a_parameters_file_that_loads_from_a_set_in_lite2_3pyramids_layout(tmp_path):
    root = tmp_path / "Lite2-3Pyramid"
    for name in ("REALSumm", "PyrXSum"):
        write_pyramid(root / "data" / name)
    out, report = tmp_path / "fitted.json", tmp_path / "report.json"
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "train_learned_juror.py"), str(root), "--out",
                           str(out), "--cache", str(tmp_path / "features"), "--report", str(report),
                           "--data-commit", "0" * 40], capture_output=True, text=True, cwd=REPO, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    juror = lf.load_parameters(out)
    assert juror.features == lj.FEATURES and 0.05 <= juror.threshold <= 0.95
    assert juror.meta["trained_on"] == {"REALSumm": {"source": "github.com/ZhangShiyue/Lite2-3Pyramid data/REALSumm",
                                                     "commit": "0" * 40, "articles": 3, "labels": 27}}
    assert f"wrote {out} (fitted on REALSumm: 27 labels" in proc.stdout
    rows = json.loads(report.read_text())["rows"]
    # Cross-set: each set as the training set, read on both; beside the offline jurors and the reference.
    assert {(r["trained_on"], r["read_on"]) for r in rows if r["trained_on"]} == {
        (a, b) for a in ("REALSumm", "PyrXSum") for b in ("REALSumm", "PyrXSum")}
    assert {r["rater"] for r in rows if not r["trained_on"]} >= {"local/lexical", "local/coverage",
                                                                 "local/bertscore"}
    # The features were cached: a second run reads them and writes the same parameters.
    assert sorted(p.name for p in (tmp_path / "features").iterdir()) == ["PyrXSum.npz", "REALSumm.npz"]
    again = tmp_path / "again.json"
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "train_learned_juror.py"), str(root), "--out",
                           str(again), "--cache", str(tmp_path / "features"), "--data-commit", "0" * 40],
                          capture_output=True, text=True, cwd=REPO, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert again.read_bytes() == out.read_bytes()


def _vectors(texts):
    """Word vectors for a test: each stem its own unit vector (a hash into 256 dimensions), so soft recall is recall."""
    import numpy as np

    from rag_ttc_assets.core.text import content_word_spans

    out = []
    for t in texts:
        stems = [s for s, _, _ in content_word_spans(t)]
        v = np.zeros((len(stems), 256))
        for i, s in enumerate(stems):
            v[i, int(hashlib.sha256(s.encode()).hexdigest(), 16) % 256] = 1.0
        out.append((stems, v))
    return out


def test_a_verdict_is_its_probability_against_the_threshold_and_its_reason_says_so():
    import numpy as np

    from rag_ttc_assets.judging.request_judge import LabelledRequest

    # A juror that reads the lexical coverage alone: probability = sigmoid(10 * (coverage - 0.5)).
    n = len(lj.FEATURES)
    juror = lj.LearnedJuror(lj.FEATURES, (0.0,) * n, (1.0,) * n, (10.0,) + (0.0,) * (n - 1), -5.0, 0.5, "sha256:x",
                            "test.json", {})
    requests = [LabelledRequest("q.r1", "The bridge opens in May.", (), "The bridge opens in May."),
                LabelledRequest("q.r2", "The mayor resigned.", (), "The mayor resigned after the vote."),
                LabelledRequest("q.r3", "Tickets cost 40 dollars.", (), "Tickets cost 40 dollars."),
                LabelledRequest("q.r4", "What is the river called?", (), None)]
    answer = "The bridge opens in May. Tickets cost 50 dollars. The river is called Wear."
    out = lj.judge_requests_learned(requests, answer, ["c1"], [(answer, ["c1"])],
                                    lambda texts: np.ones((len(texts), 4)), _vectors, juror)
    got = {j.request: j.model_dump() for j in out}  # the reply each becomes (LearnedJuror.judge)
    assert got["q.r1"]["addressed"] and got["q.r1"]["verdict"] == "consistent"
    assert got["q.r1"]["reason"].startswith("addressed: probability 0.99 >= 0.50 (lexical 1.00, whole answer 1.00")
    assert got["q.r1"]["excerpt"] == "The bridge opens in May."
    assert not got["q.r2"]["addressed"] and got["q.r2"]["verdict"] == "not_addressed"
    assert got["q.r2"]["reason"].startswith("not addressed: probability 0.01 < 0.50 (lexical 0.00")
    # The number changed: contradicts, whatever the probability, and the reason says both.
    assert got["q.r3"]["verdict"] == "contradicts" and got["q.r3"]["addressed"]
    assert "and contradicts the gold whatever that probability" in got["q.r3"]["reason"]
    assert got["q.r4"]["verdict"] in ("not_verifiable", "not_addressed")
    for j in got.values():
        assert j["coverage"] == pytest.approx(1 / (1 + np.exp(-(10 * float(
            re.search(r"lexical (\d\.\d\d)", j["reason"]).group(1)) - 5))), abs=0.06)


@pytest.mark.parametrize(("p", "t", "carried"), [(0.44996, 0.45, 0.4499), (0.45, 0.45, 0.45), (0.450004, 0.45, 0.45),
                                                 (0.2, 0.45, 0.2)])
def test_a_probability_is_carried_on_its_side_of_the_threshold(p, t, carried):
    assert lj._share(p, t) == carried
