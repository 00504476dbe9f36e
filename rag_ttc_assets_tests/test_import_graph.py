"""The package's import graph, built from the source with `ast`: no cycle among its modules (imports inside
functions and under `if TYPE_CHECKING:` counted, relative imports resolved), every import within the layers of
docs/architecture.md, and a function-level import of the package's own code only with a `# late: <reason>`
comment (an optional or heavy dependency that must load when the function runs, not when its module is imported).

Each rule is also run on a small package written by the test, with the fault planted, so the checks can fail."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "rag_ttc_assets"
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"

# docs/architecture.md's layers: the first part of a module's name below the package -> the layers it may import.
# Downward only; `cli` may import everything, `bench` everything but the CLI.
BELOW_DEFS = frozenset({"core", "adapters", "lab", "stages", "report", "defs"})
LAYERS: dict[str, frozenset[str]] = {
    "core": frozenset({"core"}),
    "adapters": frozenset({"core", "adapters"}),
    "lab": frozenset({"core", "adapters"}),
    "stages": frozenset({"core", "adapters", "lab", "stages"}),
    "report": frozenset({"core", "adapters", "lab", "stages", "report"}),
    "defs": BELOW_DEFS,
    "definitions": BELOW_DEFS,
    "terminal": frozenset({"core"}),
    "bench": BELOW_DEFS | {"definitions", "bench"},
    "cli": BELOW_DEFS | {"definitions", "bench", "terminal", "cli"},
    "": frozenset(),  # the package's own __init__
}
# The concept folders (docs/architecture.md): a concept's pure logic and its stage side by side. A module's layer is
# its name's: `<name>_stage` a stage, `<name>_page` a report, any other (and the folder's __init__) pure, as core.
CONCEPTS = frozenset({"judging", "diagnosis", "imported", "labelling"})
LATE = re.compile(r"#\s*late:\s*\S")


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module of the package
    line: int
    in_function: bool
    type_only: bool = False  # under `if TYPE_CHECKING:`: never run, but still a dependency of the design


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package at `root` (a package's `__init__` is its name)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(node: ast.AST) -> bool:
    """`if TYPE_CHECKING:`: its imports never run, but a module that names another's types depends on it, so they
    are edges like any other (a cycle hidden under TYPE_CHECKING is still a cycle in the design)."""
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports(root: Path) -> list[Import]:
    """Every import of the package's own modules in the package at `root`, at any depth (function bodies
    included), relative imports resolved; `from pkg.x import y` names the module `pkg.x.y` when that is one."""
    mods = modules(root)
    package = root.name
    out: list[Import] = []
    for name, path in mods.items():
        base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]

        def targets(node) -> list[str]:
            if isinstance(node, ast.Import):
                return [a.name for a in node.names]
            if node.level:
                if node.level > len(base):
                    raise ValueError(f"{path}:{node.lineno}: relative import beyond the package")
                module = ".".join(base[:len(base) - node.level + 1] + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            return [f"{module}.{a.name}" if f"{module}.{a.name}" in mods else module for a in node.names]

        def visit(nodes, in_function: bool, type_only: bool) -> None:
            for node in nodes:
                if _is_type_checking(node):
                    assert isinstance(node, ast.If)
                    visit(node.body, in_function, True)
                    visit(node.orelse, in_function, type_only)
                    continue
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    for t in targets(node):
                        if t.split(".")[0] == package and t in mods and t != name:
                            out.append(Import(name, t, node.lineno, in_function, type_only))
                    continue
                inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                visit(ast.iter_child_nodes(node), inner, type_only)

        visit(ast.parse(path.read_text(encoding="utf-8"), str(path)).body, False, False)
    return out


def graph(edges: list[Import]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for e in edges:
        out.setdefault(e.source, set()).add(e.target)
        out.setdefault(e.target, set())
    return out


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a -> ... -> a) per strongly connected component of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(g[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(g):
        if v not in index:
            connect(v)
    return [_cycle_in(g, c) for c in components]


def _cycle_in(g: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest cycle through the component's first module, by breadth-first search."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(g[v] & component):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle through {start} in {sorted(component)}")


def layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in CONCEPTS:
        name = parts[2] if len(parts) > 2 else ""
        return "stages" if name.endswith("_stage") else "report" if name.endswith("_page") else "core"
    return parts[1] if len(parts) > 1 else ""


def layer_violations(edges: list[Import], layers: dict[str, frozenset[str]], root: Path) -> list[str]:
    out = []
    for e in edges:
        allowed = layers.get(layer(e.source))
        if allowed is None:
            out.append(f"{e.source}: in no layer of docs/architecture.md (add it to the table and to LAYERS)")
        elif layer(e.target) not in allowed:
            out.append(f"{_where(root, e)}: {e.source} ({layer(e.source) or 'package'}) imports {e.target} "
                       f"({layer(e.target)}); {layer(e.source) or 'package'} may import only "
                       f"{', '.join(sorted(allowed)) or 'nothing of ours'}")
    return out


def unexplained_late_imports(edges: list[Import], root: Path) -> list[str]:
    """Function-level imports of the package's own code without a `# late: <reason>` comment on the import's
    lines or the line above it."""
    mods = modules(root)
    out = []
    for e in edges:
        if not e.in_function:
            continue
        lines = mods[e.source].read_text(encoding="utf-8").splitlines()
        node = next(n for n in ast.walk(ast.parse("\n".join(lines)))
                    if isinstance(n, (ast.Import, ast.ImportFrom)) and n.lineno == e.line)
        around = lines[max(e.line - 2, 0):node.end_lineno]
        if not any(LATE.search(text) for text in around):
            out.append(f"{_where(root, e)}: {e.source} imports {e.target} inside a function with no "
                       "`# late: <reason>`; import it at the top, or say which optional or heavy dependency it defers")
    return sorted(set(out))


def _where(root: Path, e: Import) -> str:
    return f"{modules(root)[e.source].relative_to(root.parent).as_posix()}:{e.line}"


def _cycle_text(cycle: list[str]) -> str:
    return " -> ".join(cycle)


def assert_acyclic(root: Path) -> None:
    found = [_cycle_text(c) for c in cycles(graph(imports(root)))]
    assert not found, ("import cycles (move the shared piece down a layer, or split a module):\n  "
                       + "\n  ".join(found))


def assert_layered(root: Path) -> None:
    found = layer_violations(imports(root), LAYERS, root)
    assert not found, "imports against the layers of docs/architecture.md:\n  " + "\n  ".join(found)


def assert_late_imports_explained(root: Path) -> None:
    found = unexplained_late_imports(imports(root), root)
    assert not found, "\n".join(found)


# --- the package ----------------------------------------------------------------------------------------------

def test_the_package_has_no_import_cycle() -> None:
    assert_acyclic(PACKAGE)


def test_every_import_stays_within_the_layers_of_the_architecture() -> None:
    assert_layered(PACKAGE)


def test_every_late_import_of_our_own_code_says_why() -> None:
    assert_late_imports_explained(PACKAGE)


def test_the_architecture_table_names_every_layer_the_test_enforces() -> None:
    """docs/architecture.md's layer table and LAYERS describe the same layers."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    table = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`(?:rag_ttc_assets/)?([a-z_]+)(?:/|\.py)`", table))
    assert {k for k in LAYERS if k} | CONCEPTS <= named, sorted(({k for k in LAYERS if k} | CONCEPTS) - named)
    for name in ({k for k in LAYERS if k} | CONCEPTS) - {"definitions", "terminal"}:
        assert (PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").is_file(), name
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert folders <= set(LAYERS) | CONCEPTS, sorted(folders - set(LAYERS) - CONCEPTS)


def shared_names(root: Path) -> dict[str, list[str]]:
    """Module name -> the folders holding a module of that name (package __init__ and __main__ left out)."""
    by_name: dict[str, list[str]] = {}
    for name, path in modules(root).items():
        if path.name not in ("__init__.py", "__main__.py"):
            by_name.setdefault(name.rsplit(".", 1)[1], []).append(path.parent.relative_to(root).as_posix())
    return {n: sorted(f) for n, f in by_name.items() if len(f) > 1}


def test_no_module_name_is_shared_across_folders() -> None:
    """One name, one module: a reader looking for a concept finds one file. Where a layer pair would share a name,
    one side says which it is: `defs/generation_assets.py` beside `stages/generation.py`, `adapters/wice_reader.py`
    beside `core/wice.py`, `bench/bench_metrics.py` beside `core/metrics.py`."""
    shared = shared_names(PACKAGE)
    assert not shared, shared


def test_the_shared_name_scan_finds_a_planted_pair(tmp_path) -> None:
    root = _write(tmp_path, {**CLEAN, "pkg/core/a.py": "", "pkg/stages/sub/__init__.py": "",
                             "pkg/stages/sub/a.py": ""}) / "pkg"
    assert shared_names(root) == {"a": ["core", "stages", "stages/sub"]}


# --- the checks themselves, on a package with the fault planted --------------------------------------------------

def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


CLEAN = {
    "pkg/__init__.py": "",
    "pkg/core/__init__.py": "",
    "pkg/core/x.py": "VALUE = 1\n",
    "pkg/stages/__init__.py": "",
    "pkg/stages/a.py": "from pkg.core import x\n\n\ndef f():\n    from . import b  # late: b loads a heavy library\n"
                       "    return b.g() + x.VALUE\n",
    "pkg/stages/b.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from pkg.core import x\n\n\n"
                       "def g() -> x.Value:\n    return 2\n",
}


def test_a_clean_package_passes_every_check(tmp_path) -> None:
    root = _write(tmp_path, CLEAN) / "pkg"
    edges = imports(root)
    assert {(e.source, e.target, e.in_function, e.type_only) for e in edges} == {
        ("pkg.stages.a", "pkg.core.x", False, False), ("pkg.stages.a", "pkg.stages.b", True, False),
        ("pkg.stages.b", "pkg.core.x", False, True)}  # TYPE_CHECKING: an edge, marked type-only
    assert_acyclic(root)
    assert_layered(root)
    assert_late_imports_explained(root)


def test_a_planted_cycle_through_a_function_level_relative_import_fails_naming_it(tmp_path) -> None:
    root = _write(tmp_path, {**CLEAN, "pkg/stages/b.py": "from ..stages import c\n\n\ndef g():\n    return 2\n",
                             "pkg/stages/c.py": "def h():\n    from pkg.stages.a import f  # late: planted\n"
                                                "    return f()\n"}) / "pkg"
    assert [_cycle_text(c) for c in cycles(graph(imports(root)))] == [
        "pkg.stages.a -> pkg.stages.b -> pkg.stages.c -> pkg.stages.a"]
    with pytest.raises(AssertionError, match=r"import cycles .*\n\s+pkg\.stages\.a -> pkg\.stages\.b -> "
                                             r"pkg\.stages\.c -> pkg\.stages\.a\n"):
        assert_acyclic(root)


def test_a_planted_cycle_through_a_type_checking_import_fails_naming_it(tmp_path) -> None:
    """An import under `if TYPE_CHECKING:` never runs, but a module naming another's types depends on it: a cycle
    through one is a cycle of the design (as cli.annotate and its page had, one importing the other's class back
    for a type)."""
    root = _write(tmp_path, {**CLEAN, "pkg/stages/b.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                                                         "    from pkg.stages.a import f\n\n\n"
                                                         "def g():\n    return 2\n"}) / "pkg"
    assert [_cycle_text(c) for c in cycles(graph(imports(root)))] == ["pkg.stages.a -> pkg.stages.b -> pkg.stages.a"]
    with pytest.raises(AssertionError, match=r"pkg\.stages\.a -> pkg\.stages\.b -> pkg\.stages\.a"):
        assert_acyclic(root)


def test_a_planted_upward_import_breaks_a_layer_rule(tmp_path) -> None:
    root = _write(tmp_path, {**CLEAN, "pkg/report/__init__.py": "", "pkg/report/r.py": "X = 1\n",
                             "pkg/core/y.py": "def f():\n    from pkg.stages import a  # late: planted\n    return a\n",
                             "pkg/stages/d.py": "from pkg.report.r import X\n"}) / "pkg"
    assert layer_violations(imports(root), LAYERS, root) == [
        "pkg/core/y.py:2: pkg.core.y (core) imports pkg.stages.a (stages); core may import only core",
        "pkg/stages/d.py:1: pkg.stages.d (stages) imports pkg.report.r (report); stages may import only adapters, "
        "core, lab, stages"]
    with pytest.raises(AssertionError, match="pkg.core.y"):
        assert_layered(root)


def test_a_concept_folder_layers_its_modules_by_name(tmp_path) -> None:
    """In a concept folder the pure module may not import its stage, nor a stage its page; the stage may import the
    pure module, and a core module the concept's pure module."""
    root = _write(tmp_path, {**CLEAN, "pkg/judging/__init__.py": "",
                             "pkg/judging/verdicts.py": "from pkg.judging import verdicts_stage\n",
                             "pkg/judging/verdicts_stage.py": "from pkg.judging import verdicts\nfrom pkg.stages import a\n",
                             "pkg/judging/verdicts_page.py": "from pkg.judging import verdicts_stage\n",
                             "pkg/core/z.py": "from pkg.judging import verdicts\n",
                             "pkg/stages/e.py": "from pkg.judging import verdicts_page\n"}) / "pkg"
    assert [layer(m) for m in ("pkg.judging", "pkg.judging.verdicts", "pkg.judging.verdicts_stage",
                               "pkg.judging.verdicts_page")] == ["core", "core", "stages", "report"]
    assert layer_violations(imports(root), LAYERS, root) == [
        "pkg/judging/verdicts.py:1: pkg.judging.verdicts (core) imports pkg.judging.verdicts_stage (stages); "
        "core may import only core",
        "pkg/stages/e.py:1: pkg.stages.e (stages) imports pkg.judging.verdicts_page (report); stages may import only "
        "adapters, core, lab, stages"]


def test_a_planted_late_import_without_a_reason_fails(tmp_path) -> None:
    root = _write(tmp_path, {**CLEAN, "pkg/stages/a.py": "def f():\n    from pkg.core.x import VALUE\n"
                                                         "    return VALUE\n"}) / "pkg"
    assert unexplained_late_imports(imports(root), root) == [
        "pkg/stages/a.py:2: pkg.stages.a imports pkg.core.x inside a function with no `# late: <reason>`; import it "
        "at the top, or say which optional or heavy dependency it defers"]
    with pytest.raises(AssertionError, match="no `# late: <reason>`"):
        assert_late_imports_explained(root)
