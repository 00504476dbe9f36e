"""core.tables: each per-arm table's columns declared once; a frame's columns checked against the declaration."""

import pickle

import pytest

from rag_ttc_assets.core.tables import (TYPES, Column, Table, TableName, TableSchemaError, by_name, check_columns,
                                        declared_tables)

ANSWERS_TYPES = {c.name: c.type for c in Table.ANSWERS.columns if c.only is None}


def test_every_table_declares_typed_columns_with_a_description():
    tables = declared_tables()
    assert set(tables) == {"IMPORTED_CHUNKS", "IMPORTED_ROWS", "RETRIEVAL_ROWS", "ADMITTED_CONTEXTS",
                           "REQUEST_COVERAGE", "ANSWERS", "CONTRACT_RESULTS", "JUDGE_VERDICTS", "REQUEST_JUDGMENTS",
                           "REQUEST_OUTCOMES", "QUESTION_COMPLETENESS", "ABSTENTION_OUTCOMES", "FAILURE_FLOW",
                           "LOOKUP_CASES"}
    for constant, table in tables.items():
        assert isinstance(table, str) and table == constant.lower(), constant
        assert table.columns and table.description, constant
        for c in table.columns:
            assert c.type in TYPES and c.description, (constant, c.name)
    # Every table is keyed by the question; the per-request tables by the request too.
    assert all(t.columns[0].name in ("query_id", "chunk_id") for t in tables.values())
    for t in (Table.REQUEST_COVERAGE, Table.REQUEST_JUDGMENTS, Table.REQUEST_OUTCOMES, Table.FAILURE_FLOW):
        assert [c.name for c in t.columns[:2]] == ["query_id", "request_id"]


def test_a_table_constant_is_its_name_and_names_its_columns():
    assert Table.ANSWERS == "answers" and f"{Table.ANSWERS}.parquet" == "answers.parquet"
    assert Table.ANSWERS.c.status == "status" and Table.RETRIEVAL_ROWS.c.ann_recall_k == "ann_recall_k"
    with pytest.raises(AttributeError, match="table 'answers' declares no column 'statsu'"):
        Table.ANSWERS.c.statsu
    assert by_name("failure_flow") is Table.FAILURE_FLOW
    with pytest.raises(KeyError, match="no table 'failure_flows' is declared"):
        by_name("failure_flows")
    # A step process receives it pickled: as the plain name.
    assert pickle.loads(pickle.dumps(Table.ANSWERS)) == "answers"


def test_a_declaration_rejects_an_unknown_type_and_a_column_declared_twice():
    with pytest.raises(ValueError, match="column 'n': type 'integer' is not one of"):
        Column("n", "integer", "a count")
    with pytest.raises(ValueError, match="table 't' declares a column twice"):
        TableName("t", "a table", Column("n", "int", "a"), Column("n", "int", "b"))


def test_a_frame_as_declared_passes():
    assert check_columns(Table.ANSWERS, "baseline", ANSWERS_TYPES) == []
    # A column written only for some arms may be there (imported arms' trace_id) or not.
    assert check_columns(Table.ANSWERS, "imported", {**ANSWERS_TYPES, "trace_id": "str"}) == []


def test_a_missing_column_is_an_error_naming_arm_table_and_column():
    actual = {k: v for k, v in ANSWERS_TYPES.items() if k != "cost_usd"}
    with pytest.raises(TableSchemaError) as e:
        check_columns(Table.ANSWERS, "baseline", actual)
    assert str(e.value) == ("table 'answers' of arm 'baseline': column 'cost_usd' (float) is missing (its columns are "
                            "declared in core/tables.py, Table.ANSWERS)")


def test_a_mistyped_column_is_an_error_naming_its_type_and_the_declared_one():
    with pytest.raises(TableSchemaError) as e:
        check_columns(Table.ANSWERS, "tight", {**ANSWERS_TYPES, "lookup_calls": "float",
                                               "admitted_chunk_ids": "list[int]"})
    assert str(e.value) == ("table 'answers' of arm 'tight': column 'admitted_chunk_ids' is list[int], declared "
                            "list[str]; column 'lookup_calls' is float, declared int (its columns are declared in "
                            "core/tables.py, Table.ANSWERS)")


def test_an_undeclared_column_is_an_error():
    with pytest.raises(TableSchemaError, match=r"table 'failure_flow' of arm 'b': column 'score' \(Decimal\) is "
                                               r"not declared .*Table.FAILURE_FLOW"):
        check_columns(Table.FAILURE_FLOW, "b", {**{c.name: c.type for c in Table.FAILURE_FLOW.columns},
                                                "score": "Decimal"})


def test_every_problem_is_named_at_once():
    with pytest.raises(TableSchemaError) as e:
        check_columns(Table.LOOKUP_CASES, "tool", {"query_id": "str", "branch": "int", "extra": "str"})
    msg = str(e.value)
    for part in ("column 'calls' (int) is missing", "column 'results' (int) is missing",
                 "column 'missing_requests' (list[str]) is missing", "column 'quality' (str) is missing",
                 "column 'branch' is int, declared str", "column 'extra' (str) is not declared"):
        assert part in msg, part


def test_an_all_missing_column_takes_its_declared_type():
    # polars types a column whose every value is missing as Null: the writer casts it to the declared type.
    actual = {**{c.name: c.type for c in Table.REQUEST_OUTCOMES.columns}, "verdict": "null", "overclaimed": "null"}
    assert check_columns(Table.REQUEST_OUTCOMES, "b", actual) == ["verdict", "overclaimed"]
    assert check_columns(Table.ANSWERS, "b", {**ANSWERS_TYPES, "messages_digests": "list[null]"}) == \
        ["messages_digests"]
    with pytest.raises(TableSchemaError, match="column 'status' is list\\[null\\], declared str"):
        check_columns(Table.ANSWERS, "b", {**ANSWERS_TYPES, "status": "list[null]"})
