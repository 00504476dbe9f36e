"""A tool arm against a real OpenAI-compatible server on 127.0.0.1: the model calls `lookup` through litellm's
tool calling, every call's query and results are logged per case, the lookup flow's branches add up, and the
citation check retries once with the evidence restated before the question, then escalates."""

import json
import re

import pytest
from dagster import DagsterInstance

from rag_ttc_assets_tests.conftest import mini_corpus, write_dataset
from rag_ttc_assets_tests.support.openai_server import FakeOpenAIServer

RETRY_MARK = "Your previous answer did not cite"
# question id -> (what the scripted model does, expected lookup branch, expected contract status, citation check)
CASES = {
    "q-nocall": ("answers at once, citing nothing", "no_call", "abstained", "retried_passed"),
    "q-empty": ("looks up gibberish", "empty_results", "abstained", "passed"),
    "q-wrong": ("looks up lambda", "wrong_document", "valid", "passed"),
    "q-right": ("looks up assert", "correct_document", "valid", "passed"),
    "q-fixed": ("cites a chunk it never saw, then cites properly", "correct_document", "valid", "retried_passed"),
    "q-escalate": ("cites a chunk it never saw, twice", "correct_document", "escalated", "escalated"),
}
QUERIES = {"q-empty": "zzqx qqzzx", "q-wrong": "lambda expressions anonymous functions"}

ARMS = """
defaults:
  dataset: tools
  chunk_runes: 600
  overlap_runes: 60
  retrieval: bm25
  supply: tool
  prompt: tool-answer-v2
  lookup_top_n: 2
  citation_check: true
  generator:
    model: openai/fake-model
    api_base: {base}
    api_key_env: RAG_TTC_TEST_KEY
    timeout_s: 5
    max_retries: 0
  allow_unpriced_provider: true
  generation_workers: 1
arms:
  remote-tool: {{}}
"""


def _case(messages) -> str:
    first = next(m["content"] for m in messages if m["role"] == "user")
    return re.search(r"\[(q-[a-z]+)\]", first).group(1)


def _json(answer, cited, abstained=False):
    return json.dumps({"answer": answer, "citation_chunk_ids": cited, "abstained": abstained})


def scripted_model(messages):
    """Reads the case from the question and plays its part; tool results arrive as role 'tool' messages."""
    case = _case(messages)
    last = messages[-1]
    if last["role"] == "user" and last["content"].startswith(RETRY_MARK):
        evidence = re.findall(r'<chunk id="([^"]+)">', last["content"])
        # The evidence must now stand immediately before the question.
        assert last["content"].rindex("</chunk>") < last["content"].index("<question>") if evidence else True
        if case == "q-escalate":
            return _json("Still guessing.", ["made-up#chunk-9"])
        return _json("Asserts check a condition.", evidence[:1]) if evidence else _json(
            "The evidence is insufficient.", [], abstained=True)
    if last["role"] == "user":  # the first turn
        if case == "q-nocall":
            return _json("Everyone knows this.", [])
        return {"tool_calls": [{"id": "call_1", "name": "lookup",
                                "arguments": json.dumps({"query": QUERIES.get(case, "assert statement")})}]}
    results = re.findall(r'<chunk id="([^"]+)">', last["content"])
    if not results:
        return _json("The lookup returned nothing.", [], abstained=True)
    if case in ("q-fixed", "q-escalate"):
        return _json("Asserts do whatever.", ["made-up#chunk-9"])
    return _json("It checks a condition.", results[:1])


@pytest.fixture
def tool_lab(tmp_path, monkeypatch):
    corpus = mini_corpus()
    questions = [{"id": qid, "text": f"[{qid}] What does the assert statement do?", "answerable": True,
                  "targets": [{"doc_id": "assert", "relevance": 1}],
                  "requests": [{"id": f"{qid}.r1", "text": "What does the assert statement do?",
                                "evidence": [{"doc_id": "assert", "quote": "Assert statements"}]}]}
                 for qid in CASES]
    write_dataset(tmp_path / "datasets" / "tools", corpus, questions)
    monkeypatch.setenv("RAG_TTC_DATASETS", str(tmp_path / "datasets"))
    monkeypatch.setenv("RAG_TTC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RAG_TTC_ARMS", str(tmp_path / "arms.yaml"))
    monkeypatch.setenv("RAG_TTC_TEST_KEY", "sk-test-tools")
    return tmp_path


def test_tool_arm_logs_lookups_closes_its_flow_and_escalates(tool_lab):
    with FakeOpenAIServer(scripted_model) as server:
        (tool_lab / "arms.yaml").write_text(ARMS.format(base=server.base_url))
        from rag_ttc_assets.definitions import build_definitions
        from rag_ttc_assets.lab import Lab

        result = build_definitions().resolve_job_def("arm_job").execute_in_process(
            partition_key="remote-tool", instance=DagsterInstance.ephemeral(), raise_on_error=True)
        assert result.success
        requests = list(server.requests)

    lab = Lab.from_env()
    answers = {r["query_id"]: r for r in lab.store.read_table("remote-tool", "answers").iter_rows(named=True)}
    contracts = {r["query_id"]: r for r in lab.store.read_table("remote-tool", "contract_results").iter_rows(named=True)}
    flow = lab.store.read_arm_json("remote-tool", "failure_flow.json")

    # The tool was offered through litellm's tool calling, as the OpenAI `tools` parameter.
    first_turns = [r["body"] for r in requests if len(r["body"]["messages"]) == 1
                   and not r["body"]["messages"][0]["content"].startswith(RETRY_MARK)]
    assert len(first_turns) == len(CASES)
    assert all(b["tools"][0]["function"]["name"] == "lookup" for b in first_turns)
    # The product's prompt (v2) carries the question only: no annotated request reaches the model.
    assert not any("<requests>" in b["messages"][0]["content"] or ".r1]" in b["messages"][0]["content"]
                   for b in first_turns)

    for qid, (_, branch, status, check) in CASES.items():
        a = answers[qid]
        lookups = json.loads(a["lookups"])
        assert contracts[qid]["status"] == status, (qid, contracts[qid]["reason"])
        assert a["citation_check"] == check, qid
        if branch == "no_call":
            assert lookups == [] and a["lookup_calls"] == 0
            continue
        assert [c["query"] for c in lookups] == [QUERIES.get(qid, "assert statement")]
        assert a["admitted_chunk_ids"] == lookups[0]["result_chunk_ids"]
        if branch == "empty_results":
            assert lookups[0]["result_chunk_ids"] == []
        else:
            assert len(lookups[0]["result_chunk_ids"]) == 2  # lookup_top_n
            assert ("assert" in lookups[0]["result_doc_ids"]) == (branch == "correct_document")
    assert "escalated after one retry" in contracts["q-escalate"]["reason"]

    lf = flow["lookup_flow"]
    assert {b: lf[b] for b in ("no_call", "empty_results", "wrong_document", "correct_document")} == {
        "no_call": 1, "empty_results": 1, "wrong_document": 1, "correct_document": 3}
    assert lf["cases"] == 6 and lf["hit_rate"] == pytest.approx(3 / 6) and lf["closes"] and lf["accounting_closes"]
    summary = lab.store.read_arm_json("remote-tool", "contract_summary.json")
    assert summary["escalated"] == 1 and summary["sums_close"]

    # Token accounting: a row's input tokens are the sum over all its turns (the server counts words).
    per_case: dict[str, int] = {}
    for r in requests:
        msgs = r["body"]["messages"]
        per_case[_case(msgs)] = per_case.get(_case(msgs), 0) + sum(len((m.get("content") or "").split())
                                                                  for m in msgs)
    assert {q: a["input_tokens"] for q, a in answers.items()} == per_case
    assert answers["q-escalate"]["provider_turns"] == 3  # lookup turn, answer turn, the one retry

    # What each turn was sent is kept, in call order: the messages the server received, the tool on the first turn.
    kept = [lab.store.messages.get(d) for d in answers["q-escalate"]["messages_digests"]]
    received = [r["body"] for r in requests if _case(r["body"]["messages"]) == "q-escalate"]
    assert [len(k["messages"]) for k in kept] == [1, 3, 1]
    assert [[(m["role"], m.get("content")) for m in k["messages"]] for k in kept] == [
        [(m["role"], m.get("content")) for m in b["messages"]] for b in received]
    assert [k["tools"] for k in kept] == [b.get("tools") for b in received]
    assert [bool(k["tools"]) for k in kept] == [True, True, False]  # lookup offered on the lookup rounds only
    assert kept[2]["messages"][0]["content"].startswith(RETRY_MARK)
