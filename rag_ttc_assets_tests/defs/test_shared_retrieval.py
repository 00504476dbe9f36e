"""Retrieval rows are a shared, content-addressed artifact: arms that differ only downstream of retrieval
(evidence_k, context_runes...) retrieve once, and anything retrieval reads, edited, retrieves again."""

import polars as pl

from rag_ttc_assets.stages import indexes, ingest
from rag_ttc_assets.stages import retrieval as stage
from rag_ttc_assets_tests.conftest import mini_corpus, mini_questions, write_dataset


def _upstream(lab, cfg):
    ds = ingest.bind_dataset(lab.datasets_dir, cfg)
    ch = ingest.build_chunks(lab.store, cfg, ds)
    reps = ingest.build_representations(lab.store, cfg, ds, ch)
    return (ds, ch, indexes.build_bm25(lab.store, cfg, reps), indexes.build_vectors(lab.store, cfg, reps),
            indexes.build_question_embeddings(lab.store, cfg, ds))


def _entries(lab) -> list[str]:
    return sorted(p.name for p in (lab.store.root / "cache" / "retrieval_rows").iterdir()
                  if not p.name.startswith("."))


def test_retrieval_rows_are_shared_by_arms_that_agree_upstream_of_retrieval(mini_lab):
    lab = mini_lab
    base = lab.arms["baseline"]
    ds, ch, bm, vec, qemb = _upstream(lab, base)
    rows = stage.retrieve_once(lab.store, base, ds, ch, bm, vec, qemb)
    chunk_docs = dict(pl.read_parquet(ch.path / "chunks.parquet", columns=["chunk_id", "doc_id"]).iter_rows())
    assert rows.equals(stage.retrieve(base, ds, bm, vec, qemb, chunk_docs))  # the same rows as retrieving
    assert len(_entries(lab)) == 1

    for arm in ("evidence-k-5", "tight", "context-700"):  # evidence_k / context_runes only: shared
        cfg = lab.arms[arm]
        assert stage.retrieve_once(lab.store, cfg, *_upstream(lab, cfg)).equals(rows), arm
    assert len(_entries(lab)) == 1

    bm25 = lab.arms["bm25-only"]  # a different retrieval: its own rows
    other = stage.retrieve_once(lab.store, bm25, *_upstream(lab, bm25))
    assert len(_entries(lab)) == 2 and other["retrieval"].unique().to_list() == ["bm25"]
    assert other["query_id"].to_list() == rows["query_id"].to_list()

    # An edited evaluation (fewer questions, same corpus) is seen at once: new rows, not the cached ones.
    corpus = mini_corpus()
    write_dataset(lab.datasets_dir / "mini", corpus, mini_questions(corpus)[:3])
    edited = stage.retrieve_once(lab.store, base, *_upstream(lab, base))
    assert edited["query_id"].to_list() == [q["id"] for q in mini_questions(corpus)[:3]]
    assert len(_entries(lab)) == 3
