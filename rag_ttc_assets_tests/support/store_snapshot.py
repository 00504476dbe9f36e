"""What an arm wrote, reduced to what its code decides: every table and JSON summary of every arm of a store, each
as its canonical content with the fields that vary between two identical runs left out (how long a call
took, when, where the store is). Two stores built by the same code from the same inputs have equal snapshots; a
refactor that must not change behaviour is checked by comparing the snapshot before and after
(`scripts/compare_stores.py BEFORE AFTER`, and the mini lab's golden snapshot in e2e/test_column_schema.py).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

# Fields that differ between two runs of the same code on the same inputs (found by running the mini lab twice into two
# folders): how long a provider call took, and where the dataset's files were.
VOLATILE = frozenset({"latency_s", "corpus_file", "evaluation_file"})


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in sorted(value.items()) if k not in VOLATILE}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def arm_files(store: Path) -> dict[str, Any]:
    """`{"<arm>/<file>": canonical content}` of every table (`.parquet`, as its rows) and JSON file of every arm
    under `store/arms`."""
    import polars as pl  # late: only the snapshot of a store reads its tables

    out: dict[str, Any] = {}
    arms = store / "arms"
    for path in sorted(p for p in arms.rglob("*") if p.is_file()):
        rel = str(path.relative_to(arms))
        if path.suffix == ".parquet":
            df = pl.read_parquet(path)
            out[rel] = {"columns": [c for c in df.columns if c not in VOLATILE],
                        "rows": _canonical(df.drop([c for c in df.columns if c in VOLATILE]).to_dicts())}
        elif path.suffix == ".json":
            out[rel] = _canonical(json.loads(path.read_text(encoding="utf-8")))
    # As JSON reads it back: a snapshot kept in a file compares equal to the store it was taken from.
    return json.loads(json.dumps(out, ensure_ascii=False, default=str))


def write_golden(path: Path, content: dict[str, Any]) -> None:
    """Keep a snapshot (arm_files) in a file: one JSON document, keys sorted, a line per value (diffs read well)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content, ensure_ascii=False, sort_keys=True, indent=0) + "\n", encoding="utf-8")


def first_difference(a: Any, b: Any, where: str = "") -> str | None:
    """Where `a` and `b` (canonical contents) first differ, as a path and the two values; None when equal."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool) and type(a) is not type(b):
        return f"{where or '.'}: {a!r} ({type(a).__name__}) != {b!r} ({type(b).__name__})"
    if type(a) is not type(b):
        return f"{where or '.'}: {a!r:.120} != {b!r:.120}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{where}.{k}: only in {'after' if k in b else 'before'}"
            if (d := first_difference(a[k], b[k], f"{where}.{k}")) is not None:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where or '.'}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            if (d := first_difference(x, y, f"{where}[{i}]")) is not None:
                return d
        return None
    if isinstance(a, float):
        # The same arithmetic in another order (a BLAS kernel's threads, another CPU's SIMD kernels) is not a change of
        # behaviour. The embeddings are float32: another CPU moves a similarity score in float32's last digits (seen:
        # 1.3e-6 relative, some 20 float32 ulps, on a vector score of the golden snapshot), so floats agree to 1e-5.
        return None if math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-9) else f"{where or '.'}: {a!r} != {b!r}"
    return None if a == b else f"{where or '.'}: {a!r:.120} != {b!r:.120}"


def differences(before: Path | dict[str, Any], after: Path | dict[str, Any]) -> list[str]:
    """One line per file that differs between two stores' arms (missing on one side, or its first difference); a side
    is a store's folder or what arm_files read from one (a golden snapshot)."""
    a = before if isinstance(before, dict) else arm_files(before)
    b = after if isinstance(after, dict) else arm_files(after)
    lines = []
    for k in sorted(set(a) | set(b)):
        if k not in a or k not in b:
            lines.append(f"{k}: only in {'after' if k in b else 'before'}")
        elif (d := first_difference(a[k], b[k])) is not None:
            lines.append(f"{k}: {d}")
    return lines
