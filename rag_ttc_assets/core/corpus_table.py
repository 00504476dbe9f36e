"""The corpus's documents held as Arrow columns, not as Python objects, and read a slice at a time.

A million chunks' corpus (859,170 documents, 881 MB of JSON) as pydantic `Document` models took about 2 GB resident
(a Python str of it is 1.58 bytes a character) and its parse peaked at about 4 GB. `CorpusTable` keeps each
document's id, title, text and metadata (JSON text, None when empty) as UTF-8 bytes in Arrow arrays of SLICE_ROWS
rows; `texts` and `titles` are read-only mappings from document id (in corpus order) to the value, and
`documents()` / `id_texts()` read them back a slice at a time.

`parse_corpus` validates `corpus.json`'s bytes a slice of documents at a time: the documents array is cut at the
commas between its elements (`split_documents`), and each slice is validated as its own `{"documents": [...]}` with
pydantic's JSON parser, then turned into Arrow arrays before the next is read. A valid array is valid slice by slice
and the other way round (the slices joined by their commas are the array), so the same files pass and fail as when
the whole file is validated at once; a file not written as one object with the one key `documents` is validated
whole (the models then become the table), and a file either refuses returns None: the caller reads it the long way,
which names each problem's record and field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from pydantic import ValidationError

from rag_ttc_assets.core.records import Corpus, Document

if TYPE_CHECKING:
    import pyarrow as pa

SLICE_ROWS = 10_000  # documents validated, and held as Python objects, at a time
COLUMNS = ("id", "title", "text", "metadata")
_WS = rb"[ \t\n\r]*"
_HEAD = re.compile(_WS + rb"\{" + _WS + rb'"documents"' + _WS + rb":" + _WS + rb"\[")
_TAIL = re.compile(rb"\]" + _WS + rb"\}" + _WS + rb"\Z")
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_NOT_WS = re.compile(rb"[^ \t\n\r]")
# Text is stored as UTF-8 with lone surrogates passed through: the long way (json.loads) accepts "\ud800" escapes,
# so a corpus it reads may hold them, and every value reads back exactly as parsed.
_ENC = "surrogatepass"


def _encode(value: str) -> bytes:
    return value.encode("utf-8", _ENC)


def _decode(value: bytes) -> str:
    return value.decode("utf-8", _ENC)


def split_documents(data: bytes, rows: int = SLICE_ROWS) -> list[tuple[int, int]] | None:
    """The byte ranges of `data` (a corpus file) holding `rows` elements of its documents array at a time, cut at the
    commas between elements; None when the file is not one object whose only key is "documents" (or is malformed
    where the cuts fall), which is then validated whole."""
    head, tail = _HEAD.match(data), _TAIL.search(data)
    if head is None or tail is None or tail.start() < head.end():
        return None
    start, end = head.end(), tail.start()
    cuts, depth, count = [], 0, 0
    for token in _TOKEN.finditer(data, start, end):
        ch = token.group()[:1]
        if ch == b'"':
            continue
        depth += 1 if ch in b"[{" else -1
        if depth < 0:
            return None
        if depth or ch not in b"]}":
            continue
        count += 1
        if count < rows:
            continue
        after = _NOT_WS.search(data, token.end(), end)
        if after is None:
            break  # the array's last element
        if data[after.start():after.start() + 1] != b",":
            return None
        cuts.append((start, token.end()))
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
    import pyarrow as pa

    values = {
        "id": [_encode(d.id) for d in documents],
        "title": [_encode(d.title) for d in documents],
        "text": [_encode(d.text) for d in documents],
        "metadata": [_encode(json.dumps(d.metadata)) if d.metadata else None for d in documents],
    }
    return {k: pa.array(v, type=pa.large_binary()) for k, v in values.items()}


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
            yield from (_decode(i) for i in s["id"].to_pylist())

    def id_texts(self) -> Iterator[tuple[str, str]]:
        """(id, text) of every document in order, decoded a slice at a time."""
        for s in self._slices:
            yield from ((_decode(i), _decode(t)) for i, t in zip(s["id"].to_pylist(), s["text"].to_pylist()))

    def documents(self) -> Iterator[Document]:
        """Every document as a model, in order, made a slice at a time."""
        for s in self._slices:
            rows = zip(*(s[c].to_pylist() for c in COLUMNS))
            yield from (Document(id=_decode(i), title=_decode(ti), text=_decode(te),
                                 metadata=json.loads(_decode(m)) if m is not None else {}) for i, ti, te, m in rows)

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
            got = self._slices[k][column].take(pa.array([r for _, r in wanted], pa.int64())).to_pylist()
            out.update((doc_id, _decode(v)) for (doc_id, _), v in zip(wanted, got))
        return out

    def value(self, column: str, row: int) -> str:
        return _decode(self._slices[row // self._rows][column][row % self._rows].as_py())


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
