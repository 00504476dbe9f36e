"""labelling.label_check: one quote's status against a corpus, each rule on its own."""

import pytest

from rag_ttc_assets.labelling.label_check import (CorpusIndex, LabelCheckError, check_corpus, check_labels, classify,
                                                  mark_difference, quote_sha256, updated_evaluation)

RULE = "Refunds are paid within 30 days of the return, to the card used for the order."


def status(doc_id, quote, docs):
    return classify(doc_id, quote, CorpusIndex(list(docs.items())))


def test_fresh_when_verbatim_in_its_document_even_after_edits_elsewhere_in_it():
    assert status("a", RULE, {"a": "Returns (revised heading)\n\n" + RULE})["status"] == "fresh"


def test_relocated_to_another_document_with_the_place():
    got = status("a", RULE, {"a": "Nothing here about money at all.", "b": "Payments\n\n" + RULE})
    assert (got["status"], got["new_doc_id"], got["new_quote"], got["score"]) == ("relocated", "b", RULE, 100.0)


def test_relocated_after_whitespace_and_case_changes_the_text_as_the_corpus_holds_it():
    now = RULE.replace("paid within", "paid\n  WITHIN")
    got = status("a", RULE, {"a": "x " + now + " y"})
    assert got["status"] == "relocated" and got["how"] == "whitespace or case, in its document"
    assert got["new_quote"] == now


def test_a_spelling_fix_is_relocated_a_number_or_a_word_changed_is_not():
    typo = RULE.replace("Refunds are paid", "Refunds are piad")
    got = status("a", typo, {"a": "Intro.\n\n" + RULE})
    assert got["status"] == "relocated" and got["how"].startswith("spelling fixed") and got["new_quote"] == RULE
    assert got["score"] >= 90
    got = status("a", RULE, {"a": "Intro.\n\n" + RULE.replace("30", "14")})
    assert got["status"] == "changed" and "[-30-]{+14+}" in got["diff"]
    got = status("a", RULE, {"a": "Intro.\n\n" + RULE.replace("card", "account")})
    assert got["status"] == "changed" and got["how"] == "words changed"
    got = status("a", RULE, {"a": "Intro.\n\n" + RULE.replace("are paid", "are not paid")})
    assert got["status"] == "changed"


def test_gone_when_the_document_or_the_passage_is_removed():
    assert status("a", RULE, {"b": "Other."})["status"] == "gone"
    got = status("a", RULE, {"a": "Shipping is free over fifty euros. Express takes two days."})
    assert got["status"] == "gone" and got["how"] == "passage removed from its document"


def test_ambiguous_when_in_several_places_and_not_in_its_document_never_guessed():
    got = status("a", RULE, {"a": "Gone.", "b": RULE, "c": "See: " + RULE})
    assert got["status"] == "ambiguous"
    assert [(p["doc_id"], p["start"]) for p in got["places"]] == [("b", 0), ("c", 5)]


def test_duplicate_document_ids_are_refused_naming_both_records():
    with pytest.raises(LabelCheckError) as e:
        check_corpus([{"id": "a", "text": "x"}, {"id": "b", "text": "y"}, {"id": "a", "text": "z"}], "corpus.json")
    assert str(e.value.problems[0]) == ("corpus.json: documents[2] (id 'a'): id: duplicate document id 'a' (also "
                                        "documents[0]): a label pointing at it cannot be checked; give every "
                                        "document its own id")


def test_update_stamps_moves_and_marks_and_deletes_nothing():
    ev = {"corpus_digest": "sha256:" + "0" * 64, "questions": [{"id": "q", "text": "?", "targets": [{"doc_id": "gone"}],
          "requests": [{"id": "r1", "text": "?", "evidence": [{"doc_id": "a", "quote": RULE}]},
                       {"id": "r2", "text": "?", "evidence": [{"doc_id": "a", "quote": "Ships in two days."}]}]}]}
    docs = [{"id": "a", "text": "Nothing."}, {"id": "b", "text": RULE}]
    report = check_labels("d", ev, "evaluation.json", docs, "corpus.json", "sha256:" + "1" * 64)
    assert [r.status for r in report.results] == ["relocated", "gone", "gone"]
    assert all(r.text_only for r in report.results if r.kind == "quote")
    new, log = updated_evaluation(ev, report)
    e1, e2 = (r["evidence"][0] for r in new["questions"][0]["requests"])
    assert e1 == {"doc_id": "b", "quote": RULE, "quote_sha256": quote_sha256(RULE),
                  "corpus_digest": "sha256:" + "1" * 64}
    assert e2 == {"doc_id": "a", "quote": "Ships in two days.", "stale": "gone"}
    assert new["questions"][0]["targets"] == [{"doc_id": "gone", "stale": "gone"}]
    assert new["corpus_digest"] == "sha256:" + "1" * 64 and ev["corpus_digest"] == "sha256:" + "0" * 64  # a copy
    assert [(x["from"]["doc_id"], x["to"]["doc_id"]) for x in log] == [("a", "b")]


def test_mark_difference_marks_words():
    assert mark_difference("within 30 days", "within 14 days") == "within [-30-]{+14+} days"
