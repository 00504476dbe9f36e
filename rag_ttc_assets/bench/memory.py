"""`memory`: the peak resident memory of materializing one full arm, in a child process of its own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from rag_ttc_assets.bench.harness import QUIET, Stopwatch, fresh_home, item, log, maxrss_mb, rss_mb, run_child
from rag_ttc_assets.bench.labs import ARM, LabSpec
from rag_ttc_assets.bench.bench_registry import measurement


def memory_child(spec_json: str, home: str, arm: str = ARM) -> dict:
    """In a fresh process: materialize every asset of `arm` in a fresh store; report the memory peak."""
    lab = LabSpec.from_json(spec_json).lab(Path(home))
    from dagster import DagsterInstance

    from rag_ttc_assets.definitions import JOB, build_definitions  # late: dagster, polars load only when this runs

    job = build_definitions(lab).resolve_job_def(JOB)
    before, peak_before = rss_mb(), maxrss_mb()
    with DagsterInstance.ephemeral() as instance, Stopwatch() as sw:
        job.execute_in_process(run_config=QUIET, partition_key=arm, instance=instance)
    peak, after = maxrss_mb(), rss_mb()
    return {"seconds": sw.wall, "cpu_seconds": sw.cpu, "rss_before_mb": before, "peak_before_mb": peak_before, "ru_maxrss_mb": peak,
            "rss_after_mb": after, "rss_delta_mb": (peak - before) if before is not None else None}


@measurement("memory")
def bench_memory(spec: LabSpec, base: Path, repeat: int) -> dict:
    home = fresh_home(base, "memory")
    log(f"memory: materializing every asset of {ARM!r} in a child process")
    try:
        m = run_child("memory.memory_child", [json.dumps(spec.as_json()), str(home)], "memory")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return item("memory", [(m["seconds"], m["cpu_seconds"])], None, None, None,
                f"every asset of {ARM!r} (answers and judge offline), fresh store, child process", None,
                **m, notes=["measured once, not repeated: a peak is not noisy the way a time is"],
                detail=f"peak RSS {m['ru_maxrss_mb']:.0f} MB; delta {m['rss_delta_mb']:.0f} MB "
                       f"over {m['rss_before_mb']:.0f} MB after imports")
