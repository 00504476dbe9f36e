"""Requests derived from gold answers: the offline claim split, evidence location, the derived file, drift."""

import json

import pytest

from rag_ttc_assets.core import request_derivation as dr
from rag_ttc_assets.core.dataset import DatasetError, parse_dataset, sha256_digest
from rag_ttc_assets.core.records import Derivation, Question
from rag_ttc_assets_tests.conftest import mini_corpus

BREAK_ONE = "The break statement terminates the nearest enclosing loop."
BREAK_TWO = ("The break statement terminates the nearest enclosing loop, and it skips the optional else clause "
             "of that loop.")
THREE = ("Break may only occur nested in a for or while loop; it terminates the nearest enclosing loop. "
         "Continue continues with the next cycle of the loop.")


@pytest.mark.parametrize("gold, claims", [
    (BREAK_ONE, ["The break statement terminates the nearest enclosing loop"]),
    (BREAK_TWO, ["The break statement terminates the nearest enclosing loop",
                 "it skips the optional else clause of that loop"]),
    (THREE, ["Break may only occur nested in a for or while loop", "it terminates the nearest enclosing loop",
             "Continue continues with the next cycle of the loop"]),
])
def test_gold_answers_of_one_two_and_three_claims(gold, claims):
    assert dr.split_claims(gold) == claims


def test_a_comma_list_and_a_short_tail_are_not_clauses():
    assert dr.split_claims("It accepts lists, tuples, and sets.") == ["It accepts lists, tuples, and sets"]
    # "and so on" has no two content words: it stays with its clause.
    assert dr.split_claims("Names are bound locally, and so on.") == ["Names are bound locally, and so on"]


@pytest.mark.parametrize("gold, claims", [
    ("Paris is the capital [4]. It has 2 million people [1][2].", ["Paris is the capital", "It has 2 million people"]),
    ("Paris is the capital [1, 3]; it lies on the Seine.[Doc 2]", ["Paris is the capital", "it lies on the Seine"]),
    ("Paris is the capital [2-4], [5]. Its river is the Seine[doc 1].", ["Paris is the capital",
                                                                        "Its river is the Seine"]),
    # Not markers: indexing attached to a name, and lists inside inline code.
    ("Use x[1] to read it. Compare `[1,2] < [1,2,3]` here [3].", ["Use x[1] to read it",
                                                                   "Compare `[1,2] < [1,2,3]` here"]),
])
def test_citation_markers_are_left_out_of_claims(gold, claims):
    assert dr.split_claims(gold) == claims


def _docs():
    return {d["id"]: d["text"] for d in mini_corpus()["documents"]}


def test_evidence_is_a_verbatim_quote_of_a_target_document_or_nothing():
    docs = _docs()
    q = Question(id="q1", text="What does break do?", targets=[{"doc_id": "break", "relevance": 1}],
                 gold_answer=BREAK_TWO)
    reqs = dr.derive_offline(q, docs)
    assert [r.id for r in reqs] == ["q1.d1", "q1.d2"]
    assert all(r.derived == dr.OFFLINE and r.gold_answer == r.text for r in reqs)
    # The first claim's words are all in one sentence of the target; the second's ("skips ... else clause") too.
    assert reqs[0].evidence[0].doc_id == "break"
    assert reqs[0].evidence[0].quote.startswith("It terminates the nearest enclosing loop")
    for r in reqs:
        for e in r.evidence:
            assert e.quote in docs[e.doc_id]
    # A claim no target document supports keeps no evidence; a non-target document is never searched.
    q2 = Question(id="q2", text="?", targets=[{"doc_id": "assert", "relevance": 1}], gold_answer=BREAK_ONE)
    assert dr.derive_offline(q2, docs)[0].evidence == []


def _dataset(tmp_path, questions, derived=None):
    corpus = mini_corpus()
    cbytes = json.dumps(corpus).encode()
    ev = {"corpus_digest": sha256_digest(cbytes), "questions": questions}
    ebytes = json.dumps(ev).encode()
    d = None if derived is None else (tmp_path / dr.DERIVED_FILE, json.dumps(derived(sha256_digest(ebytes))).encode())
    return parse_dataset("t", tmp_path / "corpus.json", tmp_path / "evaluation.json", cbytes, ebytes, d)


Q = {"id": "q1", "text": "What does break do?", "targets": [{"doc_id": "break", "relevance": 1}],
     "gold_answer": BREAK_TWO}
HAND = {"id": "q2", "text": "What does assert do?", "requests": [{"id": "q2.r1", "text": "What does assert do?"}]}


def test_a_question_with_a_gold_answer_and_no_requests_is_derived_offline_when_no_file(tmp_path):
    ds = _dataset(tmp_path, [Q, HAND])
    q1, q2 = ds.evaluation.questions
    assert [r.text for r in q1.requests] == dr.split_claims(BREAK_TWO)
    assert q2.requests[0].derived is None
    got = dr.derivation_of(ds.evaluation.questions)
    assert got["method"] == "rule" and got["model"] == dr.OFFLINE_MODEL and got["questions"] == 1
    assert got["requests"] == 2 and got["requests_digest"].startswith("sha256:")
    assert dr.derivation_of([ds.evaluation.questions[1]]) is None


def test_the_derived_file_wins_and_is_bound_to_the_evaluation(tmp_path):
    model = Derivation(method="model", model="openai/m", prompt_digest="sha256:" + "a" * 64)
    req = {"id": "q1.d1", "text": "break ends the loop", "gold_answer": "break ends the loop",
           "evidence": [], "derived": model.model_dump()}
    ds = _dataset(tmp_path, [Q], lambda digest: dr.derived_file(
        digest, model, [{"id": "q1", "status": "derived", "error": None, "requests": [req]}]))
    assert [r.text for r in ds.evaluation.questions[0].requests] == ["break ends the loop"]
    assert dr.derivation_of(ds.evaluation.questions)["model"] == "openai/m"
    with pytest.raises(DatasetError) as e:
        _dataset(tmp_path, [Q], lambda digest: dr.derived_file("sha256:" + "0" * 64, model, []))
    assert ("derived_requests.json: (top level): evaluation_digest: stale: derived from evaluation sha256:000"
            in str(e.value))


@pytest.mark.parametrize("row, record, field, says", [
    ({"id": "nope", "status": "derived", "requests": []}, "questions[0] (id 'nope')", "id", "no question 'nope'"),
    ({"id": "q2", "status": "derived", "requests": []}, "questions[0] (id 'q2')", "id", "hand-written requests"),
    ({"id": "q1", "status": "server_error", "error": "500", "requests": []}, "questions[0] (id 'q1')", "status",
     "derivation did not finish"),
    ({"id": "q1", "status": "derived", "requests": [{"id": "q1.d1", "text": "x", "evidence": [
        {"doc_id": "break", "quote": "not in the document"}], "derived": dr.OFFLINE.model_dump()}]},
     "questions[0] (id 'q1')", "requests[0].evidence[0].quote", "not a verbatim substring"),
])
def test_a_bad_derived_file_names_file_record_and_field(tmp_path, row, record, field, says):
    with pytest.raises(DatasetError) as e:
        _dataset(tmp_path, [Q, HAND], lambda digest: dr.derived_file(digest, dr.OFFLINE, [row]))
    assert f"{dr.DERIVED_FILE}: {record}: {field}: " in str(e.value) and says in str(e.value)


def test_a_question_with_neither_requests_nor_gold_answer_is_still_an_error(tmp_path):
    with pytest.raises(DatasetError) as e:
        _dataset(tmp_path, [{"id": "q3", "text": "?"}])
    assert "questions[0] (id 'q3'): requests: a question needs at least one request, or a gold_answer" in str(e.value)


def test_parse_claims_of_a_model_reply():
    assert dr.parse_claims({"claims": [" a  b ", "c"]}) == ["a b", "c"]
    for bad in ({"claims": []}, {"claims": [1]}, {"x": 1}, ["a"]):
        with pytest.raises(dr.DerivationError):
            dr.parse_claims(bad)


def test_derivation_drift_refuses_different_derivations_and_names_both():
    a = {"method": "rule", "model": dr.OFFLINE_MODEL, "prompt_digest": None, "requests_digest": "sha256:1"}
    dr.derivation_drift("x", a, "y", dict(a))
    dr.derivation_drift("x", None, "y", None)
    b = {"method": "model", "model": "openai/m", "prompt_digest": "sha256:" + "b" * 64, "requests_digest": "sha256:2"}
    with pytest.raises(dr.DerivationDriftError, match="arm x .* rule local/claims-v1, arm y .* model openai/m"):
        dr.derivation_drift("x", a, "y", b)
    with pytest.raises(dr.DerivationDriftError, match="derived by none"):
        dr.derivation_drift("x", None, "y", a)
    with pytest.raises(dr.DerivationDriftError, match="derived requests differ"):
        dr.derivation_drift("x", a, "y", {**a, "requests_digest": "sha256:3"})


@pytest.mark.parametrize("gold, claims", [
    # A marker attached to the word that ends a clause, as web answers write it (ExpertQA's revised answers).
    ("Small businesses employ 47.5% of the workforce[1].\nBuying local feeds growth[4][5].",
     ["Small businesses employ 47.5% of the workforce", "Buying local feeds growth"]),
    ("Employers hire locally[2], and spending stays local[3]",
     ["Employers hire locally", "spending stays local"]),
    # Indexing mid-sentence is no citation.
    ("The value x[1] = 2 is set.", ["The value x[1] = 2 is set"]),
    # A line that is only a tag, and a stray bracket, are no claims.
    ("<Answer>\nThe river is long [1].\n<Evidences>\n[", ["The river is long"]),
    # Dotted initials before a lower-case word end no sentence.
    ("In the U.S. the law applies to all states [2].", ["In the U.S. the law applies to all states"]),
])
def test_the_offline_rule_leaves_out_what_real_gold_answers_carry_besides_claims(gold, claims):
    """Found deriving ExpertQA's revised answers: 144 of 834 claims kept an attached '[1]', and '[', '<Answer>',
    '<Evidences>', 'In the U.S' were claims of their own."""
    from rag_ttc_assets.core.request_derivation import split_claims

    assert split_claims(gold) == claims
