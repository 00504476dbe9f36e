"""The declared column types (core.tables.TYPES) as polars dtypes, a frame checked against its table, and rows
built into a frame with their declared types (`table_frame`, `schema_frame`: never a type inferred from the rows).

polars is imported in the functions that use it: the code location (`rag_ttc_assets.definitions`), which every
step process and `dagster dev` reload imports, loads none of it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from typing import TYPE_CHECKING

from rag_ttc_assets.core.tables import NULL, SCALARS, TableName, TableSchemaError, check_columns, constant_of

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


def table_frame(table: TableName, rows: Iterable[Mapping], *only: str) -> pl.DataFrame:
    """`rows` (one dict each) as `table`'s frame, every column typed by its declaration, never by the rows' values
    (a first thousand rows of nulls types nothing): the columns written for every arm, in declared order, plus the
    columns declared for some arms (`Column.only`) that this one writes, named in `only`. Strict (`schema_frame`):
    a row with a column the table does not declare, or without one it does, or a value of another type than its
    column's, is a TableSchemaError naming the table, the row and the column."""
    for name in only:
        if table.column(name).only is None:
            raise ValueError(f"table {str(table)!r}: column {name!r} is written for every arm, not only some")
    schema = {c.name: dtype_of(c.type) for c in table.columns if c.only is None or c.name in only}
    return schema_frame(f"table {str(table)!r}", schema, rows,
                        f"its columns are declared in core/tables.py, Table.{constant_of(table)}")


def schema_frame(what: str, schema: dict[str, pl.DataType], rows: Iterable[Mapping],
                 declared_in: str = "") -> pl.DataFrame:
    """`rows` as a frame of exactly `schema`'s columns and dtypes (a frame that is not a per-arm table: `what` names
    it, `declared_in` says where its schema is). Every row has every column and no other; each column is built
    strictly (polars' strict Series: no string read as a number, no float cut to an int); a problem is a
    TableSchemaError naming `what`, the row (its position, and its query/request id when it has one) and the column."""
    import polars as pl

    rows = list(rows)
    names = set(schema)
    note = f" ({declared_in})" if declared_in else ""
    for i, row in enumerate(rows):
        if row.keys() != names:
            problems = [f"column {k!r} is not declared" for k in row if k not in names]
            problems += [f"column {k!r} is missing" for k in schema if k not in row]
            raise TableSchemaError(f"{what}: {_row_name(i, row)}: " + "; ".join(problems) + note)
    columns = []
    for name, dtype in schema.items():
        values = [row[name] for row in rows]
        try:
            columns.append(pl.Series(name, values, dtype=dtype, strict=True))
        except (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError) as e:
            i = _first_bad(values, dtype)
            at = _row_name(i, rows[i]) if i is not None else "a row"
            value = repr(values[i])[:80] if i is not None else "a value"
            raise TableSchemaError(f"{what}: {at}: column {name!r} is declared {type_of(dtype)}, "
                                   f"got {value} ({type(e).__name__}: {str(e).splitlines()[0]}){note}") from e
    return pl.DataFrame(columns)


def _row_name(i: int, row: Mapping) -> str:
    ids = [f"{k} {row[k]!r}" for k in ("query_id", "request_id", "chunk_id") if isinstance(row.get(k), str)]
    return f"row {i}" + (f" ({', '.join(ids)})" if ids else "")


def _first_bad(values: list, dtype: pl.DataType) -> int | None:
    """The position of the first value polars will not build as `dtype` (strictly), if one alone fails."""
    import polars as pl

    for i, v in enumerate(values):
        try:
            pl.Series("v", [v], dtype=dtype, strict=True)
        except Exception:  # noqa: BLE001  (whatever polars raises for it: this is only where to point)
            return i
    return None
