"""core.corpus_table: a corpus validated a slice at a time is the corpus validated whole, read back exactly."""

from __future__ import annotations

import json

import pytest

from rag_ttc_assets.core.corpus_table import CorpusTable, parse_corpus, split_documents
from rag_ttc_assets.core.records import Corpus


def documents(n: int) -> list[dict]:
    # Brackets, braces, commas, quotes and backslashes inside strings, non-Latin-1 text, metadata with nesting.
    return [{"id": f"d{i}", **({"title": f"t{i} [x]"} if i % 3 else {}),
             "text": "é, \"q\" \\ {}[] 漢 " * (i % 4 + 1),
             **({"metadata": {"a": [1, {"b": "]}"}], "n": 2.5}} if i % 5 == 0 else {})} for i in range(n)]


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("rows", [1, 2, 7, 23, 1000])
def test_a_corpus_validated_in_slices_is_the_corpus_validated_whole(indent, rows):
    data = json.dumps({"documents": documents(23)}, indent=indent, ensure_ascii=indent is None).encode()
    ranges = split_documents(data, rows)
    assert ranges is not None and len(ranges) == -(-23 // rows)
    table = parse_corpus(data, rows)
    assert [d.model_dump() for d in table.documents()] == [d.model_dump()
                                                          for d in Corpus.model_validate_json(data).documents]
    assert len(table) == 23 and list(table.ids()) == [f"d{i}" for i in range(23)]
    assert dict(table.texts) == {d["id"]: d["text"] for d in documents(23)}
    assert table.titles["d0"] == "" and table.titles["d1"] == "t1 [x]" and "d23" not in table.titles
    assert table.values("title", ["d4", "d99", "d2", "d4"]) == {"d4": "t4 [x]", "d2": "t2 [x]"}
    assert list(table.id_texts()) == [(d["id"], d["text"]) for d in documents(23)]


@pytest.mark.parametrize("data", [
    b'{"documents":[{"id":"a","text":"b"},]}',  # each slice alone is valid; the whole is not
    b'{"documents":[{"id":"a","text":"b"} {"id":"c","text":"d"}]}',
    b'{"documents":[{"id":"a","text":"b"},{"id":"c","text":"d","extra":1}]}',
    b'{"documents":[{"id":"a","text":"b"},{"id":"","text":"d"}]}',
    b'{"documents":[{"id":"a","text":"b"}],"other":[]}',
    b'{"documents":[{"id":"a","text":"b"}]]}',
    b'{"documents":[{"id":"a","text":"b"}]',
    b'[{"id":"a","text":"b"}]',
])
def test_a_file_validation_refuses_whole_is_refused_in_slices(data):
    with pytest.raises(ValueError):
        Corpus.model_validate_json(data)
    assert parse_corpus(data, 1) is None


def test_a_file_not_in_the_usual_shape_is_validated_whole():
    data = b'{"\\u0064ocuments": [{"id": "a", "text": "b"}]}'  # an escaped key: not cut, still valid
    assert split_documents(data) is None
    assert [d.id for d in parse_corpus(data).documents()] == ["a"]
    assert len(parse_corpus(b' {"documents" : [ ] } ')) == 0


def test_text_with_a_lone_surrogate_reads_back_as_parsed():
    table = CorpusTable.from_documents(Corpus.model_validate(json.loads('{"documents":[{"id":"a","text":"x\\ud800"}]}'))
                                       .documents)
    assert table.texts["a"] == "x\ud800"


@pytest.mark.parametrize("window", [3, 7, 64])
def test_the_cuts_do_not_depend_on_the_scanning_window(monkeypatch, window):
    docs = [{"id": f"d{i}", "text": "\\" * (i % 5) + '"' + "\\" * (i % 3) + "]}{[" + '\\"'} for i in range(40)]
    data = json.dumps({"documents": docs}).encode()
    whole = split_documents(data, 3)
    monkeypatch.setattr("rag_ttc_assets.core.corpus_table._WINDOW", window)
    assert split_documents(data, 3) == whole and len(whole) == 14
    assert [d["text"] for d in docs] == [d.text for d in parse_corpus(data, 3).documents()]
