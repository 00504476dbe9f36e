"""The bench's timing harness: both sides of a measurement alternated and repeated, wall and CPU time, the
ratio against a target, one record per measurement; and the child processes a measurement runs in."""

from __future__ import annotations

import gc
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_ttc_assets.lab import PROJECT_ROOT

RESULT_MARK = "RAG_TTC_BENCH_RESULT "


def log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


@dataclass
class Target:
    op: str  # "<=" (cost ratio) or ">=" (throughput ratio)
    value: float

    def met(self, ratio: float) -> bool:
        return ratio <= self.value if self.op == "<=" else ratio >= self.value

    def __str__(self) -> str:
        return f"{self.op} {self.value:g}"


Timing = tuple[float, float]  # (wall seconds, CPU seconds of this process, all threads)


class Stopwatch:
    """Wall and CPU time of a block. CPU time is reported beside wall time because on a shared
    machine other processes stretch the wall clock but not this process's CPU time."""

    def __enter__(self) -> Stopwatch:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu

    @property
    def timing(self) -> Timing:
        return self.wall, self.cpu


def timed(fn: Callable[[], Any]) -> Callable[[], Timing]:
    """A side whose whole call is timed."""

    def run() -> Timing:
        with Stopwatch() as sw:
            fn()
        return sw.timing

    return run


def alternate(name: str, product: Callable[[], Timing], reference: Callable[[], Timing],
              repeat: int) -> tuple[list[Timing], list[Timing]]:
    """Run both sides `repeat` times, alternating which goes first; each side returns its own timing
    (so a side can keep its untimed setup, such as a fresh store, out of the measurement)."""
    p: list[Timing] = []
    r: list[Timing] = []
    for i in range(repeat):
        sides = [("product", product, p), ("reference", reference, r)]
        for label, fn, acc in (sides if i % 2 == 0 else sides[::-1]):
            gc.collect()
            acc.append(fn())
            log(f"{name}: {label} {acc[-1][0]:.3f}s wall, {acc[-1][1]:.3f}s CPU (round {i + 1}/{repeat})")
    return p, r


def ratio_of(kind: str | None, product: float | None, reference: float | None) -> float | None:
    if not product or not reference:
        return None
    return product / reference if kind == "cost" else reference / product if kind == "throughput" else None


def item(name: str, product_runs: list[Timing], reference_runs: list[Timing] | None, kind: str | None,
         target: Target | None, product: str, reference: str | None, **extra) -> dict:
    """One measurement's record: median wall times, their ratio, the target and the verdict (on wall
    time, as specified), and the same ratio of median CPU times beside it."""

    def med(runs, i):
        return statistics.median(t[i] for t in runs) if runs else None

    ps, rs = med(product_runs, 0), med(reference_runs, 0)
    ratio = ratio_of(kind, ps, rs)
    pc, rc = med(product_runs, 1), med(reference_runs, 1)
    if ratio is None:
        verdict = "skipped" if reference is None and kind is not None else "report"
    elif target is None:
        verdict = "report"
    else:
        verdict = "meets" if target.met(ratio) else "misses"
    return {"name": name, "product_s": ps, "reference_s": rs, "ratio": ratio, "ratio_kind": kind,
            "product_cpu_s": pc, "reference_cpu_s": rc, "cpu_ratio": ratio_of(kind, pc, rc),
            "target": str(target) if target else "report only", "target_op": target.op if target else None,
            "target_value": target.value if target else None, "verdict": verdict,
            "product": product, "reference": reference,
            "product_runs": [t[0] for t in product_runs], "reference_runs": [t[0] for t in reference_runs or []],
            "product_cpu_runs": [t[1] for t in product_runs],
            "reference_cpu_runs": [t[1] for t in reference_runs or []], **extra}


def fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}"
    return "-" if v is None else str(v)


def fresh_home(base: Path, name: str) -> Path:
    home = base / name
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    return home


def rss_mb() -> float | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return None


def maxrss_mb() -> float:
    """This process's own peak resident memory (MB). On Linux the high-water mark of its memory since it started
    (VmHWM of /proc/self/status): `ru_maxrss` is not its own, as Linux keeps it across fork and exec, so a child
    started by a parent holding 6 GB reports at least 6 GB. Elsewhere `ru_maxrss`."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2**10  # kB
    except (OSError, ValueError, IndexError):
        pass
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 2**10  # bytes on macOS, KiB on Linux


# Dagster's console logger at CRITICAL, as `rag-ttc run` runs it (its event log keeps every event): the DEBUG
# lines of a bench's in-process jobs would bury its table, and cost what no user's run pays.
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def run_child(call: str, args: list, label: str, stream_stderr: bool = False) -> dict:
    """Run `call(*args)` (`<module>.<function>`, a module of `rag_ttc_assets.bench`, such as `memory.memory_child`;
    arguments and result JSON values) in a fresh Python process, so its peak memory and imports are its own; return
    its result. The child's stderr is shown as it runs (`stream_stderr`) or quoted in the error when it fails."""
    module, _, function = call.rpartition(".")
    code = (f"import json, sys; from rag_ttc_assets.bench.{module} import {function}; "
            f"print({RESULT_MARK!r} + json.dumps({function}(*map(json.loads, sys.argv[1:]))))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", code, *map(json.dumps, args)], stdout=subprocess.PIPE,
                          stderr=None if stream_stderr else subprocess.PIPE, text=True, env=env, cwd=str(PROJECT_ROOT))
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_MARK)]
    if proc.returncode != 0 or not lines:
        where = "see its stderr above" if stream_stderr else f"its stderr:\n{(proc.stderr or '')[-3000:]}"
        raise RuntimeError(f"{label} child failed (exit {proc.returncode}); {where}")
    return json.loads(lines[-1][len(RESULT_MARK):])
