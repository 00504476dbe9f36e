"""What every command shares: the error type, the lab from the flags, printing."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from rag_ttc_assets.lab import PROJECT_ROOT, Lab

if TYPE_CHECKING:
    from rag_ttc_assets.labelling.human_page import HumanLabels
    from rag_ttc_assets.report.collect import ArmViews


class CliError(Exception):
    pass


def read_labels(lab: Lab, path: str | Path | None) -> HumanLabels | None:
    """The people's labels a command reads (labelling.human_page.read): the file `path` (refused when bad), else the
    store's default labels file when it exists; checked against the lab's arms, their questions and answer rows."""
    from rag_ttc_assets.labelling import human_page  # late: reads the labels with polars tables when this runs

    return human_page.read(lab.store, path, arms=lab.arms, arms_file=lab.arms_file, datasets_dir=lab.datasets_dir)


def case_views(lab: Lab) -> ArmViews:
    """How a command's case reports read each arm they show: its CaseSources loaded from the lab
    (stages.resolve.case_sources), its tables from the store, its current run from the run folders
    (report.collect.arm_views)."""
    from rag_ttc_assets.report.collect import arm_views  # late: polars loads only when this runs
    from rag_ttc_assets.stages.resolve import ArmInputs, case_sources  # late: as above

    return lambda arm, labels: arm_views(case_sources(ArmInputs(lab, arm)), lab.store, lab.runs, labels)


def lab_from_args(args):
    # Flags win over the environment; exporting them lets the Dagster definitions see the same lab.
    for flag, env in (("arms_file", "RAG_TTC_ARMS"), ("datasets_dir", "RAG_TTC_DATASETS"), ("home", "RAG_TTC_HOME")):
        value = getattr(args, flag, None)
        if value:
            os.environ[env] = value if "://" in str(value) else str(Path(value).resolve())
    return Lab.from_env()


def serve_until_stopped(server, banner: str) -> int:
    """Serve a bound HTTP server (the reports, the labelling page) until Ctrl-C or SIGTERM, after printing where."""
    import signal
    import sys

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(banner, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


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
    """The Dagster instance `rag-ttc` records runs in: DAGSTER_HOME when set; else the lab's own, `.dagster_home`
    in the store's home (RAG_TTC_HOME, beside `store/` and `runs/`), so a lab folder's runs neither land in the
    checkout's instance nor wait for another lab's `provider` pool slots; the checkout's store (the default home)
    and a store in an object store keep the checkout's `.dagster_home`, the one `make dev` opens. A new instance
    folder gets the repository's dagster.yaml (run queue, the `provider` pool's limit)."""
    home = Path(os.environ.get("DAGSTER_HOME") or _lab_dagster_home())
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists() and (PROJECT_ROOT / "dagster.yaml").exists():
        shutil.copy(PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def _lab_dagster_home() -> Path:
    default = PROJECT_ROOT / ".dagster_home"
    lab = Lab.from_env()
    if not lab.local or lab.home.resolve() == (PROJECT_ROOT / ".rag_ttc").resolve():
        return default
    return lab.home.resolve() / ".dagster_home"
