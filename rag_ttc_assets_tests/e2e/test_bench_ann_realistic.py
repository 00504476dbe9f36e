"""`rag-ttc bench --only ann_realistic` at a tiny size: the growth keeps the real rows and adds unit rows near
them, the measurement runs end to end on clustered vectors (the stand-in for real ones when the real corpus is not
at hand) and on the hashed floor, and an index keeps more of the exact list where there are neighbourhoods.
Structure and recall only, never a wall-clock time."""

import numpy as np
import pytest

from rag_ttc_assets.bench import ann_realistic as ann
from rag_ttc_assets.bench.command import main as bench_main

SWEEP = {"ivf_hnsw_sq": [{"nprobes": 2, "ef": 120}, {"nprobes": 8, "ef": 120}]}


def test_growth_keeps_the_real_rows_and_adds_unit_rows_at_the_measured_spread():
    c = ann.clustered(400, 5)
    d = ann.spread(c.vectors)
    table, ids = ann.grow(c.vectors, c.ids, 1000, d)
    assert table.shape == (1000, 384) and len(ids) == len(set(ids)) == 1000
    assert np.array_equal(table[:400], c.vectors) and ids[:400] == c.ids
    assert np.allclose(np.linalg.norm(table, axis=1), 1, atol=1e-5)
    # Each added row names its source; its cosine distance to it is about the spread (the 10th-neighbour distance).
    src = np.array([c.ids.index(i.split("~")[1]) for i in ids[400:]])
    dist = 1 - np.sum(table[400:] * c.vectors[src], axis=1)
    assert 0.8 * d < np.median(dist) < 1.2 * d
    # The exact search of the helper is the brute-force one.
    top = ann.exact_topk(table, c.queries, 10)
    sims = c.queries @ table.T
    assert all(set(top[i]) == set(np.argsort(-sims[i])[:10]) for i in range(5))


def test_the_bench_on_clustered_vectors_beats_the_hashed_floor(tmp_path):
    report = ann.run_ann_realistic(1000, home=tmp_path, source="clustered", queries=40, types=("ivf_hnsw_sq",),
                                   sweep=SWEEP, plot=tmp_path / "curve.png")
    assert set(report.sets) == {"realistic", "hashed"} and report.real_rows == 1000
    assert 0 < report.spread_10 < 1
    for name, res in report.sets.items():
        r = res.types["ivf_hnsw_sq"]
        assert r.build_params["num_partitions"] == 32 and r.build_s > 0 and r.index_mb > 0
        assert [p.query for p in r.points] == [q for q in SWEEP["ivf_hnsw_sq"]], name
        for p in r.points:
            assert 0 <= p.recall_10 <= 1 and 0 < p.p50_ms <= p.p95_ms
            assert p.met == (p.recall_10 >= 0.95 and p.p95_ms <= 20)
    real = report.sets["realistic"].types["ivf_hnsw_sq"].points
    floor = report.sets["hashed"].types["ivf_hnsw_sq"].points
    # The same index and probes keep more of the exact top 10 where the vectors have neighbourhoods.
    assert all(r.recall_10 > f.recall_10 + 0.2 for r, f in zip(real, floor))
    assert real[0].recall_10 >= 0.8
    # --json's report: the realistic set's fields present, no plot key without a plot; read back the same record.
    js = report.to_json()
    assert list(js)[:7] == ["chunks", "k", "target_recall", "target_p95_ms", "cpus", "sets", "notes"]
    assert ann.AnnReport.model_validate(js) == report
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not any(tmp_path.glob("*-table")) and not (tmp_path / "ivf_hnsw_sq").exists()
    text = ann.format_report(report)
    lines = text.splitlines()
    assert lines[0].startswith("1000 vectors per set") and "recall@10 >= 0.95 at p95 <= 20 ms" in lines[0]
    assert "spread (median cosine distance to the 10th exact neighbour" in text
    rows = [ln.split() for ln in lines if ln.split()[1:2] == ["ivf_hnsw_sq"] and "{" in ln]
    assert [(r[0], r[1]) for r in rows][:4] == [("realistic", "ivf_hnsw_sq")] * 2 + [("hashed", "ivf_hnsw_sq")] * 2
    assert len(rows) == 6  # the sweep's four lines and the best setting of each set
    assert all(r[-1] == "met" for r in rows)  # "met" or "NOT met" beside every figure
    assert "best per type" in text and any(ln.startswith("target met by: ") for ln in lines)


def test_without_the_corpus_the_realistic_part_is_skipped_naming_the_variable(monkeypatch, tmp_path):
    monkeypatch.delenv(ann.ENV, raising=False)
    report = ann.run_ann_realistic(100, home=tmp_path, floor=False)
    assert report.sets == {} and list(report.to_json()) == ["chunks", "k", "target_recall", "target_p95_ms",
                                                             "cpus", "sets", "notes"]
    assert "realistic vectors skipped: RAG_TTC_HUMAN_LABELS is not set" in ann.format_report(report)


def test_ann_realistic_runs_alone_and_checks_its_size(monkeypatch, tmp_path):
    with pytest.raises(SystemExit, match="--only ann_realistic runs alone"):
        bench_main(["--only", "ann_realistic", "--only", "metrics", "--chunks", "100"])
    with pytest.raises(SystemExit, match="--chunks must be at least 20"):
        bench_main(["--only", "ann_realistic", "--chunks", "5"])
    monkeypatch.setenv(ann.ENV, str(tmp_path))  # a folder without the WiCE data: a message, not a traceback
    with pytest.raises(SystemExit, match=r"RAG_TTC_HUMAN_LABELS: .*entailment_retrieval/claim: no dev.jsonl"):
        bench_main(["--only", "ann_realistic", "--chunks", "100"])
