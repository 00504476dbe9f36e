"""The snapshot that checks a refactor kept behaviour (support/store_snapshot) sees a change in any table or summary,
and only there: two runs differ in how long a call took and where the dataset was, and in nothing else."""

import json

import polars as pl

from rag_ttc_assets_tests.support.store_snapshot import arm_files, differences, write_golden


def _store(root, latency=1.5, status="valid", score=0.25, faithfulness=0.5, extra=False):
    arm = root / "arms" / "baseline"
    arm.mkdir(parents=True)
    pl.DataFrame({"query_id": ["q1", "q2"], "status": ["valid", status], "latency_s": [latency, 2.0],
                  "score": [score, 0.75]}).write_parquet(arm / "answers.parquet")
    (arm / "judge_summary.json").write_text(json.dumps(
        {"mean_faithfulness": faithfulness, "statuses": {"judged": 2}, "corpus_file": str(root / "corpus.json")}))
    if extra:
        (arm / "labels.json").write_text("{}")
    return root


def test_two_runs_that_differ_in_timing_and_place_only_are_equal(tmp_path):
    a = _store(tmp_path / "a")
    b = _store(tmp_path / "b", latency=9.0, score=0.25 * (1 + 1e-9))
    assert differences(a, b) == []


def test_a_changed_row_a_changed_summary_and_a_new_file_are_each_named(tmp_path):
    a = _store(tmp_path / "a")
    b = _store(tmp_path / "b", status="parse_failure", faithfulness=0.6, extra=True)
    assert differences(a, b) == [
        "baseline/answers.parquet: .rows[1].status: 'valid' != 'parse_failure'",
        "baseline/judge_summary.json: .mean_faithfulness: 0.5 != 0.6",
        "baseline/labels.json: only in after"]
    c = _store(tmp_path / "c", score=0.26)
    assert differences(a, c) == ["baseline/answers.parquet: .rows[0].score: 0.25 != 0.26"]


def test_a_golden_file_compares_equal_to_the_store_it_was_taken_from(tmp_path):
    a = _store(tmp_path / "a")
    write_golden(tmp_path / "golden.json", arm_files(a))
    golden = json.loads((tmp_path / "golden.json").read_text())
    assert differences(golden, a) == []
    assert differences(golden, _store(tmp_path / "b", status="x")) == [
        "baseline/answers.parquet: .rows[1].status: 'valid' != 'x'"]
