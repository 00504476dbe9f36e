"""The lab's input files read from disk: the arms file, a dataset folder and the prompts (core parses their bytes).

Every asset execution asks for them again (the lab resource, the fingerprint wrapper and the asset body each build
a Lab), but a step process reads, hashes and parses each file once: a file's digest is remembered while its size,
modification time and inode stay the same (`file_digest`), and its parse under the digest of its exact bytes, so
an edited file is loaded afresh; only valid files are remembered, so a broken one raises every time.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from rag_ttc_assets.core.arms_file import Arms, ArmsError, parse_arms_file
from rag_ttc_assets.core.dataset import CORPUS_FILE, EVALUATION_FILE, Dataset, parse_dataset
from rag_ttc_assets.core.request_derivation import DERIVED_FILE
from rag_ttc_assets.core.prompts import Prompt, parse_prompt

_ARMS: dict[tuple[str, str], Arms] = {}
_DATASETS: dict[tuple[str, str, str, str, str], Dataset] = {}
_PROMPTS: dict[tuple[str, str, str, str], Prompt] = {}
_DIGESTS: dict[str, tuple[tuple[int, int, int], str]] = {}
_MAX = 16


def _remember(cache: dict, key, value, most: int = _MAX):
    if len(cache) >= most:
        cache.clear()
    cache[key] = value
    return value


RACY_NS = 2 * 10**9  # a file modified this recently may change again within the same timestamp tick


def _signature(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino


def _bytes_digest(path: Path) -> tuple[bytes, str]:
    """The file's bytes and their sha256, remembered as the file's digest while its signature stays the same."""
    signature = _signature(str(path))
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if signature is not None:
        if len(_DIGESTS) >= 4 * _MAX * _MAX:
            _DIGESTS.clear()
        _DIGESTS[str(path)] = (signature, digest)
    return data, digest


def known_digest(path: Path) -> str | None:
    """The digest remembered for the file, if its signature has not changed since (no read). A file modified in
    the last two seconds is never trusted to its signature (as git does with racily clean files): a second edit
    within the file system's timestamp tick, of the same size, would keep it."""
    known = _DIGESTS.get(str(path))
    if known is None or known[0] != _signature(str(path)) or time.time_ns() - known[0][1] < RACY_NS:
        return None
    return known[1]


def file_digest(path: Path | str) -> str | None:
    """sha256 (hex) of a file's bytes, None when there is no such file; read and hashed once per process while the
    file's size, modification time and inode stay the same."""
    p = str(path)
    if _signature(p) is None:
        return None
    if (known := known_digest(Path(p))) is not None:
        return known
    try:
        return _bytes_digest(Path(p))[1]
    except (IsADirectoryError, FileNotFoundError):
        return None


def load_arms(path: Path | str) -> Arms:
    """Read, parse and validate an arms file; ArmsError names the file (and the line or arm and field)."""
    p = Path(path)
    if not p.is_file():
        raise ArmsError(f"{p}: arms file not found")
    if (str(p), known_digest(p)) in _ARMS:
        return _ARMS[(str(p), known_digest(p))]
    data, digest = _bytes_digest(p)
    if (str(p), digest) in _ARMS:  # read again (edited, or too recently to trust its stat): the same bytes
        return _ARMS[(str(p), digest)]
    return _remember(_ARMS, (str(p), digest), parse_arms_file(data, str(p)))


def load_prompt(path: Path, name: str, kind: str) -> Prompt:
    """Read and parse the prompt file `path` as a prompt of `kind` (PromptError names the file)."""
    if not path.is_file():
        raise FileNotFoundError(f"unknown prompt {name!r} (no file {path})")
    key = (str(path), name, kind, known_digest(path))
    if key in _PROMPTS:
        return _PROMPTS[key]
    data, digest = _bytes_digest(path)
    if (str(path), name, kind, digest) in _PROMPTS:
        return _PROMPTS[(str(path), name, kind, digest)]
    return _remember(_PROMPTS, (str(path), name, kind, digest),
                     parse_prompt(name, data.decode("utf-8"), kind, str(path)), most=16 * _MAX)


def read_text(path: Path | str, error: type[Exception] = ValueError, hint: str = "") -> str:
    """A text file's content (UTF-8); a missing file or bytes that are not UTF-8 raise `error` naming the path
    (a missing one followed by `hint`)."""
    p = Path(path)
    if not p.is_file():
        raise error(f"{path}: file not found{hint}")
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{path}: not valid UTF-8 at byte {e.start}") from None


def _read(path: Path) -> tuple[bytes | None, str | None]:
    try:
        return _bytes_digest(path)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None, None


def load_dataset(dataset_dir: Path | str, name: str | None = None, use_derived: bool = True) -> Dataset:
    """Read, parse and validate a dataset folder (corpus.json, evaluation.json); DatasetError lists every problem.

    A dataset whose files have exactly the bytes of one loaded before in this process is that same (frozen)
    Dataset object. `use_derived=False` ignores derived_requests.json (the questions it covers get the offline
    rule's requests), as deriving them afresh needs."""
    d = Path(dataset_dir)
    cpath, epath = d / CORPUS_FILE, d / EVALUATION_FILE
    dpath = d / DERIVED_FILE  # requests derived from gold answers (core.request_derivation), when written
    use = use_derived and dpath.is_file()
    name = name or d.name
    key = (str(d), name, known_digest(cpath), known_digest(epath), known_digest(dpath) if use else "")
    if None not in key and key in _DATASETS:
        return _DATASETS[key]
    (cbytes, cdigest), (ebytes, edigest) = _read(cpath), _read(epath)
    dbytes, ddigest = _read(dpath) if use else (None, "")
    derived = (dpath, dbytes) if dbytes is not None else None
    if cbytes is None or ebytes is None:
        return parse_dataset(name, cpath, epath, cbytes, ebytes)  # raises, naming the missing file
    key = (str(d), name, cdigest, edigest, ddigest or "")
    if key in _DATASETS:
        return _DATASETS[key]
    ds = parse_dataset(name, cpath, epath, cbytes, ebytes, derived)
    del cbytes, ebytes, dbytes, derived
    release_freed_memory()
    return _remember(_DATASETS, key, ds)


def release_freed_memory() -> None:
    """Hand the memory a parse freed back to the operating system. glibc keeps freed heap pages for reuse, so after
    a large corpus is parsed (its bytes, the parser's own tree) the process stays as large as its peak: a million
    chunks' corpus left about 1 GB resident that nothing used. A no-op where the C library has no malloc_trim."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)
