"""Approximate search as a boundary of its own (core.ann), through `rag-ttc run` as a user runs it: an IVF-PQ arm on
the bundled data whose `missed_by_ann` requests are exactly those the exact list holds and the approximate list
misses, checked against LanceDB called directly; an nprobes sweep built once; parameters the corpus cannot take
rejected before any build; an interrupted index build that leaves nothing behind."""

import json
import shutil

import numpy as np
import pytest

from rag_ttc_assets import cli
from rag_ttc_assets.adapters import vectors
from rag_ttc_assets.adapters.store import ArmJson, Table
from rag_ttc_assets.core.ann import OVERFETCH
from rag_ttc_assets.stages import indexes
from rag_ttc_assets.stages.resolve import ArmInputs
from rag_ttc_assets_tests.conftest import MINI_DEFAULTS, REPO

# The bundled data's 12 pilot questions; 4 PQ sub-vectors of 96 dimensions each, 4 bits a code (16 centroids per
# sub-vector), is a coarse enough code that the approximate top 5 loses chunks the exact top 5 holds in every build
# (LanceDB's k-means is not seeded: measured over 6 builds, recall of the exact top 5 was 0.28-0.42 at 4 bits, and
# 0.75-0.87 at 8 bits, where some builds lost no request's evidence).
COARSE = {"type": "ivf_pq", "num_sub_vectors": 4, "num_bits": 4, "nprobes": 1}
PYREF_ARMS = f"""
defaults:
  dataset: pyref
  question_set: pilot
  retrieval: vector
  retrieve_k: 5
  evidence_k: 3
arms:
  exact: {{}}
  ann-coarse: {{vector_index: {json.dumps(COARSE)}}}
  ann-coarse-nprobes-2: {{vector_index: {json.dumps({**COARSE, "nprobes": 2})}}}
  ann-rq: {{vector_index: {{type: ivf_rq, num_partitions: 8}}}}
"""


@pytest.fixture
def pyref_lab(tmp_path, monkeypatch):
    from rag_ttc_assets.lab import Lab

    (tmp_path / "arms.yaml").write_text(PYREF_ARMS, encoding="utf-8")
    for k, v in {"RAG_TTC_ARMS": tmp_path / "arms.yaml", "RAG_TTC_DATASETS": REPO / "datasets",
                 "RAG_TTC_HOME": tmp_path / "home", "DAGSTER_HOME": tmp_path / "dh"}.items():
        monkeypatch.setenv(k, str(v))
    (tmp_path / "dh").mkdir()
    return Lab.from_env()


def _run(capsys, *argv) -> str:
    assert cli.main(list(argv)) == 0
    return capsys.readouterr().out


def _built(lab, kind: str) -> list:
    root = lab.store.root / "cache" / kind
    return [p for p in root.iterdir() if not p.name.startswith(".")] if root.is_dir() else []


def test_missed_by_ann_is_exactly_what_the_exact_list_holds_and_the_index_misses(pyref_lab, capsys):
    lab = pyref_lab
    out = _run(capsys, "run", "ann-coarse", "exact", "--stage", "all")
    assert "ann_recall_k" in out and "missed_by_ann" in out
    arm = ArmInputs(lab, "ann-coarse")
    cfg = arm.cfg
    vec = arm.vectors
    assert vec.cache_hit and vec.manifest["info"]["index"]["index_type"] == "IVF_PQ"
    assert vec.manifest["info"]["vector_index"] == {"type": "ivf_pq", "num_partitions": 20, "num_sub_vectors": 4,
                                                    "num_bits": 4}
    qvecs = indexes.read_question_embeddings(arm.question_embeddings)

    # LanceDB called directly on the arm's table: the index's top retrieve_k (nprobes 1), and a flat scan. A 4-bit
    # code ties many distances, so the cut is made as the lab documents it: OVERFETCH candidates beyond the limit,
    # ties at the cut broken by chunk ID.
    table = vectors._lancedb().connect(str(vec.path / "lancedb")).open_table(vectors.TABLE)

    def top(qid: str, exact: bool) -> list[str]:
        query = table.search(np.asarray(qvecs[qid], dtype=np.float32)).distance_type("cosine")
        query = query.bypass_vector_index() if exact else query.nprobes(1)
        res = query.limit(cfg.retrieve_k + OVERFETCH).select(["chunk_id", "_distance"]).to_arrow()
        hits = zip(res.column("chunk_id").to_pylist(), res.column("_distance").to_pylist())
        return [cid for cid, _ in sorted(hits, key=lambda h: (-(1.0 - float(h[1])), h[0]))][:cfg.retrieve_k]

    expected, recalls = set(), []
    for q in arm.questions:
        ann_ids, exact_ids = top(q.id, False), top(q.id, True)
        recalls.append(len(set(ann_ids) & set(exact_ids)) / len(exact_ids))
        for r in q.requests:
            sup = set(arm.support.get(r.id, []))
            if sup & set(exact_ids) and not sup & set(ann_ids):
                expected.add(r.id)
    flow = lab.store.read_table("ann-coarse", Table.FAILURE_FLOW)
    missed = set(flow.filter(flow["branch"] == "missed_by_ann")["request_id"].to_list())
    assert missed and missed == expected
    summary = lab.store.read_arm_json("ann-coarse", ArmJson.FAILURE_FLOW)
    assert summary["missed_by_ann"] == len(missed) and summary["closes"]
    retrieval = lab.store.read_arm_json("ann-coarse", ArmJson.RETRIEVAL_SUMMARY)["summary"]
    assert retrieval["ann_recall_k"] == pytest.approx(sum(recalls) / len(recalls)) and retrieval["ann_recall_k"] < 1
    assert (retrieval["ann_recall_measured"], retrieval["ann_recall_of"]) == (len(recalls), len(recalls))

    # The exact arm over the same embeddings: no second list, no missed_by_ann, and the requests the approximate
    # arm lost to its index are ranked there (same retrieval otherwise).
    exact_flow = lab.store.read_table("exact", Table.FAILURE_FLOW)
    assert lab.store.read_arm_json("exact", ArmJson.FAILURE_FLOW)["missed_by_ann"] == 0
    assert "ann_recall_k" not in lab.store.read_arm_json("exact", ArmJson.RETRIEVAL_SUMMARY)["summary"]
    assert lab.store.read_table("exact", Table.RETRIEVAL_ROWS)["exact_vector_chunk_ids"].null_count() == 12
    assert not set(exact_flow.filter(exact_flow["branch"] == "not_retrieved")["request_id"].to_list()) & missed

    # inspect shows both lists for a question that lost a request to the index.
    qid = sorted(missed)[0].split(".")[0]
    shown = _run(capsys, "inspect", "ann-coarse", qid)
    assert "approximate (ANN) | exact (flat scan)" in shown and "(missed by ANN)" in shown
    assert sorted(missed)[0] in shown
    view = json.loads(_run(capsys, "inspect", "ann-coarse", qid, "--json"))
    assert view["ann"]["exact_vector_chunk_ids"] == top(qid, True)
    assert view["ann"]["vector_chunk_ids"] == top(qid, False)


def test_an_nprobes_sweep_shares_one_index_build(pyref_lab, capsys):
    lab = pyref_lab
    out = json.loads(_run(capsys, "run", "ann-coarse", "ann-coarse-nprobes-2", "--stage", "retrieval", "--json"))
    assert set(out["arms"]) == {"ann-coarse", "ann-coarse-nprobes-2"}
    # One LanceDB table and index for both arms; one retrieval build each (query parameters key the rows).
    assert len(_built(lab, "vector_index")) == 1
    assert len(_built(lab, "retrieval_rows")) == 2


def test_a_quantized_scan_without_query_parameters_searches_with_the_lab_defaults(pyref_lab, capsys):
    """An ivf_rq arm that sets no query parameters is searched with core.ann's defaults for its type (a third of its
    8 partitions probed: 3; refine_factor 10): its approximate lists are LanceDB's, called directly with those."""
    lab = pyref_lab
    _run(capsys, "run", "ann-rq", "--stage", "retrieval")
    arm = ArmInputs(lab, "ann-rq")
    vec = arm.vectors
    assert vec.manifest["info"]["index"]["index_type"] == "IVF_RQ"
    assert vec.manifest["info"]["vector_index"] == {"type": "ivf_rq", "num_partitions": 8}
    table = vectors._lancedb().connect(str(vec.path / "lancedb")).open_table(vectors.TABLE)
    qvecs = indexes.read_question_embeddings(arm.question_embeddings)
    rows = lab.store.read_table("ann-rq", Table.RETRIEVAL_ROWS)
    k = arm.cfg.retrieve_k
    for qid, got in zip(rows["query_id"].to_list(), rows["vector_chunk_ids"].to_list(), strict=True):
        query = (table.search(np.asarray(qvecs[qid], dtype=np.float32)).distance_type("cosine").nprobes(3)
                 .refine_factor(10).limit(k + OVERFETCH).select(["chunk_id", "_distance"]).to_arrow())
        hits = zip(query.column("chunk_id").to_pylist(), query.column("_distance").to_pylist())
        assert got == [cid for cid, _ in sorted(hits, key=lambda h: (-(1.0 - float(h[1])), h[0]))][:k], qid


BAD = [
    ({"type": "ivf_pq", "num_partitions": 500}, "vector_index.num_partitions: 500 partitions for 43 vectors"),
    ({"type": "ivf_pq", "num_sub_vectors": 7}, "vector_index.num_sub_vectors: 7 does not divide the embedding "
                                               "dimension 384"),
    ({"type": "ivf_hnsw_pq", "num_sub_vectors": 5}, "vector_index.num_sub_vectors: 5 does not divide"),
    # No num_partitions: LanceDB's default sqrt(43 vectors) = 7 partitions.
    ({"type": "ivf_hnsw_sq", "nprobes": 8}, "vector_index.nprobes: 8 is above the index's 7 partitions"),
    # LanceDB's HNSW search fails when ef is below the candidates it is asked for: 100 for fusion + 10 over-fetched.
    ({"type": "ivf_hnsw_sq", "ef": 50}, "vector_index.ef: 50 is below the 110 candidates"),
]


@pytest.mark.parametrize(("index", "message"), BAD, ids=["partitions", "sub-vectors", "hnsw-sub-vectors", "nprobes", "ef"])
def test_parameters_the_corpus_cannot_take_fail_before_any_build(mini_lab, tmp_path, capsys, monkeypatch, index,
                                                                 message):
    from rag_ttc_assets.adapters import embeddings

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dh"))
    arms = tmp_path / "arms.yaml"
    arms.write_text(MINI_DEFAULTS + f"arms:\n  bad-index: {{vector_index: {json.dumps(index)}}}\n", encoding="utf-8")

    def refuse(*args, **kwargs):
        raise AssertionError("a representation was embedded before the index parameters were checked")

    monkeypatch.setattr(embeddings, "encode", refuse)
    assert cli.main(["run", "bad-index", "--stage", "retrieval"]) != 0
    err = capsys.readouterr().err
    assert f"{arms}: arm 'bad-index': field {message}" in err, err[-3000:]
    # Nothing built past the chunks: no representations, no LanceDB table, no index.
    assert not _built(mini_lab, "representations") and not _built(mini_lab, "vector_index")


def test_arms_file_errors_name_the_file_arm_and_field(tmp_path):
    from rag_ttc_assets.core.arms_file import ArmsError, parse_arms_file

    for index, message in [({"type": "hnsw"}, "field 'vector_index.type'"),
                           ({"type": "ivf_pq", "num_partitions": 4, "nprobes": 9},
                            "nprobes (9) is above num_partitions (4)"),
                           ({"type": "ivf_pq", "m": 16}, "index type 'ivf_pq' takes no m"),
                           ({"type": "flat", "nprobes": 2}, "index type 'flat' takes no nprobes")]:
        text = f"arms:\n  a1: {{vector_index: {json.dumps(index)}}}\n".encode()
        with pytest.raises(ArmsError) as e:
            parse_arms_file(text, str(tmp_path / "arms.yaml"))
        assert f"{tmp_path / 'arms.yaml'}: arms.a1: field 'vector_index" in str(e.value) and message in str(e.value)


def test_an_interrupted_index_build_leaves_no_half_index(mini_lab, monkeypatch):
    """The index is built into the artifact's temporary folder with its table; a build that dies leaves no folder
    a later run opens, and the next run builds the whole index."""
    from rag_ttc_assets.core.arms import ArmConfig

    cfg = ArmConfig(dataset="mini", chunk_runes=600, overlap_runes=60, retrieve_k=10, evidence_k=3,
                    vector_index={"type": "ivf_hnsw_sq", "num_partitions": 1})
    real = vectors.build_index

    def dies(path, params):
        real(path, params)  # the index files are written...
        raise KeyboardInterrupt  # ...and the process is stopped before the store publishes the folder

    from rag_ttc_assets.stages import ingest

    ds = ingest.bind_dataset(mini_lab.datasets_dir, cfg)
    reps = ingest.build_representations(mini_lab.store, cfg, ds, ingest.build_chunks(mini_lab.store, cfg, ds))
    monkeypatch.setattr(vectors, "build_index", dies)
    with pytest.raises(KeyboardInterrupt):
        indexes.build_vectors(mini_lab.store, cfg, reps)
    root = mini_lab.store.root / "cache" / "vector_index"
    assert [p for p in root.iterdir()] == []  # neither a published folder nor the temporary one
    monkeypatch.setattr(vectors, "build_index", real)
    built = indexes.build_vectors(mini_lab.store, cfg, reps)
    assert not built.cache_hit and built.manifest["info"]["index"]["indexed_rows"] == 43
    assert vectors.VectorIndex(built.path / "lancedb").indexed
    shutil.rmtree(built.path)
