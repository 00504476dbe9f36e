"""The corpus's documents held as Arrow columns, not as Python objects, and read a slice at a time.

A million chunks' corpus (859,170 documents, 881 MB of JSON) as pydantic `Document` models took about 2 GB resident
(a Python str of it is 1.58 bytes a character) and its parse peaked at about 4 GB. `CorpusTable` keeps each
document's id, title, text and metadata (JSON text, None when empty) in Arrow string arrays of SLICE_ROWS rows;
`texts` and `titles` are read-only mappings from document id (in corpus order) to the value, and `documents()` /
`id_texts()` read them back a slice at a time.

`parse_corpus` validates `corpus.json`'s bytes a slice of documents at a time: the documents array is cut at the
commas between its elements (`split_documents`: brackets outside strings at depth 0, found with numpy), and each
slice is validated as its own `{"documents": [...]}` with pydantic's JSON parser, then turned into Arrow arrays
before the next is read. A valid array is valid slice by slice and the other way round (the slices joined by their
commas are the array), so the same files pass and fail as when the whole file is validated at once; a file not
written as one object with the one key `documents` is validated whole (the models then become the table), and a
file either refuses returns None: the caller reads it the long way, which names each problem's record and field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from rag_ttc_assets.core.records import Corpus, Document

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs (pyarrow-stubs: no dependency)

SLICE_ROWS = 10_000  # documents validated, and held as Python objects, at a time
COLUMNS = ("id", "title", "text", "metadata")
_WS = rb"[ \t\n\r]*"
_HEAD = re.compile(_WS + rb"\{" + _WS + rb'"documents"' + _WS + rb":" + _WS + rb"\[")
_TAIL = re.compile(rb"\]" + _WS + rb"\}" + _WS + rb"\Z")
_TAIL_WINDOW = 1 << 20  # the file's last bytes where its closing "]}" is looked for
_WINDOW = 1 << 22  # bytes scanned for brackets and quotes at a time (numpy's temporaries are a few times this)
_BACKSLASH_RUN = 4096  # a longer run of backslashes before a window's quote is misread: the slices then fail
_NOT_WS = re.compile(rb"[^ \t\n\r]")
# The long way (json.loads) accepts "\ud800" escapes, so a corpus it reads may hold lone surrogates, which an Arrow
# string cannot: such a slice's column is kept as UTF-8 bytes with them passed through, and reads back as parsed.
_ENC = "surrogatepass"


def _array(values: list[str | None]) -> pa.Array:
    """`values` as an Arrow string array; with a lone surrogate among them, as UTF-8 bytes that `_strings` reads
    back exactly."""
    import pyarrow as pa

    try:
        return pa.array(values, type=pa.large_string())
    except (UnicodeEncodeError, pa.ArrowException):
        return pa.array([v if v is None else v.encode("utf-8", _ENC) for v in values], type=pa.large_binary())


def _strings(array: pa.Array) -> list[Any]:
    """The values of an `_array` as Python str (None stays None)."""
    import pyarrow as pa

    values: list[Any] = array.to_pylist()  # str, or bytes in a large_binary array; None in metadata's
    if pa.types.is_large_binary(array.type):
        return [v if v is None else v.decode("utf-8", _ENC) for v in values]
    return values


def _element_ends(data: bytes, start: int, end: int) -> Iterator[int]:
    """The end offsets of the top-level elements of the array between `start` and `end`, where a bracket or brace
    closes at depth 0 outside strings; found with numpy a window at a time (a quote is a string's edge unless an odd
    run of backslashes precedes it). Depth below 0 yields -1 and stops: not the array it should be."""
    import numpy as np

    a = np.frombuffer(data, dtype=np.uint8)
    in_string, depth = 0, 0
    for w0 in range(start, end, _WINDOW):
        w = a[w0:min(end, w0 + _WINDOW)]
        quotes = np.flatnonzero(w == 34) + w0
        after = quotes[a[quotes - 1] == 92]  # after a backslash: escaped when the run of backslashes is odd
        if len(after):
            b0 = max(start, w0 - _BACKSLASH_RUN)
            slashes = np.flatnonzero(a[b0:w0 + len(w)] == 92) + b0
            firsts = np.ones(len(slashes), dtype=bool)
            firsts[1:] = slashes[1:] != slashes[:-1] + 1
            run_start = slashes[np.maximum.accumulate(np.where(firsts, np.arange(len(slashes)), 0))]
            runs = after - run_start[np.searchsorted(slashes, after - 1)]
            quotes = np.setdiff1d(quotes, after[runs % 2 == 1], assume_unique=True)
        brackets = np.flatnonzero((w == 91) | (w == 93) | (w == 123) | (w == 125)) + w0
        brackets = brackets[(np.searchsorted(quotes, brackets) + in_string) % 2 == 0]
        in_string = (in_string + len(quotes)) % 2
        opens = (a[brackets] == 91) | (a[brackets] == 123)
        depths = depth + np.cumsum(np.where(opens, 1, -1))
        if len(depths) and depths.min() < 0:
            yield -1
            return
        depth = int(depths[-1]) if len(depths) else depth
        yield from (brackets[(depths == 0) & ~opens] + 1).tolist()


def split_documents(data: bytes, rows: int = SLICE_ROWS) -> list[tuple[int, int]] | None:
    """The byte ranges of `data` (a corpus file) holding `rows` elements of its documents array at a time, cut at the
    commas between elements; None when the file is not one object whose only key is "documents" (or is malformed
    where the cuts fall), which is then validated whole. A cut anywhere else (inside a string or a nested value)
    would leave a slice that fails validation, never a wrong corpus."""
    head, tail = _HEAD.match(data), _TAIL.search(data, max(0, len(data) - _TAIL_WINDOW))
    if head is None or tail is None or tail.start() < head.end():
        return None
    start, end = head.end(), tail.start()
    cuts, count = [], 0
    for element_end in _element_ends(data, start, end):
        if element_end < 0:
            return None
        count += 1
        if count < rows:
            continue
        after = _NOT_WS.search(data, element_end, end)
        if after is None:
            break  # the array's last element
        if data[after.start():after.start() + 1] != b",":
            return None
        cuts.append((start, element_end))
        start, count = after.start() + 1, 0
    if cuts and _NOT_WS.search(data, start, end) is None:
        return None  # a comma after the last element: "[a]" and "[]" are valid, "[a,]" is not
    cuts.append((start, end))
    return cuts


def parse_corpus(data: bytes, rows: int | None = None) -> CorpusTable | None:
    """The corpus in `data` validated `rows` (default SLICE_ROWS) documents at a time into a CorpusTable, or None when
    pydantic refuses the file (the caller names the problems the long way)."""
    rows = rows or SLICE_ROWS
    ranges = split_documents(data, rows)
    try:
        if ranges is None:
            return CorpusTable.from_documents(Corpus.model_validate_json(data).documents, rows)
        return CorpusTable([_arrays(Corpus.model_validate_json(b'{"documents":[' + data[a:b] + b"]}").documents)
                            for a, b in ranges], rows)
    except ValueError:  # pydantic's ValidationError, or JSON it refuses
        return None


def _arrays(documents: list[Document]) -> dict[str, pa.Array]:
    return {"id": _array([d.id for d in documents]), "title": _array([d.title for d in documents]),
            "text": _array([d.text for d in documents]),
            "metadata": _array([json.dumps(d.metadata) if d.metadata else None for d in documents])}


class CorpusTable:
    """The documents in corpus order as Arrow slices of `rows` rows each (the last may be shorter; an empty corpus
    has none). Read-only: `len()`, `texts` and `titles` (id -> value, a Mapping), `documents()`, `id_texts()`."""

    def __init__(self, slices: list[dict[str, pa.Array]], rows: int = SLICE_ROWS):
        self._slices = [s for s in slices if len(s["id"])]
        if any(len(s["id"]) != rows for s in self._slices[:-1]):
            raise ValueError(f"every slice but the last holds {rows} rows")
        self._rows = rows
        self._len = sum(len(s["id"]) for s in self._slices)
        self._index: dict[str, int] | None = None
        self.texts: Mapping[str, str] = _Column(self, "text")
        self.titles: Mapping[str, str] = _Column(self, "title")

    @classmethod
    def from_documents(cls, documents: Iterable[Document], rows: int = SLICE_ROWS) -> CorpusTable:
        slices, batch = [], []
        for d in documents:
            batch.append(d)
            if len(batch) == rows:
                slices.append(_arrays(batch))
                batch = []
        if batch:
            slices.append(_arrays(batch))
        return cls(slices, rows)

    def __len__(self) -> int:
        return self._len

    def ids(self) -> Iterator[str]:
        for s in self._slices:
            yield from _strings(s["id"])

    def id_texts(self) -> Iterator[tuple[str, str]]:
        """(id, text) of every document in order, decoded a slice at a time."""
        for s in self._slices:
            yield from zip(_strings(s["id"]), _strings(s["text"]))

    def documents(self) -> Iterator[Document]:
        """Every document as a model, in order, made a slice at a time."""
        for s in self._slices:
            rows = zip(*(_strings(s[c]) for c in COLUMNS))
            yield from (Document(id=i, title=ti, text=te, metadata=json.loads(m) if m is not None else {})
                        for i, ti, te, m in rows)

    def row(self, doc_id: str) -> int | None:
        """The document's row (its index in corpus order), or None; the id index is built on first use."""
        if self._index is None:
            self._index = {}
            for n, i in enumerate(self.ids()):
                self._index[i] = n  # a duplicate id (the dataset check refuses it) reads the last, as a dict would
        return self._index.get(doc_id)

    def values(self, column: str, doc_ids: Iterable[str]) -> dict[str, str]:
        """Document id -> the column's value for the ids in `doc_ids` the corpus has, read a slice at a time (the
        mappings `texts` and `titles` read one value per lookup)."""
        import pyarrow as pa

        by_slice: dict[int, list[tuple[str, int]]] = {}
        for doc_id in dict.fromkeys(doc_ids):
            row = self.row(doc_id)
            if row is not None:
                by_slice.setdefault(row // self._rows, []).append((doc_id, row % self._rows))
        out: dict[str, str] = {}
        for k, wanted in by_slice.items():
            got = _strings(self._slices[k][column].take(pa.array([r for _, r in wanted], pa.int64())))
            out.update((doc_id, v) for (doc_id, _), v in zip(wanted, got))
        return out

    def value(self, column: str, row: int) -> str:
        return str(_strings(self._slices[row // self._rows][column].slice(row % self._rows, 1))[0])


class _Column(Mapping[str, str]):
    """Document id -> one column's value, in corpus order, read from the table on each lookup (a Dataset's ids are
    unique: core.dataset refuses a corpus with a duplicate)."""

    def __init__(self, table: CorpusTable, column: str):
        self._table, self._column = table, column

    def __getitem__(self, doc_id: str) -> str:
        row = self._table.row(doc_id) if isinstance(doc_id, str) else None
        if row is None:
            raise KeyError(doc_id)
        return self._table.value(self._column, row)

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and self._table.row(doc_id) is not None

    def __iter__(self) -> Iterator[str]:
        return self._table.ids()

    def __len__(self) -> int:
        return len(self._table)
