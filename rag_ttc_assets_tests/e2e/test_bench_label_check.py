"""`rag-ttc bench --only label_check` as a user runs it, on a smaller synthetic case (the bench's own is 100,000
labels on 50,000 documents): the report's shape and the check's statuses, never the ratio against its target."""

import json
import os
import subprocess
import sys

from rag_ttc_assets_tests.conftest import REPO


def test_bench_label_check_reports_a_ratio_beside_its_target_and_finds_exactly_the_edits(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "rag_ttc_assets.bench", "--only", "label_check", "--repeat", "1", "--json",
         "--home", str(tmp_path / "bench-home")],
        capture_output=True, text=True, cwd=REPO, timeout=300,
        env={**os.environ, "RAG_TTC_BENCH_LABEL_CHECK_SIZE": "3000,1500",
             "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))})
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout)["items"]["label_check"]
    assert r["product_s"] > 0 and r["reference_s"] > 0 and isinstance(r["ratio"], float) and r["ratio"] > 0
    assert r["ratio_kind"] == "cost" and r["target"] == "<= 100" and r["verdict"] in ("meets", "misses")
    assert (r["labels"], r["documents"]) == (3000, 1500)
    edits, counts = r["edits"], r["counts"]
    assert min(edits.values()) > 50  # about 15% of the labelled passages, a third of each kind
    assert (counts["relocated"], counts["changed"], counts["gone"], counts["ambiguous"]) == (
        edits["moved"], edits["number"], edits["removed"], 0)
    assert counts["fresh"] == 3000 - sum(edits.values())
