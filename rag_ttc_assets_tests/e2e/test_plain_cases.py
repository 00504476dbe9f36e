"""Plain cases the offline jurors and the statement judge must get right, through the user's path.

1. A RAGChecker-format file (the shape of RAGChecker's public example input, github.com/amazon-science/RAGChecker,
   examples/checking_inputs.json: a question, a gold answer, a response whose first sentence answers it and then runs
   on with details, retrieved contexts; the rows below are this repository's own words, not a copy) taken through
   `import-outputs`, `derive-requests`, `run` with a panel of the three offline jurors and `inspect --json`: the
   answer's first claim is supported (faithfulness above 0, where the whole run-on sentence failed for one detail),
   the request it answers is addressed, numbers, dates and units written another way are the same ("8,849 metres"
   and "8849 meters", "3rd March 2020" and "March 3, 2020", "12,000" and "twelve thousand", "5 km" and "5 kilometres")
   and no contradiction, and a request answered in other words is found by the BERTScore juror, not the lexical one.
2. Every verdict's reason agrees with its verdict: on that run and on the mini lab under the bundled sweep's judges
   (`local/lexical` statement judge, the three offline jurors; the planted-falsehood arm, so contradictions occur),
   each number a reason compares with a threshold lies on the side it says, and the comparison that decided is the
   verdict's (judging/test_judge_reasons.py's property, on the rows `rag-ttc run` wrote)."""

from __future__ import annotations

import json
import os
import re

import polars as pl

from rag_ttc_assets.judging.juror_records import kept_jurors
from rag_ttc_assets.judging.lexical_judge import COSINE_THRESHOLD, RECALL_THRESHOLD
from rag_ttc_assets.judging.request_judge import ADDRESS_RECALL, REQUEST_TERM_RECALL, SOFT_ADDRESS_RECALL
from rag_ttc_assets_tests.conftest import MINI_DEFAULTS, mini_corpus, mini_questions, write_dataset
from rag_ttc_assets_tests.judging.test_judge_reasons import COMPARISON, SAME_CLAIM, _check_request_reason, _holds
from rag_ttc_assets_tests.e2e.test_cli import rag_ttc

JURORS = "  request_judges: [local/lexical, local/coverage, local/bertscore]\n"
ROWS = [
    {"query_id": "peak", "query": "What's the tallest mountain on Earth?",
     "gt_answer": ("Mount Everest is the highest mountain above sea level, in the Himalayas on the border of Nepal "
                   "and China. Its summit stands 8,849 metres (29,032 ft) high. Mauna Kea in Hawaii is taller when "
                   "measured from its base on the ocean floor."),
     "response": ("The tallest mountain on Earth is Mount Everest, rising 8849 meters (29032 feet) above sea level, "
                  "drawing climbers from around the world to the Himalayas every spring. Some argue for Mauna Kea, "
                  "as geologists note it is taller if measured from its base deep under the Pacific."),
     "retrieved_context": [
         {"doc_id": "p1", "text": ("Climbers argue whether Everest or K2 is the hardest climb. Measured from sea level, "
                                   "Mount Everest is the tallest mountain on Earth.")},
         {"doc_id": "p2", "text": "Mauna Kea is taller than Everest if measured from its base on the ocean floor."}]},
    {"query_id": "bridge", "query": "When did the new bridge open and how busy is it?",
     "gt_answer": "The bridge opened on 3rd March 2020. It carries 12,000 cars over 5 km each day.",
     "response": "The bridge opened on March 3, 2020. Twelve thousand cars use its 5 kilometres every day.",
     "retrieved_context": [{"doc_id": "b1", "text": "The bridge opened on 2020-03-03 and carries 12000 cars daily."}]},
    {"query_id": "car", "query": "Who bought the car, and when?",
     "gt_answer": "A doctor bought the car in 2019.",
     "response": "In 2019 the automobile was purchased by a physician.",
     "retrieved_context": [{"doc_id": "c1", "text": "Records show a physician purchased the automobile in 2019."}]},
]


def _env(root) -> dict:
    env = {"RAG_TTC_DATASETS": str(root / "datasets"), "RAG_TTC_ARMS": str(root / "arms.yaml"),
           "RAG_TTC_HOME": str(root / "home"), "DAGSTER_HOME": str(root / "dagster_home")}
    os.makedirs(env["DAGSTER_HOME"], exist_ok=True)
    os.makedirs(env["RAG_TTC_DATASETS"], exist_ok=True)
    return env


def _jurors(row: dict) -> dict[str, dict]:
    return {j["model"]: j for j in row["request_judge"]["jurors"]}


def _check_statement_reasons(verdicts: list[dict], label: str) -> None:
    """A statement verdict's reason: each comparison holds; supported iff both signals reached theirs, no clash."""
    for v in verdicts:
        reason, where = v["reason"], repr(v)
        for x, op, t in COMPARISON.findall(reason):
            assert _holds(x, op, t), where
        if v.get("contradicts_gold"):
            same = SAME_CLAIM.search(reason)
            assert same and not v["supported"] and (same.group(2), same.group(5)) == (">=", ">="), where
            continue
        if reason.startswith(f"no {label} to check against"):
            assert not v["supported"], where
            continue
        rec = re.search(r"content-word recall (\d+\.\d+) (>=|<) (\d+\.\d+), cosine (\d+\.\d+) (>=|<) (\d+\.\d+)",
                        reason)
        assert rec and (float(rec.group(3)), float(rec.group(6))) == (RECALL_THRESHOLD, COSINE_THRESHOLD), where
        both = rec.group(2) == rec.group(5) == ">="
        assert v["supported"] == (both and ", but " not in reason), where


def _check_every_reason(store, arm: str, gold: dict[str, bool]) -> dict[str, int]:
    """Every juror's, the panel's and the statement judge's reasons in the arm's stored rows; the verdicts seen."""
    seen: dict[str, int] = {}
    for r in pl.read_parquet(store / arm / "request_judgments.parquet").iter_rows(named=True):
        if r["status"] != "judged":
            continue
        for j in kept_jurors(r["jurors"] or "[]"):  # each juror's row, read through its model
            if j.status != "judged":
                continue
            threshold = (SOFT_ADDRESS_RECALL if j.model == "local/bertscore"
                         else ADDRESS_RECALL if gold[r["request_id"]] else REQUEST_TERM_RECALL)
            _check_request_reason(j, threshold, j.model)
            seen[j.verdict] = seen.get(j.verdict, 0) + 1
        # The panel's reason is the reason of a juror that gave the panel's verdict: its comparisons agree with it.
        panel = {"verdict": r["verdict"], "addressed": r["addressed"], "reason": r["reason"].split("): ", 1)[1]}
        for x, op, t in COMPARISON.findall(panel["reason"]):
            assert _holds(x, op, t), r["reason"]
        assert (panel["verdict"] == "not_addressed") == (not panel["addressed"]), r["reason"]
        decided = panel["reason"].split(";")[0]  # the coverage against the threshold, as the juror compared it
        if panel["verdict"] in ("consistent", "not_verifiable"):
            assert ">=" in decided and "<" not in decided, r["reason"]
        elif panel["verdict"] == "not_addressed":
            assert "<" in decided and ">=" not in decided, r["reason"]
    for r in pl.read_parquet(store / arm / "judge_verdicts.parquet").iter_rows(named=True):
        if r["status"] != "judged":
            continue
        _check_statement_reasons(json.loads(r["verdicts"] or "[]"), "evidence")
        _check_statement_reasons(json.loads(r["gold_verdicts"] or "[]"), "gold")
    return seen


def test_a_ragchecker_style_answer_its_numbers_dates_units_and_paraphrase_read_as_people_read_them(tmp_path):
    env = _env(tmp_path)
    (tmp_path / "rc.json").write_text(json.dumps({"results": ROWS}), encoding="utf-8")
    (tmp_path / "arms.yaml").write_text(MINI_DEFAULTS.replace("dataset: mini", "dataset: rc") + JURORS + (
        "arms:\n  rc:\n    supply: imported\n    source: {file: rc.json, format: ragchecker}\n"), encoding="utf-8")
    code, out, err = rag_ttc("import-outputs", str(tmp_path / "rc.json"), str(tmp_path / "datasets" / "rc"),
                             "--format", "ragchecker", env=env)
    assert code == 0, err
    code, out, err = rag_ttc("derive-requests", "rc", env=env)
    assert code == 0, err
    code, out, err = rag_ttc("run", "rc", env=env)
    assert code == 0, err
    rows = {}
    for q in ("peak", "bridge", "car"):
        code, out, err = rag_ttc("inspect", "rc", q, "--json", env=env)
        assert code == 0, err
        rows[q] = json.loads(out)

    peak = rows["peak"]
    # The first claim of a run-on sentence is checked on its own: supported by the first context.
    first = peak["judge"]["verdicts"][0]
    assert first["text"] == "The tallest mountain on Earth is Mount Everest" and first["supported"], first
    assert peak["judge"]["faithfulness"] > 0
    # The request the first sentence answers is addressed by every juror; so is the height written in other units.
    d1, d2 = peak["requests"][0], peak["requests"][1]
    assert d1["text"].startswith("Mount Everest is the highest mountain") and d2["text"].startswith("Its summit")
    assert all(j["addressed"] for j in _jurors(d1).values()), d1
    assert _jurors(d2)["local/lexical"]["addressed"] and d2["request_judge"]["verdict"] == "consistent", d2

    bridge = rows["bridge"]
    # "March 3, 2020" is "3rd March 2020": the same claim, no number changed; the opening is supported by "2020-03-03".
    assert [r["request_judge"]["verdict"] for r in bridge["requests"]] == ["consistent", "consistent"], bridge
    assert not bridge["judge"]["contradicts_gold"]
    assert bridge["judge"]["verdicts"][0]["supported"], bridge["judge"]["verdicts"][0]
    # "Twelve thousand cars use its 5 kilometres" carries "12,000 cars over 5 km": each word-reading juror finds it.
    assert all(_jurors(bridge["requests"][1])[m]["addressed"] for m in ("local/lexical", "local/coverage"))

    # Said in other words (a physician purchased the automobile): the BERTScore juror finds it, the lexical one not.
    car = _jurors(rows["car"]["requests"][0])
    assert not car["local/lexical"]["addressed"] and car["local/bertscore"]["addressed"], car

    gold = {r["id"]: True for q in rows.values() for r in q["requests"]}
    seen = _check_every_reason(tmp_path / "home" / "store" / "arms", "rc", gold)
    assert {"consistent", "not_addressed"} <= set(seen), seen


def test_every_reason_the_bundled_sweeps_judges_give_on_the_mini_lab_agrees_with_its_verdict(tmp_path):
    env = _env(tmp_path)
    corpus = mini_corpus()
    questions = mini_questions(corpus)
    write_dataset(tmp_path / "datasets" / "mini", corpus, questions)
    (tmp_path / "arms.yaml").write_text(
        MINI_DEFAULTS + JURORS + "arms:\n  planted-falsehood: {counterfactual: planted-falsehood}\n",
        encoding="utf-8")
    code, _, err = rag_ttc("run", "planted-falsehood", env=env)
    assert code == 0, err
    gold = {r["id"]: bool(r["evidence"]) for q in questions for r in q["requests"]}  # gold quotes, or none
    seen = _check_every_reason(tmp_path / "home" / "store" / "arms", "planted-falsehood", gold)
    # The run reaches the verdicts whose reasons differ (addressed, not, and a contradiction of the planted claim).
    assert {"consistent", "not_addressed", "contradicts"} <= set(seen), seen
