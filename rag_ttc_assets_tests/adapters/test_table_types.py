"""The store checks every table it writes against the table's declaration (core.tables) before writing a byte."""

import polars as pl
import pytest

from rag_ttc_assets.adapters.store import ArtifactStore, Table
from rag_ttc_assets.adapters.table_types import dtype_of, schema_of, type_of
from rag_ttc_assets.core.tables import TYPES, TableSchemaError, declared_tables


def _flow(**overrides) -> pl.DataFrame:
    cols = {"query_id": ["q1", "q2"], "request_id": ["q1.r1", "q2.r1"], "branch": ["ok", "not_retrieved"],
            "admitted": [True, False], "answered": [True, False], "supported": [True, False],
            "contradicts_gold": [False, False], "quality": ["good", "bad"]}
    return pl.DataFrame({**cols, **overrides})


def test_declared_types_round_trip_through_polars():
    for t in TYPES:
        assert type_of(dtype_of(t)) == t
    assert dtype_of("list[str]") == pl.List(pl.String) and dtype_of("int") == pl.Int64
    assert type_of(pl.Int32) == "Int32" and type_of(pl.List(pl.UInt32)) == "List(UInt32)"
    assert type_of(pl.Null) == "null" and type_of(pl.List(pl.Null)) == "list[null]"
    for table in declared_tables().values():
        assert list(schema_of(table)) == [c.name for c in table.columns]


def test_a_table_as_declared_is_written_as_it_is(tmp_path):
    store = ArtifactStore(tmp_path)
    df = _flow()
    store.write_table("baseline", Table.FAILURE_FLOW, df)
    assert store.read_table("baseline", Table.FAILURE_FLOW).equals(df)


def test_a_missing_column_fails_the_write_naming_arm_table_and_column(tmp_path):
    store = ArtifactStore(tmp_path)
    with pytest.raises(TableSchemaError, match=r"^table 'failure_flow' of arm 'tight': column 'quality' \(str\) is "
                                               r"missing \(its columns are declared in core/tables.py, "
                                               r"Table.FAILURE_FLOW\)$"):
        store.write_table("tight", Table.FAILURE_FLOW, _flow().drop("quality"))
    assert not store.table_path("tight", Table.FAILURE_FLOW).exists()  # nothing half-written


def test_a_mistyped_column_fails_the_write(tmp_path):
    store = ArtifactStore(tmp_path)
    with pytest.raises(TableSchemaError, match="table 'failure_flow' of arm 'b': column 'admitted' is int, "
                                               "declared bool"):
        store.write_table("b", Table.FAILURE_FLOW, _flow(admitted=[1, 0]))
    # A polars dtype the declaration has no name for is named as polars names it.
    with pytest.raises(TableSchemaError, match="column 'query_id' is Categorical"):
        store.write_table("b", Table.FAILURE_FLOW, _flow().with_columns(pl.col("query_id").cast(pl.Categorical)))
    with pytest.raises(TableSchemaError, match="column 'admitted' is Int32, declared bool"):
        store.write_table("b", Table.FAILURE_FLOW, _flow(admitted=pl.Series([1, 0], dtype=pl.Int32)))


def test_an_undeclared_column_fails_the_write(tmp_path):
    with pytest.raises(TableSchemaError, match="table 'failure_flow' of arm 'b': column 'note' \\(str\\) is not "
                                               "declared"):
        ArtifactStore(tmp_path).write_table("b", Table.FAILURE_FLOW, _flow(note=["x", "y"]))


def test_an_undeclared_table_fails_the_write(tmp_path):
    with pytest.raises(KeyError, match="no table 'failure_flows' is declared in core/tables.py"):
        ArtifactStore(tmp_path).write_table("b", "failure_flows", _flow())


def test_an_all_missing_column_is_written_with_its_declared_type(tmp_path):
    store = ArtifactStore(tmp_path)
    df = _flow(quality=[None, None])
    assert df.schema["quality"] == pl.Null
    store.write_table("b", Table.FAILURE_FLOW, df)
    back = store.read_table("b", Table.FAILURE_FLOW)
    assert back.schema["quality"] == pl.String and back["quality"].to_list() == [None, None]
    assert back.drop("quality").equals(df.drop("quality"))


def test_an_empty_frame_is_written_with_the_declared_columns(tmp_path):
    store = ArtifactStore(tmp_path)
    store.write_table("b", Table.LOOKUP_CASES, pl.DataFrame())
    back = store.read_table("b", Table.LOOKUP_CASES)
    assert back.height == 0 and dict(back.schema) == schema_of(Table.LOOKUP_CASES)
