"""labelling.annotation: the change log replayed into the labels file, request edits, highlights and sample files."""

import json
import re

import pytest

from rag_ttc_assets.labelling.annotation import (AnnotationError, current_labels, edit_requests, locate_quote,
                                                 parse_log, parse_sample, replay, requests_now)


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


def test_pair_labels_replay_the_seeded_order_and_the_scale():
    from rag_ttc_assets.labelling.annotation import pair_order, pair_value

    # The A/B order: a function of seed and question only (the arms in either order get the same sides), both orders
    # drawn over a few questions, another seed another draw.
    qs = [f"q{i}" for i in range(12)]
    orders = [pair_order(0, q, ("x", "y")) for q in qs]
    assert orders == [pair_order(0, q, ("y", "x")) for q in qs] and set(orders) == {("x", "y"), ("y", "x")}
    assert orders != [pair_order(1, q, ("x", "y")) for q in qs]
    assert [pair_value(k) for k in "12345"] == [-2, -1, 0, 1, 2] and pair_value(-1) == -1
    for bad in (3, "6", True, 1.0, None):
        with pytest.raises(AnnotationError, match="not an integer from -2 to 2"):
            pair_value(bad)

    def pair(seq, who, a, b, v):
        return {"seq": seq, "at": f"t{seq}", "op": "pair", "annotator": who, "question": "q", "a": {"arm": a},
                "b": {"arm": b}, "completeness": v, "note": "", "order_seed": 0}
    # The same pair in the other order (another tab, another seed) is the same pair: the later label wins; undo takes
    # back the annotator's own last change, pair or request label alike.
    log = [pair(1, "ann1", "x", "y", 2), _label(2, "ann1", "q.r1", "not_answered"), pair(3, "ann1", "y", "x", -1),
           pair(4, "ann2", "x", "y", 0), {"seq": 5, "at": "t5", "op": "undo", "annotator": "ann1"}]
    recs = [json.loads(x) for x in current_labels(log).splitlines()]
    assert [(r["kind"], r["annotator"], r.get("labels"), r["log_seq"]) for r in recs] == [
        ("request", "ann1", None, 2), ("pair", "ann1", {"completeness": 2}, 1),
        ("pair", "ann2", {"completeness": 0}, 4)]
    assert parse_log("\n".join(json.dumps(c) for c in log), "f")[1] == []
