import json
import multiprocessing as mp

import pytest

from rag_ttc_assets.adapters.store import ArmJson, ArtifactStore, Table, atomic_write_json


def _builder(calls):
    def build(tmp):
        calls.append(1)
        (tmp / "data.txt").write_text("payload")
        return {"rows": 1}
    return build


def test_build_once_reuses_and_records_digests(tmp_path):
    store, calls = ArtifactStore(tmp_path), []
    a = store.build_once("chunks", {"k": 1}, _builder(calls))
    b = store.build_once("chunks", {"k": 1}, _builder(calls))
    c = store.build_once("chunks", {"k": 2}, _builder(calls))
    assert (a.cache_hit, b.cache_hit, c.cache_hit) == (False, True, False)
    assert len(calls) == 2
    assert a.path == b.path != c.path and a.content_digest == b.content_digest == c.content_digest
    assert a.key_digest != c.key_digest
    assert b.manifest["info"] == {"rows": 1}


def test_corrupt_artifact_is_detected_and_rebuilt_with_a_warning(tmp_path):
    store, calls = ArtifactStore(tmp_path), []
    a = store.build_once("chunks", {"k": 1}, _builder(calls))
    (a.path / "data.txt").write_text("payl")  # truncated
    with pytest.warns(UserWarning, match="corrupt"):
        b = store.build_once("chunks", {"k": 1}, _builder(calls))
    assert not b.cache_hit and len(calls) == 2 and (b.path / "data.txt").read_text() == "payload"


def test_failed_build_leaves_nothing_that_looks_complete(tmp_path):
    store = ArtifactStore(tmp_path)

    def boom(tmp):
        (tmp / "half.txt").write_text("x")
        raise RuntimeError("died mid-build")

    with pytest.raises(RuntimeError):
        store.build_once("chunks", {"k": 1}, boom)
    final, _ = store.artifact_dir("chunks", {"k": 1})
    assert not final.exists()
    assert [p.name for p in final.parent.iterdir()] == []


def test_atomic_write_leaves_no_temp_files(tmp_path):
    atomic_write_json(tmp_path / "x.json", {"a": 1})
    assert json.loads((tmp_path / "x.json").read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def _build_in_process(root, q):
    import time

    def slow(tmp):
        time.sleep(0.3)
        (tmp / "built-by").write_text(str(mp.current_process().pid))
        return {}

    b = ArtifactStore(root).build_once("idx", {"k": 1}, slow)
    q.put(b.cache_hit)


def test_two_processes_build_a_shared_artifact_once(tmp_path):
    q = mp.get_context("fork").Queue()
    procs = [mp.get_context("fork").Process(target=_build_in_process, args=(tmp_path, q)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    assert sorted([q.get(timeout=5), q.get(timeout=5)]) == [False, True]


def test_the_comparisons_folder_and_the_table_files_keep_their_layout(tmp_path):
    """`rag-ttc compare` and the `arm_comparisons` asset write to the one folder; tables are `<name>.parquet`."""
    store = ArtifactStore(tmp_path / "store")
    assert store.comparisons_dir == tmp_path / "store" / "comparisons"
    assert store.table_path("a", Table.ANSWERS) == tmp_path / "store" / "arms" / "a" / "answers.parquet"
    assert store.arm_path("a", ArmJson.JUDGE_SUMMARY) == tmp_path / "store" / "arms" / "a" / "judge_summary.json"
