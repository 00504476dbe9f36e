"""The lab's input files read from disk: the arms file and a dataset folder (core parses their bytes).

Both are read on every asset execution (an asset rebuilds its Lab) but parsed and validated only when their
bytes change: a file's parse is remembered under the digest of its exact bytes, so an edited file is loaded
afresh, and only valid files are remembered, so a broken one raises every time.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from rag_ttc_assets.core.arms import Arms, ArmsError, parse_arms_file
from rag_ttc_assets.core.derive_requests import DERIVED_FILE
from rag_ttc_assets.core.dataset import CORPUS_FILE, EVALUATION_FILE, Dataset, parse_dataset, sha256_digest

_ARMS: dict[tuple[str, str], Arms] = {}
_DATASETS: dict[tuple[str, str, str, str, str], Dataset] = {}
_MAX = 16


def _remember(cache: dict, key, value):
    if len(cache) >= _MAX:
        cache.clear()
    cache[key] = value
    return value


def load_arms(path: Path | str) -> Arms:
    """Read, parse and validate an arms file; ArmsError names the file (and the line or arm and field)."""
    p = Path(path)
    if not p.is_file():
        raise ArmsError(f"{p}: arms file not found")
    data = p.read_bytes()
    key = (str(p), hashlib.sha256(data).hexdigest())
    if key in _ARMS:
        return _ARMS[key]
    return _remember(_ARMS, key, parse_arms_file(data, str(p)))


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def load_dataset(dataset_dir: Path | str, name: str | None = None, use_derived: bool = True) -> Dataset:
    """Read, parse and validate a dataset folder (corpus.json, evaluation.json); DatasetError lists every problem.

    A dataset whose files have exactly the bytes of one loaded before in this process is that same (frozen)
    Dataset object. `use_derived=False` ignores derived_requests.json (the questions it covers get the offline
    rule's requests), as deriving them afresh needs."""
    d = Path(dataset_dir)
    cpath, epath = d / CORPUS_FILE, d / EVALUATION_FILE
    cbytes, ebytes = _read(cpath), _read(epath)
    dpath = d / DERIVED_FILE  # requests derived from gold answers (core.derive_requests), when written
    dbytes = _read(dpath) if use_derived else None
    derived = (dpath, dbytes) if dbytes is not None else None
    name = name or d.name
    if cbytes is None or ebytes is None:
        return parse_dataset(name, cpath, epath, cbytes, ebytes)  # raises, naming the missing file
    key = (str(d), name, sha256_digest(cbytes), sha256_digest(ebytes), sha256_digest(dbytes or b""))
    if key in _DATASETS:
        return _DATASETS[key]
    return _remember(_DATASETS, key, parse_dataset(name, cpath, epath, cbytes, ebytes, derived))
