"""`rag-ttc bench --only unused_index`: what a BM25-only arm costs from a cold store, against its Tantivy build.

Product: the `retrieval-bm25` arm's assets up to `retrieval_rows` (corpus_binding, chunks, representations,
bm25_index, vector_index, retrieval_rows) through the project's job, in a fresh store, as `rag-ttc run` runs
them. Reference: the same arm's Tantivy build alone (`stages.indexes.build_bm25`), in another fresh store whose
dataset binding, chunks and representations were built first, untimed. An arm that paid for the index it never
reads (embedding the corpus and the questions) would show the embedding time over the BM25 time here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ARM = "retrieval-bm25"
TARGET = 1.2


def bench_unused_index(spec, base: Path, repeat: int) -> dict:
    from dagster import AssetKey, DagsterInstance

    from rag_ttc_assets.bench import QUIET, Stopwatch, Target, _fresh_home, alternate, item
    from rag_ttc_assets.core.usage import unused
    from rag_ttc_assets.defs.graph import upstream
    from rag_ttc_assets.definitions import JOB, build_definitions
    from rag_ttc_assets.stages import indexes, ingest

    assets = upstream("retrieval_rows")
    counter = {"n": 0}
    seen: dict = {}

    def product():
        counter["n"] += 1
        home = _fresh_home(base / "unused_index", f"job-{counter['n']}")
        lab = spec.lab(home)
        job = build_definitions(lab).resolve_job_def(JOB)
        with DagsterInstance.ephemeral() as instance:
            with Stopwatch() as sw:
                result = job.execute_in_process(run_config=QUIET, partition_key=ARM, instance=instance,
                                                asset_selection=[AssetKey(a) for a in assets])
            seen["steps"] = {st.step_key: round(st.end_time - st.start_time, 4)
                             for st in instance.get_run_step_stats(result.run_id) if st.end_time and st.start_time}
        seen["built"] = sorted(p.name for p in (lab.store.root / "cache").iterdir()
                               if any(not e.name.startswith(".") for e in p.iterdir()))
        seen["vector_index"] = {k: v.value for k, v in
                                result.asset_materializations_for_node("vector_index")[0].metadata.items()
                                if k in ("used_by_arm", "unused_reason")}
        shutil.rmtree(home, ignore_errors=True)
        return sw.timing

    def reference():
        counter["n"] += 1
        home = _fresh_home(base / "unused_index", f"tantivy-{counter['n']}")
        lab = spec.lab(home)
        cfg = lab.arms[ARM]
        ds = ingest.bind_dataset(lab, cfg)
        reps = ingest.build_representations(lab, cfg, ds, ingest.build_chunks(lab, cfg, ds))
        with Stopwatch() as sw:
            indexes.build_bm25(lab, cfg, ds, reps)
        shutil.rmtree(home, ignore_errors=True)
        return sw.timing

    # Warm-up, untimed: Dagster's first run in a process pays imports the later ones do not.
    reference()
    product()
    prod, ref = alternate("unused_index", product, reference, repeat)
    cfg = spec.lab(base / "shared").arms[ARM]
    steps = seen["steps"]
    return item("unused_index", prod, ref, "cost", Target("<=", TARGET),
                f"{ARM} to retrieval_rows ({', '.join(assets)}) through the job, fresh store",
                f"{ARM}'s Tantivy build alone (stages.indexes.build_bm25), fresh store, representations built first",
                arm=ARM, unused=unused(cfg), built=seen["built"], step_s=seen["steps"], vector_index_metadata=seen["vector_index"],
                detail=f"vector_index step {steps.get('vector_index', 0):.3f}s (used_by_arm false), bm25_index step "
                       f"{steps.get('bm25_index', 0):.3f}s of {len(steps)} steps; the rest is the stage's own work")
