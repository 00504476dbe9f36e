"""Supply modes offline, through the CLI a user runs: a preloaded arm pastes the whole manual into every prompt,
tool arms look up the question's own split into requests through the offline answerer's `lookup` calls (never the
annotated request texts), and both appear in the flow, in `compare`, in `hitrate` and in `inspect`."""

import json

import pytest

from rag_ttc_assets.core.supply import lookup_queries
from rag_ttc_assets_tests.conftest import MINI_ARMS
from rag_ttc_assets_tests.e2e.test_cli import rag_ttc

SUPPLY_ARMS = """
  multipart: {prompt: grounded-answer-multipart-v2}
  preloaded: {supply: preloaded, prompt: grounded-answer-multipart-v2}
  manual: {supply: preloaded, prompt: grounded-answer-multipart-v2, preloaded_documents: [assert, raise]}
  tool: {supply: tool, prompt: tool-answer-v2}
  tool-top3-indexed: {supply: tool, prompt: tool-answer-indexed-v2, lookup_top_n: 3, title_index: true,
                      citation_check: true}
"""


@pytest.fixture
def supply_lab(mini_lab, tmp_path):
    text = MINI_ARMS.replace("  bm25-only: {retrieval: bm25}\n", "  bm25-only: {retrieval: bm25}\n" + SUPPLY_ARMS)
    text += "  - [multipart, preloaded]\n  - [preloaded, tool]\n"
    (tmp_path / "arms.yaml").write_text(text, encoding="utf-8")
    return mini_lab


def test_supply_modes_run_offline_and_show_in_flow_compare_and_inspect(supply_lab, tmp_path):
    env = {"DAGSTER_HOME": str(tmp_path / "dh")}
    code, out, err = rag_ttc("run", "multipart", "preloaded", "manual", "tool", "tool-top3-indexed", env=env)
    assert code == 0, err
    store = supply_lab.store
    corpus = json.loads((tmp_path / "datasets" / "mini" / "corpus.json").read_text())["documents"]
    questions = json.loads((tmp_path / "datasets" / "mini" / "evaluation.json").read_text())["questions"]

    # Preloaded: every prompt carries every document whole, once (no overlap repeated at chunk seams).
    ctx = store.read_table("preloaded", "admitted_contexts").to_dicts()
    assert len({tuple(r["admitted_chunk_ids"]) for r in ctx}) == 1
    assert ctx[0]["used_runes"] == sum(len(d["text"]) for d in corpus)
    assert ctx[0]["omitted_chunk_ids"] == []
    manual = store.read_table("manual", "admitted_contexts").row(0, named=True)
    assert {c.split("#")[0] for c in manual["admitted_chunk_ids"]} == {"assert", "raise"}
    pre_answers = store.read_table("preloaded", "answers")
    multi_answers = store.read_table("multipart", "answers")
    corpus_words = sum(len(d["text"].split()) for d in corpus)
    assert pre_answers["input_tokens"].min() >= corpus_words  # the token cost of pasting the manual
    assert pre_answers["input_tokens"].mean() > 3 * multi_answers["input_tokens"].mean()

    # Tool: the offline answerer looks up each request it splits from the question; the log says what came back.
    answers = {r["query_id"]: r for r in store.read_table("tool", "answers").iter_rows(named=True)}
    assert [c["query"] for c in json.loads(answers["mini-01"]["lookups"])] == [
        "What does the assert statement do?", "What does the raise statement do?"]
    for q in questions:
        lookups = json.loads(answers[q["id"]]["lookups"])
        assert [c["query"] for c in lookups] == lookup_queries(q["text"])
        assert all(len(c["result_chunk_ids"]) == 1 for c in lookups)  # lookup_top_n 1
        supplied = [c for call in lookups for c in call["result_chunk_ids"]]
        assert answers[q["id"]]["admitted_chunk_ids"] == list(dict.fromkeys(supplied))
    top3 = store.read_table("tool-top3-indexed", "answers")
    assert all(len(c["result_chunk_ids"]) == 3 for r in top3["lookups"].to_list() for c in json.loads(r))
    assert set(top3["citation_check"].to_list()) <= {"passed", "retried_passed", "escalated"}
    # The pre-loaded title index costs tokens on every request.
    tool_rows = store.read_table("tool", "answers")
    assert top3["input_tokens"].mean() > tool_rows["input_tokens"].mean()

    # The lookup flow: every answerable case in one branch, hit rate over all cases.
    for arm in ("tool", "tool-top3-indexed"):
        lf = store.read_arm_json(arm, "failure_flow.json")["lookup_flow"]
        branches = [lf[b] for b in ("no_call", "empty_results", "wrong_document", "correct_document")]
        assert sum(branches) == lf["cases"] == 7 and lf["closes"] and lf["accounting_closes"]
        assert lf["no_call"] == 0  # the offline answerer always searches
        assert lf["hit_rate"] == lf["correct_document"] / 7
        cases = store.read_table(arm, "lookup_cases")
        assert cases.height == 7 and set(cases["branch"].to_list()) <= {"wrong_document", "correct_document"}
    assert (store.read_arm_json("tool-top3-indexed", "failure_flow.json")["lookup_flow"]["hit_rate"]
            >= store.read_arm_json("tool", "failure_flow.json")["lookup_flow"]["hit_rate"])

    # The per-arm summary prints the supply table: tokens, latency, lookups and their branches.
    assert "mean_input_tokens" in out and "lookup_hit_rate" in out and "preloaded" in out

    # compare: per-case deltas plus the second seed's numbers for both arms.
    code, out, err = rag_ttc("compare", "preloaded", "tool", "--json", env=env)
    assert code == 0, err
    rep = json.loads(out)
    assert rep["supply"]["preloaded"]["supply"] == "preloaded" and rep["supply"]["tool"]["supply"] == "tool"
    assert rep["supply"]["tool"]["hit_rate"] == store.read_arm_json("tool", "failure_flow.json")["lookup_flow"][
        "hit_rate"]
    assert rep["supply"]["preloaded"]["mean_input_tokens"] > rep["supply"]["tool"]["mean_input_tokens"]
    assert "supply" in rep["changed_parameters"]
    code, out, err = rag_ttc("compare", "preloaded", "tool", env=env)
    assert code == 0 and "lookup" in out.lower()

    # hitrate: the lookup hit rate of the question's own split, with no generation, is the CI gate of a tool arm;
    # the offline answerer sends exactly those queries, so it matches the run's lookup flow. The annotated request
    # texts as queries are reported beside it as an oracle.
    code, out, err = rag_ttc("hitrate", "tool", "--json", env=env)
    assert code == 0, err
    rep = json.loads(out)
    run_flow = store.read_arm_json("tool", "failure_flow.json")["lookup_flow"]
    assert rep["lookup"]["hit_rate"] == run_flow["hit_rate"]
    assert rep["lookup"]["lookup_calls"] == run_flow["lookup_calls"] == 11
    assert rep["oracle_lookup"]["cases"] == rep["lookup"]["cases"] == 7
    assert rep["oracle_lookup"]["lookup_calls"] == sum(len(q["requests"]) for q in questions if q["answerable"]) == 11
    code, out, err = rag_ttc("hitrate", "tool", "--min-hit-rate", "1.01", env=env)
    assert code == 1 and "gate: lookup hit rate" in out
    assert "lookups of the question text, split as the product sends them (no generation): " in out
    assert "oracle: the annotator's request texts as queries, not something the product sends: " in out

    # inspect: a tool arm's case shows its lookups.
    code, out, err = rag_ttc("inspect", "tool", "mini-01", env=env)
    assert code == 0, err
    assert "**Lookups** (2 calls)" in out and "What does the assert statement do?" in out


def test_invalid_supply_settings_are_refused_naming_arm_and_field(supply_lab, tmp_path):
    arms = tmp_path / "arms.yaml"
    base = arms.read_text()
    cases = {
        "  bad: {supply: tool}\n": ("'bad'", "field 'prompt'", "evidence"),
        "  bad: {supply: tool, prompt: tool-answer-indexed-v2}\n": ("'bad'", "field 'title_index'", "placeholder"),
        "  bad: {supply: tool, prompt: tool-answer-v2, counterfactual: withheld-relevant}\n": (
            "arms.bad", "supply 'retrieval'", "counterfactual"),
        "  bad: {supply: sideways}\n": ("arms.bad", "field 'supply'", "preloaded"),
    }
    for line, needles in cases.items():
        arms.write_text(base.replace("arms:\n", "arms:\n" + line, 1))
        code, out, err = rag_ttc("arms", env={"DAGSTER_HOME": str(tmp_path / "dh")})
        assert code == 1, line
        assert all(n in err for n in needles), (line, err)
    arms.write_text(base.replace("arms:\n", "arms:\n  bad: {supply: preloaded, preloaded_documents: [nope]}\n", 1))
    code, out, err = rag_ttc("run", "bad", "--stage", "retrieval", env={"DAGSTER_HOME": str(tmp_path / "dh")})
    assert code == 1
    assert "field 'preloaded_documents'" in err and "nope" in err and "arm 'bad'" in err


def test_question_lookups_send_the_questions_split_never_the_annotated_request_texts(supply_lab, tmp_path,
                                                                                     monkeypatch):
    from rag_ttc_assets.stages import arm_supply
    from rag_ttc_assets.stages.resolve import ArmInputs

    # Annotated request texts that differ from the question's split: these labels must not reach the lookups.
    evaluation = tmp_path / "datasets" / "mini" / "evaluation.json"
    ev = json.loads(evaluation.read_text())
    for q in ev["questions"]:
        for r in q["requests"]:
            r["text"] = f"annotator label {r['id']}"
    evaluation.write_text(json.dumps(ev), encoding="utf-8")
    sent = []
    search = arm_supply.Lookup.search
    monkeypatch.setattr(arm_supply.Lookup, "search", lambda self, query: sent.append(query) or search(self, query))
    arm = ArmInputs(supply_lab, "tool")
    questions = arm.questions

    lookup = arm.lookup
    product = arm_supply.question_lookups(questions, lookup)
    assert sent[:2] == ["What does the assert statement do?", "What does the raise statement do?"]
    assert sent == [query for q in questions for query in lookup_queries(q.text)]
    assert len(sent) == 12 and not any("annotator label" in query for query in sent)  # 11 requests + mini-99
    assert product["cases"] == 7 and product["lookup_calls"] == 11  # mini-99 is unanswerable: not a case

    sent.clear()
    oracle = arm_supply.oracle_request_lookups(questions, lookup)
    assert sent[:2] == ["annotator label mini-01.r1", "annotator label mini-01.r2"]
    assert sent == [r.text for q in questions for r in q.requests]
    assert oracle["cases"] == 7 and oracle["lookup_calls"] == 11
