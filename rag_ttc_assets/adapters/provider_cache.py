"""Content-addressed cache of provider results: one self-checking JSON entry per request.
Callers should cache only successful results (CallResult.status == "ok"): a cached fault would be replayed forever.

The root is a local folder (or a `file://` URI), written by temp file and rename, or an fsspec URI of another
filesystem (`s3://bucket/cache`, `gs://...`, `memory://...`, with that protocol's fsspec package installed),
written one whole object per entry: a single PUT, which object stores make atomic, so readers see no entry or a
whole one. Entries are content-addressed and self-checking, so two machines writing the same key write the same
record and a torn or foreign entry is detected on read and rebuilt."""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import warnings
from pathlib import Path
from typing import Any

KEY_VERSION = 1  # part of every key: bump it when what a key covers changes, and old entries go unread
_KEY = re.compile(r"^[0-9a-f]{64}$")
_NAMESPACE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


class CorruptCacheEntryWarning(UserWarning):
    """A cache entry failed its check on read and was deleted, so it will be rebuilt."""


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, no NaN: the same value always gives the same bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def is_uri(root: str | Path) -> bool:
    return isinstance(root, str) and "://" in root


def remote_filesystem(uri: str):
    """(fsspec filesystem, root path within it) of a cache URI; `file://` URIs come back as (None, local Path).
    Raises ValueError naming the URI when fsspec has no filesystem for its protocol (package not installed)."""
    import fsspec

    protocol = uri.split("://", 1)[0]
    try:
        cls = fsspec.get_filesystem_class(protocol)
    except (ImportError, ValueError) as e:
        raise ValueError(f"{uri!r}: no fsspec filesystem for protocol {protocol!r} ({e})") from None
    if "file" in ([cls.protocol] if isinstance(cls.protocol, str) else list(cls.protocol)):
        return None, Path(uri.split("://", 1)[1]).expanduser().resolve()
    fs, path = fsspec.core.url_to_fs(uri)
    return fs, path.rstrip("/")


class ProviderCache:
    """Entries live at `root/namespace/ab/abcdef....json` and hold `{"key", "digest", "record"}`."""

    def __init__(self, root: Path | str, namespace: str) -> None:
        if not _NAMESPACE.match(namespace):
            raise ValueError(f"ProviderCache: namespace {namespace!r} must match {_NAMESPACE.pattern}")
        self.fs, where = remote_filesystem(str(root)) if is_uri(root) else (None, Path(root))
        self.root: Path | str = str(root) if self.fs is not None else where
        self.dir: Path | str = f"{where}/{namespace}" if self.fs is not None else where / namespace
        self.namespace = namespace

    def key(
        self,
        model: str,
        messages: list[dict],
        params: dict[str, Any],
        sample_index: int = 0,
        api_base: str | None = None,
        rules: str | None = None,
    ) -> str:
        """sha256 of the canonical JSON of the request.

        api_base is in the key (another endpoint may serve another model under the same name); the
        API key and the name of its env var are not (they do not change the answer). `rules`: an offline
        baseline's rules version (adapters.local_providers.rules_of), so a changed rule never serves the replies
        of the old one; in the key only when set, so a model's keys without one are unchanged.
        """
        payload = {
            "v": KEY_VERSION,
            "model": model,
            "api_base": api_base,
            "messages": messages,
            "params": params,
            "sample_index": sample_index,
            **({"rules": rules} if rules else {}),
        }
        try:
            return _sha256(canonical_json(payload))
        except (TypeError, ValueError) as exc:
            raise TypeError(f"ProviderCache.key: request for {model!r} is not plain JSON: {exc}") from exc

    def path_for(self, key: str) -> Path | str:
        """The entry's local Path, or its path within the fsspec filesystem for a URI root."""
        if not _KEY.match(key):
            raise ValueError(f"ProviderCache({self.namespace}): {key!r} is not a 64-hex-digit key")
        if self.fs is not None:
            return f"{self.dir}/{key[:2]}/{key}.json"
        return self.dir / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        """The record stored under `key`, or None if absent or corrupt (a corrupt entry is deleted)."""
        path = self.path_for(key)
        try:
            data = self.fs.cat_file(path) if self.fs is not None else path.read_bytes()
        except FileNotFoundError:
            return None
        problem = None
        try:
            entry = json.loads(data.decode("utf-8"))
        except ValueError as exc:  # UnicodeDecodeError included
            problem = f"not JSON ({exc})"
        else:
            if not isinstance(entry, dict) or not isinstance(entry.get("record"), dict):
                problem = "missing its record"
            elif entry.get("key") != key:
                problem = f"stored key {entry.get('key')!r} is not its file name"
            elif entry.get("digest") != "sha256:" + _sha256(canonical_json(entry["record"])):
                problem = "record does not match its digest"
        if problem is None:
            return entry["record"]
        try:
            self.fs.rm_file(path) if self.fs is not None else path.unlink()
        except FileNotFoundError:
            pass  # a concurrent reader got there first
        warnings.warn(
            f"ProviderCache({self.namespace}): corrupt entry {path}: {problem}; deleted, will be rebuilt",
            CorruptCacheEntryWarning,
            stacklevel=2,
        )
        return None

    def put(self, key: str, record: dict) -> Path | str:
        """Store `record` (plain JSON) under `key` atomically: readers see the old entry or the new one."""
        path = self.path_for(key)
        try:
            body = canonical_json(record)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"ProviderCache({self.namespace}).put {key}: record is not plain JSON: {exc}") from exc
        entry = {"key": key, "digest": "sha256:" + _sha256(body), "record": record}
        if self.fs is not None:
            # One whole object: a single PUT on an object store, so no reader sees half an entry.
            self.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
            self.fs.pipe_file(path, canonical_json(entry).encode("utf-8"))
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        # Same directory as the target, so os.replace is a rename within one filesystem.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:8]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(canonical_json(entry))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        _fsync_dir(path.parent)
        return path


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable; not every platform lets a directory be opened for this.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
