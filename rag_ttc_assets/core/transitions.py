"""The failure flow read as a diff: for each request, its branch in arm a against its branch in arm b.

A transition matrix has one row per branch of a and one column per branch of b (diagnosis.flow's FLOW_BRANCHES, in
the flow's order); cell (x, y) counts the requests whose branch is x in a and y in b.  Every request of either
arm lands in exactly one cell, so the cells add up to the requests of either arm; a request that one arm has no
flow row for (a different question set) is in the row or column ABSENT.  Each non-empty cell lists its requests
and the cases (questions) they belong to, sorted, so a page's filtered case list can be checked against it.

Pure: flow rows in, a JSON-able dict out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rag_ttc_assets.diagnosis.flow import FLOW_BRANCHES

ABSENT = "absent"  # the request has no flow row in that arm


def flow_index(rows: Iterable[Mapping[str, Any]]) -> dict[str, tuple[str, str]]:
    """request_id -> (query_id, branch) from failure-flow rows; a request listed twice is an error."""
    out: dict[str, tuple[str, str]] = {}
    for r in rows:
        rid = r["request_id"]
        if rid in out:
            raise ValueError(f"failure flow: request {rid!r} has two rows")
        out[rid] = (r["query_id"], r["branch"])
    return out


def transition_key(a: str, b: str) -> str:
    """The cell's name, as the page and the JSON spell it: "ok -> admitted_not_cited"."""
    return f"{a} -> {b}"


def transitions(flow_a: Mapping[str, tuple[str, str]], flow_b: Mapping[str, tuple[str, str]]) -> dict[str, Any]:
    """The transition matrix of two arms' flows (flow_index of each).

    Returns {"rows": branches of a, "columns": branches of b, "total": requests of either arm,
    "changed": requests whose branch differs, "cells": [{"a", "b", "key", "count", "requests", "cases"}, ...]}
    with one cell per non-empty (a, b) pair, in row then column order.  ABSENT appears as a row or column only
    when some request is missing from that arm.
    """
    branches = list(FLOW_BRANCHES)
    cells: dict[tuple[str, str], list[tuple[str, str | None]]] = {}  # (request, its case)
    for rid in sorted(flow_a.keys() | flow_b.keys()):
        qa, ba = flow_a.get(rid, (None, ABSENT))
        qb, bb = flow_b.get(rid, (None, ABSENT))
        for branch in (ba, bb):
            if branch != ABSENT and branch not in branches:
                raise ValueError(f"failure flow: request {rid!r} has unknown branch {branch!r}")
        cells.setdefault((ba, bb), []).append((rid, qa or qb))
    rows = branches + ([ABSENT] if any(a == ABSENT for a, _ in cells) else [])
    columns = branches + ([ABSENT] if any(b == ABSENT for _, b in cells) else [])
    out: list[dict[str, Any]] = []
    for a in rows:
        for b in columns:
            members = cells.get((a, b))
            if members:
                out.append({"a": a, "b": b, "key": transition_key(a, b), "count": len(members),
                            "requests": [rid for rid, _ in members],
                            "cases": sorted({q for _, q in members if q is not None})})
    total = sum(c["count"] for c in out)
    return {"rows": rows, "columns": columns, "total": total,
            "changed": sum(c["count"] for c in out if c["a"] != c["b"]), "cells": out}
