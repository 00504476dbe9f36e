"""The optional ONNX Runtime embedding backend: a real export of the packaged weights, real onnxruntime sessions.

One export (about 10-30 s on two busy cores) is shared by the module through a store in a temporary folder;
the tests that must re-export work on copies of that store.
"""

from __future__ import annotations

import json
import shutil
import warnings

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

from rag_ttc_assets.adapters import embeddings  # noqa: E402
from rag_ttc_assets.adapters import onnx_embeddings as oe  # noqa: E402
from rag_ttc_assets.adapters.store import ArtifactStore  # noqa: E402
from rag_ttc_assets_tests.conftest import MINI_ARMS, PYREF, REPO  # noqa: E402

pytestmark = pytest.mark.slow

# Measured on the 402 bundled representation texts (mean / min cosine against torch): fp32 1.0000 / 1.0000;
# int8 0.9940 / 0.9853.
FP32_MIN_COSINE = 0.999
INT8_MEAN_COSINE = 0.985
INT8_MIN_COSINE = 0.95


def sample_texts() -> list[str]:
    """Corpus texts of many lengths (some past max_seq_length, so truncation matters), plus edge cases."""
    docs = json.loads((PYREF / "corpus.json").read_text(encoding="utf-8"))["documents"]
    texts = [d["text"][: 80 + 53 * i] for i, d in enumerate(docs[::4][:36])]
    return texts + ["x", "", "  padded  with spaces  ", "What does the assert statement do?"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return ArtifactStore(tmp_path_factory.mktemp("onnx-home") / "store")


@pytest.fixture(scope="module")
def torch_vectors():
    return embeddings.encode(sample_texts())


def _fresh_encoders(monkeypatch):
    monkeypatch.setattr(oe, "_encoders", {})


@pytest.mark.parametrize("model", [oe.ONNX_FP32, oe.ONNX_INT8])
def test_onnx_embeddings_agree_with_torch(store, torch_vectors, model):
    texts = sample_texts()
    got = oe.encode(texts, model, store=store)
    assert got.shape == torch_vectors.shape and got.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cos = np.sum(got * torch_vectors, axis=1)
    if model == oe.ONNX_FP32:
        assert cos.mean() >= 0.999 and cos.min() >= FP32_MIN_COSINE, (cos.mean(), cos.min())
        assert np.max(np.abs(got - torch_vectors)) < 1e-4
    else:
        assert cos.mean() >= INT8_MEAN_COSINE and cos.min() >= INT8_MIN_COSINE, (cos.mean(), cos.min())


@pytest.mark.parametrize("model", [oe.ONNX_FP32, oe.ONNX_INT8])
def test_onnx_embeddings_are_deterministic_and_independent_of_batching(store, model):
    texts = sample_texts()
    a = oe.encode(texts, model, store=store)
    b = oe.encode(texts, model, store=store)
    assert np.array_equal(a, b)
    one_by_one = np.stack([oe.encode([t], model, store=store)[0] for t in texts[:8]])
    if model == oe.ONNX_INT8:  # each text runs alone: its vector does not depend on the batch it came in
        assert np.array_equal(one_by_one, a[:8])
    else:
        assert np.allclose(one_by_one, a[:8], atol=1e-5)
    assert oe.encode([], model, store=store).shape == (0, 384)


def test_embeddings_encode_routes_by_model_name(store, monkeypatch):
    seen = []
    real = oe.encode
    monkeypatch.setattr(oe, "encode", lambda texts, model, batch_size=64, store=None, advance=None: seen.append(model)
                        or real(texts, model, batch_size=batch_size, store=store or module_store, advance=advance))
    module_store = store
    v = embeddings.encode(["a sentence"], oe.ONNX_INT8)
    assert seen == [oe.ONNX_INT8] and v.shape == (1, 384)
    assert embeddings.dimension(oe.ONNX_FP32) == 384 == embeddings.dimension(embeddings.DEFAULT_MODEL)
    embeddings.encode(["a sentence"])  # the torch model stays on torch
    assert seen == [oe.ONNX_INT8]


def test_cache_is_reused_without_exporting_again(store, monkeypatch):
    first = {m: oe.ensure_model(m, store) for m in oe.MODELS}

    def no_export(*args, **kwargs):
        raise AssertionError("exported again")

    monkeypatch.setattr(oe, "_export_fp32", no_export)
    monkeypatch.setattr(oe, "_quantize_int8", no_export)
    _fresh_encoders(monkeypatch)
    for m, built in first.items():
        again = oe.ensure_model(m, store)
        assert again.cache_hit and again.path == built.path and again.content_digest == built.content_digest
        assert oe.load(m, store).encode(["still loads"]).shape == (1, 384)
    fp32, int8 = first[oe.ONNX_FP32], first[oe.ONNX_INT8]
    assert fp32.path != int8.path
    assert fp32.manifest["key"]["source_digest"] == oe.source_digest(oe.source_path())
    assert int8.manifest["key"]["fp32_content_digest"] == fp32.content_digest
    assert fp32.manifest["info"]["probe_min_cosine"] >= oe.EXPORT_CHECK_MIN_COSINE
    assert fp32.path.parent == store.root / "cache" / oe.KIND


@pytest.mark.parametrize("model", [oe.ONNX_FP32, oe.ONNX_INT8])
def test_truncated_cached_model_is_detected_and_exported_again(store, tmp_path, monkeypatch, model):
    oe.ensure_model(oe.ONNX_INT8, store)  # both in the store
    copy = ArtifactStore(tmp_path / "store")
    shutil.copytree(store.root, copy.root)
    broken = oe.ensure_model(model, copy).path / oe.MODEL_FILE
    with broken.open("r+b") as f:
        f.truncate(broken.stat().st_size // 2)
    calls = {"_export_fp32": 0, "_quantize_int8": 0}
    for name in calls:
        real = getattr(oe, name)
        monkeypatch.setattr(oe, name, lambda *a, _real=real, _name=name: calls.__setitem__(_name, calls[_name] + 1)
                            or _real(*a))
    _fresh_encoders(monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rebuilt = oe.ensure_model(model, copy)
    assert any("corrupt" in str(w.message) for w in caught)
    assert not rebuilt.cache_hit and copy.intact(rebuilt.path)
    assert calls == ({"_export_fp32": 1, "_quantize_int8": 0} if model == oe.ONNX_FP32
                     else {"_export_fp32": 0, "_quantize_int8": 1})
    want = oe.encode(["a check"], model, store=store)
    assert np.allclose(oe.encode(["a check"], model, store=copy), want, atol=1e-3 if model == oe.ONNX_INT8 else 1e-5)


def test_missing_optional_packages_are_named(monkeypatch):
    real = oe.metadata.version

    def version(pkg):
        if pkg == "onnxscript":
            raise oe.metadata.PackageNotFoundError(pkg)
        return real(pkg)

    monkeypatch.setattr(oe.metadata, "version", version)
    with pytest.raises(oe.OnnxBackendUnavailable, match=r"onnxscript.*\.\[onnx\]"):
        oe.ensure_model(oe.ONNX_FP32, ArtifactStore("/nonexistent"))


def test_repository_onnx_arms_differ_from_baseline_only_in_embedding_model():
    from rag_ttc_assets.adapters.input_files import load_arms
    from rag_ttc_assets.core.artifacts import QUESTION_EMBEDDINGS, VECTOR_INDEX

    arms = load_arms(REPO / "arms.yaml")
    base = arms["baseline"]
    for arm, model in (("embedding-onnx", oe.ONNX_FP32), ("embedding-onnx-int8", oe.ONNX_INT8)):
        assert arms[arm] == base.model_copy(update={"embedding_model": model})
        # Their own vector indexes and question embeddings: the store keys include the model name.
        for artifact in (VECTOR_INDEX, QUESTION_EMBEDDINGS):
            inputs = dict.fromkeys(artifact.inputs, "sha256:x")
            assert artifact.key(arms[arm], **inputs) != artifact.key(base, **inputs)
    inputs = dict.fromkeys(VECTOR_INDEX.inputs, "sha256:x")
    assert VECTOR_INDEX.key(arms["embedding-onnx"], **inputs) != VECTOR_INDEX.key(arms["embedding-onnx-int8"], **inputs)


def test_unknown_embedding_model_names_file_arm_and_field(tmp_path):
    from rag_ttc_assets.core.arms_file import ArmsError
    from rag_ttc_assets.lab import Lab

    arms_file = tmp_path / "arms.yaml"
    arms_file.write_text("arms:\n  baseline: {}\n  odd: {embedding_model: all-MiniLM-L6-v2-onxx}\n", encoding="utf-8")
    lab = Lab.from_env(arms_file=arms_file, datasets_dir=REPO / "datasets", home=tmp_path / "home")
    with pytest.raises(ArmsError) as err:
        lab.arms
    msg = str(err.value)
    assert str(arms_file) in msg and "arm 'odd'" in msg and "field 'embedding_model'" in msg
    assert "all-MiniLM-L6-v2-onxx" in msg and oe.ONNX_FP32 in msg


def test_cli_retrieval_stage_runs_the_onnx_arm(mini_lab, store, tmp_path):
    """`rag-ttc run baseline embedding-onnx --stage retrieval`, as a user runs it, with the module's export copied
    into the lab's store (so the subprocess finds it instead of exporting again)."""
    from rag_ttc_assets_tests.e2e.test_cli import rag_ttc

    arms = MINI_ARMS.replace("arms:\n  baseline: {}\n",
                             "arms:\n  baseline: {}\n  embedding-onnx: {embedding_model: all-MiniLM-L6-v2-onnx}\n")
    assert arms != MINI_ARMS
    mini_lab.arms_file.write_text(arms, encoding="utf-8")
    fp32 = oe.ensure_model(oe.ONNX_FP32, store)
    dest = mini_lab.store.root / "cache" / oe.KIND / fp32.path.name
    shutil.copytree(fp32.path, dest)
    code, out, err = rag_ttc("run", "baseline", "embedding-onnx", "--stage", "retrieval", "--json",
                             env={"DAGSTER_HOME": str(tmp_path / "dh")})
    assert code == 0, err
    result = json.loads(out)["arms"]
    base, onnx = result["baseline"]["retrieval"], result["embedding-onnx"]["retrieval"]
    assert onnx["evaluated"] == base["evaluated"] == 7
    for m in ("recall_10", "ndcg_cut_10"):
        assert abs(onnx[m] - base[m]) <= 0.05, (m, onnx[m], base[m])
    # Reused, not exported again; and each arm has its own vector index and question embeddings.
    assert sorted(p.name for p in dest.parent.iterdir()) == [fp32.path.name]
    for kind in ("vector_index", "question_embeddings"):
        folder = mini_lab.store.root / "cache" / kind
        manifests = [json.loads((p / "manifest.json").read_text()) for p in folder.iterdir()
                     if (p / "manifest.json").is_file()]
        assert sorted(m["key"]["fields"]["embedding_model"] for m in manifests) == ["all-MiniLM-L6-v2", oe.ONNX_FP32]


def test_stages_use_the_labs_own_store_for_the_onnx_export(mini_lab, store, tmp_path, monkeypatch):
    """A lab with an explicit home (as the bench and the definitions build one) finds its ONNX export in its own
    store, whatever RAG_TTC_HOME says: the vector index of an ONNX arm is built without touching the other home."""
    from rag_ttc_assets.lab import Lab
    from rag_ttc_assets.stages import indexes, ingest

    other = tmp_path / "elsewhere"
    monkeypatch.setenv("RAG_TTC_HOME", str(other))
    _fresh_encoders(monkeypatch)
    lab = Lab(arms_file=mini_lab.arms_file, datasets_dir=mini_lab.datasets_dir, prompts_dir=mini_lab.prompts_dir,
              home=tmp_path / "explicit-home")
    fp32 = oe.ensure_model(oe.ONNX_FP32, store)
    dest = lab.store.root / "cache" / oe.KIND / fp32.path.name
    shutil.copytree(fp32.path, dest)
    cfg = lab.arms["baseline"].model_copy(update={"embedding_model": oe.ONNX_FP32})
    ds = ingest.bind_dataset(lab.datasets_dir, cfg)
    reps = ingest.build_representations(lab.store, cfg, ds, ingest.build_chunks(lab.store, cfg, ds))
    built = indexes.build_vectors(lab.store, cfg, reps)
    assert built.manifest["info"]["embedding_model"] == oe.ONNX_FP32
    assert sorted(p.name for p in dest.parent.iterdir()) == [fp32.path.name]  # found, not exported again
    assert not other.exists()


def test_an_onnx_model_needs_the_callers_store():
    with pytest.raises(ValueError, match=r"exported into an artifact store: pass the lab's store"):
        oe.encode(["x"], oe.ONNX_FP32)
