"""core.annotation: the change log replayed into the labels file, request edits, highlights and sample files."""

import json
import re

import pytest

from rag_ttc_assets.core.annotation import (AnnotationError, current_labels, edit_requests, locate_quote, parse_log,
                                            parse_sample, replay, requests_now)


def _label(seq, who, request, case, **kw):
    return {"seq": seq, "at": f"t{seq}", "op": "label", "annotator": who, "arm": "a", "question": "q", "request": request,
            "case": case, **kw}


def test_last_write_wins_undo_takes_back_the_annotators_own_last_change():
    log = [_label(1, "ann1", "q.r1", "not_answered"), _label(2, "ann2", "q.r1", "answered_supported"),
           _label(3, "ann1", "q.r1", "contradicts_gold"),  # a second tab of ann1: wins
           _label(4, "ann1", "q.r2", "answered_unsupported"),
           {"seq": 5, "at": "t5", "op": "undo", "annotator": "ann1"}]  # takes back seq 4, not ann2's
    recs = [json.loads(x) for x in current_labels(log).splitlines()]
    assert [(r["annotator"], r["request"], r["case"], r["addressed"], r["verdict"], r["log_seq"]) for r in recs] == [
        ("ann2", "q.r1", "answered_supported", True, "consistent", 2),
        ("ann1", "q.r1", "contradicts_gold", True, "contradicts", 3)]
    log.append({"seq": 6, "at": "t6", "op": "undo", "annotator": "ann1"})
    assert [r["case"] for r in map(json.loads, current_labels(log).splitlines()) if r["annotator"] == "ann1"] == [
        "not_answered"]


def test_edits_place_requests_and_refuse_what_cannot_be_done():
    dataset = [{"id": "q.r1", "text": "one"}, {"id": "q.r2", "text": "two"}, {"id": "q.r3", "text": "three"}]
    known = {r["id"]: r["text"] for r in dataset}
    taken = set(known)
    split = edit_requests("q", "split", ["q.r2"], ["two a", "two b"], known, taken)
    assert [r["id"] for r in split] == ["q.r2.s1", "q.r2.s2"]
    edits = [{"edit": "split", "from": ["q.r2"], "into": split}]
    now = requests_now("q", dataset, edits)
    assert [r["id"] for r in now] == ["q.r1", "q.r2.s1", "q.r2.s2", "q.r3"]
    merged = edit_requests("q", "merge", ["q.r1", "q.r3"], ["one and three"], {r["id"]: r["text"] for r in now}, taken)
    edits.append({"edit": "merge", "from": ["q.r1", "q.r3"], "into": merged})
    assert [(r["id"], r["origin"]) for r in requests_now("q", dataset, edits)] == [
        ("q.m1", "merged"), ("q.r2.s1", "split"), ("q.r2.s2", "split")]
    for args, want in ((("split", ["q.r9"], ["a", "b"]), "has no request 'q.r9'"),
                       (("split", ["q.r1"], ["only one"]), "split: takes 1 request(s) and at least 2"),
                       (("reword", ["q.r1"], ["  "]), "reword: takes 1 request(s) and 1"),
                       (("rename", ["q.r1"], ["x"]), "is not one of")):
        with pytest.raises(AnnotationError, match=re.escape(want)):
            edit_requests("q", *args, known, set(known))


def test_a_highlight_must_lie_inside_one_chunk():
    chunks = {"d#chunk-0": "The loop ends here.", "d#chunk-1": "A new loop starts."}
    assert locate_quote("loop ends", "d#chunk-0", chunks) == "d#chunk-0"
    for quote, cid in (("ends here. A new", "d#chunk-0"), ("loop", None), ("loop", "other#chunk-0"), ("", "d#chunk-0")):
        with pytest.raises(AnnotationError, match="quote: "):
            locate_quote(quote, cid, chunks)


def test_log_lines_cut_by_a_crash_are_skipped_and_named_and_samples_are_checked():
    log, skipped = parse_log('{"seq": 1, "op": "undo", "annotator": "a"}\n{"seq": 2, "op": "lab', "log.jsonl")
    assert len(log) == 1 and skipped == ["log.jsonl: line 2: skipped, not a change record (Unterminated string "
                                         "starting at: line 1 column 18 (char 17))"]
    rows = parse_sample('{"arm": "a", "question": "q1", "stratum": "s", "probability": 0.5}\n', "s.jsonl",
                        {"a": {"q1"}})
    assert rows == [{"arm": "a", "question": "q1", "run_id": None, "stratum": "s", "probability": 0.5}]
    with pytest.raises(AnnotationError, match="s.jsonl: line 2: question: a/q1 is listed twice"):
        parse_sample('{"arm": "a", "question": "q1"}\n' * 2, "s.jsonl", {"a": {"q1"}})
    assert replay([]).labels == {}
