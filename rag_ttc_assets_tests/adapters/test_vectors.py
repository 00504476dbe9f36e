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
