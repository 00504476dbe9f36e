"""The offline baselines' vectors kept beside the provider cache (adapters.vector_cache): read back bit for bit by
another process, keyed by what computed them, checked on read, merged past COMPACT_AT shards, and on an object
store as on a folder."""

import subprocess
import sys
import warnings

import numpy as np
import pytest

from rag_ttc_assets.adapters import vector_cache
from rag_ttc_assets.adapters.provider_cache import CorruptCacheEntryWarning
from rag_ttc_assets.adapters.vector_cache import VectorCache


def _vectors(n: int, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, 6)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_another_process_reads_the_vectors_back_bit_for_bit(tmp_path):
    texts = ["Use open(path) to open a file.", "Call close() when done.", "ünïcode ✓"]
    vecs = _vectors(3)
    VectorCache(tmp_path, "all-MiniLM-L6-v2").put_sentences(texts, vecs)
    script = ("import sys, numpy as np\n"
              "from rag_ttc_assets.adapters.vector_cache import VectorCache\n"
              f"got = VectorCache(sys.argv[1], 'all-MiniLM-L6-v2').get_sentences({texts!r} + ['never encoded'])\n"
              f"np.save(sys.argv[2], np.stack([got[t] for t in {texts!r}]))\n"
              "print(len(got))\n")
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path), str(tmp_path / "got.npy")],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "3"
    assert np.array_equal(np.load(tmp_path / "got.npy"), vecs)


def test_another_model_or_kind_never_serves_them(tmp_path):
    VectorCache(tmp_path, "all-MiniLM-L6-v2").put_sentences(["a text"], _vectors(1))
    assert VectorCache(tmp_path, "another-model").get_sentences(["a text"]) == {}
    assert VectorCache(tmp_path, "all-MiniLM-L6-v2").get_words(["a text"]) == {}
    assert vector_cache.model_identity("sentence", "m") != vector_cache.model_identity("words", "m")
    assert "torch" in vector_cache.model_identity("sentence", "m")  # the computing packages' versions are in the key


def test_word_entries_round_trip_with_texts_of_no_content_words(tmp_path):
    cache = VectorCache(tmp_path, "all-MiniLM-L6-v2")
    entries = [(["open", "file"], _vectors(2, 1)), ([], np.zeros((0, 6), dtype=np.float32)),
               (["close"], _vectors(1, 2))]
    cache.put_words(["open a file", "the", "close"], entries)
    got = cache.get_words(["close", "the", "open a file", "unseen"])
    assert set(got) == {"close", "the", "open a file"}
    for text, (stems, vecs) in zip(["open a file", "the", "close"], entries):
        assert got[text][0] == stems and np.array_equal(got[text][1], vecs)


def test_a_corrupt_shard_is_deleted_with_a_warning_and_read_as_absent(tmp_path):
    cache = VectorCache(tmp_path, "all-MiniLM-L6-v2")
    cache.put_sentences(["a"], _vectors(1))
    (shard,) = cache.shards("sentence")
    shard.write_bytes(shard.read_bytes()[:-7])
    with pytest.warns(CorruptCacheEntryWarning, match="do not match its name"):
        assert cache.get_sentences(["a"]) == {}
    assert cache.shards("sentence") == []


def test_shards_are_merged_past_the_limit_keeping_every_vector(tmp_path, monkeypatch):
    monkeypatch.setattr(vector_cache, "COMPACT_AT", 4)
    cache = VectorCache(tmp_path, "all-MiniLM-L6-v2")
    vecs = _vectors(5)
    for i in range(5):
        cache.put_sentences([f"t{i}", "shared"], np.stack([vecs[i], vecs[0]]))
    assert len(cache.shards("sentence")) < 4
    got = cache.get_sentences([f"t{i}" for i in range(5)] + ["shared"])
    assert all(np.array_equal(got[f"t{i}"], vecs[i]) for i in range(5)) and np.array_equal(got["shared"], vecs[0])


def test_an_object_store_root_keeps_them_too():
    root = "memory://vector-cache-test/cache"
    cache = VectorCache(root, "all-MiniLM-L6-v2")
    vecs = _vectors(2)
    cache.put_sentences(["x", "y"], vecs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = VectorCache(root, "all-MiniLM-L6-v2").get_sentences(["y", "x"])
    assert np.array_equal(got["x"], vecs[0]) and np.array_equal(got["y"], vecs[1])
    assert all(str(p).endswith(".npz") for p in cache.shards("sentence"))
