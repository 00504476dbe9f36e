"""Whole-file writes that readers never see half done: to a local path (a temporary name renamed into place) or
to one object of the object store (a single PUT). The layer under the artifact store and everything that writes
a file of it (the message archive, plots, the run record)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

SINGLE_PUT = 5 * 2**30 - 1  # S3's limit for one PUT; below it an object's ETag is the md5 of its bytes


class StoreError(RuntimeError):
    """The store cannot be used as configured: one line naming the setting and what to do."""


def put_object(path, data: bytes) -> None:
    """One whole object, one PUT (no multipart below 5 GiB), so its ETag is the md5 of `data`."""
    path.fs.pipe_file(path.path, data, chunksize=SINGLE_PUT)


def is_local(path) -> bool:
    """Whether `path` is a local `Path` (else a path of the object store, adapters/object_store.py)."""
    return isinstance(path, Path)


def atomic_write_bytes(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write to a temporary name next to `path`, flush, fsync, rename into place (`mode`: else mkstemp's 0600).
    A path of the object store is written as one whole object (a single PUT: readers see no object or all of it)."""
    if not is_local(path):
        put_object(path, data)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, json.dumps(obj, indent=1, ensure_ascii=False, default=str).encode("utf-8") + b"\n")
