"""Judges against human labels: a constructed labelled set whose kappa and correlations are computed by hand."""

import json
import math

import pytest

from rag_ttc_assets.labelling import human_labels as hl
from rag_ttc_assets.judging import judge_agreement as ja

REQS = [f"q{i}.r1" for i in range(1, 11)]
CAT = hl.Catalog(questions={"base": {f"q{i}": {f"q{i}.r1"} for i in range(1, 11)},
                            "other": {f"q{i}": {f"q{i}.r1"} for i in range(1, 11)}},
                 rows={"base": {f"q{i}" for i in range(1, 11)}, "other": {f"q{i}" for i in range(1, 10)}})
T, F = True, False
ANN1 = [T, T, T, T, T, F, F, F, F, F]
ANN2 = [T, T, T, T, T, F, F, F, F, T]
JUDGE = [T, T, T, T, F, T, F, F, F, F]


def _lines(records):
    return "\n".join(json.dumps(r) for r in records) + "\n"


def _request_labels():
    recs = [{"kind": "request", "question": f"q{i}", "request": f"q{i}.r1", "arm": "base", "addressed": a,
             "annotator": ann} for ann, labels in (("ann1", ANN1), ("ann2", ANN2)) for i, a in enumerate(labels, 1)]
    return hl.parse_labels(_lines(recs), "labels.jsonl", CAT)


def test_per_request_kappa_accuracy_and_confusion_against_hand_computed_values():
    labels = _request_labels()
    judge = {("base", f"q{i}", f"q{i}.r1"): {"addressed": a, "verdict": None, "reason": f"r{i}"}
             for i, a in enumerate(JUDGE, 1)}
    rep = ja.request_agreement(labels.requests, {"lexical": judge})
    j, ceiling = rep["rows"]
    # Judge against both annotators, 20 label pairs: agreements 8 (ann1) + 7 (ann2), p_o = 15/20.
    # Human says addressed 5 + 6 = 11 of 20, the judge 5 + 5 = 10 of 20: p_e = .55 * .5 + .45 * .5 = .5.
    p_o, p_e = 15 / 20, 0.55 * 0.5 + 0.45 * 0.5
    assert j["n"] == 20 and j["accuracy"] == pytest.approx(p_o)
    assert j["kappa"] == pytest.approx((p_o - p_e) / (1 - p_e)) == pytest.approx(0.5)
    # Rows human, columns judge: TT 4+4, TF 1+2 (q5 twice, q10 by ann2), FT 1+1 (q6), FF 4+3.
    assert j["confusion"] == {"True": {"True": 8, "False": 3}, "False": {"True": 2, "False": 7}}
    assert sorted((d["question"], d["annotator"]) for d in j["disagreements"]) == [
        ("q10", "ann2"), ("q5", "ann1"), ("q5", "ann2"), ("q6", "ann1"), ("q6", "ann2")]
    # The ceiling: ann1 against ann2 agree on 9 of 10; addressed 5/10 and 6/10: p_e = .5*.6 + .5*.4 = .5.
    assert ceiling["rater"] == "ann1 vs ann2" and ceiling["kind"] == "ceiling" and ceiling["n"] == 10
    assert ceiling["kappa"] == pytest.approx((0.9 - 0.5) / 0.5) == pytest.approx(0.8)


def test_a_request_the_judge_did_not_measure_is_counted_not_scored():
    labels = _request_labels()
    judge = {("base", f"q{i}", f"q{i}.r1"): {"addressed": a} for i, a in enumerate(JUDGE, 1) if i != 1}
    j = ja.request_agreement(labels.requests, {"lexical": judge})["rows"][0]
    assert j["n"] == 18 and j["not_measured"] == 2


def test_against_the_majority_and_one_annotator_against_the_others_by_hand():
    # Three annotators on q1..q6, two on q7 (a tie); the judge's addressed per question.
    table = {1: "TTT", 2: "TTF", 3: "TFF", 4: "FFF", 5: "TFT", 6: "FTF", 7: "TF"}
    judge_says = {1: T, 2: T, 3: T, 4: F, 5: F, 6: F, 7: T}
    recs = [{"kind": "request", "question": f"q{i}", "request": f"q{i}.r1", "arm": "base", "addressed": c == "T",
             "annotator": f"a{k}"} for i, row in table.items() for k, c in enumerate(row, 1)]
    labels = hl.parse_labels(_lines(recs), "labels.jsonl", CAT)
    judge = {("base", f"q{i}", f"q{i}.r1"): {"addressed": a} for i, a in judge_says.items()}
    m = ja.request_agreement(labels.requests, {"lexical": judge})["majority"]
    assert (m["items"], m["items_with_two_or_more_labels"]) == (7, 7)
    full, ceiling, loo = m["rows"]
    # Majority: q1 T, q2 T, q3 F, q4 F, q5 T, q6 F (q7 a tie, skipped). The judge agrees on 4 of 6; both say
    # addressed on 3 of 6: p_e = .5, kappa = (4/6 - .5) / .5 = 1/3.
    assert (full["rater"], full["n"], full["ties_skipped"]) == ("lexical", 6, 1)
    assert full["accuracy"] == pytest.approx(4 / 6) and full["kappa"] == pytest.approx(1 / 3)
    # Leave one out (items with 3 labels): each label against the other two when they agree. q1 and q4: 3 each;
    # q2: a3 (F vs T); q3: a1 (T vs F); q5: a2 (F vs T); q6: a2 (T vs F); the 8 others are ties. 10 instances,
    # 6 agree; majority and left-out label both addressed 5 of 10: p_e = .5, kappa = (.6 - .5) / .5 = .2.
    assert (ceiling["rater"], ceiling["kind"], ceiling["n"], ceiling["ties_skipped"]) == (
        "an annotator vs the others", "ceiling", 10, 8)
    assert ceiling["accuracy"] == pytest.approx(0.6) and ceiling["kappa"] == pytest.approx(0.2)
    assert ceiling["confusion"] == {"True": {"True": 3, "False": 2}, "False": {"True": 2, "False": 3}}
    # The judge in the left-out annotator's place, same 10 instances: it misses q3 (T vs F) and q5 (F vs T): 8 of
    # 10; addressed 5 of 10 on both sides: kappa (.8 - .5) / .5 = .6.
    assert (loo["rater"], loo["n"]) == ("lexical vs the others", 10)
    assert loo["accuracy"] == pytest.approx(0.8) and loo["kappa"] == pytest.approx(0.6)


def test_majority_rows_count_what_the_judge_did_not_measure():
    recs = [{"kind": "request", "question": f"q{i}", "request": f"q{i}.r1", "arm": "base", "addressed": True,
             "annotator": f"a{k}"} for i in (1, 2) for k in (1, 2, 3)]
    labels = hl.parse_labels(_lines(recs), "labels.jsonl", CAT)
    m = ja.request_agreement(labels.requests, {"j": {("base", "q1", "q1.r1"): {"addressed": True}}})["majority"]
    full, _, loo = m["rows"]
    assert (full["n"], full["not_measured"]) == (1, 1) and (loo["n"], loo["not_measured"]) == (3, 3)


def _pearson(x, y):
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    return sxy / math.sqrt(sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))


def test_completeness_per_answer_and_per_arm_against_the_majority_and_the_others_by_hand():
    two = {"q1": {"q1.r1", "q1.r2"}}
    cat = hl.Catalog(questions={"A": {**two, "q2": {"q2.r1"}}, "B": two, "C": two},
                     rows={"A": {"q1", "q2"}, "B": {"q1"}, "C": {"q1"}})
    people = {("A", "q1", "q1.r1"): "TTT", ("A", "q1", "q1.r2"): "TTF", ("A", "q2", "q2.r1"): "TTT",
              ("B", "q1", "q1.r1"): "TFF", ("B", "q1", "q1.r2"): "FFF",
              ("C", "q1", "q1.r1"): "TTF", ("C", "q1", "q1.r2"): "FFT"}
    said = {("A", "q1", "q1.r1"): T, ("A", "q1", "q1.r2"): F, ("A", "q2", "q2.r1"): F,
            ("B", "q1", "q1.r1"): F, ("B", "q1", "q1.r2"): F, ("C", "q1", "q1.r1"): T, ("C", "q1", "q1.r2"): T}
    recs = [{"kind": "request", "question": q, "request": r, "arm": a, "addressed": c == "T", "annotator": f"a{k}"}
            for (a, q, r), row in people.items() for k, c in enumerate(row, 1)]
    labels = hl.parse_labels(_lines(recs), "labels.jsonl", cat)
    judge = {k: {"addressed": v} for k, v in said.items()}
    rep = ja.completeness_agreement(labels.requests, {"j": judge})
    assert (rep["rows"], rep["arms"]) == (4, 3)
    answer = {r["rater"]: r for r in rep["levels"]["answer"]}
    arm = {r["rater"]: r for r in rep["levels"]["arm"]}
    # Majority per answer: A/q1 T T (1.0), A/q2 T (1.0), B/q1 F F (0.0), C/q1 T F (0.5); the judge: .5, 0, 0, 1.
    x, y = [0.5, 0.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.5]
    assert answer["j"]["n"] == 4 and answer["j"]["pearson"]["r"] == pytest.approx(_pearson(x, y))
    # Per arm, the mean over its answers: A (.25, 1), B (0, 0), C (1, .5).
    assert arm["j"]["n"] == 3 and arm["j"]["pearson"]["r"] == pytest.approx(_pearson([0.25, 0, 1], [1, 0, 0.5]))
    # One annotator against the others (a tie among the other two leaves the item out), per (answer, annotator):
    # A/q1: a1 r1 (T|T), a2 r1 (T|T), a3 r1 r2 (T F | T T); A/q2: each (T|T); B/q1: a1 r1 r2 (T F | F F),
    # a2 r2 (F|F), a3 r2 (F|F); C/q1: a3 r1 r2 (F T | T F); a1 and a2 of C/q1 only ties.
    cx = [1, 1, 0.5, 1, 1, 1, 0.5, 0, 0, 0.5]
    cy = [1, 1, 1.0, 1, 1, 1, 0.0, 0, 0, 0.5]
    assert answer["an annotator vs the others"]["n"] == 10
    assert answer["an annotator vs the others"]["pearson"]["r"] == pytest.approx(_pearson(cx, cy))
    # The judge over the same items: A/q1 a1, a2 (r1: T), a3 (T F); A/q2 (F) three times; B/q1 (F F), (F), (F);
    # C/q1 a3 (T T).
    jx = [1, 1, 0.5, 0, 0, 0, 0, 0, 0, 1]
    assert answer["j vs the others"]["pearson"]["r"] == pytest.approx(_pearson(jx, cy))
    # Per (arm, annotator), the mean over that annotator's answers: A a1 (1, 1), a2 (1, 1), a3 (.75, 1);
    # B a1 (.5, 0), a2 (0, 0), a3 (0, 0); C a3 (.5, .5); and the judge's A a1 (.5), a2 (.5), a3 (.25), B 0 0 0, C 1.
    ay = [1, 1, 1, 0, 0, 0, 0.5]
    assert arm["an annotator vs the others"]["n"] == 7
    assert arm["an annotator vs the others"]["pearson"]["r"] == pytest.approx(_pearson([1, 1, 0.75, 0.5, 0, 0, 0.5], ay))
    assert arm["j vs the others"]["pearson"]["r"] == pytest.approx(_pearson([0.5, 0.5, 0.25, 0, 0, 0, 1], ay))

    # A reference scorer of whole answers (no gold answer for A/q2: not measured), in the same rows, kind reference.
    ref = {("A", "q1"): 0.9, ("A", "q2"): None, ("B", "q1"): 0.2, ("C", "q1"): 0.4}
    rep = ja.completeness_agreement(labels.requests, {"j": judge}, references={"ref": ref})
    answer = {r["rater"]: r for r in rep["levels"]["answer"]}
    assert (answer["ref"]["kind"], answer["ref"]["n"], answer["ref"]["not_measured"]) == ("reference", 3, 1)
    assert answer["ref"]["pearson"]["r"] == pytest.approx(_pearson([0.9, 0.2, 0.4], [1.0, 0.0, 0.5]))
    # Against the others: the leave-one-out points of A/q1 (3), B/q1 (3) and C/q1 (1), the reference's row score each.
    assert answer["ref vs the others"]["pearson"]["r"] == pytest.approx(
        _pearson([0.9, 0.9, 0.9, 0.2, 0.2, 0.2, 0.4], [1, 1, 1, 0, 0, 0, 0.5]))
    assert answer["ref vs the others"]["not_measured"] == 3  # A/q2's three annotators
    assert answer["j"] == {**answer["j"]}  # the judge's rows are unchanged by a reference beside them
    assert rep["levels"]["answer"][0]["kind"] == "judge"


def test_a_judge_that_reports_coverage_is_read_graded_too_by_hand() -> None:
    cat = hl.Catalog(questions={"A": {"q1": {"q1.r1", "q1.r2"}}, "B": {"q1": {"q1.r1", "q1.r2"}},
                                "C": {"q1": {"q1.r1", "q1.r2"}}},
                     rows={"A": {"q1"}, "B": {"q1"}, "C": {"q1"}})
    people = {("A", "q1.r1"): True, ("A", "q1.r2"): True, ("B", "q1.r1"): True, ("B", "q1.r2"): False,
              ("C", "q1.r1"): False, ("C", "q1.r2"): False}
    recs = [{"kind": "request", "question": "q1", "request": r, "arm": a, "addressed": v, "annotator": "p"}
            for (a, r), v in people.items()]
    labels = hl.parse_labels(_lines(recs), "labels.jsonl", cat)
    # The judge's verdicts and coverage; a second judge without coverage (an LLM judge) is read once only.
    cov = {("A", "q1.r1"): (T, 0.9), ("A", "q1.r2"): (F, 0.4), ("B", "q1.r1"): (F, 0.45), ("B", "q1.r2"): (F, 0.1),
           ("C", "q1.r1"): (F, 0.2), ("C", "q1.r2"): (F, 0.0)}
    judge = {(a, "q1", r): {"addressed": v, "coverage": c} for (a, r), (v, c) in cov.items()}
    llm = {(a, "q1", r): {"addressed": v, "coverage": None} for (a, r), (v, _) in cov.items()}
    rep = ja.completeness_agreement(labels.requests, {"j": judge, "llm": llm})
    answer = {r["rater"]: r for r in rep["levels"]["answer"]}
    assert set(answer) == {"j", "j (graded)", "llm"}
    # People: A 1.0, B 0.5, C 0.0. Binary shares: A .5, B 0, C 0; graded (mean coverage): A .65, B .275, C .1.
    assert answer["j"]["pearson"]["r"] == pytest.approx(_pearson([0.5, 0, 0], [1, 0.5, 0]))
    assert answer["j (graded)"]["pearson"]["r"] == pytest.approx(_pearson([0.65, 0.275, 0.1], [1, 0.5, 0]))
    assert answer["j (graded)"]["kind"] == "judge" and answer["j (graded)"]["n"] == 3
    # One request without coverage: that row is not measured graded.
    judge[("B", "q1", "q1.r2")] = {"addressed": F, "coverage": None}
    again = {r["rater"]: r for r in ja.completeness_agreement(labels.requests, {"j": judge})["levels"]["answer"]}
    assert (again["j (graded)"]["n"], again["j (graded)"]["not_measured"]) == (2, 1)
    assert ja.graded_share([{"coverage": 0.5}, {"coverage": 1.0}]) == 0.75
    assert ja.graded_share([{"coverage": 0.5}, None]) is None and ja.graded_share([]) is None


def test_gold_answer_recall_is_plain_content_word_recall() -> None:
    assert ja.gold_answer_recall("Pass is a null operation.", "A null statement: pass.") == pytest.approx(2 / 3)
    assert ja.gold_answer_recall(None, "anything") is None and ja.gold_answer_recall("gold", None) is None


X = [0.5, 0.0, -0.5, 1.0, 0.25]  # the judge's score(b) - score(a) on five pairs
Y = [1, 0, -1, 2, -1]             # the human label (b over a)


def _pair_labels(labels_by_annotator):
    recs = []
    for ann, ys in labels_by_annotator.items():
        for i, y in enumerate(ys, 1):
            recs.append({"kind": "pair", "question": f"q{i}", "a": {"arm": "base"}, "b": {"arm": "other"},
                         "labels": {"completeness": y}, "annotator": ann})
    return hl.parse_labels(_lines(recs), "pairs.jsonl", CAT)


def test_pairwise_pearson_and_spearman_against_hand_computed_values():
    labels = _pair_labels({"ann1": Y})
    scores = {("base", f"q{i}"): 0.5 for i in range(1, 6)}
    scores.update({("other", f"q{i}"): 0.5 + x for i, x in enumerate(X, 1)})
    rep = ja.pair_agreement(labels.pairs, {"request judge": {"completeness": scores}})["completeness"]
    (row,) = rep["rows"]
    # Pearson: means .25 and .2; sum of products 2.5, sums of squares 1.25 and 6.8.
    assert row["pearson"]["r"] == pytest.approx(2.5 / math.sqrt(1.25 * 6.8))
    # Spearman: ranks x (4, 2, 1, 5, 3), y (4, 3, 1.5, 5, 1.5): sum of products 8, squares 10 and 9.5.
    assert row["spearman"]["r"] == pytest.approx(8 / math.sqrt(10 * 9.5))
    assert row["pearson"]["ci_low"] <= row["pearson"]["r"] <= row["pearson"]["ci_high"] <= 1
    assert row["spearman"]["ci_low"] <= row["spearman"]["r"] <= row["spearman"]["ci_high"]
    # A reference scorer beside it: its own row, kind reference; with only a reference the aspect is not "judged".
    rep = ja.pair_agreement(labels.pairs, {}, references={"ref": {"completeness": scores}})["completeness"]
    (ref,) = rep["rows"]
    assert (ref["rater"], ref["kind"], rep["judged"]) == ("ref", "reference", False)
    assert ref["pearson"]["r"] == pytest.approx(2.5 / math.sqrt(1.25 * 6.8))


def test_the_annotators_ceiling_orients_a_pair_labelled_the_other_way_round():
    y2 = [2, 0, -1, 1, 0]
    labels = _pair_labels({"ann1": Y, "ann2": y2})
    # ann2 labels q1 with a and b swapped: the same pair, its label negated.
    recs = [{"kind": "pair", "question": "q1", "a": {"arm": "other"}, "b": {"arm": "base"},
             "labels": {"completeness": -2}, "annotator": "ann3"}]
    swapped = hl.parse_labels(_lines(recs), "x.jsonl", CAT).pairs
    rows = ja.pair_agreement(labels.pairs, {})["completeness"]["rows"]
    (ceiling,) = rows
    # ann1 (1, 0, -1, 2, -1) vs ann2 (2, 0, -1, 1, 0): means .2 and .4; products .8*1.6 + .08 + 1.2*1.4 + 1.8*.6
    # + 1.2*.4 = 4.6; squares 6.8 and 1.6^2 + .16 + 1.96 + .36 + .16 = 5.2.
    assert ceiling["pearson"]["r"] == pytest.approx(4.6 / math.sqrt(6.8 * 5.2))
    assert swapped[0].item == labels.pairs[0].item and swapped[0].toward(labels.pairs[0], "completeness") == 2


def test_the_ceiling_reads_each_pair_with_a_labels_own_a_and_b_never_a_sort_of_the_arms_names():
    """Pairs among three arms, ann2 seeing every other pair the other way round: the ceiling reads ann2's label with
    ann1's a and b (ann1's line first), and renaming an arm so that it sorts elsewhere changes no figure. (By a sort
    of the names, renaming `a1` to `d1` read the pairs with it the other way round, and the ceiling moved.)"""
    arms = ("a1", "b1", "c1", "d1")
    cat = hl.Catalog(questions={a: {f"q{i}": set() for i in range(1, 9)} for a in arms},
                     rows={a: {f"q{i}" for i in range(1, 9)} for a in arms})
    sides = [("a1", "b1"), ("c1", "a1"), ("b1", "c1"), ("a1", "c1"), ("b1", "a1"), ("c1", "b1"), ("a1", "b1"),
             ("c1", "a1")]
    y1, y2 = [2, -2, 0, 1, -1, 2, 0, 1], [1, -1, 1, 1, -1, 1, -1, 2]
    recs = [{"kind": "pair", "question": f"q{i}", "a": {"arm": a}, "b": {"arm": b}, "labels": {"completeness": y},
             "annotator": "ann1"} for i, ((a, b), y) in enumerate(zip(sides, y1), 1)]
    recs += [{"kind": "pair", "question": f"q{i}", **({"a": {"arm": b}, "b": {"arm": a}} if i % 2 else
                                                      {"a": {"arm": a}, "b": {"arm": b}}),
              "labels": {"completeness": -y if i % 2 else y}, "annotator": "ann2"}
             for i, ((a, b), y) in enumerate(zip(sides, y2), 1)]

    def ceiling(records):
        (row,) = ja.pair_agreement(hl.parse_labels(_lines(records), "l.jsonl", cat).pairs, {})["completeness"]["rows"]
        return row

    got = ceiling(recs)
    mx, my = sum(y1) / 8, sum(y2) / 8
    sxy = sum((a - mx) * (b - my) for a, b in zip(y1, y2))
    assert got["pearson"]["r"] == pytest.approx(sxy / math.sqrt(sum((a - mx) ** 2 for a in y1)
                                                                * sum((b - my) ** 2 for b in y2)))
    renamed = [{**r, **{s: {"arm": "d1"} for s in ("a", "b") if r[s]["arm"] == "a1"}} for r in recs]
    assert ceiling(renamed) == got
    swapped = [{**r, "a": r["b"], "b": r["a"], "labels": {"completeness": -r["labels"]["completeness"]}} for r in recs]
    assert ceiling(swapped) == got


@pytest.mark.parametrize("record, field, says", [
    ({"kind": "request", "question": "q1", "request": "q1.r1", "arm": "nope", "addressed": True, "annotator": "x"},
     "arm", "no arm or imported system 'nope'"),
    ({"kind": "request", "question": "q99", "request": "q1.r1", "arm": "base", "addressed": True, "annotator": "x"},
     "question", "has no question 'q99'"),
    ({"kind": "request", "question": "q1", "request": "q1.r9", "arm": "base", "addressed": True, "annotator": "x"},
     "request", "has no request 'q1.r9'"),
    ({"kind": "request", "question": "q1", "request": "q1.r1", "arm": "base", "addressed": "yes", "annotator": "x"},
     "addressed", "true or false"),
    ({"kind": "request", "question": "q1", "request": "q1.r1", "arm": "base", "addressed": True, "annotator": "x",
      "note": 5}, "note", "text, or leave it out; not 5"),
    ({"kind": "pair", "question": "q10", "a": {"arm": "base"}, "b": {"arm": "other"}, "labels": {"c": 1},
      "annotator": "x"}, "b.row", "has no answer row 'q10'"),
    ({"kind": "pair", "question": "q1", "a": {"arm": "base", "row": "q2"}, "b": {"arm": "other", "row": "q3"},
      "labels": {"completeness": 1}, "annotator": "x"}, "a.row",
     "row 'q2' is the answer of arm 'base' to question 'q2', not to this label's question 'q1'"),
    ({"kind": "pair", "question": "q1", "a": {"arm": "base"}, "b": {"arm": "other", "row": "q3"},
      "labels": {"completeness": 1}, "annotator": "x"}, "b.row", "row 'q3' is the answer of arm 'other'"),
    ({"kind": "pair", "question": "q1", "a": {"arm": "base"}, "b": {"arm": "other"}, "labels": {"completeness": 3},
      "annotator": "x"}, "labels.completeness", "3 is not an integer from -2 to 2"),
    ({"kind": "pair", "question": "q1", "a": {"arm": "base"}, "b": {"arm": "other"}, "labels": {"completeness": 1.5},
      "annotator": "x"}, "labels.completeness", "not an integer"),
    ({"kind": "vote", "question": "q1", "annotator": "x"}, "kind", "'vote'"),
])
def test_bad_labels_name_the_file_the_record_and_the_field(record, field, says):
    good = {"kind": "request", "question": "q2", "request": "q2.r1", "arm": "base", "addressed": True,
            "annotator": "x"}
    with pytest.raises(hl.LabelsError) as e:
        hl.parse_labels(_lines([good, record]), "labels.jsonl", CAT)
    assert f"labels.jsonl: line 2: {field}: " in str(e.value) and says in str(e.value)


def test_one_annotator_labelling_a_pair_twice_is_an_error_naming_both_lines():
    pair = {"kind": "pair", "question": "q1", "a": {"arm": "base"}, "b": {"arm": "other"},
            "labels": {"completeness": 1}, "annotator": "x"}
    flipped = {**pair, "a": {"arm": "other"}, "b": {"arm": "base"}, "labels": {"completeness": -1}}
    with pytest.raises(hl.LabelsError) as e:
        hl.parse_labels(_lines([pair, flipped]), "labels.jsonl", CAT)
    assert "labels.jsonl: line 2: annotator: 'x' already labelled this pair on line 1" in str(e.value)
    # Another annotator may label it.
    assert len(hl.parse_labels(_lines([pair, {**flipped, "annotator": "y"}]), "l", CAT).pairs) == 2


def test_annotators_who_labelled_nothing_in_common_give_no_ceiling_row_and_are_counted():
    """One expert per item (a set with many annotators): before, every two of them got a ceiling row of n 0 (6,105
    rows for 111 experts); now only pairs with items in common, the others counted and said in the title."""
    from rag_ttc_assets.judging.judge_agreement_stage import tables

    recs = [{"kind": "request", "question": f"q{i}", "request": f"q{i}.r1", "arm": "base", "addressed": a,
             "annotator": f"expert{i}"} for i, a in enumerate(ANN1, 1)]
    recs += [{"kind": "request", "question": "q1", "request": "q1.r1", "arm": "base", "addressed": False,
              "annotator": "expert2"}]  # expert1 and expert2 share q1 only
    labels = hl.parse_labels(_lines(recs), "labels.jsonl", CAT)
    rep = ja.request_agreement(labels.requests, {})
    ceiling = [r for r in rep["rows"] if r["kind"] == "ceiling"]
    assert [(r["rater"], r["n"]) for r in ceiling] == [("expert1 vs expert2", 1)]
    assert rep["annotator_pairs_sharing_no_item"] == 10 * 9 // 2 - 1
    title = tables(_report(rep))[0][0]
    assert "by 10 annotators" in title and "1 pairs of annotators who labelled items in common; 44 pairs" in title
    alone = ja.request_agreement(hl.parse_labels(_lines(recs[:10]), "labels.jsonl", CAT).requests, {})
    assert not [r for r in alone["rows"] if r["kind"] == "ceiling"]
    assert "no ceiling: no two annotators labelled the same item" in tables(_report(alone))[0][0]


def _report(request_labels):
    """A report with only per-request labels (judging.judge_agreement_stage.tables reads a whole one)."""
    from rag_ttc_assets.judging.agreement_records import AgreementReport

    return AgreementReport.model_validate({
        "labels_file": "labels.jsonl", "arms": ["base"], "seed": 0,
        "bootstrap": {"resamples": ja.BOOTSTRAP_RESAMPLES, "confidence": ja.CONFIDENCE, "method": "percentile"},
        "request_labels": request_labels, "request_completeness": None, "pair_labels": None, "claim_labels": None,
        "requests_derived": {}, "request_edits": {"edits": 0, "labels_not_compared": 0}, "panel_aggregations": [],
        "completeness_estimates": []})
