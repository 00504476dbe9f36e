"""`rag-ttc bench --growth`: the growth table's shape at tiny sizes. Times are never asserted (the machine
is shared and noisy); only that every step was measured and the table has the documented rows."""

import math
import os
import subprocess
import sys

import pytest

from rag_ttc_assets_tests.conftest import REPO


def test_sizes_exponents_and_document_counts():
    from rag_ttc_assets.bench.growth import documents_for, exponent, parse_sizes

    assert parse_sizes("5k, 1000,1000,25k") == [1000, 5000, 25000]
    with pytest.raises(ValueError):
        parse_sizes("0")
    assert exponent(1.0, 4.0, 100, 200) == pytest.approx(2.0)  # quadratic
    assert exponent(1.0, 2.0, 100, 200) == pytest.approx(1.0)  # linear
    assert exponent(None, 2.0, 100, 200) is None
    plan = documents_for([10, 50, 200], 1200, 120)
    assert [c for _, c in plan.values()] >= [10, 50, 200]
    docs = [d for d, _ in plan.values()]
    assert docs == sorted(docs) and all(c - t < 30 for t, (_, c) in plan.items())  # the smallest such prefix
    assert math.isfinite(exponent(0.5, 0.7, 10, 50))


def _target(fields: list[str]) -> str:
    """The target a figure's line names, after its `<=` (the line ends in `meets` or `NOT met`)."""
    return fields[fields.index("<=") + 1]


def test_growth_command_prints_a_table_with_every_step(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    home = tmp_path / "growth-home"
    cmd = [sys.executable, "-m", "rag_ttc_assets.bench", "--growth", "20,60", "--growth-embed-max", "30", "--repeat", "2",
           "--home", str(home)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    header = next(ln for ln in lines if ln.startswith("step"))
    assert header.split()[1:] == ["20", "60*", "b", "20-60"]
    table = lines[lines.index(header) + 2:]
    rows = {ln.split()[0]: ln.split()[1:] for ln in table[:table.index("")]}
    expected = ["documents", "questions", "dataset", "chunking", "representations", "tantivy", "embedding",
                "lancedb", "retrieval", "admission", "peak_rss_mb", "peak_over_base_mb"]
    assert list(rows) == expected
    for step in ("dataset", "chunking", "representations", "tantivy", "lancedb", "retrieval", "admission"):
        assert len(rows[step]) == 3 and all(float(v) >= 0 for v in rows[step][:2]), (step, rows[step])
    assert float(rows["embedding"][0]) > 0 and rows["embedding"][1:] == ["-", "-"]  # 60 chunks > embed max
    assert any(ln.startswith("* not embedded (embedding measured up to 30 chunks)") for ln in lines)
    assert any(ln.startswith("b a-b = growth exponent") for ln in lines)
    # Issue 46's targets, each figure beside its target: the peak at the largest size and extrapolated to a million
    # chunks (against 4 GB), and each step's whole-range exponent (admission against 1.05).
    start = next(i for i, ln in enumerate(lines) if ln.startswith("issue 46 targets"))
    figures = {ln.split("  ")[0]: ln.split() for ln in lines[start + 3:] if "<=" in ln}
    assert _target(figures["peak_rss_mb at 60 chunks"]) == "4096"
    assert _target(figures["peak_rss_mb at 1,000,000 chunks, extrapolated"]) == "4096"
    assert _target(figures["admission exponent, 20 to 60 chunks"]) == "1.05"
    for step in ("chunking", "representations", "tantivy", "lancedb", "retrieval"):
        assert _target(figures[f"{step} exponent, 20 to 60 chunks"]) == "1.15", step
    assert all(f[-1] in ("met", "meets", "-") for f in figures.values())
