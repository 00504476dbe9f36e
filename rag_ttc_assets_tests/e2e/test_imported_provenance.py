"""What the tables say for an imported arm (issue 41, points 7, 14 and 15), through `rag-ttc run`, `inspect`,
`compare` and `diagnose` on RAGChecker rows imported with `import-outputs` (gold answers, no gold quotes): a system
that answers every question, one that answers the first three of seven, and the latter without a support judge.

Unanswered questions are `no_trace` (never invalid, a fault or a provider call), offline jurors call no provider,
completeness without gold quotes is "not measured: no gold quotes" (never 0) with the answered count and share kept,
free-text answers are counted as `free_text` with their real mean length, the generator is the system's own
(`imported (model not recorded)` when the rows name none), and `judge: none` skips the support judge."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from rag_ttc_assets_tests.conftest import mini_corpus, mini_questions, write_mini_lab
from rag_ttc_assets_tests.e2e.test_cli import rag_ttc

ANSWERED = 3  # the partial system answers the first three questions of seven
ARMS = {"full": {"dataset": "rc", "supply": "imported",
                 "source": {"file": "rc.json", "format": "ragchecker", "citation_style": "ids"}},
        "part": {"dataset": "rc", "supply": "imported",
                 "source": {"file": "rc-part.json", "format": "ragchecker", "citation_style": "ids"}}}
DEFAULTS = {"request_judges": ["local/lexical", "local/coverage"]}  # a panel of two offline jurors


def write_arms(root, **extra) -> None:
    (root / "arms.yaml").write_text(yaml.safe_dump({"defaults": DEFAULTS, "arms": {**ARMS, **extra},
                                                    "comparisons": [["full", "part"]]}, sort_keys=False))


def rows(lines: str, second: str) -> dict[str, dict[str, str]]:
    """The rows of the text table whose second column is `second`, by arm (columns split on two or more spaces)."""
    out = lines.splitlines()
    start = next(i for i, line in enumerate(out) if re.match(rf"arm\s+{second}\s", line))
    names = re.split(r"\s{2,}", out[start].strip())
    table = {}
    for line in out[start + 2:]:
        if not line.strip() or not line.startswith(("full ", "part")):
            break
        cells = re.split(r"\s{2,}", line.strip())
        table[cells[0].split(" (")[0]] = dict(zip(names, cells))  # "full (requests derived: ...)" is arm full
    return table


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("provenance")
    with pytest.MonkeyPatch.context() as mp:
        write_mini_lab(root, mp)
        docs = {d["id"]: d["text"] for d in mini_corpus()["documents"]}
        results = [{"query_id": q["id"], "query": q["text"], "gt_answer": docs[q["targets"][0]["doc_id"]][:80],
                    "response": f"{docs[q['targets'][0]['doc_id']][:80]} [{q['targets'][0]['doc_id']}]",
                    "retrieved_context": [{"doc_id": t["doc_id"], "text": docs[t["doc_id"]]} for t in q["targets"]]}
                   for q in mini_questions(mini_corpus()) if q["targets"]]
        (root / "rc.json").write_text(json.dumps({"results": results}))
        (root / "rc-part.json").write_text(json.dumps({"results": results[:ANSWERED]}))
        code, out, err = rag_ttc("import-outputs", str(root / "rc.json"), str(root / "datasets" / "rc"),
                                 "--format", "ragchecker")
        assert code == 0, err
        write_arms(root)
        env = {"DAGSTER_HOME": str(root / "dh")}
        code, text, err = rag_ttc("run", "full", "part", env=env)
        assert code == 0, err
        code, js, err = rag_ttc("run", "full", "part", "--json", env=env)
        assert code == 0, err
        yield {"root": root, "env": env, "results": results, "text": text, "json": json.loads(js)["arms"]}


def test_unanswered_questions_are_no_trace_never_invalid_a_fault_or_a_provider_call(lab):
    unanswered = len(lab["results"]) - ANSWERED
    judge = rows(lab["text"], "judge")
    assert judge["part"]["judged"] == str(ANSWERED)
    assert judge["part"]["invalid"] == "0"
    assert judge["part"]["not_measured"] == f"no_trace {unanswered}"
    # local/lexical answers in this process: an offline judge calls no provider, in either arm.
    assert judge["part"]["provider_calls"] == judge["full"]["provider_calls"] == "0"
    part = lab["json"]["part"]
    assert part["judge"]["invalid"] == 0
    assert part["judge"]["faithfulness_not_measured"] == {"no_trace": unanswered}
    assert part["calls"]["judge"]["provider_calls"] == part["calls"]["request_judge"]["provider_calls"] == 0
    assert lab["json"]["full"]["calls"]["provider_calls"] == 0


def test_inspect_says_the_system_never_answered_an_unanswered_question(lab):
    qid = lab["results"][-1]["query_id"]
    code, out, err = rag_ttc("inspect", "part", qid, env=lab["env"])
    assert code == 0, err
    assert "the system never answered this question" in out
    assert "provider call" not in out and "provider status" not in out
    # An answered one is the system's answer, imported, its model not recorded by the rows.
    code, out, err = rag_ttc("inspect", "part", lab["results"][0]["query_id"], env=lab["env"])
    assert code == 0, err
    assert "**Answer** from the system (its model not recorded) (imported from trace results[0]), status ok" in out


def test_inspect_shows_each_requests_coverage_and_each_jurors(lab):
    from rag_ttc_assets.stages.inspect import _coverage, _juror_coverage

    qid = lab["results"][0]["query_id"]
    code, out, err = rag_ttc("inspect", "part", qid, "--json", env=lab["env"])
    assert code == 0, err
    view = json.loads(out)
    judged = [r for r in view["requests"] if r["request_judge"]["status"] == "judged"]
    assert judged
    code, out, err = rag_ttc("inspect", "part", qid, env=lab["env"])
    assert "| request | status | addressed | verdict | coverage |" in out
    for r in judged:
        assert f"| {r['request_judge']['verdict']} | {r['request_judge']['coverage']:.2f} |" in out
        for j in r["request_judge"]["jurors"]:  # each juror's coverage, and on the panel's one scale
            shown = f"{j['verdict']} (coverage {_juror_coverage(j['coverage'])}"
            if j.get("calibrated_coverage") is not None:
                shown += f", calibrated {_coverage(j['calibrated_coverage'])}"
            assert shown + ")" in out


def test_completeness_without_gold_quotes_is_not_measured_never_zero_with_the_answered_share_kept(lab):
    questions = len(lab["results"])
    table = rows(lab["text"], "graded")
    for arm in ("full", "part"):
        c = lab["json"][arm]["completeness"]
        answered, requests = c["requests_answered"], c["requests_total"]
        assert 0 < answered <= requests  # the request judge read the answers: some address their gold answer
        assert table[arm]["completeness"] == (f"not measured: no gold quotes (answered "
                                              f"{answered / requests:.4f})")
        assert table[arm]["answered"] == str(answered) and table[arm]["supported"] == "-"
        assert c["mean_completeness"] is None
        assert c["completeness_not_measured"] == {"no_gold_quotes": questions}
        assert c["requests_support_measured"] == 0
        assert c["requests_answered_share"] == pytest.approx(answered / requests)
        # The hit rate (all of a question's supporting evidence admitted) is not a miss either: no evidence is known.
        assert table[arm]["hit_rate"] == "not measured: no gold quotes"
        assert lab["json"][arm]["flow"]["hit_rate"]["not_measured"] == {"no_gold_quotes": questions}
        # No question has targets: the retrieval measures are undefined ('-'), not 0.0000.
        retrieval = rows(lab["text"], "recip_rank")[arm]
        assert [retrieval[k] for k in ("recip_rank", "recall_10", "evaluated")] == ["-", "-", "0"]
    code, out, err = rag_ttc("compare", "full", "part", env=lab["env"])
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("completeness  "))
    assert line.split()[1:3] == ["-", "-"]
    assert f"0 of {questions} (a: no_gold_quotes {questions}; b: no_gold_quotes {questions})" in line
    part = lab["json"]["part"]["completeness"]
    assert (f"(not measured: no gold quotes; answered {part['requests_answered']} of {part['requests_total']} "
            "requests)") in out
    code, out, err = rag_ttc("diagnose", "full", "part", env=lab["env"])
    assert code == 0, err
    assert "completeness is not measured: no gold quotes" in out and "too few to test" not in out


def test_the_contract_table_counts_free_text_and_unanswered_rows_their_real_length_and_the_systems_model(lab):
    table = rows(lab["text"], "generator")
    # The answer the judges read, and mean_chars counts, is the reply without its citation marker (" [doc]").
    responses = [r["response"].rsplit(" [", 1)[0].rstrip() for r in lab["results"]]
    for arm, answered in (("full", responses), ("part", responses[:ANSWERED])):
        row = table[arm]
        assert row["generator"] == "imported (model not recorded)"
        assert (row["valid"], row["free_text"], row["no_trace"]) == ("0", str(len(answered)),
                                                                     str(len(responses) - len(answered)))
        assert float(row["mean_chars"]) == pytest.approx(sum(map(len, answered)) / len(answered), abs=1e-4)
        assert lab["json"][arm]["contract"]["free_text"] == len(answered)
    assert "imported: imported" not in lab["text"]


def test_judge_none_skips_the_support_judge_and_says_faithfulness_is_not_measured(lab):
    root, env = lab["root"], lab["env"]
    write_arms(root, **{"part-nojudge": {**ARMS["part"], "judge": "none"}})
    code, text, err = rag_ttc("run", "part-nojudge", env=env)
    assert code == 0, err
    assert "no support judge (judge: none), 7 answers unjudged" in err
    row = rows(text, "judge")["part-nojudge"]
    assert row["judge"] == "none"
    assert row["faithfulness"] == row["relevance"] == "not measured: no support judge, no trace"
    assert row["not_measured"] == f"no_trace {len(lab['results']) - ANSWERED}, no_support_judge {ANSWERED}"
    assert (row["invalid"], row["contradicts_gold"], row["provider_calls"]) == ("0", "-", "0")
    code, js, err = rag_ttc("run", "part-nojudge", "--json", env=env)
    rep = json.loads(js)["arms"]["part-nojudge"]
    assert rep["judge"]["mean_faithfulness"] is None and rep["judge"]["contradicts_gold"] is None
    assert rep["judge"]["statuses"] == {"no_support_judge": ANSWERED, "no_trace": len(lab["results"]) - ANSWERED}
    # The request judge still measures what was answered: the same as with the support judge.
    assert rep["completeness"]["requests_answered"] == lab["json"]["part"]["completeness"]["requests_answered"]
    code, out, err = rag_ttc("inspect", "part-nojudge", lab["results"][0]["query_id"], env=env)
    assert code == 0, err
    assert "faithfulness not measured: no support judge" in out
