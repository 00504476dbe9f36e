"""`rag-ttc bench --only scale` at a small size: the generated corpus is seeded, every engine is built both ways
and queried, and the recall figures are sane. Structure and recall only, never a wall-clock time."""

import numpy as np
import pytest

from rag_ttc_assets.bench.command import main as bench_main
from rag_ttc_assets.bench import scale


def test_the_generated_corpus_and_the_baseline_embedder_are_seeded():
    a, b = scale.generate(500, 20), scale.generate(500, 20)
    assert all(np.array_equal(getattr(a, k), getattr(b, k)) for k in ("words", "targets", "query_words"))
    assert a.words.shape == (500, scale.WORDS) and len(set(a.targets.tolist())) == 20
    # Each query holds its target's rarest words: the planted target contains them.
    for words, target in zip(a.query_words, a.targets):
        assert set(words[:scale.QUERY_FROM_TARGET]) <= set(a.words[target])
    v = scale.hashing_embed(a.words[:50])
    assert np.array_equal(v, scale.hashing_embed(a.words[:50]))
    assert v.shape == (50, scale.DIM) and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert len(set(scale.vocabulary().tolist())) == scale.VOCAB


def test_the_scale_bench_at_2000_chunks(tmp_path, capsys):
    report = scale.run_scale(2000, home=tmp_path, queries=60).to_json()  # the JSON --json prints
    assert report["chunks"] == 2000 and report["queries"] == 60 and "baseline" in report["embedder"]
    rows = report["engines"]
    assert "recall_10_vs_exact" not in rows["tantivy"] and "index_only_mb" not in rows["flat"]
    assert list(rows) == ["tantivy", "flat", "ivf_pq", "ivf_hnsw_sq", "ivf_hnsw_pq"]
    for name, r in rows.items():
        for key in ("build_s", "direct_build_s", "build_ratio", "peak_mb", "size_mb", "p50_ms", "p95_ms",
                    "direct_p50_ms", "query_ratio", "planted_success_10"):
            assert r[key] > 0 or key == "planted_success_10", (name, key, r[key])
        assert r["p95_ms"] >= r["p50_ms"] and r["queries"] == 60
    # The exact scan is its own reference; the planted targets are found by BM25 and by the exact vector search.
    assert rows["flat"]["recall_10_vs_exact"] == 1.0
    assert rows["tantivy"]["planted_success_10"] >= 0.9 and rows["flat"]["planted_success_10"] >= 0.9
    for name in ("ivf_pq", "ivf_hnsw_sq", "ivf_hnsw_pq"):
        assert 0.3 < rows[name]["recall_10_vs_exact"] <= 1.0, name
        assert 0 < rows[name]["index_only_mb"] < rows[name]["size_mb"]
        assert rows[name]["build_params"]["num_partitions"] == 45  # sqrt(2000), LanceDB's default, made explicit
    assert not any(tmp_path.glob("*-lab")) and not any(tmp_path.glob("*-direct"))  # each build removed after use
    table = scale.format_scale(scale.ScaleReport.model_validate(report))
    assert "lancedb ivf_hnsw_sq" in table and "recall@10_vs_exact" in table and "baseline" in table


def test_scale_runs_alone_and_names_its_flag(capsys):
    with pytest.raises(SystemExit, match="--only scale runs alone"):
        bench_main(["--only", "scale", "--only", "metrics", "--chunks", "100"])
    with pytest.raises(SystemExit, match="--chunks must be at least 2"):
        bench_main(["--only", "scale", "--chunks", "1"])
