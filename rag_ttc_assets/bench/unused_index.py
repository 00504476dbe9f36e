"""`rag-ttc bench --only unused_index`: what an index a BM25-only arm never reads adds to its retrieval stage.

Both sides run the `retrieval-bm25` arm through the project's job, as `rag-ttc run --stage retrieval` runs it: one
run from a cold store, timed whole. Product: the whole retrieval stage (dataset binding, chunks, representations,
both index assets and `retrieval_rows`), `vector_index` among them, which this arm never reads. Reference: the
same run without `vector_index`. The ratio is what the unread index adds to the work the arm does to retrieve: an
arm that paid for it (embedding the corpus and the questions) shows the embedding time here. (Timed against the
index stage alone, the reference was one short Tantivy build, a few tenths of a second, against which Dagster's
fixed cost of one more step, tens of milliseconds quiet and several times that on a loaded machine, swung the ratio
between 1.07 and 1.25 on a quiet machine; the unread index's own step is reported beside it.)
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from rag_ttc_assets.bench.harness import QUIET, Stopwatch, Target, alternate, fresh_home, item
from rag_ttc_assets.bench.bench_registry import measurement
from rag_ttc_assets.core.usage import unused
from rag_ttc_assets.defs.graph import upstream

ARM = "retrieval-bm25"
TARGET = 1.2
UNREAD = ("vector_index",)  # the index the arm never reads


@measurement("unused_index")
def bench_unused_index(spec, base: Path, repeat: int) -> dict:
    from dagster import AssetKey, DagsterInstance

    from rag_ttc_assets.definitions import JOB, build_definitions  # late: dagster, polars load only when this runs

    runs = 0  # a fresh home per run: side-1, side-2, ...
    seen_steps: dict[str, float] = {}  # the product side's last run: step key -> seconds
    seen_built: list[str] = []  # ... the cache folders it built
    vector_index_metadata: dict[str, Any] = {}  # ... and vector_index's used_by_arm / unused_reason

    def materialize(side: str, timed: tuple[str, ...]):
        """A fresh store, then `timed` in one run of the job."""
        nonlocal runs
        runs += 1
        home = fresh_home(base / "unused_index", f"{side}-{runs}")
        lab = spec.lab(home)
        job = build_definitions(lab).resolve_job_def(JOB)
        with DagsterInstance.ephemeral() as instance:
            def run(names):
                return job.execute_in_process(run_config=QUIET, partition_key=ARM, instance=instance,
                                              asset_selection=[AssetKey(a) for a in names])
            with Stopwatch() as sw:
                result = run(timed)
            steps = {st.step_key: round(st.end_time - st.start_time, 4)
                     for st in instance.get_run_step_stats(result.run_id) if st.end_time and st.start_time}
        built = sorted(p.name for p in (lab.store.root / "cache").iterdir()
                       if any(not e.name.startswith(".") for e in p.iterdir()))
        shutil.rmtree(home, ignore_errors=True)
        return sw.timing, result, steps, built

    stage = upstream("retrieval_rows")
    without = tuple(a for a in stage if a not in UNREAD)

    def product():
        nonlocal seen_steps, seen_built, vector_index_metadata
        timing, result, seen_steps, seen_built = materialize("stage", stage)
        vector_index_metadata = {
            k: v.value for k, v in result.asset_materializations_for_node("vector_index")[0].metadata.items()
            if k in ("used_by_arm", "unused_reason")}
        return timing

    def reference():
        return materialize("without", without)[0]

    # Warm-up, untimed: Dagster's first run in a process pays imports the later ones do not.
    reference()
    product()
    prod, ref = alternate("unused_index", product, reference, repeat)
    cfg = spec.lab(base / "shared").arms[ARM]
    steps = seen_steps
    return item("unused_index", prod, ref, "cost", Target("<=", TARGET),
                f"{ARM}'s retrieval stage ({', '.join(stage)}), one run of the job, cold store",
                f"the same run without {', '.join(UNREAD)} ({', '.join(without)}), cold store",
                arm=ARM, unused=unused(cfg), built=seen_built, step_s=steps,
                product_assets=list(stage), reference_assets=list(without),
                vector_index_metadata=vector_index_metadata,
                detail=f"vector_index step {steps.get('vector_index', 0):.3f}s (used_by_arm false), bm25_index step "
                       f"{steps.get('bm25_index', 0):.3f}s, retrieval_rows step {steps.get('retrieval_rows', 0):.3f}s")
