"""The declared column types (core.tables.TYPES) as polars dtypes, and a frame checked against its table."""

from __future__ import annotations

import polars as pl

from rag_ttc_assets.core.tables import NULL, TableName, check_columns

SCALAR_DTYPES = {"str": pl.String, "int": pl.Int64, "float": pl.Float64, "bool": pl.Boolean}


def dtype_of(type_: str) -> pl.DataType:
    """The polars dtype a declared column type is written as (`list[str]` -> `List(String)`)."""
    if type_.startswith("list[") and type_.endswith("]"):
        return pl.List(SCALAR_DTYPES[type_[5:-1]])
    return SCALAR_DTYPES[type_]


def type_of(dtype: pl.DataType) -> str:
    """A frame's dtype in the declaration's terms; a dtype the declaration has no name for keeps polars' own."""
    if dtype == pl.Null:
        return NULL
    if isinstance(dtype, pl.List):
        inner = type_of(dtype.inner)
        return f"list[{inner}]" if inner in SCALAR_DTYPES or inner == NULL else str(dtype)
    for name, dt in SCALAR_DTYPES.items():
        if dtype == dt:
            return name
    return str(dtype)


def schema_of(table: TableName) -> dict[str, pl.DataType]:
    """Every declared column with its polars dtype, in declared order."""
    return {c.name: dtype_of(c.type) for c in table.columns}


def conform(table: TableName, arm: str, df: pl.DataFrame) -> pl.DataFrame:
    """`df` checked against `table`'s declaration (core.tables.check_columns); the frame returned as it is,
    except a column whose values are all missing (polars typed it Null) is cast to its declared type, and a
    frame with no rows and no columns (nothing to write) becomes the declared columns, empty."""
    if df.height == 0 and df.width == 0:
        return pl.DataFrame(schema={c.name: dtype_of(c.type) for c in table.columns if c.only is None})
    untyped = check_columns(table, arm, {name: type_of(dt) for name, dt in df.schema.items()})
    if not untyped:
        return df
    return df.with_columns(pl.col(n).cast(dtype_of(table.column(n).type)) for n in untyped)
