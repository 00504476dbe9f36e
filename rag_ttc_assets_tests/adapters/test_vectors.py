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
