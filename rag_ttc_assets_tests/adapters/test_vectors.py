import shutil

import numpy as np

from rag_ttc_assets.adapters.vectors import VectorIndex, build_table


def test_real_lancedb_table_cosine_search(tmp_path):
    vecs = np.array([[1, 0, 0], [0.6, 0.8, 0], [0, 0, 1]], dtype=np.float32)
    version = build_table(tmp_path / "db", ["a", "b", "c"], vecs)
    assert version >= 1
    vi = VectorIndex(tmp_path / "db")
    assert vi.count() == 3 and vi.version == version
    hits = vi.search(np.array([1, 0, 0], dtype=np.float32), 2)
    assert [c for c, _ in hits] == ["a", "b"]
    assert abs(hits[0][1] - 1.0) < 1e-6 and abs(hits[1][1] - 0.6) < 1e-6


def test_cosine_ignores_vector_length(tmp_path):
    vecs = np.array([[10, 0], [0, 1]], dtype=np.float32)
    build_table(tmp_path / "db", ["long", "short"], vecs)
    hits = VectorIndex(tmp_path / "db").search(np.array([0.1, 0.0], dtype=np.float32), 2)
    assert [c for c, _ in hits] == ["long", "short"]


def test_a_table_streamed_in_batches_is_the_one_table(tmp_path, monkeypatch):
    """build_table hands LanceDB its rows in batches of BATCH_ROWS: one write (version 1), every row in order, the
    same search as a table written whole (BATCH_ROWS far above the row count)."""
    import numpy as np

    from rag_ttc_assets.adapters import vectors

    rng = np.random.default_rng(7)
    vecs = rng.standard_normal((10, 4)).astype(np.float32)
    ids = [f"c{i}" for i in range(10)]
    assert vectors.build_table(tmp_path / "whole", ids, vecs) == 1
    monkeypatch.setattr(vectors, "BATCH_ROWS", 3)
    assert vectors.build_table(tmp_path / "batched", ids, vecs) == 1
    whole, batched = vectors.VectorIndex(tmp_path / "whole"), vectors.VectorIndex(tmp_path / "batched")
    assert batched.table.to_arrow().column("chunk_id").to_pylist() == ids
    assert np.array_equal(np.stack(batched.table.to_arrow().column("vector").to_pylist()), vecs)
    assert batched.search_many(vecs[:3], 5, exact=True) == whole.search_many(vecs[:3], 5, exact=True)


def test_every_index_type_builds_and_searches_through_the_lab(tmp_path):
    """Each approximate type an arm can name is built by LanceDB with the lab's resolved parameters, reports its own
    LanceDB type, and answers a search through the index with the arm's query parameters. On clustered vectors
    every type keeps most of the exact top 10; the quantized scans with `refine_factor` re-rank by exact distances
    and keep (nearly) all of it."""
    import typing

    from rag_ttc_assets.adapters import vectors
    from rag_ttc_assets.core.ann import resolve_build
    from rag_ttc_assets.core.arms import INDEX_PARAMS, VectorIndexConfig

    types = typing.get_args(VectorIndexConfig.model_fields["type"].annotation)
    assert set(types) == set(INDEX_PARAMS)
    rng = np.random.default_rng(46)
    centres = rng.standard_normal((8, 32)).astype(np.float32)
    vecs = centres[rng.integers(0, 8, 3000)] + 0.5 * rng.standard_normal((3000, 32)).astype(np.float32)
    ids = [f"c{i:05d}" for i in range(len(vecs))]
    queries = centres[rng.integers(0, 8, 20)] + 0.5 * rng.standard_normal((20, 32)).astype(np.float32)
    vectors.build_table(tmp_path / "table", ids, vecs)
    exact = [[c for c, _ in hits] for hits in VectorIndex(tmp_path / "table").search_many(queries, 10, exact=True)]
    lance_type = {"ivf_flat": "IVF_FLAT", "ivf_sq": "IVF_SQ", "ivf_rq": "IVF_RQ", "ivf_pq": "IVF_PQ",
                  "ivf_hnsw_sq": "IVF_HNSW_SQ", "ivf_hnsw_pq": "IVF_HNSW_PQ"}
    for kind in (t for t in types if t != "flat"):
        query = {"nprobes": 4, **({"refine_factor": 10} if "refine_factor" in INDEX_PARAMS[kind] else {}),
                 **({"ef": 200} if "ef" in INDEX_PARAMS[kind] else {})}
        cfg = VectorIndexConfig(type=kind, num_partitions=8, **query)
        params = resolve_build(cfg, len(vecs), 32)
        shutil.copytree(tmp_path / "table", tmp_path / kind)
        info = vectors.build_index(tmp_path / kind, params)
        assert info["index_type"] == lance_type[kind] and info["indexed_rows"] == len(vecs), (kind, info)
        index = VectorIndex(tmp_path / kind, query=query)
        assert index.indexed
        got = [[c for c, _ in hits] for hits in index.search_many(queries, 10)]
        recall = np.mean([len(set(g) & set(e)) / 10 for g, e in zip(got, exact, strict=True)])
        assert recall >= (0.95 if kind in ("ivf_flat", "ivf_sq", "ivf_rq") else 0.5), (kind, recall)
