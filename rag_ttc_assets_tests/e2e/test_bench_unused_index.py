"""`rag-ttc bench --only unused_index`, run as a user runs it: the BM25-only arm's retrieval stage from a cold store
through the job, against the same run without the vector index. The ratio is reported, never asserted
(shared machine); what is asserted is that the product side really skipped the vector side."""

import json
import os
import subprocess
import sys

import pytest

from rag_ttc_assets_tests.conftest import REPO


@pytest.mark.slow
def test_bench_unused_index_reports_a_bm25_arm_that_built_no_vector_side(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "rag_ttc_assets.cli", "bench", "--only", "unused_index", "--repeat", "1", "--json",
         "--home", str(tmp_path / "bench-home")],
        capture_output=True, text=True, cwd=REPO, timeout=600,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))})
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout)["items"]["unused_index"]
    assert r["product_s"] > 0 and r["reference_s"] > 0 and isinstance(r["ratio"], float)
    assert r["ratio_kind"] == "cost" and r["target"] == "<= 1.2" and r["verdict"] in ("meets", "misses")
    # A lab arm reads no imported trace either (core.usage): imported_source is unused beside the vector side.
    assert r["arm"] == "retrieval-bm25"
    assert set(r["unused"]) == {"vector_index", "question_embeddings", "imported_source"}
    assert r["built"] == ["bm25_index", "chunks", "representations", "retrieval_rows"]
    assert r["vector_index_metadata"]["used_by_arm"] is False
    # The timed run: the whole retrieval stage, from a cold store; the reference is the same without vector_index.
    assert set(r["step_s"]) >= {"corpus_binding", "chunks", "representations", "bm25_index", "vector_index",
                                "retrieval_rows"}
    assert r["reference_assets"] == [a for a in r["product_assets"] if a != "vector_index"]
    assert r["product_assets"][-1] == "retrieval_rows"
