"""The per-row logs of a run directory: finished rows kept as they finish, so a run that dies keeps them.

In a local run directory, one JSONL file appended and flushed per row. Object stores have no append, so in an
`s3://` run directory each finished row is its own small object under `<log name>.rows/`, written whole by one
PUT: a killed worker loses at most the row it was writing, as a killed local process does."""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path

from rag_ttc_assets.adapters.atomic import atomic_write_bytes, is_local


def rows_folder(path):
    """Where an object-store run directory keeps the rows of the log `path`."""
    return path.parent / f"{path.name}.rows"


class RowLog:
    """Append-only log of finished rows, one per line (or object); safe across worker threads."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._f = None
        if is_local(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            self._f = path.open("a", encoding="utf-8")
        else:
            # This writer's own names: a retried step appends beside the rows of the attempt before it.
            self._rows, self._tag, self._n = rows_folder(path), uuid.uuid4().hex[:8], 0

    def write(self, row: dict) -> None:
        line = json.dumps(row, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            if self._f is not None:
                self._f.write(line)
                self._f.flush()
            else:
                self._n += 1
                atomic_write_bytes(self._rows / f"{self._tag}-{self._n:06d}.json", line.encode("utf-8"))

    def __enter__(self) -> RowLog:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._f is not None:
            self._f.close()


def count_rows(path) -> int:
    """Finished rows in the log `path` (complete lines of the file, or row objects)."""
    if not is_local(path):
        folder = rows_folder(path)
        return sum(1 for p in folder.iterdir() if p.name.endswith(".json")) if folder.is_dir() else 0
    if not path.is_file():
        return 0
    with path.open("rb") as f:
        return sum(1 for line in f if line.endswith(b"\n"))


def remove_rows(path) -> None:
    """Drop the log `path` once the complete table replaces it."""
    if is_local(path):
        path.unlink(missing_ok=True)
        return
    folder = rows_folder(path)
    if folder.is_dir():
        folder.fs.rm(folder.path, recursive=True)
