"""Reliability 4: two arms that share an index, materialized at the same moment by two `rag-ttc run`
processes on one store and one Dagster home, build each shared artifact once, never trip Tantivy's
lock, and rank exactly as a serial run in a fresh home does."""

import os

import polars as pl
from dagster import AssetKey, AssetRecordsFilter, DagsterInstance

from rag_ttc_assets.defs.graph import STAGES
from rag_ttc_assets_tests.e2e.conftest import REL_N
from rag_ttc_assets_tests.support.reliability import arms_text, cli_start, lab_env, materialize, synthetic_dataset

ARMS = {"k2": {"evidence_k": 2}, "k3": {"evidence_k": 3}}  # differ only after retrieval
RETRIEVAL = list(STAGES["retrieval"])
SHARED = ["chunks", "representations", "bm25_index", "vector_index", "question_embeddings"]


def _lab(root):
    synthetic_dataset(root / "datasets" / "rel", REL_N)
    (root / "arms.yaml").write_text(arms_text("rel", ARMS))
    return lab_env(root)


def _step_window(instance, run_id, step):
    times = {}
    for ev in instance.all_logs(run_id):
        if ev.step_key == step and ev.dagster_event and ev.dagster_event.event_type_value in ("STEP_START",
                                                                                              "STEP_SUCCESS"):
            times[ev.dagster_event.event_type_value] = ev.timestamp
    return times["STEP_START"], times["STEP_SUCCESS"]


def test_two_processes_build_shared_artifacts_once_and_rank_like_a_serial_run(tmp_path, monkeypatch):
    env = _lab(tmp_path)
    procs = {arm: cli_start("run", arm, "--stage", "retrieval", "--json", env=env, out=tmp_path / arm) for arm in ARMS}
    for arm, proc in procs.items():
        proc.wait(timeout=600)
    outputs = {arm: (open(f"{tmp_path / arm}.stdout").read(), open(f"{tmp_path / arm}.stderr").read())
               for arm in ARMS}
    for arm, proc in procs.items():
        assert proc.returncode == 0, outputs[arm][1][-3000:]
        assert "LockBusy" not in outputs[arm][1] and "Traceback" not in outputs[arm][1]

    # One build per shared artifact: one folder each, no temporary folder left, one manifest each.
    cache = tmp_path / "home" / "store" / "cache"
    for kind in SHARED:
        entries = sorted(p.name for p in (cache / kind).iterdir())
        assert len(entries) == 1 and not entries[0].startswith("."), (kind, entries)
        assert (cache / kind / entries[0] / "manifest.json").is_file()

    # Dagster's metadata says the same: for each artifact asset, one arm built it and the other reused it.
    os.environ["DAGSTER_HOME"] = env["DAGSTER_HOME"]
    try:
        with DagsterInstance.get() as instance:
            for asset in ("chunks", "representations", "bm25_index", "vector_index"):
                hits = {}
                for arm in ARMS:
                    (rec,) = instance.fetch_materializations(
                        AssetRecordsFilter(asset_key=AssetKey(asset), asset_partitions=[arm]), limit=5).records
                    hits[arm] = rec.asset_materialization.metadata["cache_hit"].value
                assert sorted(hits.values()) == [False, True], (asset, hits)
            # The two runs were at the vector index at the same time: one waited on the other's build.
            run_ids = [r.run_id for r in instance.get_runs()]
            assert len(run_ids) == 2 and all(instance.get_run_by_id(r).is_success for r in run_ids)
            (a0, a1), (b0, b1) = (_step_window(instance, r, "vector_index") for r in run_ids)
            overlap = min(a1, b1) - max(a0, b0)
            assert overlap > 0, f"the vector_index steps did not overlap ({overlap:.2f}s)"
    finally:
        monkeypatch.delenv("DAGSTER_HOME", raising=False)
    print(f"\nRELIABILITY-FIGURES concurrency vector_index overlap {overlap:.1f}s")

    # A serial run in a fresh home ranks exactly the same.
    fresh = tmp_path / "fresh"
    for k, v in _lab(fresh).items():
        monkeypatch.setenv(k, v)
    instance = DagsterInstance.ephemeral()
    for arm in ARMS:
        assert materialize(arm, instance, RETRIEVAL).success
    for arm in ARMS:
        concurrent = pl.read_parquet(tmp_path / "home/store/arms" / arm / "retrieval_rows.parquet")
        serial = pl.read_parquet(fresh / "home/store/arms" / arm / "retrieval_rows.parquet")
        assert concurrent.height == REL_N and concurrent.equals(serial), arm
    assert pl.read_parquet(tmp_path / "home/store/arms/k2/retrieval_rows.parquet").equals(
        pl.read_parquet(tmp_path / "home/store/arms/k3/retrieval_rows.parquet"))  # evidence_k moves no rank
