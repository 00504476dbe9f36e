"""The declared column types (core.tables.TYPES) as polars dtypes, and a frame checked against its table.

polars is imported in the functions that use it: the code location (`rag_ttc_assets.definitions`), which every
step process and `dagster dev` reload imports, loads none of it."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from rag_ttc_assets.core.tables import NULL, SCALARS, TableName, check_columns

if TYPE_CHECKING:
    import polars as pl


@cache
def scalar_dtypes() -> dict[str, pl.DataType]:
    """`{declared scalar type: polars dtype}`."""
    import polars as pl

    return {"str": pl.String, "int": pl.Int64, "float": pl.Float64, "bool": pl.Boolean}


def dtype_of(type_: str) -> pl.DataType:
    """The polars dtype a declared column type is written as (`list[str]` -> `List(String)`)."""
    import polars as pl

    if type_.startswith("list[") and type_.endswith("]"):
        return pl.List(scalar_dtypes()[type_[5:-1]])
    return scalar_dtypes()[type_]


def type_of(dtype: pl.DataType) -> str:
    """A frame's dtype in the declaration's terms; a dtype the declaration has no name for keeps polars' own."""
    import polars as pl

    if dtype == pl.Null:
        return NULL
    if isinstance(dtype, pl.List):
        inner = type_of(dtype.inner)
        return f"list[{inner}]" if inner in SCALARS or inner == NULL else str(dtype)
    for name, dt in scalar_dtypes().items():
        if dtype == dt:
            return name
    return str(dtype)


def schema_of(table: TableName, *names: str) -> dict[str, pl.DataType]:
    """The named declared columns (every one when none is named), each with its polars dtype, in the order asked
    (declared order for all); a name the table does not declare is a KeyError naming the table."""
    columns = [table.column(n) for n in names] if names else table.columns
    return {c.name: dtype_of(c.type) for c in columns}


def conform(table: TableName, arm: str, df: pl.DataFrame) -> pl.DataFrame:
    """`df` checked against `table`'s declaration (core.tables.check_columns); the frame returned as it is,
    except a column whose values are all missing (polars typed it Null) is cast to its declared type, and a
    frame with no rows and no columns (nothing to write) becomes the declared columns, empty."""
    import polars as pl

    if df.height == 0 and df.width == 0:
        return pl.DataFrame(schema={c.name: dtype_of(c.type) for c in table.columns if c.only is None})
    untyped = check_columns(table, arm, {name: type_of(dt) for name, dt in df.schema.items()})
    if not untyped:
        return df
    return df.with_columns(pl.col(n).cast(dtype_of(table.column(n).type)) for n in untyped)
