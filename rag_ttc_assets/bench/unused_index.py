"""`rag-ttc bench --only unused_index`: what an index a BM25-only arm never reads adds to its index stage.

Both sides run the `retrieval-bm25` arm through the project's job, as `rag-ttc run --stage` runs it: one run from
a cold store, timed whole. Product: the stage up to the indexes (dataset binding, chunks, representations and both
index assets: `bm25_index`, and `vector_index`, which this arm never reads). Reference: the same run without
`vector_index`. The ratio is what the unread index adds to the work the arm needs: an arm that paid for it
(embedding the corpus) shows the embedding time here. (Timed alone, the reference would be one short Tantivy
build against which Dagster's fixed cost of one more step, about 0.1 s quiet and several times that on a loaded
machine, swung the ratio between 1.1 and 1.6; the unread index's own step is reported beside it.) The whole
retrieval stage from a cold store (corpus_binding ... retrieval_rows) is timed once beside it and reported, not
compared: it is the arm's own work.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from rag_ttc_assets.bench.harness import QUIET, Stopwatch, Target, alternate, fresh_home, item
from rag_ttc_assets.bench.registry import measurement
from rag_ttc_assets.core.usage import unused
from rag_ttc_assets.defs.graph import upstream

ARM = "retrieval-bm25"
TARGET = 1.2
SETUP = ("corpus_binding", "chunks", "representations")
INDEXES = ("bm25_index", "vector_index")


@measurement("unused_index")
def bench_unused_index(spec, base: Path, repeat: int) -> dict:
    from dagster import AssetKey, DagsterInstance

    from rag_ttc_assets.definitions import JOB, build_definitions  # late: dagster, polars load only when this runs

    counter = {"n": 0}
    seen: dict = {}

    def materialize(side: str, timed: tuple[str, ...], setup: tuple[str, ...] = SETUP):
        """A fresh store; `setup` materialized untimed, then `timed`, each in one run of the job."""
        counter["n"] += 1
        home = fresh_home(base / "unused_index", f"{side}-{counter['n']}")
        lab = spec.lab(home)
        job = build_definitions(lab).resolve_job_def(JOB)
        with DagsterInstance.ephemeral() as instance:
            def run(names):
                return job.execute_in_process(run_config=QUIET, partition_key=ARM, instance=instance,
                                              asset_selection=[AssetKey(a) for a in names])
            if setup:
                run(setup)
            with Stopwatch() as sw:
                result = run(timed)
            steps = {st.step_key: round(st.end_time - st.start_time, 4)
                     for st in instance.get_run_step_stats(result.run_id) if st.end_time and st.start_time}
        built = sorted(p.name for p in (lab.store.root / "cache").iterdir()
                       if any(not e.name.startswith(".") for e in p.iterdir()))
        shutil.rmtree(home, ignore_errors=True)
        return sw.timing, result, steps, built

    def product():
        timing, result, steps, built = materialize("indexes", (*SETUP, *INDEXES), setup=())
        seen.update(steps=steps, built=built, vector_index={
            k: v.value for k, v in result.asset_materializations_for_node("vector_index")[0].metadata.items()
            if k in ("used_by_arm", "unused_reason")})
        return timing

    def reference():
        return materialize("tantivy", (*SETUP, "bm25_index"), setup=())[0]

    # Warm-up, untimed: Dagster's first run in a process pays imports the later ones do not.
    reference()
    product()
    prod, ref = alternate("unused_index", product, reference, repeat)
    stage = upstream("retrieval_rows")
    stage_timing, _, stage_steps, stage_built = materialize("stage", stage, setup=())
    cfg = spec.lab(base / "shared").arms[ARM]
    steps = seen["steps"]
    return item("unused_index", prod, ref, "cost", Target("<=", TARGET),
                f"{ARM}'s stage up to its indexes ({', '.join((*SETUP, *INDEXES))}), one run of the job, cold store",
                f"the same run without vector_index ({', '.join((*SETUP, 'bm25_index'))}), cold store",
                arm=ARM, unused=unused(cfg), built=seen["built"], step_s=steps,
                vector_index_metadata=seen["vector_index"],
                stage={"assets": list(stage), "wall_s": round(stage_timing[0], 4), "step_s": stage_steps,
                       "built": stage_built},
                detail=f"vector_index step {steps.get('vector_index', 0):.3f}s (used_by_arm false), bm25_index step "
                       f"{steps.get('bm25_index', 0):.3f}s; the whole retrieval stage from a cold store "
                       f"{stage_timing[0]:.2f}s")
