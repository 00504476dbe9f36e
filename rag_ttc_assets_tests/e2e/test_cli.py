"""The `rag-ttc` command, run as a user runs it: a subprocess with exit codes and stdout."""

import json
import math
import os
import re
import subprocess
import sys

import pytest

from rag_ttc_assets_tests.conftest import MINI_DEFAULTS, PYREF, REPO


def rag_ttc(*args, env=None, cwd=REPO):
    proc = subprocess.run([sys.executable, "-m", "rag_ttc_assets.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd, timeout=600)
    return proc.returncode, proc.stdout, proc.stderr


def test_validate_bundled_dataset():
    code, out, err = rag_ttc("validate", str(PYREF), "--json")
    assert code == 0, err
    counts = json.loads(out)
    assert counts["valid"] is True
    assert counts["questions"] >= 120
    assert counts["multi_part"] / counts["questions"] >= 0.4
    assert counts["unanswerable"] >= 10
    assert counts["pilot"] == 12
    assert counts["requests_without_evidence"] == 0
    code, out, _ = rag_ttc("validate", str(PYREF))
    assert code == 0 and out.startswith("valid: ")


def test_validate_reports_every_problem_and_exits_1(tmp_path):
    (tmp_path / "corpus.json").write_text(json.dumps({"documents": [{"id": "a", "text": "x"},
                                                                     {"id": "a", "text": ""}]}))
    (tmp_path / "evaluation.json").write_text("{not json")
    code, out, err = rag_ttc("validate", str(tmp_path))
    assert code == 1
    assert "duplicate document id 'a'" in err and "empty document text" in err
    assert "evaluation.json" in err and "malformed JSON" in err


def test_every_subcommand_has_help():
    for sub in ("validate", "arms", "run", "metrics", "import-beir"):
        code, out, _ = rag_ttc(sub, "--help")
        assert code == 0 and "usage: rag-ttc " + sub in out


def test_arms_lists_the_families_of_the_repository():
    code, out, err = rag_ttc("arms", "--family", "context", "--json")
    assert code == 0, err
    arms = json.loads(out)
    assert list(arms) == ["context-1500", "context-3000", "context-6000", "context-24000", "context-40000"]
    assert [a["context_runes"] for a in arms.values()] == [1500, 3000, 6000, 24000, 40000]
    assert {a["evidence_k"] for a in arms.values()} == {5}


def test_arms_shows_the_request_judges_and_an_imported_arms_source_not_settings_it_never_reads(mini_lab, tmp_path):
    from rag_ttc_assets.core.artifacts import fields_not_read

    (tmp_path / "arms.yaml").write_text(MINI_DEFAULTS + """  request_judges: [local/lexical, local/coverage]
arms:
  baseline: {request_judges: [], request_judge: {model: local/lexical}}
  panel: {}
  sys-a:
    supply: imported
    source: {file: rows.json, format: ragchecker}
""")
    code, out, err = rag_ttc("arms")
    assert code == 0, err
    header, _, base, panel, imported = (line.rstrip() for line in out.splitlines()[:5])
    cols = header.split()
    assert cols[-1] == "request_judges"
    starts = [m.start() for m in re.finditer(r"\S+", header)]

    def cells(line: str) -> dict[str, str]:
        return {c: line[a:b].strip() for c, a, b in zip(cols, starts, [*starts[1:], None])}

    assert cells(base)["chunk_runes"] == "600" and cells(base)["request_judges"] == "local/lexical"
    assert panel.endswith("  local/lexical, local/coverage (all)")  # the default aggregation
    assert imported.endswith("  local/lexical, local/coverage (all)")
    assert cells(imported)["supply"] == "imported: rows.json (ragchecker)"
    for col in ("chunk_runes", "overlap_runes", "retrieval", "retrieve_k", "evidence_k", "context_runes",
                "evidence_order", "prompt", "generator"):
        assert cells(imported)[col] == "n/a", (col, imported)
    assert cells(imported)["judge"] == "local/lexical"  # it judges its answers: read
    assert "n/a: a setting the imported arms (sys-a) never read, their retrieval, contexts and answers being " \
           "their source's: chunk_runes, overlap_runes, retrieval, retrieve_k, evidence_k, context_runes, " \
           "evidence_order, prompt, generator, and " in out
    code, out, err = rag_ttc("arms", "--json")
    assert code == 0, err
    arms = json.loads(out)
    assert arms["sys-a"]["fields_not_read"] == sorted(fields_not_read(mini_lab.arms["sys-a"]))
    assert "chunk_runes" in arms["sys-a"]["fields_not_read"] and arms["panel"]["fields_not_read"] == []
    assert [j["model"] for j in arms["panel"]["request_judges"]] == ["local/lexical", "local/coverage"]


def test_bad_arms_file_names_file_arm_and_field(tmp_path):
    bad = tmp_path / "arms.yaml"
    bad.write_text("arms:\n  baseline: {evidence_k: 30}\n")
    code, _, err = rag_ttc("arms", "--arms-file", str(bad))
    assert code == 1
    assert str(bad) in err and "arms.baseline" in err and "evidence_k (30) cannot exceed retrieve_k (20)" in err


def test_run_retrieval_stage_records_runs_and_prints_metrics(mini_lab, tmp_path):
    env = {"DAGSTER_HOME": str(tmp_path / "dh")}
    code, out, err = rag_ttc("run", "baseline", "evidence-k-5", "--stage", "retrieval", "--json", env=env)
    assert code == 0, err
    arms = json.loads(out)["arms"]
    a, b = arms["baseline"], arms["evidence-k-5"]
    assert a["retrieval"] == b["retrieval"]  # only admission changes with evidence_k
    assert a["retrieval"]["evaluated"] == 7 and a["retrieval"]["undefined"] == 1
    assert a["admission"]["requests_with_evidence"] == 11
    # The runs are in DAGSTER_HOME, where `dagster dev` would show them.
    from dagster import DagsterInstance

    os.environ["DAGSTER_HOME"] = env["DAGSTER_HOME"]
    try:
        with DagsterInstance.get() as instance:
            assert instance.get_run_by_id(a["run_id"]).is_success
    finally:
        del os.environ["DAGSTER_HOME"]


def test_a_lab_folder_without_dagster_home_records_its_runs_in_its_own_instance(mini_lab, tmp_path):
    """The documented lab-folder recipe sets only RAG_TTC_*: the runs go to `.dagster_home` in the lab's store
    home (with the repository's dagster.yaml: the `provider` pool's limit), not to the checkout's instance."""
    from dagster import DagsterInstance

    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    proc = subprocess.run([sys.executable, "-m", "rag_ttc_assets.cli", "run", "bm25-only", "--stage", "retrieval",
                           "--json"], capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stderr
    run_id = json.loads(proc.stdout)["arms"]["bm25-only"]["run_id"]
    own = tmp_path / "home" / ".dagster_home"
    assert (own / "dagster.yaml").read_text() == (REPO / "dagster.yaml").read_text()
    with DagsterInstance.from_config(str(own)) as instance:
        assert instance.get_run_by_id(run_id).is_success


def test_run_prints_one_line_per_step_not_dagsters_event_log(mini_lab, tmp_path):
    from rag_ttc_assets.cli import STAGES

    env = {"DAGSTER_HOME": str(tmp_path / "dh")}
    # Dagster mirrors its compute-log capture of fd 2 back to stderr with `tail -F`, killed when the run ends; a
    # busy machine's tail had not yet copied the last step's line (dagster-io/dagster#23336). A tail that has copied
    # nothing when it is killed: the step lines must not depend on it.
    (slow := tmp_path / "slow-tail").mkdir()
    (slow / "tail").write_text("#!/bin/sh\nexec sleep 600\n")
    (slow / "tail").chmod(0o755)
    code, out, err = rag_ttc("run", "baseline", "--stage", "retrieval", "--json",
                             env={**env, "PATH": f"{slow}{os.pathsep}{os.environ['PATH']}"})
    assert code == 0, err
    assert list(json.loads(out)["arms"]) == ["baseline"]  # stdout is the JSON alone
    assert " - dagster - " not in err and "DEBUG" not in err and "\r" not in err  # a pipe: no live bar
    for step in STAGES["retrieval"]:
        assert len(re.findall(rf"^baseline  {step} +\d+\.\d s", err, re.M)) == 1, (step, err)
    # The stages' counts, on their steps' lines: the mini corpus is 43 chunks at 600 runes, its evaluation 8 questions.
    assert re.search(r"^baseline  vector_index +\d+\.\d s  \(embedded 43 chunks\)$", err, re.M), err
    assert re.search(r"^baseline  retrieval_rows +\d+\.\d s  \(embedded 8 questions\)$", err, re.M), err
    assert re.search(r"^baseline  digest_binding +\d+\.\d s  \(check of labels: passed\)$", err, re.M), err
    assert re.search(r"^baseline  labels_current +\d+\.\d s  \(check of labels: passed\)$", err, re.M), err
    assert len(err.splitlines()) == len(STAGES["retrieval"]) + 2  # + the checks (digest_binding, labels_current)

    code, out, err = rag_ttc("run", "baseline", "--stage", "retrieval", env=env)
    assert code == 0 and out.startswith("baseline: up to date, nothing to run\n") and err == "", err

    code, out, err = rag_ttc("run", "baseline", "--stage", "retrieval", "--force", "--verbose", env=env)
    assert code == 0, err
    assert re.search(r" - dagster - DEBUG - arm_job - .* - chunks - STEP_SUCCESS - ", err), err
    assert len(re.findall(r"^baseline  chunks +\d+\.\d s$", err, re.M)) == 1


def test_run_of_unknown_arm_is_an_error(mini_lab):
    code, _, err = rag_ttc("run", "no-such-arm")
    assert code == 1 and "unknown arm 'no-such-arm'" in err


def test_metrics_command_prints_trec_eval_measures(tmp_path):
    (tmp_path / "qrels").write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n")
    (tmp_path / "run").write_text("q1 Q0 d2 1 2.0 t\nq1 Q0 d1 2 1.0 t\nq2 Q0 d9 1 1.0 t\n")
    code, out, err = rag_ttc("metrics", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"),
                             "--per-query")
    assert code == 0, err
    res = json.loads(out)
    assert res["measures"]["recip_rank"] == pytest.approx((1 / 2 + 0) / 2)
    assert res["measures"]["num_q"] == 2
    assert res["per_query"]["q1"]["success_10"] == 1.0
    assert (res["evaluated"], res["undefined"], res["undefined_query_ids"]) == (2, 0, [])


def test_metrics_command_takes_trec_eval_measure_names(tmp_path):
    # q1: d2 (rel 0), d1 (rel 1); q2: d9 (unjudged) with d3 relevant; q3 judged, nothing relevant; q4 only in the run.
    (tmp_path / "qrels").write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\nq3 0 d4 0\nq5 0 d5 1\n")
    (tmp_path / "run").write_text("q1 Q0 d2 1 2.0 t\nq1 Q0 d1 2 1.0 t\nq2 Q0 d9 1 1.0 t\nq3 Q0 d4 1 1.0 t\n"
                                  "q4 Q0 d1 1 1.0 t\n")
    args = ("metrics", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"),
            "-m", "map", "-m", "P.1,2", "-m", "ndcg_cut.10")
    code, out, err = rag_ttc(*args, "--per-query")
    assert code == 0, err
    res = json.loads(out)
    assert set(res["measures"]) == {"map", "P_1", "P_2", "ndcg_cut_10"}
    assert res["measures"]["map"] == pytest.approx((1 / 2 + 0) / 2)
    assert res["measures"]["P_2"] == pytest.approx((1 / 2 + 0) / 2)
    assert res["per_query"]["q1"]["ndcg_cut_10"] == pytest.approx(1 / math.log2(3))
    # q3 has no relevant judgment and q4 no judgment at all: listed, never averaged in as 0.
    assert (res["evaluated"], res["undefined"], res["undefined_query_ids"]) == (2, 2, ["q3", "q4"])
    assert set(res["per_query"]) == {"q1", "q2"}
    # -c (trec_eval's): q5, relevant but absent from the run, is averaged in as 0.
    code, out, err = rag_ttc(*args, "-c")
    assert code == 0, err
    res = json.loads(out)
    assert res["evaluated"] == 3 and res["measures"]["map"] == pytest.approx((1 / 2 + 0 + 0) / 3)
    assert "per_query" not in res


def test_metrics_unknown_measure_is_an_error_listing_the_supported_ones(tmp_path):
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    (tmp_path / "run").write_text("q1 Q0 d1 1 1.0 t\n")
    code, out, err = rag_ttc("metrics", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"),
                             "-m", "map", "-m", "ndcg@10")
    assert code == 1 and out == ""
    assert "rag-ttc: error: -m: unknown measure 'ndcg@10'; supported: " in err
    assert ", map, " in err and ", recip_rank, " in err and "sets: all_trec, official, set" in err


def test_metrics_duplicate_judgment_names_file_and_line(tmp_path):
    (tmp_path / "qrels").write_text("q1 0 d1 1\nq1 0 d2 0\nq1 0 d1 2\n")
    (tmp_path / "run").write_text("q1 Q0 d1 1 1.0 t\n")
    code, _, err = rag_ttc("metrics", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"))
    assert code == 1
    assert f"{tmp_path / 'qrels'}:3: duplicate judgment of document 'd1' for query 'q1' (first on line 1)" in err


def test_metrics_bad_line_names_file_and_line(tmp_path):
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    (tmp_path / "run").write_text("q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 high t\n")
    code, _, err = rag_ttc("metrics", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"))
    assert code == 1 and f"{tmp_path / 'run'}:2" in err


def test_import_beir_writes_a_valid_bound_dataset(tmp_path):
    src = tmp_path / "beir"
    (src / "qrels").mkdir(parents=True)
    (src / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in [
        {"_id": "d1", "title": "One", "text": "first doc"}, {"_id": "d2", "title": "", "text": "second doc"}]))
    (src / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in [
        {"_id": "q1", "text": "first?", "metadata": {"answer": "the first"}}, {"_id": "q2", "text": "second?"},
        {"_id": "q3", "text": "unjudged"}]))
    (src / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq2\td2\t1\nq2\tdX\t1\n")
    code, _, err = rag_ttc("import-beir", str(src), str(tmp_path / "out"))
    assert code == 1 and "dX" in err and "test.tsv: line 4" in err
    assert not (tmp_path / "out" / "evaluation.json").exists()
    code, out, err = rag_ttc("import-beir", str(src), str(tmp_path / "out"), "--drop-missing", "--json")
    assert code == 0, err
    assert json.loads(out)["dropped_missing"] == 1 and json.loads(out)["questions"] == 2
    code, out, err = rag_ttc("validate", str(tmp_path / "out"), "--json")
    assert code == 0, err
    ev = json.loads((tmp_path / "out" / "evaluation.json").read_text())
    assert [t["relevance"] for t in ev["questions"][0]["targets"]] == [2]
    assert [(q.get("gold_answer"), q["requests"][0].get("gold_answer")) for q in ev["questions"]] == [
        ("the first", "the first"), (None, None)]


def test_changing_only_the_prompt_reruns_only_the_downstream_assets(mini_lab, tmp_path):
    env = {"DAGSTER_HOME": str(tmp_path / "dh")}
    code, out, err = rag_ttc("run", "baseline", "--json", env=env)
    assert code == 0, err
    first = json.loads(out)["arms"]["baseline"]
    assert first["ran"][0] == "corpus_binding" and first["ran"][-1] == "run_record"
    assert first["calls"]["answers"]["provider_calls"] == 8  # one per question, offline baseline

    code, out, err = rag_ttc("run", "baseline", "--json", env=env)
    assert code == 0, err
    assert json.loads(out)["arms"]["baseline"]["ran"] == []  # nothing changed: nothing runs

    arms = mini_lab.arms_file.read_text().replace("  baseline: {}", "  baseline: {prompt: grounded-answer-multipart-v2}")
    mini_lab.arms_file.write_text(arms)
    code, out, err = rag_ttc("run", "baseline", "--json", env=env)
    assert code == 0, err
    again = json.loads(out)["arms"]["baseline"]
    assert again["ran"] == ["answers", "contract_results", "contract_summary", "judge_verdicts", "request_judgments",
                            "judge_summary", "request_completeness", "failure_flow", "phoenix_annotations",
                            "run_record"]
    assert again["calls"]["answers"]["provider_calls"] == 8  # a new prompt is a new request
    assert again["retrieval"] == first["retrieval"]
    code, out, err = rag_ttc("run", "baseline", "--stage", "answers", env=env)
    assert code == 0 and "baseline: up to date, nothing to run" in out
    assert "offline baselines" in out


def test_hitrate_gate_without_generation(mini_lab, tmp_path):
    env = {"DAGSTER_HOME": str(tmp_path / "dh")}
    code, out, err = rag_ttc("hitrate", "tight", "--json", env=env)
    assert code == 0, err
    rep = json.loads(out)
    assert rep["questions"] == 7 and rep["requests"] == 11
    assert "lookup" not in rep and "oracle_lookup" not in rep  # lookups are a tool arm's gate only
    ranked, admitted = rep["ranked"]["request_hits"], rep["admitted"]["request_hits"]
    assert admitted < ranked  # the 700-rune budget omits evidence that retrieval found
    assert not (mini_lab.store.arm_path("tight", "answers.parquet")).exists()  # no generation happened
    code, out, _ = rag_ttc("hitrate", "tight", "--min-hit-rate", "1.01", env=env)
    assert code == 1 and "gate: admitted hit rate" in out


def test_a_uri_the_store_does_not_support_is_refused_not_made_a_local_folder(tmp_path):
    code, out, err = rag_ttc("arms", env={"RAG_TTC_HOME": "gs://bucket/lab"}, cwd=tmp_path)
    assert code == 1
    assert "RAG_TTC_HOME: 'gs://bucket/lab': the store supports s3:// URIs" in err and "docs/cluster.md" in err
    assert not (tmp_path / "gs:").exists()
    code, out, err = rag_ttc("arms", env={"RAG_TTC_DATASETS": "s3://bucket/datasets"}, cwd=tmp_path)
    assert code == 1 and "RAG_TTC_DATASETS: 's3://bucket/datasets' is a URI" in err and "only RAG_TTC_HOME" in err


def test_run_table_puts_each_roles_calls_beside_its_own_table():
    """The generator's calls sit in the contract table and the judge's in the judge table, never summed."""
    from rag_ttc_assets.cli.run import run_tables

    report = {"contract": {"total": 4, "valid": 3, "parse_failures": 0, "contract_failures": 0, "abstentions": 1,
                           "provider_faults": {}, "mean_answer_chars": 10.0},
              "generator_model": "local/extractive",
              "judge": {"judge_model": "local/lexical", "same_model_as_generator": False, "judged": 3},
              "calls": {"answers": {"provider_calls": 3, "cache_hits": 1},
                        "judge": {"provider_calls": 5, "cache_hits": 2},
                        "provider_calls": 8, "cache_hits": 3}}
    tables = run_tables({"arm-a": report}).split("\n\n")
    contract = next(t for t in tables if t.startswith("arm") and "parse_failures" in t).splitlines()
    judge = next(t for t in tables if "contradicts_gold" in t).splitlines()
    judge = judge[next(i for i, line in enumerate(judge) if line.startswith("arm")):]  # below its caption
    assert contract[0].split()[-2:] == ["provider_calls", "cache_hits"]
    assert contract[-1].split()[-2:] == ["3", "1"]
    assert judge[0].split()[-2:] == ["provider_calls", "cache_hits"]
    assert judge[-1].split()[-2:] == ["5", "2"]


def test_run_flow_table_shows_a_branch_only_an_arm_in_it_can_reach():
    """Lab arms' flow table keeps the lab's branches; an imported arm brings its own (cut_by_reranker, ...), an arm
    on an ANN index brings missed_by_ann, and a branch some arm landed in is always shown."""
    from rag_ttc_assets.cli.run import run_tables
    from rag_ttc_assets.diagnosis.flow import FLOW_BRANCHES, IMPORTED_BRANCHES

    def report(supply: str = "retrieval", ann: bool = False, **counts) -> dict:
        flow = {b: counts.get(b, 0) for b in FLOW_BRANCHES} | {"supply": supply}
        return {"completeness": {"requests_measured": 1, "requests_total": 1}, "flow": flow,
                "retrieval": {"ann_recall_k": 0.9, "ann_recall_measured": 1, "ann_recall_of": 1} if ann else {}}

    def header(reports: dict) -> list[str]:
        table = next(t for t in run_tables(reports).split("\n\n") if t.startswith("arm") and "ok" in t.split("\n")[0]
                     and "not_retrieved" in t)
        return table.splitlines()[0].split()[1:]

    lab = [b for b in FLOW_BRANCHES if b not in IMPORTED_BRANCHES and b != "missed_by_ann"]
    assert header({"a": report(ok=3)}) == lab
    assert header({"a": report(), "b": report("imported")}) == [b for b in FLOW_BRANCHES if b != "missed_by_ann"]
    assert header({"a": report(), "b": report(ann=True)}) == [b for b in FLOW_BRANCHES if b not in IMPORTED_BRANCHES]
    assert header({"a": report(no_trace=1)}) == [b for b in FLOW_BRANCHES if b in lab or b == "no_trace"]


def test_a_reader_that_closes_the_pipe_gets_no_traceback():
    """`rag-ttc validate ... | head -0`: the reader is gone before the command prints. Exit 141 (SIGPIPE, as a shell
    reports it), nothing on stderr; before, a BrokenPipeError traceback."""
    proc = subprocess.Popen([sys.executable, "-m", "rag_ttc_assets.cli", "validate", str(PYREF)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    proc.stdout.close()  # the reader closes its end before the command writes
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 141, err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
