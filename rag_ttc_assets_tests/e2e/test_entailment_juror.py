"""An entailment juror (`kind: entailment`, judging.entailment) through `rag-ttc run`, against a real OpenAI-compatible
server on 127.0.0.1: one call per request, carrying the request, its gold evidence and the answer; valid replies
become the lab's verdicts with the juror's coverage; a 500, a reply outside the schema and a quote that is not in
the answer are recorded row statuses; calls, tokens and cost are counted as for the generator; and the juror sits on
a panel beside an offline juror."""

import json
import os
import re

import pytest

from rag_ttc_assets_tests.conftest import MINI_DEFAULTS, mini_corpus, mini_questions, write_dataset, write_mini_lab
from rag_ttc_assets_tests.e2e.test_cli import rag_ttc
from rag_ttc_assets_tests.support.openai_server import FakeOpenAIServer, word_count

MODEL = "openai/gpt-4o-mini"  # a priced name (litellm's cost map), served by the test server
JUROR = (f'{{{{model: {MODEL}, kind: entailment, api_base: "{{base}}", api_key_env: RAG_TTC_TEST_KEY, timeout_s: 5, '
         'max_retries: 0PARAMS}}')
# The test server is the generator too (no model to load), and the arms build no vector index and run no support
# judge: the request judge is what is measured.
ARMS = MINI_DEFAULTS + f"""  retrieval: bm25
  judge: none
  allow_unpriced_provider: true
  generator: {{{{model: openai/test-generator, api_base: "{{base}}", api_key_env: RAG_TTC_TEST_KEY, timeout_s: 5,
              max_retries: 0}}}}
arms:
  entail:
    request_judge: {JUROR.replace("PARAMS", "")}
  entail-panel:
    request_judges: [local/lexical, {JUROR.replace("PARAMS", ", params: {{temperature: 0}}")}]
    request_judge_aggregation: any
"""
NOT_IN_ANSWER = "The moon is made of green cheese"
# What the juror replies, by request (every other request: supported, quoting the answer's first words).
REPLIES = {"mini-02.r1": "no coverage", "mini-02.r2": "not in answer", "mini-03.r2": "contradicts",
           "mini-04.r1": "neither", "mini-04.r2": "not addressed"}


def generator(prompt):
    """Answers with the first sentence of every admitted chunk, citing them all."""
    chunks = re.findall(r'<chunk id="([^"]+)">\s*(.*?)\s*</chunk>', prompt, re.S)
    return json.dumps({"answer": " ".join(re.split(r"(?<=\.)\s+", text)[0] for _, text in chunks),
                       "citation_chunk_ids": [cid for cid, _ in chunks], "abstained": False})


def juror(messages):
    prompt = messages[-1]["content"]
    if "<task>judge_entailment</task>" not in prompt:
        return generator(prompt)
    rid = re.search(r"<request>\s*\[([^\]]+)\]", prompt).group(1)
    answer = re.search(r"<answer_text>\s*(.*?)\s*</answer_text>", prompt, re.S).group(1)
    quote = " ".join(answer.split()[:6])
    reply = {"addressed": True, "supported": True, "contradicts": False, "quote": quote, "coverage": 0.75,
             "reason": f"the test juror on {rid}"}
    kind = REPLIES.get(rid)
    if kind == "no coverage":
        del reply["coverage"]
    elif kind == "not in answer":
        reply["quote"] = NOT_IN_ANSWER
    elif kind == "contradicts":
        reply.update(supported=False, contradicts=True, coverage=0.5)
    elif kind == "neither":
        reply.update(supported=False, coverage=0.25)
    elif kind == "not addressed":
        reply.update(addressed=False, supported=False, quote="", coverage=0.0)
    return json.dumps(reply)


@pytest.fixture
def lab(tmp_path, monkeypatch):
    write_mini_lab(tmp_path, monkeypatch)
    # A 500 for the juror's call on one request: its text reaches only the request judge's prompt, never the answer's.
    corpus = mini_corpus()
    questions = mini_questions(corpus)
    questions[0]["requests"][0]["text"] += " FAULT:server_error"
    write_dataset(tmp_path / "datasets" / "mini", corpus, questions)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    os.makedirs(tmp_path / "dagster_home")
    return tmp_path


def test_an_entailment_juror_judges_one_request_per_call_and_records_its_faults(lab):
    import litellm

    from rag_ttc_assets.lab import Lab

    with FakeOpenAIServer(juror) as server:
        (lab / "arms.yaml").write_text(ARMS.format(base=server.base_url))
        code, out, err = rag_ttc("run", "entail", "entail-panel", "--stage", "all")
        assert code == 0, err
        calls = [r for r in server.requests if "<task>judge_entailment</task>" in r["body"]["messages"][-1]["content"]]
    store = Lab.from_env().store
    questions = {q["id"]: q for q in json.loads((lab / "datasets/mini/evaluation.json").read_text())["questions"]}
    requests = {r["id"]: r for q in questions.values() if q["answerable"] for r in q["requests"]}
    contracts = {r["query_id"]: r for r in store.read_table("entail", "contract_results").to_dicts()}
    asked = sorted(rid for rid in requests if contracts.get(rid.split(".")[0], {}).get("status") == "valid")
    assert len(asked) >= 8

    for arm, sent in (("entail", [c for c in calls if "temperature" not in c["body"]]),
                      ("entail-panel", [c for c in calls if c["body"].get("temperature") == 0])):
        # One call per request of every contract-valid answer, and each call about that one request.
        ids = [re.search(r"<request>\s*\[([^\]]+)\]", c["body"]["messages"][-1]["content"]).group(1) for c in sent]
        assert sorted(ids) == asked, arm
        for rid, c in zip(ids, sent, strict=True):
            prompt = c["body"]["messages"][-1]["content"]
            q = rid.split(".")[0]
            assert requests[rid]["text"] in prompt and contracts[q]["answer"] in prompt
            assert all(e["quote"] in prompt for e in requests[rid]["evidence"])  # the gold evidence
            assert [r for r in requests if r != rid and f"[{r}]" in prompt] == []
            assert c["body"]["response_format"]["json_schema"]["name"] == "entailment"

        rows = {r["request_id"]: r for r in store.read_table(arm, "request_judgments").to_dicts()}
        judged = {rid: (json.loads(r["jurors"])[1] if arm == "entail-panel" else r) for rid, r in rows.items()
                  if rid in asked}
        status = {rid: j["status"] for rid, j in judged.items()}
        assert status["mini-01.r1"] == "judge_server_error" and status["mini-01.r2"] == "judged"
        assert status["mini-02.r1"] == "judge_parse_failure"
        assert "field 'coverage': Field required" in judged["mini-02.r1"]["judge_error"]
        assert '"reason": "the test juror on mini-02.r1"' in judged["mini-02.r1"]["judge_error"]  # the reply kept
        assert status["mini-02.r2"] == "judge_span_not_in_answer"
        assert NOT_IN_ANSWER in judged["mini-02.r2"]["judge_error"]
        verdicts = {rid: (j["verdict"], j["coverage"]) for rid, j in judged.items() if j["status"] == "judged"}
        assert verdicts.pop("mini-03.r2") == ("contradicts", 0.5)
        assert verdicts.pop("mini-04.r1") == ("not_verifiable", 0.25)
        assert verdicts.pop("mini-04.r2") == ("not_addressed", 0.0)
        assert verdicts and set(verdicts.values()) == {("consistent", 0.75)}
        s = store.read_arm_json(arm, "request_judge_summary.json")
        prompt = Lab.from_env().prompt("judge-entailment-v1", "judge_entailment")
        assert s["request_judge"]["entailment"] == {"jurors": [MODEL], "prompt": "judge-entailment-v1",
                                                    "prompt_digest": prompt.digest}
        ok = [c for c in sent if c["fault"] is None]
        assert s["provider_calls"] == len(sent) and s["cache_hits"] == 0
        if arm == "entail":  # the juror's own calls: tokens and cost as the server counted them, priced by litellm
            tokens_in = sum(word_count(c["body"]["messages"][-1]["content"]) for c in ok)
            tokens_out = sum(word_count(juror(c["body"]["messages"])) for c in ok)
            assert (s["input_tokens"], s["output_tokens"], s["unpriced_rows"]) == (tokens_in, tokens_out, 0)
            cost = sum(sum(litellm.cost_per_token(model=MODEL, prompt_tokens=word_count(
                c["body"]["messages"][-1]["content"]), completion_tokens=word_count(juror(c["body"]["messages"]))))
                for c in ok)
            assert cost > 0 and s["cost_usd"] == pytest.approx(cost)
        else:  # beside the offline juror, whose faults are none and whose calls reach no provider
            assert s["panel"]["juror_not_measured"] == {"local/lexical": 0, MODEL: 3}
            assert s["request_judge"]["model"] == f"panel[any]: local/lexical, {MODEL}"
            lexical = {rid: json.loads(r["jurors"])[0] for rid, r in rows.items() if rid in asked}
            for rid in asked:  # any: addressed when a juror that measured it says so
                votes = [j["addressed"] for j in (lexical[rid], judged[rid]) if j["status"] == "judged"]
                assert rows[rid]["addressed"] == any(votes)

    # The case report says why a request was not measured, the refused reply with it.
    from rag_ttc_assets.stages.inspect import inspect_question, to_markdown
    from rag_ttc_assets.stages.resolve import ArmInputs

    lab = Lab.from_env()
    view = inspect_question(lab.store, ArmInputs(lab, "entail").inspected(), "mini-02")
    # The messages as sent: one call per request, each kept.
    sent = [m["messages"][-1]["content"] for m in view.request_judge.messages_sent or []]
    assert [re.search(r"<request>\s*\[([^\]]+)\]", c).group(1) for c in sent] == ["mini-02.r1", "mini-02.r2"]
    page = to_markdown(view)
    assert re.search(r"\| mini-02\.r2 \| judge_span_not_in_answer \|.*\| the quoted span 'The moon is made of green "
                     r"cheese' does not occur in the answer; the reply: .*\|$", page, re.M), page
    # `rag-ttc arms` names the juror with its kind.
    code, listed, err = rag_ttc("arms")
    assert code == 0, err
    assert re.search(rf"\nentail +.*  {MODEL} \[entailment\] *\n", listed), listed
    assert re.search(rf"\nentail-panel +.*  local/lexical, {MODEL} \[entailment\] \(any\) *\n", listed), listed
    # What `rag-ttc run` printed: the instrument, and the juror's calls, tokens and cost beside the generator's.
    text = out
    assert f"entailment jurors {MODEL} (prompt {prompt.digest[:15]}…)" in text
    table = text.split("request judge calls")[1]
    assert re.search(rf"\nentail +{re.escape(MODEL)} +{len(asked)} +0 +\d+ +\d+ +0\.\d+ +0 *\n", table), table
    # Where each reply's object was found: one reply per request (the 500 sent none).
    assert re.search(rf"\nentail .* json {len(asked) - 1} *\n", text.split("request_parsed_from")[1]), text
