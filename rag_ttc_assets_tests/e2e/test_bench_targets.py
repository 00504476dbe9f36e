"""`rag-ttc bench --targets`: issue 46's figures beside their targets in one run. At tiny sizes, on the mini lab and
the clustered stand-in for the realistic vectors: every figure the issue sets a target for is measured and printed
with its target and a verdict (times are never asserted: the verdicts are whatever this machine measured)."""

import os
import subprocess
import sys

from rag_ttc_assets.bench import targets
from rag_ttc_assets.bench.labs import LabSpec
from rag_ttc_assets_tests.conftest import MINI_ARMS, REPO, mini_corpus, mini_questions, write_dataset


def test_one_run_prints_every_figure_beside_its_target(tmp_path):
    corpus = mini_corpus()
    write_dataset(tmp_path / "datasets" / "mini", corpus, mini_questions(corpus))
    (tmp_path / "arms.yaml").write_text(MINI_ARMS, encoding="utf-8")
    spec = LabSpec(tmp_path / "arms.yaml", tmp_path / "datasets", REPO / "prompts", "mini")
    report = targets.run_targets(400, home=tmp_path / "bench", spec=spec, ann_source="clustered",
                                 ann_types=("ivf_sq",), sizes=[20, 60], embed_max=30)
    rows = {r.figure: r for r in report.rows}
    for name in ("offline_answers ratio", "offline_judging ratio"):
        assert rows[name].target == "<= 1.3" and float(rows[name].measured) > 0
        assert "distinct" in rows[name].detail  # the texts the stage sent the model, each once
    ann = [r for name, r in rows.items() if name.startswith("ivf_sq at 400 realistic rows")]
    assert len(ann) == 1 and ann[0].measured.startswith("recall ")
    assert ann[0].verdict in ("reaches", "short")  # a type's row; the target is the row below
    assert rows["at least one index type"].verdict == ("meets" if ann[0].verdict == "reaches" else "NOT met")
    assert rows["peak_rss_mb at 60 chunks"].target == "<= 4096"
    assert "peak_rss_mb at 1,000,000 chunks, extrapolated" in rows
    assert rows["admission exponent, 20 to 60 chunks"].target == "<= 1.05"
    counted = [r for r in report.rows if r is not ann[0]]
    assert all(r.verdict in ("meets", "NOT met") for r in counted)
    printed = targets.format_targets(report)
    met = sum(r.verdict == "meets" for r in counted)
    assert printed.startswith(f"issue 46 targets at 400 chunks: {met} of {len(counted)} met ")
    assert all(r.figure in printed for r in report.rows)


def test_targets_without_the_realistic_corpus_say_what_is_missing():
    from rag_ttc_assets.bench import ann_realistic, growth

    steps = {step: 1.0 for step in growth.TARGET_STEPS}
    report = {"chunks": 100,
              "offline": {"items": {n: {"ratio": 1.4, "target": "<= 1.3", "verdict": "misses", "cpu_ratio": 1.2,
                                        "detail": "9 texts"} for n in targets.OFFLINE}},
              "ann_realistic": {"chunks": 100, "k": 10, "target_recall": 0.95, "target_p95_ms": 20.0, "cpus": 2,
                                "sets": {},
                                "notes": ["realistic vectors skipped: RAG_TTC_HUMAN_LABELS is not set"]},
              "growth": {"arm": "baseline", "chunk_runes": 1200, "overlap_runes": 120, "embed_max": 30, "repeat": 1,
                         "cpus": 2, "python": "3.11", "total_seconds": 9.0, "exponents": [], "home": None,
                         "sizes": [{"documents": 1, "chunks": n, "questions": 2, "embedded": False, "repeat": 1,
                                    "seconds": steps, "cpu_seconds": steps, "runs": {}, "rss_base_mb": 200.0,
                                    "peak_rss_mb": peak, "peak_over_base_mb": peak - 200.0, "target_chunks": n}
                                   for n, peak in ((20, 300.0), (100, 5000.0))]}}
    rows = {r.figure: r for r in targets.rows(report["offline"],
                                              ann_realistic.AnnReport.model_validate(report["ann_realistic"]),
                                              growth.GrowthReport.model_validate(report["growth"]))}
    skipped = rows["realistic approximate search, 100 rows"]
    assert skipped.verdict == "skipped" and "RAG_TTC_HUMAN_LABELS" in skipped.detail
    assert rows["offline_answers ratio"].verdict == "NOT met"
    assert rows["peak_rss_mb at 100 chunks"].verdict == "NOT met"
    assert rows["admission exponent, 20 to 100 chunks"].verdict == "meets"  # flat time: exponent 0


def test_the_command_refuses_targets_with_other_measurements():
    proc = subprocess.run([sys.executable, "-m", "rag_ttc_assets.bench", "--targets", "--only", "metrics"],
                          capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode != 0 and "--targets runs its own measurements" in proc.stderr
