"""rag_ttc_assets.core, the pure modules of the concept folders (judging/, diagnosis/, imported/, labelling/: those
not named `*_stage` or `*_page`) and rag_ttc_assets.adapters never import dagster (core/__init__.py promises it); the pure
modules do no file I/O."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "rag_ttc_assets"
PURE_PACKAGES = ("core", "adapters")
CONCEPTS = ("judging", "diagnosis", "imported", "labelling")  # tests/test_import_graph.py: the same folders, layered by name


def _is_dagster(module: str) -> bool:
    root = module.split(".")[0]
    return root == "dagster" or root.startswith("dagster_")  # dagster and its integration libraries


def dagster_imports(source: str, filename: str = "<source>") -> list[str]:
    """`file:line: statement` for every import of dagster in `source`, at any depth (functions, TYPE_CHECKING, ...)."""
    found = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Name) and node.func.id in ("__import__", "import_module"))
                   or (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"))):
            names = [node.args[0].value]
        if any(_is_dagster(n) for n in names):
            found.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
    return found


def concept_pure_sources(package: Path = PACKAGE) -> list[Path]:
    """The concept folders' pure modules: every one not named `*_stage` (a stage) or `*_page` (a report)."""
    return sorted(p for c in CONCEPTS for p in (package / c).rglob("*.py") if not p.stem.endswith(("_stage", "_page")))


def pure_sources(package: Path = PACKAGE) -> list[Path]:
    return sorted([p for pkg in PURE_PACKAGES for p in (package / pkg).rglob("*.py")] + concept_pure_sources(package))


def pure_offenders(package: Path = PACKAGE) -> list[str]:
    return [hit for p in pure_sources(package)
            for hit in dagster_imports(p.read_text(encoding="utf-8"), p.relative_to(package).as_posix())]


def test_the_pure_packages_have_sources() -> None:
    names = {p.relative_to(PACKAGE).as_posix() for p in pure_sources()}
    assert {"core/__init__.py", "core/chunking.py", "core/arms.py", "adapters/__init__.py", "judging/request_judge.py",
            "diagnosis/flow.py", "imported/import_source.py"} <= names
    assert not names & {"judging/request_judge_stage.py", "diagnosis/diagnosis_page.py", "imported/import_stage.py"}


def test_core_and_adapters_never_import_dagster() -> None:
    assert pure_offenders() == []


@pytest.mark.parametrize(("source", "hit"), [
    ("import dagster\n", "m.py:1: import dagster"),
    ("import os, dagster as dg\n", "m.py:1: import os, dagster as dg"),
    ("from dagster import asset\n", "m.py:1: from dagster import asset"),
    ("from dagster._core.definitions import AssetKey\n", "m.py:1: from dagster._core.definitions import AssetKey"),
    ("import dagster.core\n", "m.py:1: import dagster.core"),
    ("import dagster_polars\n", "m.py:1: import dagster_polars"),
    ("def f():\n    from dagster import Output\n", "m.py:2: from dagster import Output"),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import dagster\n", "m.py:3: import dagster"),
    ("import importlib\nimportlib.import_module('dagster')\n", "m.py:2: importlib.import_module('dagster')"),
    ("__import__('dagster')\n", "m.py:1: __import__('dagster')"),
])
def test_the_checker_catches_dagster_imports(source: str, hit: str) -> None:
    assert dagster_imports(source, "m.py") == [hit]


@pytest.mark.parametrize("source", [
    "import os\nfrom pathlib import Path\n",
    "from . import dagster\n",  # a sibling module that happens to share the name
    "from .dagster import x\n",
    "import dagsterish\n",
    "x = 'import dagster'\n",
    "# import dagster\n",
])
def test_the_checker_ignores_non_dagster_imports(source: str) -> None:
    assert dagster_imports(source, "m.py") == []


def test_the_checker_fails_on_a_package_tree(tmp_path: Path) -> None:
    (tmp_path / "core" / "sub").mkdir(parents=True)
    (tmp_path / "adapters").mkdir()
    (tmp_path / "defs").mkdir()
    (tmp_path / "core" / "ok.py").write_text("import json\n", encoding="utf-8")
    (tmp_path / "core" / "sub" / "leaky.py").write_text('"""Pure."""\n\nimport json\nfrom dagster import asset\n',
                                                       encoding="utf-8")
    (tmp_path / "adapters" / "store.py").write_text("def f():\n    import dagster as dg\n", encoding="utf-8")
    (tmp_path / "defs" / "assets.py").write_text("import dagster\n", encoding="utf-8")  # allowed outside
    (tmp_path / "judging").mkdir()
    (tmp_path / "judging" / "verdicts.py").write_text("import dagster\n", encoding="utf-8")
    (tmp_path / "judging" / "verdicts_stage.py").write_text("import dagster\n", encoding="utf-8")  # a stage: allowed
    assert pure_offenders(tmp_path) == ["adapters/store.py:2: import dagster as dg",
                                        "core/sub/leaky.py:4: from dagster import asset",
                                        "judging/verdicts.py:1: import dagster"]


# --- core does no file I/O: reading the arms file and the datasets is adapters.input_files' -------------------------

FILE_IO_METHODS = {"read_text", "read_bytes", "write_text", "write_bytes", "open", "is_file", "is_dir", "exists",
                   "iterdir", "glob", "rglob", "mkdir", "unlink", "rmdir", "touch", "stat"}
FILE_IO_MODULES = {"os", "shutil", "tempfile", "glob", "io"}


def file_io(source: str, filename: str = "<source>") -> list[str]:
    """`file:line: expression` for every file-system call in `source`: builtin open, a Path method that reads,
    writes or inspects the file system, or an import of os, shutil, tempfile, glob or io."""
    found = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        hit = False
        if isinstance(node, ast.Call):
            f = node.func
            hit = ((isinstance(f, ast.Name) and f.id == "open")
                   or (isinstance(f, ast.Attribute) and f.attr in FILE_IO_METHODS))
        elif isinstance(node, ast.Import):
            hit = any(a.name.split(".")[0] in FILE_IO_MODULES for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            hit = node.module.split(".")[0] in FILE_IO_MODULES
        if hit:
            found.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_core_does_no_file_io() -> None:
    core = sorted((PACKAGE / "core").rglob("*.py")) + concept_pure_sources()
    assert [hit for p in core for hit in file_io(p.read_text(encoding="utf-8"), p.relative_to(PACKAGE).as_posix())] == []


@pytest.mark.parametrize(("source", "hit"), [
    ("open('x')\n", "m.py:1: open('x')"),
    ("p.read_text(encoding='utf-8')\n", "m.py:1: p.read_text(encoding='utf-8')"),
    ("Path(d).is_file()\n", "m.py:1: Path(d).is_file()"),
    ("import os\n", "m.py:1: import os"),
    ("from shutil import rmtree\n", "m.py:1: from shutil import rmtree"),
])
def test_the_file_io_scan_finds_each_form(source, hit) -> None:
    assert file_io(source, "m.py") == [hit]


def test_the_file_io_scan_passes_pure_code() -> None:
    assert file_io("import json\nx = json.loads(data)\npath = base / 'corpus.json'\n", "m.py") == []


def test_no_adapter_opens_a_lab_of_its_own() -> None:
    """Adapters take the caller's store and paths; `Lab.from_env()` (the RAG_TTC_* environment) may name another."""
    hits = []
    for p in sorted((PACKAGE / "adapters").rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.ImportFrom) and node.module == "rag_ttc_assets.lab") or (
                    isinstance(node, ast.Attribute) and node.attr == "from_env"):
                hits.append(f"{p.relative_to(PACKAGE).as_posix()}:{node.lineno}")
    assert hits == []


# --- a thin CLI: commands print what the assets wrote; the bench and the sweep stand beside it ------------------

def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every absolute import in `path`, at any depth."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name, []) for a in node.names]
    return out


def test_the_bench_imports_nothing_from_the_cli() -> None:
    hits = [f"{p.relative_to(PACKAGE).as_posix()}:{line}: {mod}" for p in sorted((PACKAGE / "bench").rglob("*.py"))
            for line, mod, _ in _imports(p) if mod == "rag_ttc_assets.cli" or mod.startswith("rag_ttc_assets.cli.")]
    assert hits == []


def test_nothing_takes_a_private_name_from_the_cli() -> None:
    hits = [f"{p.relative_to(PACKAGE).as_posix()}:{line}: {mod} {n}" for p in sorted(PACKAGE.rglob("*.py"))
            for line, mod, names in _imports(p) if mod.startswith("rag_ttc_assets.cli")
            for n in names if n.startswith("_")]
    assert hits == []


def test_the_cli_computes_no_metric_and_judges_no_staleness_of_its_own() -> None:
    """The commands read the summaries the assets wrote (stages.reports, ArmJson); tables, fingerprints and the
    store's digests are the assets' and defs.staleness's business."""
    forbidden = {"read_table", "fingerprints", "intact", "fetch_materializations"}
    hits = [f"{p.relative_to(PACKAGE).as_posix()}:{node.lineno}: {node.attr}"
            for p in sorted((PACKAGE / "cli").rglob("*.py"))
            for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
            if isinstance(node, ast.Attribute) and node.attr in forbidden]
    assert hits == []
    # Constants (the flow's branch order for a table's columns) and error types are fine; computations are not.
    computing = ("rag_ttc_assets.diagnosis.flow", "rag_ttc_assets.diagnosis.completeness", "rag_ttc_assets.core.admission",
                 "rag_ttc_assets.core.case_comparison", "rag_ttc_assets.core.compare_guards",
                 "rag_ttc_assets.core.compare_metrics")
    assert [f"{m} {n}" for p in (PACKAGE / "cli").rglob("*.py") for _, m, names in _imports(p) if m in computing
            for n in names if not n.isupper() and not n.endswith("Error")] == []
