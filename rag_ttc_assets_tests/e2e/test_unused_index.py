"""An arm builds only what it reads (core.usage): a BM25-only arm embeds nothing, a vector-only arm builds no
Tantivy index, through `rag-ttc run` as a user runs them; the unused index's asset still materializes and says
`used_by_arm: false`, and everything downstream (run record, inspect, report, compare, staleness) works."""

import json
from pathlib import Path

import numpy as np
import pytest
from dagster import AssetKey, DagsterInstance

from rag_ttc_assets import cli
from rag_ttc_assets.adapters import embeddings, torch_embeddings
from rag_ttc_assets.adapters.bm25 import BM25Index
from rag_ttc_assets.adapters.store import ArmJson, Table
from rag_ttc_assets.adapters.vectors import VectorIndex
from rag_ttc_assets.core.artifacts import SOURCE_DEPTH
from rag_ttc_assets.defs.graph import STAGES
from rag_ttc_assets.stages.run_record import COMPLETE
from rag_ttc_assets.stages import indexes, ingest
from rag_ttc_assets.stages.retrieval import arm_questions, retrieval_metrics
from rag_ttc_assets_tests.conftest import MINI_ARMS

ARMS = MINI_ARMS.replace("  bm25-only: {retrieval: bm25}\n",
                         "  bm25-only: {retrieval: bm25}\n  vector-only: {retrieval: vector}\n")


@pytest.fixture
def lab(mini_lab, tmp_path, monkeypatch):
    (tmp_path / "arms.yaml").write_text(ARMS, encoding="utf-8")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dh"))
    return type(mini_lab).from_env()


def _run(capsys, *argv) -> str:
    assert cli.main(list(argv)) == 0
    return capsys.readouterr().out


def _metadata(asset: str, arm: str) -> dict:
    with DagsterInstance.get() as instance:
        record = instance.fetch_materializations(AssetKey(asset), limit=20).records
    event = next(r.asset_materialization for r in record if r.asset_materialization.partition == arm)
    return {k: v.value for k, v in event.metadata.items()}


def _cache(lab) -> set[str]:
    root = lab.store.root / "cache"
    return {p.name for p in root.iterdir() if any(not e.name.startswith(".") for e in p.iterdir())}


def _depth(cfg) -> int:
    return max(SOURCE_DEPTH, cfg.retrieve_k)


def test_a_bm25_arm_never_embeds_its_corpus_and_ranks_as_tantivy_alone(lab, capsys, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the embedding model was called for a BM25-only arm")

    # The retrieval stage, from a cold store, with an embedding model that cannot be called (the offline answerer
    # and judge of the later stages embed sentences of their own: the model is theirs, not retrieval's).
    with monkeypatch.context() as mp:
        mp.setattr(embeddings, "encode", refuse)
        mp.setattr(torch_embeddings, "load", refuse)
        retrieval = _run(capsys, "run", "bm25-only", "--stage", "retrieval")
    assert f"bm25-only: ran {len(STAGES['retrieval'])} asset(s)" in retrieval
    rest = len(STAGES["all"]) - len(STAGES["retrieval"])
    assert f"bm25-only: ran {rest} asset(s)" in _run(capsys, "run", "bm25-only", "--stage", "all")

    meta = _metadata("vector_index", "bm25-only")
    assert meta["used_by_arm"] is False
    assert meta["unused_reason"] == "retrieval: bm25: its retrieval rows search the Tantivy index only"
    assert "path" not in meta and "content_digest" not in meta
    assert _metadata("bm25_index", "bm25-only")["used_by_arm"] is True
    rows_meta = _metadata("retrieval_rows", "bm25-only")["upstream_digests"]
    assert rows_meta["vector_index"] is None and rows_meta["bm25_index"].startswith("sha256:")
    # Nothing of the vector side in the store: no LanceDB table, no question embeddings.
    assert _cache(lab) == {"chunks", "representations", "bm25_index", "retrieval_rows"}

    # The ranked lists are Tantivy's alone, as before: each question's top retrieve_k of the BM25 search.
    cfg = lab.arms["bm25-only"]
    rows = lab.store.read_table("bm25-only", Table.RETRIEVAL_ROWS)
    bm25_dir = next(p for p in (lab.store.root / "cache" / "bm25_index").iterdir() if not p.name.startswith("."))
    tantivy = BM25Index(bm25_dir / "tantivy")
    questions = arm_questions(cfg, ingest.bind_dataset(lab.datasets_dir, cfg))
    assert rows["query_id"].to_list() == [q.id for q in questions]
    for q, ranked in zip(questions, rows["ranked_chunk_ids"].to_list()):
        assert ranked == [c for c, _ in tantivy.search(q.text, _depth(cfg))][: cfg.retrieve_k], q.id
    assert rows["vector_ranks"].list.drop_nulls().list.len().sum() == 0
    assert lab.store.read_arm_json("bm25-only", ArmJson.RETRIEVAL_SUMMARY) == json.loads(json.dumps(
        retrieval_metrics(questions, rows)))

    # Downstream of the absent index: the run record says why, and inspect, the report and staleness read on.
    runs = [r for r in json.loads(_run(capsys, "runs", "bm25-only", "--json")) if r["status"] == COMPLETE]
    manifest = json.loads((Path(runs[-1]["run_dir"]) / "indexes" / "manifest.json").read_text())
    assert manifest["vector_index"] == {"used_by_arm": False, "reason": meta["unused_reason"]}
    assert manifest["bm25_index"]["content_digest"].startswith("sha256:")
    assert "**Evidence**" in _run(capsys, "inspect", "bm25-only", "mini-01")
    _run(capsys, "report", "bm25-only", "--out", str(lab.home / "bm25-only.html"))
    assert (lab.home / "bm25-only.html").stat().st_size > 0
    again = json.loads(_run(capsys, "run", "bm25-only", "--stage", "all", "--json"))["arms"]["bm25-only"]
    assert again["ran"] == [], again["why"]


def test_a_vector_arm_builds_no_tantivy_index_and_compares_with_a_bm25_arm(lab, capsys):
    _run(capsys, "run", "vector-only", "bm25-only", "--stage", "all")
    meta = _metadata("bm25_index", "vector-only")
    assert meta == {**meta, "used_by_arm": False,
                    "unused_reason": "retrieval: vector: its retrieval rows search the LanceDB table only"}
    assert _metadata("vector_index", "vector-only")["used_by_arm"] is True
    # The one Tantivy build in the store is the BM25 arm's; the LanceDB table and question embeddings the vector's.
    assert len([p for p in (lab.store.root / "cache" / "bm25_index").iterdir() if not p.name.startswith(".")]) == 1
    assert {"vector_index", "question_embeddings"} <= _cache(lab)

    cfg = lab.arms["vector-only"]
    rows = lab.store.read_table("vector-only", Table.RETRIEVAL_ROWS)
    vec = indexes.build_vectors(lab.store, cfg, _reps(lab, cfg))
    qemb = indexes.read_question_embeddings(
        indexes.build_question_embeddings(lab.store, cfg, ingest.bind_dataset(lab.datasets_dir, cfg)))
    assert vec.cache_hit  # the vector arm's own table, found, not built again
    table = VectorIndex(vec.path / "lancedb")
    for r in rows.iter_rows(named=True):
        hits = table.search(np.asarray(qemb[r["query_id"]]), _depth(cfg))
        assert r["ranked_chunk_ids"] == [c for c, _ in hits][: cfg.retrieve_k]
    assert rows["bm25_ranks"].list.drop_nulls().list.len().sum() == 0

    # compare: both arms lack an index; the paired comparison still reads every case.
    out = json.loads(_run(capsys, "compare", "bm25-only", "vector-only", "--json"))
    answerable = [q for q in arm_questions(cfg, ingest.bind_dataset(lab.datasets_dir, cfg)) if q.answerable]
    assert out["n"] == len(answerable) and out["changed_parameters"]["retrieval"] == ["bm25", "vector"]


def _reps(lab, cfg):
    ds = ingest.bind_dataset(lab.datasets_dir, cfg)
    return ingest.build_representations(lab.store, cfg, ds, ingest.build_chunks(lab.store, cfg, ds))


def test_switching_a_bm25_arm_to_rrf_reruns_its_vector_side_only(lab, capsys, tmp_path):
    _run(capsys, "run", "bm25-only", "--stage", "retrieval")
    assert _metadata("vector_index", "bm25-only")["used_by_arm"] is False
    (tmp_path / "arms.yaml").write_text(ARMS.replace("bm25-only: {retrieval: bm25}", "bm25-only: {retrieval: rrf}"))
    out = json.loads(_run(capsys, "run", "bm25-only", "--stage", "retrieval", "--json"))
    # Stale: the vector index (now read) and what ranks from it; the Tantivy index and everything upstream are not.
    assert set(out["arms"]["bm25-only"]["ran"]) == {"vector_index", "retrieval_rows", "retrieval_summary",
                                                    "admitted_contexts"}
    meta = _metadata("vector_index", "bm25-only")
    assert meta["used_by_arm"] is True and meta["embedding_calls_this_run"] > 0
    assert {"vector_index", "question_embeddings"} <= _cache(lab)


def test_the_observation_of_a_switched_arm_names_what_it_now_reads(lab):
    import rag_ttc_assets.definitions  # noqa: F401  (registers every asset)
    from rag_ttc_assets.defs.staleness import arm_state, what_changed

    before = arm_state(lab, "bm25-only")
    assert before["vector_index"].unused == {
        "vector_index": "retrieval: bm25: its retrieval rows search the Tantivy index only"}
    assert "unused" not in before["bm25_index"].to_json()
    # `baseline` is the same arm with retrieval rrf: what its vector_index observation would say after the edit.
    assert what_changed(before["vector_index"], arm_state(lab, "baseline")["vector_index"]) == \
        "vector_index: used_by_arm false -> true"
