"""Judges measured where the truth is known: sensitivity on planted falsehoods, false alarms on verbatim quotes."""

from __future__ import annotations

from rag_ttc_assets.core.counterfactual import Planted
from rag_ttc_assets.judging.judge_measurement import judge_measurement, quotes_verbatim
from rag_ttc_assets.core.records import Evidence, Question, Request

LOOP = "the loop body runs 3 times"
PASS = "pass is a null operation"


def question(qid: str) -> Question:
    return Question(id=qid, text="How often does the loop run, and what does pass do?", requests=[
        Request(id=f"{qid}.r1", text="How often does the loop run?", evidence=[Evidence(doc_id="d", quote=LOOP)]),
        Request(id=f"{qid}.r2", text="What does pass do?", evidence=[Evidence(doc_id="d", quote=PASS)]),
    ])


def planted(qid: str, kind: str = "number", text: str = "the loop body runs 4 times") -> Planted:
    return Planted(request_id=f"{qid}.r1", chunk_id="d#chunk-0", kind=kind, original=LOOP, planted=text)


def valid(answer: str, status: str = "valid") -> dict:
    return {"status": status, "answer": answer}


def judgment(qid: str, r: int, verdict: str | None, status: str = "judged") -> dict:
    return {"query_id": qid, "request_id": f"{qid}.r{r}", "status": status, "verdict": verdict}


QIDS = ["a", "b", "c", "d", "e", "f", "g"]
QUESTIONS = [question(q) for q in QIDS]
CONTRACTS = {
    # a repeats the planted number (and quotes r2's gold verbatim: still not a false-alarm case).
    "a": valid(f"The loop body runs 4 times. And {PASS}."),
    # b repeats it too; two planted claims on r1 count r1 once.
    "b": valid("In short, the loop body runs 4 times."),
    # c and d quote r1's gold verbatim (c across a line break) and repeat nothing planted.
    "c": valid("As documented, the loop\n  body runs 3 times."),
    "d": valid(f"Yes: {LOOP}, and {PASS}."),
    # e quotes the gold but abstained: the judges see no such row.
    "e": valid(f"Insufficient: {LOOP}.", status="abstained"),
    # f neither repeats nor quotes; g's only planted claim has kind none (nothing was altered).
    "f": valid("The loop runs a few times."),
    "g": valid("The loop runs a few times."),
}
GOLD_ROWS = {"a": {"contradicts_gold": True}, "b": {"contradicts_gold": False},
             "c": {"contradicts_gold": None},  # the gold judge failed: not measured
             "d": {"contradicts_gold": False}, "e": {"contradicts_gold": True}, "f": {"contradicts_gold": True}}
JUDGMENTS = {
    "a": [judgment("a", 1, "contradicts"), judgment("a", 2, "consistent")],
    "b": [judgment("b", 1, None, status="judge_timeout"), judgment("b", 2, "not_addressed")],
    "c": [judgment("c", 1, "contradicts"), judgment("c", 2, "not_addressed")],
    "d": [judgment("d", 1, "consistent"), judgment("d", 2, "contradicts")],
    "e": [judgment("e", 1, None, status="abstained")],
    "f": [judgment("f", 1, "contradicts")],
}
PLANTED = {"a": [planted("a")], "b": [planted("b"), planted("b", text="loop body runs 4 times")],
           "c": [planted("c")], "d": [planted("d")], "g": [planted("g", kind="none", text=LOOP)]}


def test_sensitivity_and_false_alarms_by_hand() -> None:
    # Sensitivity, gold judge: a (flagged) and b (not): 1 of 2. Request judge: a.r1 contradicts; b.r1 was not
    # judged: 1 of 1. False alarms, gold judge: c unmeasured, d not flagged: 0 of 1. Request judge: c.r1 flagged,
    # d.r1 and d.r2 quoted: d.r2 flagged, d.r1 not: 2 of 3.
    assert judge_measurement(QUESTIONS, CONTRACTS, GOLD_ROWS, JUDGMENTS, PLANTED) == {
        "sensitivity": {"gold_judge": {"flagged": 1, "of": 2, "share": 0.5},
                        "request_judge": {"flagged": 1, "of": 1, "share": 1.0}},
        "false_alarms": {"gold_judge": {"flagged": 0, "of": 1, "share": 0.0},
                         "request_judge": {"flagged": 2, "of": 3, "share": 2 / 3}},
    }


def test_only_measured_rows_count_and_shares_of_nothing_are_none() -> None:
    none = {"flagged": 0, "of": 0, "share": None}
    empty = {"sensitivity": {"gold_judge": none, "request_judge": none},
             "false_alarms": {"gold_judge": none, "request_judge": none}}
    assert judge_measurement([], {}, {}, {}, {}) == empty
    # Questions without contract rows, gold rows or judgments: nothing is measured.
    assert judge_measurement(QUESTIONS, {}, GOLD_ROWS, JUDGMENTS, PLANTED) == empty
    only_e_f_g = {q: CONTRACTS[q] for q in "efg"}
    assert judge_measurement(QUESTIONS, only_e_f_g, GOLD_ROWS, JUDGMENTS, PLANTED) == empty


def test_a_repeating_answer_without_judgments_counts_for_the_gold_judge_only() -> None:
    out = judge_measurement([question("a")], {"a": CONTRACTS["a"]}, GOLD_ROWS, {}, PLANTED)
    assert out["sensitivity"] == {"gold_judge": {"flagged": 1, "of": 1, "share": 1.0},
                                  "request_judge": {"flagged": 0, "of": 0, "share": None}}
    assert out["false_alarms"]["request_judge"]["of"] == 0  # a repeats a planted claim: no false-alarm case


def test_quotes_verbatim_normalises_whitespace_only() -> None:
    assert quotes_verbatim("As documented, the loop\n  body runs 3 times.", LOOP)
    assert not quotes_verbatim("The loop body runs 3 times.", LOOP)  # case differs: not verbatim
    assert not quotes_verbatim("the loop body runs 3  time", LOOP)
    assert not quotes_verbatim("anything", "   ")


def test_the_fixture_repeats_what_it_says() -> None:
    from rag_ttc_assets.core.counterfactual import repeats

    assert [[repeats(CONTRACTS[q]["answer"], p) for p in PLANTED[q]] for q in "abcdg"] == [
        [True], [True, True], [False], [False], [False]]
