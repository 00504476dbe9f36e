from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from rag_ttc_assets.adapters.input_files import load_dataset
from rag_ttc_assets.core.dataset import (
    DatasetError,
    DigestMismatchError,
    Problem,
    dataset_counts,
    sha256_digest,
)

DOCS = [
    {"id": "assert", "title": "The assert statement", "text": "Assert statements are a convenient way to insert "
     "debugging assertions into a program."},
    {"id": "pass", "title": "The pass statement", "text": "pass is a null operation. When it is executed, "
     "nothing happens."},
    {"id": "del", "text": "Deletion of a name removes the binding of that name from the local or global namespace."},
]


def question(qid: str, *requests: dict, targets: list | None = None, answerable: bool = True) -> dict:
    return {"id": qid, "text": f"Question {qid}?", "answerable": answerable,
            "targets": targets if targets is not None else [], "requests": list(requests)}


def request(rid: str, *evidence: tuple[str, str]) -> dict:
    return {"id": rid, "text": f"Request {rid}?", "evidence": [{"doc_id": d, "quote": q} for d, q in evidence]}


def valid_questions() -> list[dict]:
    return [
        question("q1", request("q1.r1", ("assert", "insert debugging assertions")),
                 targets=[{"doc_id": "assert", "relevance": 1}]),
        question("q2", request("q2.r1", ("pass", "pass is a null operation")),
                 request("q2.r2", ("del", "removes the binding"), ("pass", "nothing happens")),
                 targets=[{"doc_id": "pass", "relevance": 2}, {"doc_id": "del", "relevance": 0}]),
        question("q3", request("q3.r1"), answerable=False),
        question("q4", request("q4.r1", ("del", "Deletion of a name")), targets=[{"doc_id": "del", "relevance": 0}]),
    ]


def write(dest: Path, corpus: dict | bytes | None = None, questions: list | None = None, pilot: list | None = None,
          digest: str | None = None, evaluation: bytes | None = None) -> Path:
    """Write corpus.json and evaluation.json; the evaluation is bound to the corpus bytes unless `digest` is given."""
    dest.mkdir(parents=True, exist_ok=True)
    if corpus is None:
        corpus = {"documents": DOCS}
    cbytes = corpus if isinstance(corpus, bytes) else (json.dumps(corpus, indent=1) + "\n").encode("utf-8")
    (dest / "corpus.json").write_bytes(cbytes)
    if evaluation is None:
        ev = {"corpus_digest": digest or "sha256:" + hashlib.sha256(cbytes).hexdigest(),
              "pilot": pilot if pilot is not None else ["q1", "q3"],
              "questions": questions if questions is not None else valid_questions()}
        evaluation = (json.dumps(ev, indent=1) + "\n").encode("utf-8")
    (dest / "evaluation.json").write_bytes(evaluation)
    return dest


def problems(dest: Path) -> list[Problem]:
    with pytest.raises(DatasetError) as err:
        load_dataset(dest)
    assert type(err.value) is DatasetError
    return err.value.problems


def test_valid_dataset_loads_with_exact_counts(tmp_path: Path) -> None:
    d = write(tmp_path / "tiny")
    ds = load_dataset(d)
    assert ds.name == "tiny"
    assert load_dataset(d, name="other").name == "other"
    assert (ds.corpus_path, ds.evaluation_path) == (d / "corpus.json", d / "evaluation.json")
    assert ds.corpus_digest == "sha256:" + hashlib.sha256((d / "corpus.json").read_bytes()).hexdigest()
    assert ds.evaluation_digest == "sha256:" + hashlib.sha256((d / "evaluation.json").read_bytes()).hexdigest()
    assert ds.evaluation.corpus_digest == ds.corpus_digest
    assert list(ds.documents_by_id) == ["assert", "pass", "del"]
    assert ds.documents_by_id["pass"] == "pass is a null operation. When it is executed, nothing happens."
    assert dataset_counts(ds) == {"documents": 3, "questions": 4, "multi_part": 1, "requests": 5,
                                  "unanswerable": 1, "with_targets": 2, "requests_without_evidence": 0,
                                  "requests_with_gold_answer": 0, "requests_derived": 0,
                                  "pilot": 2}


def test_sha256_digest() -> None:
    assert sha256_digest(b"abc") == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_malformed_json_names_line_and_column(tmp_path: Path) -> None:
    d = write(tmp_path, b'{"documents": [\n  {"id": "a", "text": "x",}\n]}\n', questions=[], pilot=[])
    assert problems(d) == [Problem(str(d / "corpus.json"), "line 2 column 27", "(json)",
                                   "malformed JSON: Expecting property name enclosed in double quotes")]


def test_malformed_evaluation_json(tmp_path: Path) -> None:
    d = write(tmp_path, evaluation=b'{\n "corpus_digest": "sha256:00"\n "questions": []}\n')
    assert problems(d) == [Problem(str(d / "evaluation.json"), "line 3 column 2", "(json)",
                                   "malformed JSON: Expecting ',' delimiter")]


def test_missing_required_field(tmp_path: Path) -> None:
    d = write(tmp_path, {"documents": [DOCS[0], {"id": "b", "title": "no text"}]}, questions=[], pilot=[])
    assert problems(d) == [Problem(str(d / "corpus.json"), "documents[1] (id 'b')", "text", "Field required")]


def test_missing_required_field_in_a_request(tmp_path: Path) -> None:
    qs = valid_questions()
    del qs[1]["requests"][1]["text"]
    d = write(tmp_path, questions=qs)
    assert problems(d) == [Problem(str(d / "evaluation.json"), "questions[1] (id 'q2')", "requests.1.text",
                                   "Field required")]


def test_wrong_type(tmp_path: Path) -> None:
    d = write(tmp_path, {"documents": [{"id": "a", "text": 5}]}, questions=[], pilot=[])
    assert problems(d) == [Problem(str(d / "corpus.json"), "documents[0] (id 'a')", "text",
                                   "Input should be a valid string")]
    qs = valid_questions()
    qs[0]["answerable"] = "maybe"
    d = write(tmp_path / "e", questions=qs)
    assert problems(d) == [Problem(str(d / "evaluation.json"), "questions[0] (id 'q1')", "answerable",
                                   "Input should be a valid boolean, unable to interpret input")]


def test_duplicate_document_id(tmp_path: Path) -> None:
    d = write(tmp_path, {"documents": [*DOCS, {"id": "pass", "text": DOCS[1]["text"]}]})
    assert problems(d) == [Problem(str(d / "corpus.json"), "documents[3] (id 'pass')", "id",
                                   "duplicate document id 'pass'")]


def test_duplicate_question_and_request_ids(tmp_path: Path) -> None:
    qs = valid_questions()
    qs.append(question("q1", request("q9.r1", ("pass", "null operation"))))
    qs.append(question("q5", request("q2.r2", ("pass", "null operation"))))
    d = write(tmp_path, questions=qs)
    ev = str(d / "evaluation.json")
    assert problems(d) == [
        Problem(ev, "questions[4] (id 'q1')", "id", "duplicate question id 'q1'"),
        Problem(ev, "questions[5] (id 'q5') request 'q2.r2'", "requests[0].id", "duplicate request id 'q2.r2'"),
    ]
    with pytest.raises(DatasetError) as err:
        load_dataset(d)
    assert str(err.value) == (
        "2 problem(s) in dataset:\n"
        f"  - {ev}: questions[4] (id 'q1'): id: duplicate question id 'q1'\n"
        f"  - {ev}: questions[5] (id 'q5') request 'q2.r2': requests[0].id: duplicate request id 'q2.r2'")


def test_target_naming_an_unknown_document(tmp_path: Path) -> None:
    qs = valid_questions()
    qs[1]["targets"].append({"doc_id": "yield", "relevance": 1})
    d = write(tmp_path, questions=qs)
    assert problems(d) == [Problem(str(d / "evaluation.json"), "questions[1] (id 'q2')", "targets[2].doc_id",
                                   "unknown document 'yield'")]


def test_evidence_naming_an_unknown_document(tmp_path: Path) -> None:
    qs = valid_questions()
    qs[1]["requests"][1]["evidence"][1]["doc_id"] = "yield"
    d = write(tmp_path, questions=qs)
    assert problems(d) == [Problem(str(d / "evaluation.json"), "questions[1] (id 'q2') request 'q2.r2'",
                                   "requests[1].evidence[1].doc_id", "unknown document 'yield'")]


def test_quote_not_verbatim(tmp_path: Path) -> None:
    qs = valid_questions()
    qs[0]["requests"][0]["evidence"][0]["quote"] = "insert  debugging assertions"  # two spaces
    d = write(tmp_path, questions=qs)
    assert problems(d) == [Problem(str(d / "evaluation.json"), "questions[0] (id 'q1') request 'q1.r1'",
                                   "requests[0].evidence[0].quote",
                                   "quote is not a verbatim substring of document 'assert': "
                                   "'insert  debugging assertions'")]


def test_answerable_request_without_evidence_is_allowed_and_counted(tmp_path: Path) -> None:
    qs = valid_questions()
    qs[3]["requests"][0]["evidence"] = []  # allowed (a BEIR import has none)
    ds = load_dataset(write(tmp_path, questions=qs))
    assert dataset_counts(ds)["requests_without_evidence"] == 1


def test_per_request_gold_answer_round_trips_and_is_counted(tmp_path: Path) -> None:
    qs = valid_questions()
    qs[1]["requests"][1]["gold_answer"] = "It removes the binding of the name."
    qs[1]["requests"][0]["gold_answer"] = None  # null is the same as absent
    qs[1]["gold_answer"] = "pass does nothing; del removes a binding."
    ds = load_dataset(write(tmp_path, questions=qs))
    q2 = ds.evaluation.questions[1]
    assert [r.gold_answer for r in q2.requests] == [None, "It removes the binding of the name."]
    assert q2.gold_answer == "pass does nothing; del removes a binding."
    assert ds.evaluation.questions[0].requests[0].gold_answer is None
    assert dataset_counts(ds)["requests_with_gold_answer"] == 1


def test_blank_gold_answer_names_file_record_and_field(tmp_path: Path) -> None:
    qs = valid_questions()
    qs[1]["requests"][1]["gold_answer"] = " \n\t "
    qs[3]["gold_answer"] = ""
    d = write(tmp_path, questions=qs)
    ev = str(d / "evaluation.json")
    message = "empty gold answer; write the expected answer or leave the field out"
    assert problems(d) == [
        Problem(ev, "questions[1] (id 'q2') request 'q2.r2'", "requests[1].gold_answer", message),
        Problem(ev, "questions[3] (id 'q4')", "gold_answer", message),
    ]
    with pytest.raises(DatasetError) as err:
        load_dataset(d)
    assert f"{ev}: questions[1] (id 'q2') request 'q2.r2': requests[1].gold_answer: {message}" in str(err.value)


def test_non_string_request_gold_answer(tmp_path: Path) -> None:
    qs = valid_questions()
    qs[0]["requests"][0]["gold_answer"] = ["insert", "assertions"]
    d = write(tmp_path, questions=qs)
    assert problems(d) == [Problem(str(d / "evaluation.json"), "questions[0] (id 'q1')", "requests.0.gold_answer",
                                   "Input should be a valid string")]


def test_empty_corpus(tmp_path: Path) -> None:
    d = write(tmp_path, {"documents": []}, questions=[question("q3", request("q3.r1"), answerable=False)],
              pilot=["q3"])
    assert problems(d) == [Problem(str(d / "corpus.json"), "(top level)", "documents", "the corpus has no documents")]


def test_empty_document_text(tmp_path: Path) -> None:
    d = write(tmp_path, {"documents": [*DOCS, {"id": "blank", "text": " \n\t "}]})
    assert problems(d) == [Problem(str(d / "corpus.json"), "documents[3] (id 'blank')", "text",
                                   "empty document text")]


def test_invalid_utf8(tmp_path: Path) -> None:
    d = write(tmp_path, b'{"documents": [{"id": "a", "text": "caf\xe9"}]}', questions=[], pilot=[])
    # b'{"documents": [{"id": "a", "text": "caf' is 39 bytes, so the bad byte is at offset 39
    assert problems(d) == [Problem(str(d / "corpus.json"), "(file)", "(encoding)",
                                   "not valid UTF-8 at byte 39: invalid continuation byte")]


def test_byte_order_mark(tmp_path: Path) -> None:
    body = (json.dumps({"documents": DOCS}) + "\n").encode("utf-8")
    d = write(tmp_path, b"\xef\xbb\xbf" + body)
    assert problems(d) == [Problem(str(d / "corpus.json"), "(file)", "(encoding)",
                                   "starts with a UTF-8 byte-order mark; save the file as UTF-8 without BOM "
                                   "(the digest binding is over the exact bytes)")]


def test_pilot_naming_an_unknown_question(tmp_path: Path) -> None:
    d = write(tmp_path, pilot=["q1", "q7"])
    assert problems(d) == [Problem(str(d / "evaluation.json"), "pilot[1]", "pilot", "unknown question id 'q7'")]


def test_missing_files(tmp_path: Path) -> None:
    assert problems(tmp_path) == [Problem(str(tmp_path / "corpus.json"), "(file)", "(file)", "file not found"),
                                  Problem(str(tmp_path / "evaluation.json"), "(file)", "(file)", "file not found")]


def test_a_five_megabyte_document_loads(tmp_path: Path) -> None:
    big = "lorem ipsum dolor sit amet " * 194_000 + "the needle"  # 5,238,010 runes
    d = write(tmp_path, {"documents": [{"id": "big", "text": big}]},
              questions=[question("q1", request("q1.r1", ("big", "the needle")), targets=[{"doc_id": "big"}])],
              pilot=["q1"])
    assert (d / "corpus.json").stat().st_size > 5_000_000
    ds = load_dataset(d)
    assert len(ds.documents_by_id["big"]) == 5_238_010
    assert dataset_counts(ds) == {"documents": 1, "questions": 1, "multi_part": 0, "requests": 1,
                                  "unanswerable": 0, "with_targets": 1, "requests_without_evidence": 0,
                                  "requests_with_gold_answer": 0, "requests_derived": 0,
                                  "pilot": 1}


def test_digest_mismatch_names_both_digests_and_both_files(tmp_path: Path) -> None:
    wrong = "sha256:" + "0" * 64
    d = write(tmp_path, digest=wrong)
    actual = "sha256:" + hashlib.sha256((d / "corpus.json").read_bytes()).hexdigest()
    with pytest.raises(DigestMismatchError) as err:
        load_dataset(d)
    ev, cp = d / "evaluation.json", d / "corpus.json"
    assert err.value.problems == [Problem(
        str(ev), "(top level)", "corpus_digest",
        f"the evaluation is bound to corpus {wrong} but {cp} has digest {actual}; "
        f"use the corpus the evaluation was labelled against, or run `rag-ttc labels check {d.name}` (which labels "
        f"the change broke) and `rag-ttc labels update {d.name}` (a new labels version bound to this corpus)")]
    assert str(err.value) == f"dataset problem:\n  - {err.value.problems[0]}"
    assert isinstance(err.value, DatasetError)


def test_corpus_swapped_for_another_valid_corpus(tmp_path: Path) -> None:
    d = write(tmp_path)
    bound = json.loads((d / "evaluation.json").read_text(encoding="utf-8"))["corpus_digest"]
    other = write(tmp_path / "other", {"documents": [*DOCS, {"id": "pass2", "text": "pass again"}]})
    (d / "corpus.json").write_bytes((other / "corpus.json").read_bytes())
    load_dataset(other)  # the other corpus is valid with its own evaluation
    with pytest.raises(DigestMismatchError) as err:
        load_dataset(d)
    msg = str(err.value)
    assert bound in msg and sha256_digest((other / "corpus.json").read_bytes()) in msg
    assert str(d / "corpus.json") in msg and str(d / "evaluation.json") in msg


def test_reformatted_corpus_is_a_different_corpus(tmp_path: Path) -> None:
    d = write(tmp_path)
    (d / "corpus.json").write_text(json.dumps({"documents": DOCS}), encoding="utf-8")  # same data, no indent
    with pytest.raises(DigestMismatchError):
        load_dataset(d)


def test_digest_mismatch_is_reported_before_other_problems(tmp_path: Path) -> None:
    d = write(tmp_path, {"documents": [*DOCS, {"id": "pass", "text": "again"}]}, digest="sha256:" + "1" * 64,
              pilot=["q7"])
    with pytest.raises(DigestMismatchError) as err:
        load_dataset(d)
    assert [p.field for p in err.value.problems] == ["corpus_digest"]


def test_load_dataset_is_cached_by_the_files_bytes_and_sees_an_edit_at_once(tmp_path: Path) -> None:
    d = write(tmp_path / "tiny")
    first = load_dataset(d)
    assert load_dataset(d) is first  # same bytes: parsed and validated once
    assert load_dataset(d, name="other").name == "other" and load_dataset(d).name == "tiny"
    # An edited evaluation (same corpus) is loaded afresh.
    write(d, questions=valid_questions()[:2], pilot=["q1"])
    assert [q.id for q in load_dataset(d).evaluation.questions] == ["q1", "q2"]
    # An edited corpus whose evaluation is re-bound to it is loaded afresh.
    docs = [*DOCS, {"id": "extra", "text": "A fourth document."}]
    write(d, corpus={"documents": docs})
    ds = load_dataset(d)
    assert [doc.id for doc in ds.corpus.documents()] == ["assert", "pass", "del", "extra"]
    assert ds.corpus_digest == sha256_digest((d / "corpus.json").read_bytes())
    # An edited corpus the evaluation is not bound to fails every time, never a stale cached load.
    (d / "corpus.json").write_bytes((d / "corpus.json").read_bytes().replace(b"fourth", b"fifth!"))
    for _ in range(2):
        with pytest.raises(DigestMismatchError):
            load_dataset(d)
    # An evaluation edited into an invalid one fails every time too.
    write(d, questions=[question("q1", request("q1.r1", ("assert", "not in the text")))], pilot=[])
    for _ in range(2):
        assert [p.field for p in problems(d)] == ["requests[0].evidence[0].quote"]
    write(d)
    assert [q.id for q in load_dataset(d).evaluation.questions] == ["q1", "q2", "q3", "q4"]
