"""The two sides of `rag-ttc bench --only dagster_overhead`: the reference must run every step the job runs,
in an order the job could run them, and produce what the job produces; the no-op floor must have the job's shape.
Ratios are not asserted (shared, noisy machines)."""

import json

import pytest
from dagster import DagsterInstance

from rag_ttc_assets.bench import dagster_jobs as bench
from rag_ttc_assets.bench.labs import ARM
from rag_ttc_assets.definitions import JOB, build_definitions
from rag_ttc_assets.defs.graph import STAGES

SUMMARIES = ("retrieval_summary.json", "admission_summary.json", "contract_summary.json", "judge_summary.json",
             "failure_flow.json")


def _job_shape(job) -> tuple[dict[str, set[str]], set[str]]:
    graph = job.asset_layer.asset_graph
    # Parents that are steps: not the observed arm_config sources each asset also reads (defs/staleness.py).
    assets = {k.to_user_string(): {p.to_user_string() for p in graph.get(k).parent_keys
                                   if graph.get(p).is_materializable}
              for k in graph.executable_asset_keys if graph.get(k).partitions_def is not None}
    checks = {f"{c.asset_key.to_user_string()}:{c.name}" for c in graph.asset_check_keys}
    return assets, checks


def _summaries(store, arm) -> dict:
    """The arm's summaries, without the judge's provider-call counters (the first pass calls, the second hits)."""
    out = {name: json.loads(store.arm_path(arm, name).read_text()) for name in SUMMARIES}
    for k in ("provider_calls", "cache_hits"):
        out["judge_summary.json"].pop(k)
    return out


def test_direct_steps_cover_the_job_in_an_order_it_could_run(mini_lab):
    assets, checks = _job_shape(build_definitions(mini_lab).resolve_job_def(JOB))
    steps = [name for name, _ in bench.graph_steps(None)]
    assert {s for s in steps if ":" not in s} == set(assets)
    assert {s for s in steps if ":" in s} == checks
    seen: set[str] = set()
    for s in steps:
        if ":" in s:
            assert s.split(":")[0] in seen  # a check runs after its asset
        else:
            assert assets[s] <= seen, f"{s} before its upstream {assets[s] - seen}"
        seen.add(s.split(":")[0])

    sub = [name for name, _ in bench.graph_steps(STAGES["retrieval"])]
    assert {s for s in sub if ":" not in s} == set(STAGES["retrieval"])


@pytest.mark.parametrize("layout", bench.NOOP_LAYOUTS)
def test_noop_floor_jobs_materialize_the_arm_jobs_assets_and_checks(mini_lab, layout):
    real_assets, real_checks = _job_shape(build_definitions(mini_lab).resolve_job_def(JOB))
    noop = bench.noop_graph_job(None, layout)
    if layout == "as_built":
        assert _job_shape(noop) == (real_assets, real_checks)  # the same graph, step for step
    with DagsterInstance.ephemeral() as instance:
        result = noop.execute_in_process(partition_key=ARM, instance=instance)
    assert result.success
    assert {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()} == set(real_assets)
    assert set(bench.job_checks(result)) == real_checks and all(bench.job_checks(result).values())
    steps = {e.step_key for e in result.all_events if e.event_type_value == "STEP_SUCCESS"}
    assert len(steps) == {"as_built": len(real_assets) + len(real_checks), "checks_in_assets": len(real_assets),
                          "one_step": 1}[layout]


def test_unknown_noop_layout_is_refused():
    with pytest.raises(ValueError, match="layout 'two_steps': one of as_built, checks_in_assets, one_step"):
        bench.noop_graph_job(None, "two_steps")


def test_direct_reference_does_the_jobs_work(mini_lab):
    """Run the whole graph of one arm directly in a fresh store, then through the job on the same store:
    the job's checks agree with the direct ones, and every summary the job writes equals the direct one."""
    arm = ARM
    store = mini_lab.store
    direct_checks = bench.direct_arm_graph(mini_lab, arm)
    assert direct_checks and all(direct_checks.values()), direct_checks
    direct = _summaries(store, arm)
    files = {p.name for p in store.arm_path(arm, "").iterdir()}
    assert {"answers.parquet", "judge_verdicts.parquet", "failure_flow.parquet"} <= files

    job = build_definitions(mini_lab).resolve_job_def(JOB)
    with DagsterInstance.ephemeral() as instance:
        result = job.execute_in_process(partition_key=arm, instance=instance)
    assert result.success
    assert bench.job_checks(result) == direct_checks
    assert _summaries(store, arm) == direct
    judged = json.loads(store.arm_path(arm, "judge_summary.json").read_text())
    assert judged["provider_calls"] == 0 and judged["cache_hits"] > 0  # the second pass ran on warm caches
    assert {p.name for p in store.arm_path(arm, "").iterdir()} == files

    # The retrieval subgraph alone: only its assets are touched.
    before = {name: store.arm_path(arm, name).stat().st_mtime_ns for name in ("answers.parquet", "judge_summary.json")}
    sub = bench.direct_arm_graph(mini_lab, arm, STAGES["retrieval"])
    assert set(sub) == {"labels:digest_binding", "labels:labels_current"}
    assert {name: store.arm_path(arm, name).stat().st_mtime_ns for name in before} == before
