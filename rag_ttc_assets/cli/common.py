"""What every command shares: the error type, the lab from the flags, printing."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from rag_ttc_assets.lab import PROJECT_ROOT, Lab


class CliError(Exception):
    pass


def lab_from_args(args):
    # Flags win over the environment; exporting them lets the Dagster definitions see the same lab.
    for flag, env in (("arms_file", "RAG_TTC_ARMS"), ("datasets_dir", "RAG_TTC_DATASETS"), ("home", "RAG_TTC_HOME")):
        value = getattr(args, flag, None)
        if value:
            os.environ[env] = value if "://" in str(value) else str(Path(value).resolve())
    return Lab.from_env()


def print_result(obj, as_json: bool, text: str) -> None:
    print(json.dumps(obj, indent=2, sort_keys=False, default=str) if as_json else text)


def text_table(cols, rows) -> str:
    cells = [[str(c) for c in cols]] + [[fmt(v) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cols))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4f}"
    return "-" if v is None else str(v)


def dagster_home() -> Path:
    home = Path(os.environ.get("DAGSTER_HOME") or PROJECT_ROOT / ".dagster_home")
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists() and (PROJECT_ROOT / "dagster.yaml").exists():
        shutil.copy(PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    os.environ["DAGSTER_HOME"] = str(home)
    return home
