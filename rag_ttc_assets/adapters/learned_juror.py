"""The learned juror's parameters file (judging.learned_judge parses it): the one shipped in the package, or another
named by $RAG_TTC_LEARNED_JUROR (a refit: scripts/train_learned_juror.py --out), read and checked once per version of
the file. Its digest is part of the juror's instrument and of its replies' cache key."""

from __future__ import annotations

import os
from pathlib import Path

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag_ttc_assets.judging.learned_judge import LearnedJuror

MODEL = "local/learned"
PARAMETERS = Path(__file__).with_name("learned_juror.json")
ENV = "RAG_TTC_LEARNED_JUROR"

_loaded: dict[tuple[str, int, int], "LearnedJuror"] = {}


def parameters_path() -> Path:
    """The parameters file the juror reads: $RAG_TTC_LEARNED_JUROR, else the one shipped in the package."""
    return Path(os.environ.get(ENV) or PARAMETERS)


def uses_learned_juror(cfg) -> bool:
    """Whether an arm's request judge, or one of its panel's jurors, is the learned juror."""
    return MODEL in ([j.model for j in cfg.request_judges] if cfg.request_judges else [cfg.request_judge.model])


def load_parameters(path: Path | None = None) -> LearnedJuror:
    """The parameters file (parameters_path() by default), parsed and checked (a LearnedJurorError naming the file and
    the field), once per version of the file."""
    # late: numpy (judging.learned_judge), loaded only where an arm names the learned juror
    from rag_ttc_assets.judging.learned_judge import LearnedJurorError, parse_parameters

    path = Path(path) if path else parameters_path()
    try:
        st = path.stat()
        key = (str(path), st.st_mtime_ns, st.st_size)
        if key not in _loaded:
            _loaded[key] = parse_parameters(path.read_bytes(), path)
    except OSError as e:
        raise LearnedJurorError(f"{path}: cannot read the learned juror's parameters ({e.strerror})") from None
    return _loaded[key]
