from __future__ import annotations

import pytest

from rag_ttc_assets.core.beir import BeirError, BeirReport, convert

CORPUS = "\n".join([
    '{"_id": "d1", "title": "One", "text": "first document"}',
    '{"_id": "d2", "text": "second document", "metadata": {"url": "u2"}}',
    "",
    '{"_id": "d3", "title": null, "text": "third document"}',
]) + "\n"
QUERIES = "\n".join([
    '{"_id": "q1", "text": "what is first?"}',
    '{"_id": "q2", "text": "unjudged?"}',
    '{"_id": "q3", "text": "what is third?"}',
]) + "\n"


def texts(qrels: str, corpus: str = CORPUS, queries: str = QUERIES, split: str = "test") -> dict[str, str]:
    return {"corpus.jsonl": corpus, "queries.jsonl": queries, f"qrels/{split}.tsv": qrels}


def test_convert_keeps_judged_queries_and_graded_relevance() -> None:
    qrels = "query-id\tcorpus-id\tscore\nq3\td3\t2\nq1\td1\t1\nq1\td2\t0\n"
    corpus, evaluation, report = convert(texts(qrels), "beir/tiny")
    assert corpus == {"documents": [
        {"id": "d1", "title": "One", "text": "first document", "metadata": {}},
        {"id": "d2", "title": "", "text": "second document", "metadata": {"url": "u2"}},
        {"id": "d3", "title": "", "text": "third document", "metadata": {}},
    ]}
    # q2 has no judgments and is dropped; questions follow the queries file order, not the qrels order
    assert evaluation == {"pilot": ["q1", "q3"], "questions": [
        {"id": "q1", "text": "what is first?", "answerable": True,
         "targets": [{"doc_id": "d1", "relevance": 1}, {"doc_id": "d2", "relevance": 0}],
         "requests": [{"id": "q1.r1", "text": "what is first?", "evidence": []}]},
        {"id": "q3", "text": "what is third?", "answerable": True,
         "targets": [{"doc_id": "d3", "relevance": 2}],
         "requests": [{"id": "q3.r1", "text": "what is third?", "evidence": []}]},
    ]}
    assert report == BeirReport(documents=3, questions=2, judgments=3, dropped_missing=0)


def test_qrels_without_header_whitespace_separated_and_other_split() -> None:
    corpus, evaluation, report = convert(texts("q1 d1 1\n\nq1 d3 3.0\n", split="dev"), "src", split="dev")
    assert [q["id"] for q in evaluation["questions"]] == ["q1"]
    assert evaluation["questions"][0]["targets"] == [{"doc_id": "d1", "relevance": 1}, {"doc_id": "d3", "relevance": 3}]
    assert report == BeirReport(documents=3, questions=1, judgments=2, dropped_missing=0)


def test_header_is_only_skipped_on_the_first_line() -> None:
    with pytest.raises(BeirError) as err:
        convert(texts("q1\td1\t1\nquery-id\tcorpus-id\tscore\n"), "src")
    assert str(err.value) == "src/qrels/test.tsv: line 2: field 'score' is not a number: 'score'"


def test_qrels_naming_a_missing_document() -> None:
    qrels = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td9\t1\nq3\td3\t1\n"
    with pytest.raises(BeirError) as err:
        convert(texts(qrels), "beir/tiny")
    assert str(err.value) == ("beir/tiny/qrels/test.tsv: line 3: corpus-id 'd9' is not in beir/tiny/corpus.jsonl "
                              "(use --drop-missing to drop such judgments)")


def test_drop_missing_drops_and_counts() -> None:
    qrels = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td9\t1\nq2\td8\t1\nq3\td3\t1\n"
    _, evaluation, report = convert(texts(qrels), "beir/tiny", drop_missing=True)
    assert [(q["id"], q["targets"]) for q in evaluation["questions"]] == [
        ("q1", [{"doc_id": "d1", "relevance": 1}]), ("q3", [{"doc_id": "d3", "relevance": 1}])]
    assert report == BeirReport(documents=3, questions=2, judgments=2, dropped_missing=2)


def test_qrels_naming_a_missing_query() -> None:
    with pytest.raises(BeirError) as err:
        convert(texts("q1\td1\t1\nq7\td1\t1\n"), "src")
    assert str(err.value) == "src/qrels/test.tsv: line 2: query-id 'q7' is not in src/queries.jsonl"


def test_qrels_with_the_wrong_number_of_fields() -> None:
    with pytest.raises(BeirError) as err:
        convert(texts("q1\td1\t1\nq1\td2\n"), "src")
    assert str(err.value) == "src/qrels/test.tsv: line 2: expected 3 fields (query-id, corpus-id, score), got 2"


def test_malformed_jsonl_line_names_the_line() -> None:
    corpus = '{"_id": "d1", "text": "x"}\n\n{"_id": "d2", "text": }\n'
    with pytest.raises(BeirError) as err:
        convert(texts("q1\td1\t1\n", corpus=corpus), "src")
    assert str(err.value) == "src/corpus.jsonl: line 3: malformed JSON: Expecting value (column 23)"
    with pytest.raises(BeirError) as err:
        convert(texts("q1\td1\t1\n", queries='{"_id": "q1", "text": "a"}\n{"_id": "q2"'), "src")
    assert str(err.value) == "src/queries.jsonl: line 2: malformed JSON: Expecting ',' delimiter (column 13)"


def test_jsonl_record_without_id() -> None:
    with pytest.raises(BeirError) as err:
        convert(texts("q1\td1\t1\n", corpus='{"_id": "d1", "text": "x"}\n{"text": "y"}\n'), "src")
    assert str(err.value) == "src/corpus.jsonl: line 2: field '_id' is missing"
    with pytest.raises(BeirError) as err:
        convert(texts("q1\td1\t1\n", queries='["q1"]\n'), "src")
    assert str(err.value) == "src/queries.jsonl: line 1: field '_id' is missing"


def test_pilot_is_the_first_twelve_questions() -> None:
    queries = "".join(f'{{"_id": "q{i:02d}", "text": "t{i}"}}\n' for i in range(15))
    qrels = "".join(f"q{i:02d}\td1\t1\n" for i in reversed(range(15)))
    _, evaluation, report = convert(texts(qrels, queries=queries), "src")
    assert evaluation["pilot"] == [f"q{i:02d}" for i in range(12)]
    assert report == BeirReport(documents=3, questions=15, judgments=15, dropped_missing=0)


ANSWERED = "\n".join([
    '{"_id": "q1", "text": "what is first?", "metadata": {"answer": "the first document"}}',
    '{"_id": "q2", "text": "what is second?", "metadata": {"answers": ["d2", "the second one"]}}',
    '{"_id": "q3", "text": "what is third?", "metadata": {"answer": null, "source": "x"}}',
]) + "\n"


def test_answer_in_query_metadata_becomes_the_question_and_request_gold_answer() -> None:
    _, evaluation, _ = convert(texts("q1\td1\t1\nq2\td2\t1\nq3\td3\t1\n", queries=ANSWERED), "src")
    assert evaluation["questions"] == [
        {"id": "q1", "text": "what is first?", "answerable": True, "targets": [{"doc_id": "d1", "relevance": 1}],
         "requests": [{"id": "q1.r1", "text": "what is first?", "evidence": [], "gold_answer": "the first document"}],
         "gold_answer": "the first document"},
        # a list of answers is joined with " | ", in order
        {"id": "q2", "text": "what is second?", "answerable": True, "targets": [{"doc_id": "d2", "relevance": 1}],
         "requests": [{"id": "q2.r1", "text": "what is second?", "evidence": [], "gold_answer": "d2 | the second one"}],
         "gold_answer": "d2 | the second one"},
        # a null answer is no answer: the field is left out, as without metadata
        {"id": "q3", "text": "what is third?", "answerable": True, "targets": [{"doc_id": "d3", "relevance": 1}],
         "requests": [{"id": "q3.r1", "text": "what is third?", "evidence": []}]},
    ]


@pytest.mark.parametrize(("metadata", "error"), [
    ('{"answer": 42}', "field 'metadata.answer' is not a string: 42"),
    ('{"answer": ["a"]}', "field 'metadata.answer' is not a string: ['a']"),
    ('{"answer": " "}', "field 'metadata.answer' is blank; give the answer or remove it"),
    ('{"answers": "a"}', "field 'metadata.answers' is not a non-empty list of strings: 'a'"),
    ('{"answers": []}', "field 'metadata.answers' is not a non-empty list of strings: []"),
    ('{"answers": ["a", 7]}', "field 'metadata.answers[1]' is not a string: 7"),
    ('{"answers": ["a", ""]}', "field 'metadata.answers[1]' is blank; give the answer or remove it"),
])
def test_unusable_answer_in_query_metadata_names_file_line_and_field(metadata: str, error: str) -> None:
    queries = '{"_id": "q1", "text": "a"}\n\n{"_id": "q3", "text": "c", "metadata": ' + metadata + "}\n"
    with pytest.raises(BeirError) as err:
        convert(texts("q1\td1\t1\nq3\td3\t1\n", queries=queries), "src")
    assert str(err.value) == "src/queries.jsonl: line 3: " + error


def test_converted_dataset_with_answers_loads(tmp_path) -> None:
    import hashlib
    import json

    from rag_ttc_assets.adapters.input_files import load_dataset
    from rag_ttc_assets.core.dataset import dataset_counts

    corpus, evaluation, _ = convert(texts("q1\td1\t1\nq2\td2\t1\nq3\td3\t1\n", queries=ANSWERED), "src")
    cbytes = json.dumps(corpus).encode("utf-8")
    (tmp_path / "corpus.json").write_bytes(cbytes)
    evaluation = {"corpus_digest": "sha256:" + hashlib.sha256(cbytes).hexdigest(), **evaluation}
    (tmp_path / "evaluation.json").write_text(json.dumps(evaluation), encoding="utf-8")
    ds = load_dataset(tmp_path)
    assert [(q.gold_answer, [r.gold_answer for r in q.requests]) for q in ds.evaluation.questions] == [
        ("the first document", ["the first document"]), ("d2 | the second one", ["d2 | the second one"]),
        (None, [None])]
    assert dataset_counts(ds)["requests_with_gold_answer"] == 2


def test_converted_dataset_loads(tmp_path) -> None:
    import hashlib
    import json

    from rag_ttc_assets.adapters.input_files import load_dataset
    from rag_ttc_assets.core.dataset import dataset_counts

    corpus, evaluation, _ = convert(texts("q1\td1\t1\nq1\td2\t0\nq3\td3\t2\n"), "src")
    cbytes = json.dumps(corpus).encode("utf-8")
    (tmp_path / "corpus.json").write_bytes(cbytes)
    evaluation = {"corpus_digest": "sha256:" + hashlib.sha256(cbytes).hexdigest(), **evaluation}
    (tmp_path / "evaluation.json").write_text(json.dumps(evaluation), encoding="utf-8")
    counts = dataset_counts(load_dataset(tmp_path))
    assert (counts["documents"], counts["questions"], counts["requests"], counts["with_targets"], counts["pilot"]) == (
        3, 2, 2, 2, 2)
