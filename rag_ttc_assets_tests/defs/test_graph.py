"""The asset graph has one source, the registry: the stages, the bench's graph and the job all derive from it,
so an asset added in one place only fails here instead of being left out of a stage."""

import ast
from collections import Counter
from pathlib import Path

import pytest

import rag_ttc_assets
from rag_ttc_assets.adapters.store import ArmJson, Table, declared_names
from rag_ttc_assets.definitions import JOB, build_definitions
from rag_ttc_assets.defs import graph, arm_registry
from rag_ttc_assets.defs.arm_registry import ArmAssetSpec
from rag_ttc_assets_tests.conftest import REPO


def _job_assets(lab) -> dict[str, set[str]]:
    g = build_definitions(lab).resolve_job_def(JOB).asset_layer.asset_graph
    # Parents that are steps: not the observed arm_config sources each asset also reads (defs/staleness.py).
    return {k.to_user_string(): {p.to_user_string() for p in g.get(k).parent_keys if g.get(p).is_materializable}
            for k in g.executable_asset_keys if g.get(k).partitions_def is not None}


def test_the_graph_is_the_jobs_graph(mini_lab):
    assert {n: set(d) for n, d in graph.deps().items()} == _job_assets(mini_lab)


def test_the_order_is_topological_and_covers_every_asset():
    order = graph.order()
    assert sorted(order) == sorted(s.name for s in arm_registry.SPECS)
    for i, n in enumerate(order):
        assert set(graph.deps()[n]) <= set(order[:i]), n


def test_every_asset_is_in_exactly_one_stage_increment_and_all_is_every_asset():
    increments = graph.stage_increments()
    placed = [n for names in increments.values() for n in names]
    assert sorted(placed) == sorted(graph.order())  # each once
    assert set(graph.STAGES["all"]) == set(graph.STAGES["judge"]) == {s.name for s in arm_registry.SPECS}


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
    """What stages.reports.arm_report reads per stage: retrieval and admission summaries from `retrieval` on, the contract
    summary from `answers` on, the judge and the flow only in `judge`."""
    retrieval, answers = set(graph.STAGES["retrieval"]), set(graph.STAGES["answers"])
    assert {"retrieval_summary", "admitted_contexts"} <= retrieval and "answers" not in retrieval
    assert "contract_summary" in answers and "judge_verdicts" not in answers
    assert {"judge_summary", "failure_flow", "run_record"} <= set(graph.STAGES["judge"])


def test_upstream_is_the_closure_in_order():
    assert graph.upstream("retrieval_rows") == ("corpus_binding", "labels", "chunks", "imported_source",
                                                "representations", "bm25_index", "vector_index", "retrieval_rows")
    with pytest.raises(graph.GraphError, match="'nope' is not a per-arm asset"):
        graph.upstream("nope")


def _spec(name, group, deps):
    def fn(context, lab):
        """A test asset."""

    fn.__name__ = name
    return ArmAssetSpec(fn, group, frozenset({"python"}), deps, "test/1")


def test_an_asset_in_a_group_no_stage_names_fails_loudly(monkeypatch):
    monkeypatch.setattr(arm_registry, "SPECS", [*arm_registry.SPECS, _spec("extra", "reports", ("failure_flow",))])
    with pytest.raises(graph.GraphError, match="asset 'extra': group 'reports' is in no stage"):
        graph.STAGES["all"]


def test_a_stage_whose_asset_needs_a_later_stage_fails_loudly(monkeypatch):
    monkeypatch.setattr(arm_registry, "SPECS", [*arm_registry.SPECS, _spec("early", "retrieval", ("answers",))])
    with pytest.raises(graph.GraphError, match="stage 'retrieval': asset 'early' needs \\['answers'\\]"):
        graph.STAGES["retrieval"]
    assert "early" in graph.STAGES["all"]


def test_an_undeclared_upstream_or_a_cycle_fails_loudly(monkeypatch):
    monkeypatch.setattr(arm_registry, "SPECS", [*arm_registry.SPECS, _spec("orphan", "diagnostics", ("missing",))])
    with pytest.raises(graph.GraphError, match="asset 'orphan' depends on \\['missing'\\]"):
        graph.order()
    monkeypatch.setattr(arm_registry, "SPECS", [_spec("a", "ingest", ("b",)), _spec("b", "ingest", ("a",))])
    with pytest.raises(graph.GraphError, match="dependency cycle"):
        graph.order()


def test_the_stage_names_need_no_dagster():
    import subprocess
    import sys

    code = ("import sys; from rag_ttc_assets.cli import STAGES; names = list(STAGES); "
            "print(names, 'dagster' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['retrieval', 'answers', 'judge', 'all'] False"


# --- the store's tables: one name each, declared by the one asset that writes it ------------------------------
#
# Checked on the source (ast), not by running the assets: a table written or read on a branch the tests never
# take (lookup_cases: tool arms only) is checked as surely as any other, and the check takes milliseconds.

NAMESPACES = {"Table": Table, "ArmJson": ArmJson}
WRITES = {"write_table", "write_arm_json"}
STORE_CALLS = WRITES | {"read_table", "read_arm_json", "table_path"}


def _sources():
    package = Path(rag_ttc_assets.__file__).parent
    return {p.relative_to(package).as_posix(): ast.parse(p.read_text(encoding="utf-8"))
            for p in sorted(package.rglob("*.py"))}


# The resolver's own (stages.resolve.ArmInputs: the arm is bound, the name comes first): arm.table(name),
# arm.arm_json(name), arm.write_table(name, df), arm.write_arm_json(name, value).
RESOLVER_READS = {"table", "arm_json"}


def _store_calls(tree):
    """(method, name argument) of every `<store>.read_table(arm, name)`-like call and every resolver call."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method, args = node.func.attr, node.args
        if method in RESOLVER_READS and len(args) == 1:
            yield method, args[0]
        elif method in WRITES and len(args) == 2:
            yield method, args[0]
        elif method in STORE_CALLS and len(args) >= 2:
            yield method, args[1]


def _constant(node) -> str | None:
    """The store name a `Table.X` / `ArmJson.X` expression stands for (None: another expression)."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in NAMESPACES:
        return getattr(NAMESPACES[node.value.id], node.attr)
    return None


def _asset_functions(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(
                isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "arm_asset"
                for d in node.decorator_list):
            yield node


def test_no_store_call_names_a_table_by_a_bare_string():
    bare = [f"{path}:{arg.lineno}: {method}({arg.value!r})" for path, tree in _sources().items()
            for method, arg in _store_calls(tree) if isinstance(arg, ast.Constant)]
    assert bare == []


def test_every_constant_named_exists():
    """`Table.X` is looked up when the line runs: a misspelt one on a rare branch would fail only there."""
    missing = [f"{path}:{node.lineno}: {node.value.id}.{node.attr}" for path, tree in _sources().items()
               for node in ast.walk(tree)
               if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
               and node.value.id in NAMESPACES and node.attr.isupper()
               and node.attr not in declared_names(NAMESPACES[node.value.id])]
    assert missing == []


def test_every_table_and_summary_is_declared_by_exactly_one_asset():
    """So every read (a `Table` / `ArmJson` constant, by the test above) reads what some asset writes."""
    writers = Counter(w for s in graph.load() for w in s.writes)
    assert {w: n for w, n in writers.items() if n != 1} == {}
    assert set(writers) == {*declared_names(Table).values(), *declared_names(ArmJson).values()}
    assert not set(declared_names(Table).values()) & set(declared_names(ArmJson).values())


def test_each_asset_writes_exactly_what_it_declares_and_only_assets_write():
    specs = graph.specs()
    in_assets = 0
    for path, tree in _sources().items():
        for fn in _asset_functions(tree):
            written = {_constant(arg) for method, arg in _store_calls(fn) if method in WRITES}
            assert None not in written, f"{path}: {fn.name} writes a table whose name is not a constant"
            assert written == set(specs[fn.name].writes), f"{path}: {fn.name}"
            in_assets += sum(method in WRITES for method, _ in _store_calls(fn))
    # No table written outside an asset body (the resolver's write methods forward an asset's write).
    every = sum(method in WRITES for path, tree in _sources().items() if path != "stages/resolve.py"
                for method, _ in _store_calls(tree))
    assert in_assets == every


# --- docs/architecture.md ---------------------------------------------------------------------------------------

def test_the_architecture_doc_shows_the_graph_as_the_registry_has_it():
    doc = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert graph.with_generated(doc) == doc, "run: python -m rag_ttc_assets.defs.graph --write"
    assert all(f"`{n}`" in doc for n in graph.order())


# --- arm fields ------------------------------------------------------------------------------------------------
