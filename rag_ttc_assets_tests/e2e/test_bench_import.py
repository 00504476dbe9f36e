"""`rag-ttc bench --only import`: the import path against json.load of the same file, at a small size here (the
measurement itself runs 10,000 traces of 20 documents)."""

import json
import subprocess
import sys

from rag_ttc_assets.bench import import_reading as imported
from rag_ttc_assets.imported import import_mapping as imap
from rag_ttc_assets.imported import import_source as imp


def test_the_synthetic_export_reads_back_as_its_traces():
    data, corpus, questions = imported.synthetic_export(traces=30, docs=8)
    traces = imp.otlp_traces(data, "bench.json")
    mapping = imap.map_traces(traces, questions, "bench.json")
    assert mapping.counts()["matched_by_attribute"] == 30
    matches, index = imap.map_documents(mapping.traces.values(), corpus)
    assert {m.matched_by for m in matches} == {"id"}
    rows = imap.imported_rows(questions, mapping, index, {m.chunk.chunk_id: m.chunk.text for m in matches})
    assert [len(r.ranked_chunk_ids) for r in rows] == [8] * 30
    assert all(r.admitted_chunk_ids == r.selected_chunk_ids[: imported.SELECTED] for r in rows)


def test_bench_only_import_reports_a_ratio_against_its_target(tmp_path):
    code = ("import sys, json; from rag_ttc_assets.bench import import_reading as imported; imported.TRACES = 200; "
            "from rag_ttc_assets.bench.command import cmd_bench, add_parser; import argparse; "
            "p = argparse.ArgumentParser(); s = p.add_subparsers(); add_parser(s); "
            "a = p.parse_args(['bench', '--only', 'import', '--repeat', '1', '--json', '--home', sys.argv[1]]); "
            "sys.exit(a.fn(a))")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)["items"]["import"]
    assert r["target"] == "<= 3" and r["ratio_kind"] == "cost" and r["ratio"] > 0
    assert r["verdict"] in ("meets", "misses") and r["traces"] == 200
