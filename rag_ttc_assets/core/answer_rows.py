"""The table rows the completeness and the failure flow read, as records: a request's coverage (request_coverage),
an answer's contract row (contract_results, its request items parsed into core.contract.RequestItem) and a request's
judgment (request_judgments). Each is built from its table's row by `of`, which reads the row by the table's
declared column names (core.tables), so a renamed column is an AttributeError here, not a wrong count downstream.

A row as read from Parquet is `Row` (column -> value). A column only some rows carry (an approximate index's
exact_ranked, a judge's coverage) is None when absent; list columns are JSON strings or lists (json_list).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rag_ttc_assets.core.contract import RequestItem
from rag_ttc_assets.core.tables import Table

# A row as read from Parquet (a coverage, contract or request-judgment row): column -> value.
Row = Mapping[str, Any]
COV, CON, RJ = Table.REQUEST_COVERAGE.c, Table.CONTRACT_RESULTS.c, Table.REQUEST_JUDGMENTS.c


def json_list(value: Any) -> list[Any]:
    """A list field as stored: a JSON string (Parquet), a list, or None."""
    if value is None:
        return []
    return list(json.loads(value)) if isinstance(value, str) else list(value)


def _ids(value: Any) -> tuple[str, ...]:
    return tuple(json_list(value))


@dataclass(frozen=True)
class Coverage:
    """A request's coverage: whether a supporting chunk was ranked, selected, admitted (core.admission)."""

    query_id: str
    request_id: str
    has_evidence: bool
    supporting_chunk_ids: tuple[str, ...]
    ranked: bool
    selected: bool
    admitted: bool
    # Only an approximate index's rows carry it (core.admission.coverage_rows): None elsewhere.
    exact_ranked: bool | None = None

    @classmethod
    def of(cls, row: Row) -> Coverage:
        return cls(query_id=row[COV.query_id], request_id=row[COV.request_id],
                   has_evidence=row.get(COV.has_evidence, False),
                   supporting_chunk_ids=_ids(row.get(COV.supporting_chunk_ids)), ranked=row[COV.ranked],
                   selected=row[COV.selected], admitted=row[COV.admitted], exact_ranked=row.get(COV.exact_ranked))

    @classmethod
    def nothing(cls, query_id: str, request_id: str) -> Coverage:
        """A request without a coverage row: it arrived nowhere (nothing ranked, selected or admitted)."""
        return cls(query_id=query_id, request_id=request_id, has_evidence=False, supporting_chunk_ids=(),
                   ranked=False, selected=False, admitted=False)


@dataclass(frozen=True)
class Contract:
    """An answer's contract row: its status, the parsed answer, its citations and its request items."""

    status: str | None
    answer: str | None
    citation_chunk_ids: tuple[str, ...]
    abstained: bool | None
    request_items: tuple[RequestItem, ...]

    @classmethod
    def of(cls, row: Row) -> Contract:
        return cls(status=row.get(CON.status), answer=row.get(CON.answer),
                   citation_chunk_ids=_ids(row.get(CON.citation_chunk_ids)), abstained=row.get(CON.abstained),
                   request_items=tuple(RequestItem.model_validate(it) for it in json_list(row.get(CON.request_items))))

    @classmethod
    def of_optional(cls, row: Row | None) -> Contract | None:
        return None if row is None else cls.of(row)


@dataclass(frozen=True)
class Judgment:
    """The request judge's row for one request: judged (addressed, excerpt, citations, verdict) or why not."""

    query_id: str
    request_id: str
    status: str
    addressed: bool | None
    excerpt: str | None
    cited_chunk_ids: tuple[str, ...]
    verdict: str | None
    coverage: float | None

    @classmethod
    def of(cls, row: Row) -> Judgment:
        return cls(query_id=row[RJ.query_id], request_id=row[RJ.request_id], status=row[RJ.status],
                   addressed=row.get(RJ.addressed), excerpt=row.get(RJ.excerpt),
                   cited_chunk_ids=_ids(row.get(RJ.cited_chunk_ids)), verdict=row.get(RJ.verdict),
                   coverage=row.get(RJ.coverage))
