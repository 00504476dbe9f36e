"""Per-claim support labels (`kind: claim`): read and checked, the support judge's statements placed in the
claims, and its agreement with people computed by hand on a constructed set."""

import json

import pytest

from rag_ttc_assets.judging import claim_agreement as ca
from rag_ttc_assets.labelling import human_labels as hl

ANSWER = "Cats purr.\n\nCats purr.\n\nThey purr at 25 hertz. They purr when fed."
CAT = hl.Catalog(questions={"arm": {"q1": set()}}, rows={"arm": {"q1"}}, answers={"arm": {"q1": ANSWER}})
CLAIMS = [(1, "Cats purr."), (2, "Cats purr."), (3, "They purr at 25 hertz. They purr when fed.")]


def _label(claim, support, annotator, **extra):
    return {"kind": "claim", "question": "q1", "arm": "arm", "claim": claim, "text": dict(CLAIMS)[claim],
            "support": support, "annotator": annotator, **extra}


def _parse(records):
    return hl.parse_labels("".join(json.dumps(r) + "\n" for r in records), "labels.jsonl", CAT)


def test_statements_are_placed_in_order_a_repeated_claim_gets_the_repeated_statement():
    statements = [{"text": "Cats purr.", "supported": True}, {"text": "Cats purr.", "supported": False},
                  {"text": "They purr at 25 hertz.", "supported": True},
                  {"text": "They purr when fed.", "supported": False}]
    got = ca.claim_verdicts(CLAIMS, statements)
    assert {k: v["supported"] for k, v in got.items()} == {1: True, 2: False, 3: False}
    # A claim the judge dropped (no statement in it) is absent: not measured.
    got = ca.claim_verdicts(CLAIMS, [statements[0], statements[2], statements[3]])
    assert set(got) == {1, 3}


def test_claim_labels_against_the_judge_the_people_and_the_majority_by_hand():
    labels = _parse([_label(1, "supported", "a1"), _label(1, "supported", "a2"), _label(1, "partially_supported", "a3"),
                     _label(2, "not_supported", "a1"), _label(2, "partially_supported", "a2"),
                     _label(2, "supported", "a3"),
                     _label(3, "supported", "a1"), _label(3, "partially_supported", "a2"),
                     _label(3, "not_supported", "a3")]).claims
    judge = {("arm", "q1", 1): {"supported": True}, ("arm", "q1", 2): {"supported": True}}  # claim 3 not measured
    rep = ca.claim_agreement(labels, {"J": judge}, {"J": {("arm", "q1"): 0.5}})
    j = rep["rows"][0]
    # 6 labels measured: human T T F F F T against judge T T T T T T
    assert (j["n"], j["not_measured"], j["accuracy"], len(j["disagreements"])) == (6, 3, pytest.approx(3 / 6), 3)
    assert j["kappa"] == pytest.approx(0.0)
    a1a2 = next(r for r in rep["rows"] if r["rater"] == "a1 vs a2")
    assert a1a2["accuracy"] == pytest.approx(2 / 3)  # binary: T/T, F/F (not / partially), T/F
    assert a1a2["three_way"]["accuracy"] == pytest.approx(1 / 3)  # supported/supported only
    m = {r["rater"]: r for r in rep["majority"]["rows"]}
    assert m["J"]["n"] == 2 and m["J"]["not_measured"] == 1 and m["J"]["accuracy"] == pytest.approx(1 / 2)
    # Per answer: one answer (a constant on each side): no correlation, and said why.
    (answer, *_) = rep["answers"]["rows"]
    assert answer["n"] == 1 and answer["pearson"]["r"] is None


@pytest.mark.parametrize("change, field, says", [
    ({"support": "partially"}, "support", "'partially': one of"),
    ({"claim": 0}, "claim", "1-based position"),
    ({"text": "Dogs bark."}, "text", "does not occur in arm 'arm'"),
    ({"arm": "nope"}, "arm", "no arm or imported system"),
    ({"verdict": "consistent"}, "verdict", "unknown field"),
])
def test_bad_claim_labels_name_the_file_the_record_and_the_field(change, field, says):
    with pytest.raises(hl.LabelsError) as e:
        _parse([_label(1, "supported", "a1"), {**_label(1, "supported", "a2"), **change}])
    (p,) = e.value.problems
    assert (p.file, p.record, p.field) == ("labels.jsonl", "line 2", field)
    assert says in p.message


def test_one_annotator_labelling_a_claim_twice_is_refused_naming_both_lines():
    with pytest.raises(hl.LabelsError, match="already labelled this claim on line 1"):
        _parse([_label(1, "supported", "a1"), _label(1, "not_supported", "a1")])
