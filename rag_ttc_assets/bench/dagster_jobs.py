"""`k_sweep`, `dagster_overhead` and `code_location_import`: what running through Dagster costs, against the same
work without it (the asset bodies called directly, one arm's build, `import dagster`)."""

from __future__ import annotations

import functools
import itertools
import logging
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, astuple, dataclass
from pathlib import Path
from types import SimpleNamespace

from rag_ttc_assets.adapters import torch_embeddings
from rag_ttc_assets.bench.harness import QUIET, Stopwatch, Target, Timing, alternate, fmt, fresh_home, item, log
from rag_ttc_assets.bench.labs import ARM, K_FAMILY, LabSpec, materialize
from rag_ttc_assets.bench.bench_registry import measurement
from rag_ttc_assets.defs import graph
from rag_ttc_assets.defs.graph import STAGES
from rag_ttc_assets.lab import PROJECT_ROOT, Lab




@measurement("k_sweep")
def bench_k_sweep(spec: LabSpec, base: Path, repeat: int) -> dict:
    from dagster import AssetKey, DagsterInstance

    from rag_ttc_assets.definitions import JOB, build_definitions  # late: dagster, polars load only when this runs

    family = spec.lab(base / "shared").arms.family(K_FAMILY)
    one = family[0]
    torch_embeddings.load(spec.lab(base / "shared").arms[one].embedding_model)  # the model load is no store's cost
    stores = itertools.count(1)  # a fresh store per run, numbered

    def side(arms: list[str]) -> Callable[[], Timing]:
        def run() -> Timing:
            home = fresh_home(base / "k_sweep", f"store-{next(stores)}")
            lab = spec.lab(home)
            job = build_definitions(lab).resolve_job_def(JOB)
            selection = [AssetKey(a) for a in STAGES["retrieval"]]
            with DagsterInstance.ephemeral() as instance, Stopwatch() as sw:
                for arm in arms:
                    job.execute_in_process(run_config=QUIET, partition_key=arm, asset_selection=selection,
                                           instance=instance)
            shutil.rmtree(home, ignore_errors=True)
            return sw.timing

        return run

    # Warm-up in the shared store: Dagster's first run in a process pays imports the others do not.
    materialize(spec.lab(base / "shared"), [one], STAGES["retrieval"])
    prod, ref = alternate("k_sweep", side(family), side([one]), repeat)
    return item("k_sweep", prod, ref, "cost", Target("<=", 1.2),
                f"{len(family)} arms ({', '.join(family)}) to admitted_contexts, fresh store",
                f"1 arm ({one}) to admitted_contexts, fresh store",
                arms=family, detail=f"{len(family)} arms vs 1; ideal ratio ~1 (shared artifacts built once)")


class DirectContext:
    """What the asset and check bodies read from their Dagster context (the arm, a run id, the status of
    earlier runs), supplied without Dagster: the reference side of `dagster_overhead`."""

    def __init__(self, arm: str, run_id: str):
        self.partition_key = arm
        self.run = SimpleNamespace(run_id=run_id)
        self.run_id = run_id
        self.log = logging.getLogger("rag_ttc_assets.bench.direct")  # step progress, when a body reports any
        # No Dagster instance: earlier runs are unknown, exactly as to the product's fresh ephemeral instance.
        self.instance = SimpleNamespace(get_run_by_id=lambda _run_id: None)


def graph_steps(assets: tuple[str, ...] | None) -> list[tuple[str, Callable]]:
    """The per-arm asset bodies (as registered, fingerprint wrapper included, the provider resource bound where
    they take it) in dependency order, each followed by the bodies of its checks; only `assets` and their checks
    when given."""
    import inspect

    from rag_ttc_assets.defs.resources import ProviderResource  # late: dagster loads only when this runs

    specs = graph.specs()
    steps: list[tuple[str, Callable]] = []
    provider = ProviderResource()  # the job's provider resource (definitions.build_definitions' default)
    for name in graph.order(assets):
        fn = specs[name].fn
        # An asset that calls a provider receives the provider resource too, bound here, outside any timing.
        steps.append((name, functools.partial(fn, provider=provider)
                      if "provider" in inspect.signature(fn).parameters else fn))
        steps += [(f"{name}:{c.fn.__name__}", c.fn) for c in graph.checks() if c.asset == name]
    return steps


def lab_resource(lab: Lab):
    """The lab resource the job's steps receive (built with the definitions, as `arm_job` gets it)."""
    from rag_ttc_assets.definitions import build_definitions  # late: dagster, polars load only when this runs

    return build_definitions(lab).resources["lab"]


def direct_arm_graph(lab: Lab, arm: str, assets: tuple[str, ...] | None = None, resource=None,
                     steps: list[tuple[str, Callable]] | None = None) -> dict[str, bool]:
    """Every step of `arm_job` for `arm` (or the `assets` subgraph) as plain calls of the same asset and check
    bodies, with the same lab resource, in dependency order; returns each check's verdict.

    The bench passes `resource` and `steps` built beforehand, as the job side resolves its job beforehand:
    neither side's timing includes building definitions."""
    resource = resource if resource is not None else lab_resource(lab)
    ctx = DirectContext(arm, uuid.uuid4().hex)
    checks = {}
    for name, fn in steps if steps is not None else graph_steps(assets):
        result = fn(ctx, resource)
        if ":" in name:
            checks[name] = bool(result.passed)
    return checks


NOOP_LAYOUTS = ("as_built", "checks_in_assets", "one_step")


@dataclass(frozen=True)
class Layouts:
    """A figure of each no-op layout, in NOOP_LAYOUTS' order (`asdict` is the JSON object, keyed by layout)."""

    as_built: float
    checks_in_assets: float
    one_step: float


@dataclass
class Checked:
    """What each side of `dagster_overhead` last found: the job's success, check verdicts and succeeded steps; the
    direct calls' check verdicts."""

    product: tuple[bool, dict[str, bool], int] | None = None
    reference: dict[str, bool] | None = None


def noop_graph_job(assets: tuple[str, ...] | None, layout: str = "as_built"):
    """A job of the same shape as `arm_job` (same asset names, dependencies, partitions, code versions and checks)
    whose bodies do nothing but return a data version: what Dagster costs with no work of ours at all.

    `layout` tries the two restructurings that would cut Dagster's steps, to show what each would buy:
    ``as_built`` (one step per asset, one per check: `arm_job` as it is), ``checks_in_assets`` (each check
    evaluated inside its asset's step via `check_specs`), ``one_step`` (the whole graph as one `multi_asset`).
    """
    from dagster import (AssetCheckResult, AssetCheckSpec, AssetSelection, AssetSpec, DataVersion, Definitions,
                         MaterializeResult, StaticPartitionsDefinition, asset, asset_check, define_asset_job,
                         multi_asset)

    if layout not in NOOP_LAYOUTS:
        raise ValueError(f"layout {layout!r}: one of {', '.join(NOOP_LAYOUTS)}")
    partitions = StaticPartitionsDefinition([ARM])
    order = graph.order(assets)
    specs = [graph.specs()[name] for name in order]
    names = set(order)
    checks_of: dict[str, list[str]] = {}  # an asset may have several checks (corpus_binding has two)
    for c in graph.checks():
        if c.asset in names:
            checks_of.setdefault(c.asset, []).append(c.fn.__name__)
    inside = layout != "as_built"

    def result(name: str, **kw) -> MaterializeResult:
        return MaterializeResult(metadata={"step": name}, data_version=DataVersion(name),
                                 check_results=[AssetCheckResult(passed=True, asset_key=name, check_name=c)
                                                for c in checks_of.get(name, [])] if inside else [],
                                 **kw)

    def body(name):
        def noop(context):
            return result(name)
        return noop

    def check_body(context):
        return AssetCheckResult(passed=True)

    def own_checks(name):
        return [AssetCheckSpec(c, asset=name) for c in checks_of.get(name, [])] if inside else []

    if layout == "one_step":
        def whole_graph(context):
            for s in specs:
                yield result(s.fn.__name__, asset_key=s.fn.__name__)

        defs_assets = [multi_asset(
            name="noop_graph", specs=[AssetSpec(s.fn.__name__, deps=[d for d in s.deps if d in names],
                                                code_version=s.code_version, partitions_def=partitions)
                                      for s in specs],
            check_specs=[c for s in specs for c in own_checks(s.fn.__name__)])(whole_graph)]
    else:
        defs_assets = [asset(name=s.fn.__name__, partitions_def=partitions, deps=[d for d in s.deps if d in names],
                             code_version=s.code_version, check_specs=own_checks(s.fn.__name__))(body(s.fn.__name__))
                       for s in specs]
    checks = [] if inside else [asset_check(asset=c.asset, name=c.fn.__name__, partitions_def=partitions)(check_body)
                                for c in graph.checks() if c.asset in names]
    selection = AssetSelection.assets(*defs_assets)
    job = define_asset_job("noop_job", selection=selection | AssetSelection.checks(*checks) if checks else selection)
    return Definitions(assets=defs_assets, asset_checks=checks, jobs=[job]).resolve_job_def("noop_job")


def job_checks(result) -> dict[str, bool]:
    return {f"{e.asset_key.to_user_string()}:{e.check_name}": e.passed
            for e in result.get_asset_check_evaluations()}


@measurement("dagster_overhead")
def bench_dagster_overhead(spec: LabSpec, base: Path, repeat: int) -> dict:
    """The whole graph of one arm through `arm_job` with warm caches vs the same bodies called directly;
    then the retrieval graph alone (report only: the cheapest bodies, so the fixed cost shows most)."""
    from dagster import AssetKey, DagsterInstance

    from rag_ttc_assets.definitions import JOB, build_definitions  # late: dagster, polars load only when this runs

    lab = spec.lab(base / "shared")
    log("dagster_overhead: warming the shared store (every artifact of the arm built, answers and judge cached)")
    materialize(lab, [ARM], None)
    job = build_definitions(lab).resolve_job_def(JOB)
    resource = lab_resource(lab)
    out: list[tuple[list[Timing], list[Timing], Checked, int]] = []  # the whole graph, then the retrieval graph
    for label, assets in (("whole graph", None), ("retrieval graph", STAGES["retrieval"])):
        selection = [AssetKey(a) for a in assets] if assets is not None else None
        box = Checked()

        def product() -> Timing:
            with DagsterInstance.ephemeral() as instance:
                with Stopwatch() as sw:
                    result = job.execute_in_process(run_config=QUIET, partition_key=ARM, asset_selection=selection,
                                                    instance=instance)
            box.product = (result.success, job_checks(result),
                           len([e for e in result.all_events if e.event_type_value == "STEP_SUCCESS"]))
            return sw.timing

        steps = graph_steps(assets)

        def reference() -> Timing:
            with Stopwatch() as sw:
                box.reference = direct_arm_graph(lab, ARM, resource=resource, steps=steps)
            return sw.timing

        direct_arm_graph(lab, ARM, assets)  # warm-up of the direct path (first calls pay lazy imports)
        out.append((*alternate(f"dagster_overhead ({label})", product, reference, repeat), box,
                    len(graph_steps(assets))))
    (prod, ref, box, n_steps), (rprod, rref, _, r_steps) = out
    assert box.product is not None
    ok, checks_seen, job_steps = box.product
    retrieval = item("dagster_overhead_retrieval", rprod, rref, "cost", None, "", "")
    ref_s = statistics.median(t[0] for t in ref)
    floors = Layouts(*(noop_floor(None, layout, repeat) for layout in NOOP_LAYOUTS))
    # The ratio these bodies would have if Dagster cost no more than its no-op floor, per layout.
    reachable = Layouts(*((ref_s + f) / ref_s for f in astuple(floors)))
    floor_s, best = floors.as_built, reachable.as_built
    return item("dagster_overhead", prod, ref, "cost", Target("<=", 1.3),
                f"arm_job, every asset and check of {ARM!r} ({n_steps} steps), warm caches, ephemeral instance",
                "the same asset and check bodies called directly in dependency order, same store",
                steps=n_steps, job_steps_succeeded=job_steps, job_success=ok, job_checks=checks_seen,
                direct_checks=box.reference, checks_agree=checks_seen == box.reference,
                noop_floor_s=asdict(floors), noop_floor_ratio=asdict(reachable),
                retrieval_graph={k: retrieval[k] for k in ("product_s", "reference_s", "ratio", "cpu_ratio",
                                                           "product_runs", "reference_runs")}
                | {"steps": r_steps, "noop_floor_s": noop_floor(STAGES["retrieval"], "as_built", repeat)},
                notes=["noop_floor_s: the same graph shape (names, dependencies, partitions, checks, data versions) "
                       "with bodies that do nothing, through the same executor, in three layouts: as built (a step "
                       "per asset and per check), checks inside their assets' steps, the whole graph as one "
                       "multi_asset step; noop_floor_ratio = (reference + floor) / reference, the ratio these bodies "
                       "would reach if Dagster cost no more than that floor"],
                detail=(f"{n_steps} steps, warm caches; Dagster {_per_step(prod, ref, n_steps)} ms/step, its no-op "
                        f"floor {floor_s / n_steps * 1000:.0f} ms/step (best reachable x{best:.3f}; checks in assets "
                        f"x{reachable.checks_in_assets:.3f}; one step x{reachable.one_step:.3f}); retrieval "
                        f"graph alone ({r_steps} steps) x{fmt(retrieval['ratio'])}"))


def noop_floor(assets: tuple[str, ...] | None, layout: str, repeat: int) -> float:
    """Median wall seconds of the no-op job of `layout` (after one untimed warm-up run)."""
    from dagster import DagsterInstance

    job = noop_graph_job(assets, layout)
    times = []
    for i in range(repeat + 1):
        with DagsterInstance.ephemeral() as instance:
            with Stopwatch() as sw:
                ok = job.execute_in_process(run_config=QUIET, partition_key=ARM, instance=instance).success
        if not ok:
            raise RuntimeError(f"the no-op {layout} job failed")
        if i:
            times.append(sw.wall)
    log(f"dagster_overhead: no-op floor ({layout}, {'whole' if assets is None else 'retrieval'} graph) "
         f"{statistics.median(times):.3f}s")
    return statistics.median(times)


def _per_step(prod: list[Timing], ref: list[Timing], steps: int) -> str:
    p, r = statistics.median(t[0] for t in prod), statistics.median(t[0] for t in ref)
    return f"{(p - r) / steps * 1000:.0f}"


def _import_in_fresh_process(module: str, spec: LabSpec, home: Path) -> Timing:
    """Wall and CPU time of `python -c "import <module>"` in a fresh process (children's CPU included)."""
    env = {**os.environ, "RAG_TTC_ARMS": str(spec.arms_file), "RAG_TTC_DATASETS": str(spec.datasets_dir),
           "RAG_TTC_PROMPTS": str(spec.prompts_dir), "RAG_TTC_HOME": str(home),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, env=env,
                          cwd=str(PROJECT_ROOT))
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"import {module} failed in a fresh process: {proc.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


@measurement("code_location_import")
def bench_code_location_import(spec: LabSpec, base: Path, repeat: int) -> dict:
    """What Dagster's multiprocess executor pays per step and `dagster dev` per reload: importing the code location
    (`rag_ttc_assets.definitions`, which loads the arms file and builds the definitions) against `import dagster`
    alone, each in a fresh process."""
    home = fresh_home(base, "code-location-import")
    prod, ref = alternate("code_location_import",
                          lambda: _import_in_fresh_process("rag_ttc_assets.definitions", spec, home),
                          lambda: _import_in_fresh_process("dagster", spec, home), repeat)
    return item("code_location_import", prod, ref, "cost", Target("<=", 1.5),
                "import rag_ttc_assets.definitions (fresh process)", "import dagster (fresh process)",
                detail="litellm, torch, lancedb, tantivy, numpy and polars are imported where they are called")
