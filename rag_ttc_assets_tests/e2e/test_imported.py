"""Imported arms through the path a user takes: a traced RAG application (support/traced_app.py: Tantivy, a
reranker step, litellm against the loopback OpenAI-compatible server, OpenInference spans written with the
OpenTelemetry SDK to OTLP JSON) is diagnosed from its trace file by `rag-ttc run`, and compared with the lab arm
that does the same thing. The cross-check that proves the mapping: the same ranked lists, admitted evidence, contract
counts, completeness, flow branches and per-case values, and `rag-ttc compare` finds no difference."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest
import yaml

from rag_ttc_assets.diagnosis.flow import LAB_BOUNDARY
from rag_ttc_assets.stages.generation import calls_summary
from rag_ttc_assets_tests.conftest import mini_corpus, mini_questions, write_mini_lab
from rag_ttc_assets_tests.e2e.test_cli import REPO, rag_ttc
from rag_ttc_assets_tests.support.openai_server import FakeOpenAIServer
from rag_ttc_assets_tests.support.reliability import fake_model
from rag_ttc_assets_tests.support.traced_app import AppConfig, run_app

DEFAULTS = {"dataset": "mini", "chunk_runes": 600, "overlap_runes": 60, "retrieve_k": 10, "evidence_k": 3,
            "context_runes": 2000}
KEY_ENV = "RAG_TTC_TEST_KEY"


def arms_file(root, base_url: str, **imported_arms) -> None:
    generator = {"model": "openai/fake-model", "api_base": base_url, "api_key_env": KEY_ENV, "timeout_s": 5,
                 "max_retries": 1}
    arms = {"app-lab": {"retrieval": "bm25", "representation": "plain", "generator": generator,
                        "allow_unpriced_provider": True},
            "app-imported": {"supply": "imported", "source": {"file": "traces/app.json", "format": "otlp_json",
                                                              "answer_format": "contract"}},
            **imported_arms}
    (root / "arms.yaml").write_text(yaml.safe_dump({"defaults": DEFAULTS, "arms": arms,
                                                    "comparisons": [["app-lab", "app-imported"]]}, sort_keys=False))


def app_config(base_url: str, **over) -> AppConfig:
    return AppConfig(**{k: DEFAULTS[k] for k in ("chunk_runes", "overlap_runes", "retrieve_k", "evidence_k",
                                                 "context_runes")},
                     model="openai/fake-model", api_base=base_url, api_key="sk-test-0123456789",
                     prompt_text=(REPO / "prompts" / "grounded-answer-v1.txt").read_text(encoding="utf-8"), **over)


@pytest.fixture
def traced(tmp_path, monkeypatch):
    """A mini lab, the loopback model server, and the traced app's OTLP JSON of every mini question."""
    root = write_mini_lab(tmp_path, monkeypatch)
    corpus = mini_corpus()
    questions = mini_questions(corpus)
    with FakeOpenAIServer(fake_model) as srv:
        arms_file(root, srv.base_url)
        (root / "traces").mkdir()
        exporter = run_app(corpus, questions, app_config(srv.base_url), tmp_path / "app")
        exporter.write(root / "traces" / "app.json")
        yield root, srv, exporter, questions


def table(store, arm: str, name: str) -> dict[str, dict]:
    return {r["query_id"]: r for r in store.read_table(arm, name).iter_rows(named=True)}


def test_the_imported_trace_of_an_app_that_does_what_a_lab_arm_does_diagnoses_exactly_as_that_arm(traced):
    from rag_ttc_assets.lab import Lab

    root, srv, exporter, questions = traced
    env = {"DAGSTER_HOME": str(root / "dh")}
    calls_before = srv.request_count
    code, out, err = rag_ttc("run", "app-lab", "app-imported", env=env)
    assert code == 0, err
    assert "FAILED" not in out + err  # every check, the run record's post-run validation included
    # The lab arm asked the server once per question; the imported arm asked nothing (the app already had).
    assert srv.request_count - calls_before == len(questions)
    store = Lab.from_env().store

    mapping = store.read_arm_json("app-imported", "import_mapping.json")
    assert (mapping["matched_traces"], mapping["unmatched_traces"], mapping["unanswered_questions"]) == (
        len(questions), 0, 0)
    assert mapping["matched_by_attribute"] == len(questions)  # metadata.question_id on the root span
    assert mapping["external_documents"] == 0 and mapping["documents"] == mapping["documents_by_id"]

    lab_rows, imp_rows = (table(store, a, "retrieval_rows") for a in ("app-lab", "app-imported"))
    lab_ctx, imp_ctx = (table(store, a, "admitted_contexts") for a in ("app-lab", "app-imported"))
    for q in questions:
        assert imp_rows[q["id"]]["ranked_chunk_ids"] == lab_rows[q["id"]]["ranked_chunk_ids"]
        assert imp_rows[q["id"]]["ranked_doc_ids"] == lab_rows[q["id"]]["ranked_doc_ids"]
        assert imp_ctx[q["id"]]["selected_chunk_ids"] == lab_ctx[q["id"]]["selected_chunk_ids"]
        assert imp_ctx[q["id"]]["admitted_chunk_ids"] == lab_ctx[q["id"]]["admitted_chunk_ids"]
    # The imported documents are the arm's chunks: the same gold support as the lab's chunking gives.
    lab_cov, imp_cov = (store.read_table(a, "request_coverage").sort("request_id") for a in ("app-lab", "app-imported"))
    assert imp_cov.select("request_id", "ranked", "selected", "admitted").equals(
        lab_cov.select("request_id", "ranked", "selected", "admitted"))

    admission = {a: store.read_arm_json(a, "admission_summary.json") for a in ("app-lab", "app-imported")}
    for k in ("admission_coverage", "hit_rates"):
        assert admission["app-imported"][k] == admission["app-lab"][k], k

    lab_answers, imp_answers = (table(store, a, "answers") for a in ("app-lab", "app-imported"))
    assert {q: r["raw_text"] for q, r in imp_answers.items()} == {q: r["raw_text"] for q, r in lab_answers.items()}
    assert {r["provider_turns"] for r in imp_answers.values()} == {0}
    # The lab called nothing for the imported answers: none counts as a provider call (the lab arm's all do).
    calls = {a: calls_summary(store.read_table(a, "answers")) for a in ("app-lab", "app-imported")}
    assert (calls["app-imported"].provider_calls, calls["app-lab"].provider_calls) == (0, len(lab_answers))

    contract = {a: store.read_arm_json(a, "contract_summary.json") for a in ("app-lab", "app-imported")}
    for k in ("total", "valid", "parse_failures", "contract_failures", "abstentions", "contract_failure_reasons"):
        assert contract["app-imported"][k] == contract["app-lab"][k], k
    assert contract["app-lab"]["valid"] > 0

    completeness = {a: store.read_arm_json(a, "request_completeness.json") for a in ("app-lab", "app-imported")}
    for k, v in completeness["app-lab"].items():
        if k not in ("request_judge", "label_use"):
            assert completeness["app-imported"][k] == v, k
    assert completeness["app-imported"]["request_judge"] == completeness["app-lab"]["request_judge"]

    # Flow: every request in the same branch, the lab's selection and admission boundaries under the names the
    # imported trace gives them (the app's reranker keeps evidence_k; its prompt holds what the budget admitted).
    lab_flow, imp_flow = (store.read_table(a, "failure_flow").sort("request_id") for a in ("app-lab", "app-imported"))
    imported_as_lab = [LAB_BOUNDARY.get(b, b) for b in imp_flow["branch"].to_list()]
    assert imported_as_lab == lab_flow["branch"].to_list()
    assert imp_flow.drop("branch").equals(lab_flow.drop("branch"))
    assert {b for b in lab_flow["branch"].to_list()} - {"ok"}, "the mini set should exercise more than ok"

    code, out, err = rag_ttc("compare", "app-lab", "app-imported", "--json", env=env)
    assert code == 0, err
    report = json.loads(out)
    assert report["metrics"]["valid"]["n"] == len(questions)
    for name, m in report["metrics"].items():
        if name == "latency_s":  # two runs' clocks (the app's LLM span against the lab's own call) never agree
            continue
        assert m["mean_delta"] in (0, 0.0, None), (name, m)
        assert m.get("gains", 0) == 0 and m.get("losses", 0) == 0, (name, m)
    # The imported arm's generator, retrieval and admission settings are its defaults, never read (its source's own):
    # not changes a difference is attributed to. The supply and the source are.
    changed = report["changed_parameters"]
    assert changed["supply"] == ["retrieval", "imported"]
    assert changed.keys() - {"supply"} and all(k == "supply" or k.startswith("source") for k in changed), changed
    assert report["token_latency"]["attributed_to"] == sorted(changed)
    assert {"generator", "retrieval", "evidence_k", "context_runes", "prompt"} <= set(report["not_read"]["app-imported"])
    assert "app-lab" not in report["not_read"] and "judge" not in report["not_read"]["app-imported"]
    code, out, err = rag_ttc("compare", "app-lab", "app-imported", env=env)
    assert code == 0, err
    assert "changed: " in out and "generator.model" not in out.splitlines()[0]
    assert "not compared, the lab's own settings app-imported never reads (its source's): " in out
    # The supply table's p95 reads every answer row (the imported one as its trace recorded it), and says so.
    assert "p95 latency over every answer row, a cached one as its call recorded it" in out

    # Lineage: the lab's corpus-side builds materialized for the imported arm without doing work, saying why.
    code, out, err = rag_ttc("inspect", "app-imported", questions[0]["id"], env=env)
    assert code == 0, err
    assert questions[0]["text"] in out and "imported from trace " in out


def test_an_imported_arms_generator_is_the_systems_model_as_its_traces_name_it_never_the_lab_setting(traced):
    """The seed's last boundary (the judge shares the generator's blind spot) for imported arms: the generator is the
    system's own model, as its traces name it (openai/fake-model), whatever the lab's `generator` setting, which an
    imported arm never reads. Read where a user reads it: the run's judge table, the judge and request judge
    summaries, the run record's model assignments (its post-run validation passing) and the diagnosis."""
    from rag_ttc_assets.lab import Lab
    from rag_ttc_assets.stages import run_record as records
    from rag_ttc_assets.diagnosis.diagnosis_inputs_stage import arm_record

    root, srv, _, _ = traced
    source = {"file": "traces/app.json", "format": "otlp_json", "answer_format": "contract"}
    own_model = {"model": "openai/fake-model", "api_base": srv.base_url, "api_key_env": KEY_ENV, "timeout_s": 5,
                 "max_retries": 1}
    arms_file(root, srv.base_url, **{
        # Judged by the model the system answered with: the same model, though its lab setting says otherwise.
        "judged-by-its-model": {"supply": "imported", "source": source, "judge": own_model,
                                "allow_unpriced_provider": True},
        # The lab's unread generator setting names the judges' model: not the same model.
        "setting-names-the-judge": {"supply": "imported", "source": source, "generator": {"model": "local/lexical"}}})
    env = {"DAGSTER_HOME": str(root / "dh")}
    code, out, err = rag_ttc("run", "judged-by-its-model", "setting-names-the-judge", env=env)
    assert code == 0, err
    assert "FAILED" not in out + err  # the run record's post-run validation: its same_model agrees with the judge's
    judge_rows = {line.split()[0]: line.split() for line in out.splitlines()
                  if line.startswith(("judged-by-its-model ", "setting-names-the-judge "))
                  and ("openai/fake-model" in line or "local/lexical" in line)}
    assert judge_rows["judged-by-its-model"][1:3] == ["openai/fake-model", "True"], out
    assert judge_rows["setting-names-the-judge"][1:3] == ["local/lexical", "False"], out

    lab = Lab.from_env()
    for arm, same in (("judged-by-its-model", True), ("setting-names-the-judge", False)):
        judge = lab.store.read_arm_json(arm, "judge_summary.json")
        assert (judge["generator_model"], judge["same_model_as_generator"]) == ("imported: openai/fake-model", same)
        # The request judge (local/lexical in both) is never the system's model.
        assert lab.store.read_arm_json(arm, "request_judge_summary.json")["same_model_as_generator"] is False
        [run] = [r for r in records.list_runs(lab.runs, arm) if r.status == records.COMPLETE]
        config = json.loads((records.run_path(lab.runs, run.run_dir) / "config.json").read_text())
        assigned = config["model_assignments"]
        assert (assigned["generator"], assigned["same_model"]) == ("imported: openai/fake-model", same)
        record = arm_record(lab.store, lab.arms[arm], arm)
        assert (record.generator_model, record.same_model, record.offline_generator) == (
            "imported: openai/fake-model", same, False)


def test_an_imported_arm_stays_current_when_a_default_it_never_reads_is_edited(traced):
    """Staleness through `rag-ttc run` (Dagster's own determination, docs/staleness.md): a sweep of the lab's
    evidence_k, generator or prompt in `defaults` leaves an imported arm, which takes its evidence and answers from
    its source, up to date, while the lab arm beside it reruns from admission on; a judge setting it does read
    reruns its judges."""
    root, _, _, _ = traced
    env = {"DAGSTER_HOME": str(root / "dh")}
    code, out, err = rag_ttc("run", "app-lab", "app-imported", env=env)
    assert code == 0, err
    arms = yaml.safe_load((root / "arms.yaml").read_text())
    arms["defaults"].update(evidence_k=4, prompt="grounded-answer-multipart-v2", generator={"model": "local/extractive"})
    (root / "arms.yaml").write_text(yaml.safe_dump(arms, sort_keys=False))
    code, out, err = rag_ttc("run", "app-imported", env=env)
    assert code == 0 and out.startswith("app-imported: up to date, nothing to run\n"), out + err
    code, out, err = rag_ttc("run", "app-lab", "--stage", "answers", "--json", env=env)
    assert code == 0, err
    assert re.search(r"^app-lab  admitted_contexts +\d+\.\d s", err, re.M), err  # the lab arm reads evidence_k
    assert not re.search(r"^app-lab  (chunks|retrieval_rows) ", err, re.M), err

    arms["arms"]["app-imported"]["judge_budget"] = 1000
    (root / "arms.yaml").write_text(yaml.safe_dump(arms, sort_keys=False))
    code, out, err = rag_ttc("run", "app-imported", env=env)
    assert code == 0, err
    steps = set(re.findall(r"^app-imported  (\w+) ", err, re.M))
    assert "judge_verdicts" in steps and not steps & {"retrieval_rows", "admitted_contexts", "answers"}, err


def test_unused_corpus_side_assets_of_an_imported_arm_say_why(traced):
    from dagster import AssetKey, DagsterInstance

    from rag_ttc_assets_tests.support.reliability import materialize

    root = traced[0]
    instance = DagsterInstance.ephemeral()
    assert materialize("app-imported", instance, ["corpus_binding", "imported_source", "chunks", "representations",
                                                  "bm25_index", "vector_index", "retrieval_rows"]).success
    for asset in ("chunks", "representations", "bm25_index", "vector_index"):
        meta = instance.get_latest_materialization_event(AssetKey(asset)).asset_materialization.metadata
        assert meta["used_by_arm"].value is False
        assert "supply: imported" in meta["unused_reason"].value
    meta = instance.get_latest_materialization_event(AssetKey("imported_source")).asset_materialization.metadata
    assert meta["source_digest"].value.startswith("sha256:")
    assert meta["matched_traces"].value == len(traced[3])
    assert not (root / "home" / "store" / "cache" / "chunks").exists()  # nothing built for it


def free_text_model(messages: list[dict]) -> str:
    """A production model that answers in prose, citing the first document of its prompt as [1]; its text carries
    markup, which the case report must show as text (traces are untrusted)."""
    import re

    first = re.search(r'<chunk id="[^"]+">\n([^\n]*)', messages[-1]["content"])
    return f"{first.group(1) if first else 'I do not know.'} [1] <script>window.__pwned = 1</script>"


def test_free_text_traces_with_missing_spans_and_a_repeated_question(tmp_path, monkeypatch):
    """Free-text answers (status free_text, citations read as numbered), a trace without an LLM span
    (no_answer_span), one without a RETRIEVER span (no_retrieval_span: retrieval not measured, never not_retrieved),
    and a question asked twice (pick: latest), from JSONL."""
    from rag_ttc_assets.lab import Lab

    root = write_mini_lab(tmp_path, monkeypatch)
    corpus, questions = mini_corpus(), mini_questions(mini_corpus())
    (root / "traces").mkdir()
    with FakeOpenAIServer(free_text_model) as srv:
        arms_file(root, srv.base_url, prod={"supply": "imported", "source": {
            "file": "traces/prod.jsonl", "format": "otlp_jsonl", "answer_format": "free_text",
            "citation_style": "numbered", "pick": "latest"}})
        cfg = app_config(srv.base_url, skip_llm_for=frozenset({"mini-02"}), skip_retriever_for=frozenset({"mini-03"}),
                         question_id_attribute=False)  # matched by the question's text
        first = run_app(corpus, questions[:1], cfg, tmp_path / "app1")
        first.write(tmp_path / "first.jsonl", jsonl=True)
        rest = run_app(corpus, questions, cfg, tmp_path / "app2")
        rest.write(tmp_path / "rest.jsonl", jsonl=True)
    (root / "traces" / "prod.jsonl").write_text((tmp_path / "first.jsonl").read_text()
                                                + (tmp_path / "rest.jsonl").read_text())
    code, out, err = rag_ttc("run", "prod", env={"DAGSTER_HOME": str(root / "dh")})
    assert code == 0, err
    assert "FAILED" not in out + err
    store = Lab.from_env().store
    mapping = store.read_arm_json("prod", "import_mapping.json")
    assert (mapping["matched_traces"], mapping["superseded_traces"], mapping["matched_by_text"]) == (
        len(questions), 1, len(questions))
    assert (mapping["no_answer_span"], mapping["no_retrieval_span"]) == (1, 1)

    contract = store.read_arm_json("prod", "contract_summary.json")
    assert (contract["free_text"], contract["no_answer"], contract["valid"], contract["sums_close"]) == (
        len(questions) - 1, {"no_answer_span": 1}, 0, True)
    rows = table(store, "prod", "contract_results")
    ctx = table(store, "prod", "admitted_contexts")
    for qid, r in rows.items():
        if r["status"] == "free_text" and ctx[qid]["admitted_chunk_ids"]:
            assert r["citation_chunk_ids"] == ctx[qid]["admitted_chunk_ids"][:1]  # [1]: the prompt's first

    flow = store.read_table("prod", "failure_flow")
    branches = dict(zip(flow["request_id"].to_list(), flow["branch"].to_list()))
    # No LLM span: requests whose evidence was selected land in no_answer_span (the prompt is unknown), not in
    # not_in_prompt; the retrieval side is still measured.
    mini02 = {b for r, b in branches.items() if r.startswith("mini-02.")}
    assert "no_answer_span" in mini02 and mini02 <= {"not_retrieved", "cut_by_reranker", "no_answer_span"}
    assert {b for r, b in branches.items() if r.startswith("mini-03.")} == {"no_retrieval_span"}
    summary = store.read_arm_json("prod", "failure_flow.json")
    assert summary["closes"] and summary["not_retrieved"] + summary["no_retrieval_span"] <= summary["total"]
    retrieval = store.read_arm_json("prod", "retrieval_summary.json")["summary"]
    assert "no_retrieval_span" in json.dumps(retrieval["not_measured"])
    assert retrieval["measured"] == retrieval["of"] - 1 - len([q for q in questions if not q["targets"]])
    # The request judge read the free-text answers (the same instrument as for a lab arm's).
    judgments = store.read_table("prod", "request_judgments")
    assert judgments.filter(pl.col("status") == "judged").height > 0

    # The case report reads the imported arm; the trace's markup stays inert (escaped) in the page.
    assert "<script>window" in table(store, "prod", "answers")["mini-01"]["raw_text"]
    page = tmp_path / "prod.html"
    code, out, err = rag_ttc("report", "prod", "--out", str(page), env={"DAGSTER_HOME": str(root / "dh")})
    assert code == 0, err
    assert "__pwned" in page.read_text() and "<script>window" not in page.read_text()


def test_ragchecker_rows_become_a_dataset_and_an_imported_arm(tmp_path, monkeypatch):
    from rag_ttc_assets.lab import Lab

    root = write_mini_lab(tmp_path, monkeypatch)
    corpus = mini_corpus()
    docs = {d["id"]: d["text"] for d in corpus["documents"]}
    results = [{"query_id": q["id"], "query": q["text"], "gt_answer": f"gold answer of {q['id']}",
                "response": f"{docs[q['targets'][0]['doc_id']][:80]} [{q['targets'][0]['doc_id']}]",
                "retrieved_context": [{"doc_id": t["doc_id"], "text": docs[t["doc_id"]]} for t in q["targets"]]}
               for q in mini_questions(corpus) if q["targets"]]
    (root / "rc.json").write_text(json.dumps({"results": results}))
    code, out, err = rag_ttc("import-outputs", str(root / "rc.json"), str(root / "datasets" / "rc"),
                             "--format", "ragchecker", "--json")
    assert code == 0, err
    made = json.loads(out)
    assert (made["questions"], made["gold_answers"]) == (len(results), len(results))
    assert made["documents"] == len({c["doc_id"] for r in results for c in r["retrieved_context"]})
    code, out, err = rag_ttc("validate", str(root / "datasets" / "rc"))
    assert code == 0, err

    (root / "arms.yaml").write_text(yaml.safe_dump({"defaults": DEFAULTS, "arms": {"rc": {
        "dataset": "rc", "supply": "imported",
        "source": {"file": "rc.json", "format": "ragchecker", "citation_style": "ids"}}}}))
    code, out, err = rag_ttc("run", "rc", env={"DAGSTER_HOME": str(root / "dh")})
    assert code == 0, err
    store = Lab.from_env().store
    mapping = store.read_arm_json("rc", "import_mapping.json")
    assert (mapping["matched_traces"], mapping["documents_by_id"], mapping["external_documents"]) == (
        len(results), made["documents"], 0)
    contracts = table(store, "rc", "contract_results")
    assert {r["status"] for r in contracts.values()} == {"free_text"}
    # `[doc id]` citations (citation_style: ids) of the documents the rows retrieved.
    for r in results:
        assert contracts[r["query_id"]]["citation_chunk_ids"] == [r["retrieved_context"][0]["doc_id"]]


def test_a_bad_trace_file_stops_the_arm_naming_file_trace_and_field_with_nothing_written(tmp_path, monkeypatch):
    from rag_ttc_assets.lab import Lab

    root = write_mini_lab(tmp_path, monkeypatch)
    bad_span = {"traceId": "abc123", "spanId": "s1", "name": "llm", "startTimeUnixNano": "1", "attributes": [
        {"key": "openinference.span.kind", "value": {"stringValue": "LLM"}},
        {"key": "llm.token_count.prompt", "value": {"stringValue": "twelve"}}]}
    (root / "bad.json").write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [bad_span]}]}]}))
    (root / "arms.yaml").write_text(yaml.safe_dump({"defaults": DEFAULTS, "arms": {"bad": {
        "supply": "imported", "source": {"file": "bad.json", "format": "otlp_json"}}}}))
    code, out, err = rag_ttc("run", "bad", env={"DAGSTER_HOME": str(root / "dh")})
    assert code != 0
    assert f"{root / 'bad.json'}: trace abc123, span s1: attribute 'llm.token_count.prompt' must be an integer" in err
    store = Lab.from_env().store
    for name in ("imported_rows", "imported_chunks", "retrieval_rows", "answers"):
        assert not store.table_path("bad", name).exists(), name


def test_an_imported_arm_whose_first_hundred_questions_are_unanswered_runs_and_every_request_has_a_branch(
        tmp_path, monkeypatch):
    """Issue 41, point 1: the rows of the first 105 questions (unanswered: no row in the file) have no verdict, no
    answer, no judge columns; a table typed from its first rows took those columns as empty and failed on the first
    answered row (polars' "could not append value ... infer_schema_length" in request_completeness), so the
    failure flow was never built and `inspect` showed `branch None`. Every table is typed by its declaration."""
    from rag_ttc_assets.lab import Lab

    root = write_mini_lab(tmp_path, monkeypatch)
    rows = [{"query_id": f"q{i:03d}", "query": f"Which river is number {i}?",
             "gt_answer": f"River number {i} is the Alpha{i}. It flows through region R{i}.",
             "response": f"River number {i} is the Alpha{i} [1]. It flows through region R{i} [2].",
             "retrieved_context": [{"doc_id": f"d{i}a", "text": f"The Alpha{i} is river number {i} of the atlas."},
                                   {"doc_id": f"d{i}b", "text": f"The Alpha{i} flows through region R{i}."}]}
            for i in range(110)]
    (root / "all.json").write_text(json.dumps({"results": rows}))
    (root / "late.json").write_text(json.dumps({"results": rows[105:]}))  # answers only the last 5
    code, out, err = rag_ttc("import-outputs", str(root / "all.json"), str(root / "datasets" / "ext"),
                             "--format", "ragchecker")
    assert code == 0, err
    (root / "arms.yaml").write_text(yaml.safe_dump({"defaults": {"dataset": "ext"}, "arms": {"late": {
        "supply": "imported", "source": {"file": "late.json", "format": "ragchecker", "answer_format": "free_text",
                                         "citation_style": "numbered"}}}}))
    env = {"DAGSTER_HOME": str(root / "dh")}
    code, out, err = rag_ttc("run", "late", env=env)
    assert code == 0, out + err
    assert "FAILED" not in out + err and "infer_schema_length" not in out + err

    store = Lab.from_env().store
    outcomes = store.read_table("late", "request_outcomes")
    flow = store.read_table("late", "failure_flow")
    assert outcomes.height == flow.height >= 110
    assert flow["branch"].null_count() == 0
    assert set(flow["request_id"]) == set(outcomes["request_id"])
    by_q = {r["query_id"]: r["branch"] for r in flow.iter_rows(named=True)}
    assert by_q["q000"] == "no_trace" and by_q["q109"] != "no_trace"
    # The judged rows after the unanswered ones keep their verdicts, typed as declared.
    assert outcomes.schema["verdict"] == pl.String and outcomes["verdict"].drop_nulls().len() > 0

    code, out, err = rag_ttc("inspect", "late", "q000", env=env)
    assert code == 0, err
    # The first table is the requests' (request | text | branch | answered | supported).
    row = next(line for line in out.splitlines() if line.startswith("| q000."))
    assert [c.strip() for c in row.strip("|").split("|")][2] == "no_trace", out
