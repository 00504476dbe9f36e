"""Chunks and template representations are built a slice at a time (stages.ingest.BATCH_ROWS), so a million chunks
are never a list of models at once; the artifacts are the ones a single pass writes, byte for byte, so their content
digests (every downstream store key) do not depend on the slice size."""

from rag_ttc_assets.core.dataset import parse_dataset
from rag_ttc_assets.stages import ingest
from rag_ttc_assets_tests.conftest import write_mini_lab, MINI_ARMS


def _build(root, monkeypatch, rows):
    from rag_ttc_assets.lab import Lab

    write_mini_lab(root, monkeypatch)
    (root / "arms.yaml").write_text(MINI_ARMS.replace("baseline: {}", "baseline: {representation: titled}"))
    monkeypatch.setattr(ingest, "BATCH_ROWS", rows)
    lab = Lab.from_env()
    cfg = lab.arms["baseline"]
    ds = ingest.bind_dataset(lab.datasets_dir, cfg)
    ch = ingest.build_chunks(lab.store, cfg, ds)
    return ch, ingest.build_representations(lab.store, cfg, ds, ch)


def test_chunks_and_representations_built_in_slices_are_the_single_pass_artifacts(tmp_path, monkeypatch):
    whole_ch, whole_rep = _build(tmp_path / "whole", monkeypatch, 1_000_000)
    sliced_ch, sliced_rep = _build(tmp_path / "sliced", monkeypatch, 7)
    n = whole_ch.manifest["info"]["chunks"]
    assert n > 7 * 3 and sliced_ch.manifest["info"]["chunks"] == n
    assert sliced_ch.content_digest == whole_ch.content_digest
    assert sliced_rep.content_digest == whole_rep.content_digest
    assert [c.chunk_id for b in ingest.chunk_batches(sliced_ch, 7) for c in b] == \
        [c.chunk_id for c in ingest.read_chunks(whole_ch)]


def test_a_corpus_read_in_slices_is_the_corpus_read_the_long_way(tmp_path, monkeypatch):
    import hashlib
    import json

    from rag_ttc_assets.core import corpus_table
    from rag_ttc_assets.core.records import Corpus

    monkeypatch.setattr(corpus_table, "SLICE_ROWS", 2)  # validated two documents at a time
    root = write_mini_lab(tmp_path, monkeypatch) / "datasets" / "mini"
    cbytes, ebytes = (root / "corpus.json").read_bytes(), (root / "evaluation.json").read_bytes()
    ds = parse_dataset("mini", root / "corpus.json", root / "evaluation.json", cbytes, ebytes)
    assert list(ds.corpus.documents()) == Corpus.model_validate(json.loads(cbytes)).documents
    # A corpus the one pass refuses is read the long way, which names the record and field.
    bad = json.loads(cbytes)
    bad["documents"][2]["text"] = 7
    bad_bytes = json.dumps(bad).encode()
    ev = {**json.loads(ebytes), "corpus_digest": "sha256:" + hashlib.sha256(bad_bytes).hexdigest()}
    try:
        parse_dataset("mini", root / "corpus.json", root / "evaluation.json", bad_bytes, json.dumps(ev).encode())
    except ValueError as e:
        assert "documents[2] (id 'continue'): text: Input should be a valid string" in str(e)
    else:
        raise AssertionError("a corpus with a number for a text was accepted")
