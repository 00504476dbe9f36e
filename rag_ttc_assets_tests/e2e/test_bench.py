"""`python -m rag_ttc_assets.bench`, run as a user runs it. Ratios are reported, never asserted against
their targets: the machine is shared and noisy, so a test can only check the report's shape."""

import json
import os
import subprocess
import sys

import pytest

from rag_ttc_assets_tests.conftest import PYREF, REPO
from rag_ttc_assets_tests.support.browser import NO_CHROMIUM, NO_PLAYWRIGHT
from rag_ttc_assets_tests.support.required import needs


@pytest.mark.slow
def test_bench_reports_retrieval_and_metrics_as_json(tmp_path):
    home = tmp_path / "bench-home"
    proc = subprocess.run(
        [sys.executable, "-m", "rag_ttc_assets.bench", "--only", "metrics", "--only", "retrieval",
         "--repeat", "1", "--json", "--home", str(home)],
        capture_output=True, text=True, cwd=REPO, timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))})
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["dataset"] == PYREF.name and report["repeat"] == 1
    items = report["items"]
    assert list(items) == ["retrieval", "metrics"]  # the documented order, whatever the flag order

    r = items["retrieval"]
    assert r["product_s"] > 0 and r["reference_s"] > 0
    assert isinstance(r["ratio"], float) and r["ratio"] > 0
    assert r["ratio_kind"] == "cost" and r["target"] == "<= 1.25" and r["target_value"] == 1.25
    assert r["verdict"] in ("meets", "misses")
    assert r["identical_ranked_lists"] is True  # the reference really does the product's retrieval
    assert r["questions"] >= 120

    m = items["metrics"]
    assert m["product_s"] > 0 and m["reference_s"] > 0 and isinstance(m["ratio"], float) and m["ratio"] > 0
    assert m["ratio_kind"] == "cost" and m["target"] == "<= 1.1" and m["verdict"] in ("meets", "misses")
    assert m["queries"] == m["evaluated"] == 10_000  # the same queries on both sides, none undefined
    assert m["max_mean_abs_diff"] < 1e-9  # the same measures as pytrec_eval on the same data

    # The bench wrote only under --home; the user's store was never the target.
    assert (home / "shared" / "store" / "cache").is_dir()


def test_scaled_dataset_is_valid_and_digest_bound(tmp_path):
    from rag_ttc_assets.bench.labs import write_scaled_dataset
    from rag_ttc_assets.adapters.input_files import load_dataset

    a = load_dataset(write_scaled_dataset(tmp_path / "a", 40))
    b = load_dataset(write_scaled_dataset(tmp_path / "b", 40))
    bundled = load_dataset(PYREF)
    assert len(a.corpus) == 40
    assert a.corpus_digest == b.corpus_digest  # deterministic
    assert [q.text for q in a.evaluation.questions] == [q.text for q in bundled.evaluation.questions]
    targets = {t.doc_id for q in a.evaluation.questions for t in q.targets}
    assert targets and targets <= set(a.corpus.ids())
    assert all(len(q.targets) <= 10 for q in a.evaluation.questions)


def test_batched_vector_search_matches_one_query_per_vector(tmp_path):
    """The product's batched LanceDB search (what `retrieve` now uses) against the one-query-per-vector
    loop the bench's retrieval reference runs: same hits, scores and chunk_id tie-break, across batch
    boundaries and for a single row."""
    import numpy as np

    from rag_ttc_assets.adapters.vectors import VectorIndex, build_table

    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(60, 8)).astype(np.float32)
    vecs[10] = vecs[11] = vecs[12]  # exact ties, broken by chunk_id
    ids = [f"c{i:02d}" for i in range(60)][::-1]
    build_table(tmp_path / "db", ids, vecs)
    vi = VectorIndex(tmp_path / "db")
    queries = np.concatenate([vecs[[12, 3]], rng.normal(size=(5, 8)).astype(np.float32)])
    one_by_one = [vi.search(q, 15) for q in queries]
    assert vi.search_many(queries, 15, batch=3) == one_by_one
    assert vi.search_many(queries[:1], 15) == one_by_one[:1]
    assert vi.search_many(queries[:0], 15) == []
    tied = [c for c, _ in one_by_one[0][:3]]
    assert tied == sorted(tied) == sorted(ids[i] for i in (10, 11, 12))


def test_run_child_passes_json_values_and_reports_a_failing_child():
    """The child-process runner shared by `memory` and `--growth`: typed arguments in, the result out, and a
    failure names the measurement and quotes the child's stderr."""
    import pytest

    from rag_ttc_assets.bench.harness import run_child

    assert run_child("growth.exponent", [1.0, 2.0, 10, 20], "exponent") == pytest.approx(1.0)
    with pytest.raises(RuntimeError, match=r"(?s)probe child failed \(exit 1\); its stderr:.*no_such_function"):
        run_child("memory.no_such_function", [], "probe")


def test_a_child_reports_its_own_peak_memory_not_its_parents():
    """Linux keeps ru_maxrss across fork and exec: a child of a parent holding 600 MB would report 600 MB. The
    growth and scale benches' children report their own high-water mark (harness.maxrss_mb)."""
    import resource

    from rag_ttc_assets.bench.harness import run_child

    held = b"\x01" * (600 * 2**20)  # touched pages: resident in this process
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10 >= 600
    child = run_child("harness.maxrss_mb", [], "peak")
    assert 10 < child < 400, child
    assert len(held) == 600 * 2**20


def test_code_location_import_is_measured_and_imports_no_model_library(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    # What every step process and `dagster dev` reload imports: no model library, no index library, not numpy
    # (nor pytrec_eval, which loads it) and not polars: each loads where it is used.
    probe = subprocess.run(
        [sys.executable, "-c", "import sys, rag_ttc_assets.definitions; "
                               "print(sorted(m for m in ('litellm', 'torch', 'sentence_transformers', 'lancedb', "
                               "'tantivy', 'numpy', 'pytrec_eval', 'polars') if m in sys.modules))"],
        capture_output=True, text=True, cwd=REPO, timeout=120, env=env)
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert probe.stdout.strip() == "[]"
    proc = subprocess.run(
        [sys.executable, "-m", "rag_ttc_assets.bench", "--only", "code_location_import", "--repeat", "1", "--json",
         "--home", str(tmp_path / "bench-home")], capture_output=True, text=True, cwd=REPO, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    c = json.loads(proc.stdout)["items"]["code_location_import"]
    assert c["product_s"] > 0 and c["reference_s"] > 0 and c["ratio"] == c["product_s"] / c["reference_s"]
    assert c["ratio_kind"] == "cost" and c["target"] == "<= 1.5" and c["verdict"] in ("meets", "misses")


@pytest.mark.slow
@needs(NO_PLAYWRIGHT)
@needs(NO_CHROMIUM)
def test_report_render_is_measured_against_a_plain_table_in_chromium(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(
        [sys.executable, "-m", "rag_ttc_assets.bench", "--only", "report", "--repeat", "1", "--json",
         "--home", str(tmp_path / "bench-home")], capture_output=True, text=True, cwd=REPO, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout)["items"]["report"]
    assert r["cases"] == 5000 and r["product_s"] > 0 and r["reference_s"] > 0
    assert r["ratio"] == r["product_s"] / r["reference_s"] and r["target"] == "<= 2"
    assert r["verdict"] in ("meets", "misses") and r["filter_ms"] > 0 and r["report_bytes"] > r["table_bytes"]
    assert (tmp_path / "bench-home" / "report" / "report.html").read_text().count("syn-04999") >= 1
