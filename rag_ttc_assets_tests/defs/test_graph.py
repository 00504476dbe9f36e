"""The asset graph has one source, the registry: the stages, the bench's graph and the job all derive from it,
so an asset added in one place only fails here instead of being left out of a stage."""

import pytest

from rag_ttc_assets.definitions import JOB, build_definitions
from rag_ttc_assets.defs import graph, registry
from rag_ttc_assets.defs.registry import ArmAssetSpec


def _job_assets(lab) -> dict[str, set[str]]:
    g = build_definitions(lab).resolve_job_def(JOB).asset_layer.asset_graph
    return {k.to_user_string(): {p.to_user_string() for p in g.get(k).parent_keys}
            for k in g.executable_asset_keys if g.get(k).partitions_def is not None}


def test_the_graph_is_the_jobs_graph(mini_lab):
    assert {n: set(d) for n, d in graph.deps().items()} == _job_assets(mini_lab)


def test_the_order_is_topological_and_covers_every_asset():
    order = graph.order()
    assert sorted(order) == sorted(s.name for s in registry.SPECS)
    for i, n in enumerate(order):
        assert set(graph.deps()[n]) <= set(order[:i]), n


def test_every_asset_is_in_exactly_one_stage_increment_and_all_is_every_asset():
    increments = graph.stage_increments()
    placed = [n for names in increments.values() for n in names]
    assert sorted(placed) == sorted(graph.order())  # each once
    assert set(graph.STAGES["all"]) == set(graph.STAGES["judge"]) == {s.name for s in registry.SPECS}


def test_each_stage_holds_the_one_before_it_and_the_upstream_of_its_assets():
    stages = list(graph.STAGES)
    assert stages == ["retrieval", "answers", "judge", "all"]  # the CLI's --stage choices
    for before, after in zip(stages, stages[1:]):
        assert set(graph.STAGES[before]) <= set(graph.STAGES[after])
    for stage in stages:
        names = graph.STAGES[stage]
        assert set(graph.upstream(*names)) == set(names), stage
        assert names == graph.order(names)  # in the graph's order, as the CLI reports what ran


def test_the_stage_ends_are_where_the_cli_expects_them():
    """What cli.arm_report reads per stage: retrieval and admission summaries from `retrieval` on, the contract
    summary from `answers` on, the judge and the flow only in `judge`."""
    retrieval, answers = set(graph.STAGES["retrieval"]), set(graph.STAGES["answers"])
    assert {"retrieval_summary", "admitted_contexts"} <= retrieval and "answers" not in retrieval
    assert "contract_summary" in answers and "judge_verdicts" not in answers
    assert {"judge_summary", "failure_flow", "run_record"} <= set(graph.STAGES["judge"])


def test_upstream_is_the_closure_in_order():
    assert graph.upstream("retrieval_rows") == ("corpus_binding", "chunks", "representations", "bm25_index",
                                                "vector_index", "retrieval_rows")
    with pytest.raises(graph.GraphError, match="'nope' is not a per-arm asset"):
        graph.upstream("nope")


def _spec(name, group, deps):
    def fn(context, lab):
        """A test asset."""

    fn.__name__ = name
    return ArmAssetSpec(fn, group, frozenset({"python"}), deps, "test/1")


def test_an_asset_in_a_group_no_stage_names_fails_loudly(monkeypatch):
    monkeypatch.setattr(registry, "SPECS", [*registry.SPECS, _spec("extra", "reports", ("failure_flow",))])
    with pytest.raises(graph.GraphError, match="asset 'extra': group 'reports' is in no stage"):
        graph.STAGES["all"]


def test_a_stage_whose_asset_needs_a_later_stage_fails_loudly(monkeypatch):
    monkeypatch.setattr(registry, "SPECS", [*registry.SPECS, _spec("early", "retrieval", ("answers",))])
    with pytest.raises(graph.GraphError, match="stage 'retrieval': asset 'early' needs \\['answers'\\]"):
        graph.STAGES["retrieval"]
    assert "early" in graph.STAGES["all"]


def test_an_undeclared_upstream_or_a_cycle_fails_loudly(monkeypatch):
    monkeypatch.setattr(registry, "SPECS", [*registry.SPECS, _spec("orphan", "diagnostics", ("missing",))])
    with pytest.raises(graph.GraphError, match="asset 'orphan' depends on \\['missing'\\]"):
        graph.order()
    monkeypatch.setattr(registry, "SPECS", [_spec("a", "ingest", ("b",)), _spec("b", "ingest", ("a",))])
    with pytest.raises(graph.GraphError, match="dependency cycle"):
        graph.order()


def test_the_stage_names_need_no_dagster():
    import subprocess
    import sys

    code = ("import sys; from rag_ttc_assets.cli import STAGES; names = list(STAGES); "
            "print(names, 'dagster' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['retrieval', 'answers', 'judge', 'all'] False"

