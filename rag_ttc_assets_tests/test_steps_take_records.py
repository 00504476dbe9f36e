"""Steps take records, not the lab (docs/architecture.md, "Who loads, who computes"): below the loaders (the Dagster
assets in defs/, the commands in cli/, the benchmark labs in bench/), no function takes the lab (`rag_ttc_assets.lab.Lab`,
the `LabResource`) or an arm's resolver (`stages.resolve.ArmInputs`, which opens an arm's dataset, chunks, indexes and
tables on first use). Each step's parameters are the records it reads, the settings it uses and the services it calls
(the store, a Caller); the asset or the command loads them and hands them in.

Two places keep the lab by design: `stages/resolve.py` is the loader the assets use, and `stages/calls.role_caller`
builds a provider Caller from the lab's services (its provider cache and the store's message archive). Read with `ast`
from the source; each rule also runs on a small source with the fault planted, so it can fail."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "rag_ttc_assets"
LOADERS = ("defs/", "cli/", "bench/", "definitions.py", "lab.py")
ALLOWED = {"stages/resolve.py": "*", "stages/calls.py": "role_caller"}
LAB_TYPES = {"Lab", "LabResource", "ArmInputs"}
RESOLVER_READS = {"cfg", "lab", "table", "questions", "chunk_list", "chunk_text", "dataset", "arm_json", "support"}


def _resolver_param(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """An unannotated parameter the body reads as a resolver (`arm.cfg`, `arm.table(...)`, `arm.lab`)."""
    return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == name
               and n.attr in RESOLVER_READS for n in ast.walk(fn))


def lab_params(source: str) -> list[tuple[str, str]]:
    """(function, parameter) of every function in `source` that takes the lab or an arm's resolver."""
    out = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs:
            names = ({n.id for n in ast.walk(a.annotation) if isinstance(n, ast.Name)}
                     | {n.attr for n in ast.walk(a.annotation) if isinstance(n, ast.Attribute)}
                     | {n.value for n in ast.walk(a.annotation) if isinstance(n, ast.Constant)}) if a.annotation else set()
            if (a.arg in ("lab", "lab_") or names & LAB_TYPES
                    or (a.annotation is None and a.arg not in ("self", "cls") and _resolver_param(fn, a.arg))):
                out.append((fn.name, a.arg))
    return out


def steps_taking_the_lab(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(LOADERS) or ALLOWED.get(rel) == "*":
            continue
        found += [f"{rel}:{fn}({param})" for fn, param in lab_params(path.read_text(encoding="utf-8"))
                  if ALLOWED.get(rel) != fn]
    return found


def test_no_step_below_the_loaders_takes_the_lab_or_a_resolver():
    found = steps_taking_the_lab(PACKAGE)
    assert not found, ("these take the lab or an arm's resolver; take the records, settings and services they read, "
                       "loaded by the asset or the command:\n  " + "\n  ".join(found))


def test_the_resolver_is_imported_only_by_the_loaders():
    users = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(LOADERS) or rel == "stages/resolve.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "rag_ttc_assets.stages.resolve":
                users.append(rel)
    assert not users, f"stages.resolve (the assets' loader) imported below the loaders: {users}"


def test_the_check_finds_a_planted_lab_a_resolver_and_an_annotated_lab():
    planted = '''
def by_name(lab, arm: str): ...
def annotated(x: "Lab") -> None: ...
def optional(x: ArmInputs | None = None): ...
def resolver(arm):
    return arm.cfg.evidence_k
def fine(store: ArtifactStore, arm: str, cfg: ArmConfig, rows: "pl.DataFrame"): ...
def fine_untyped(arm, rows):
    return arm + rows
class C:
    def method(self, lab_: LabResource): ...
'''
    assert lab_params(planted) == [("by_name", "lab"), ("annotated", "x"), ("optional", "x"), ("resolver", "arm"),
                                   ("method", "lab_")]
