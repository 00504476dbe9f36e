"""`mypy --strict` on the pure logic, whole (issue 43): every module of core/ and every pure module of the concept
folders (judging/, diagnosis/, imported/, labelling/: those not named `*_stage` or `*_page`, test_purity.py), which
hold the models of what crosses a module boundary (an arm's JSON summaries, the judges' inputs, the arms file, the
tables' columns) and the rules. The set is read from the folders, not listed: a new pure module is checked from its
first commit. `--follow-imports=silent` reads what they import for its types without reporting on it."""

import subprocess
import sys

import pytest

from rag_ttc_assets_tests.conftest import REPO
from rag_ttc_assets_tests.test_purity import PACKAGE, concept_pure_sources

pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -c constraints.txt -e '.[test]'")


def strict_sources() -> list[str]:
    """core/ and the concept folders' pure modules, as paths under the package (package __init__ files left out)."""
    core = [p for p in (PACKAGE / "core").glob("*.py") if p.name != "__init__.py"]
    return sorted(p.relative_to(PACKAGE).as_posix() for p in core + concept_pure_sources() if p.name != "__init__.py")


def test_the_strict_set_holds_core_and_every_concepts_pure_modules() -> None:
    sources = set(strict_sources())
    assert {"core/arms.py", "core/judge_summaries.py", "judging/request_judge.py", "diagnosis/diagnosis.py",
            "imported/import_mapping.py", "labelling/ppi.py"} <= sources
    assert not {s for s in sources if s.endswith(("_stage.py", "_page.py"))}
    assert len(sources) >= 87


def test_the_pure_modules_pass_mypy_strict() -> None:
    files = [str(PACKAGE / m) for m in strict_sources()]
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental",
                           "--cache-dir=/dev/null", *files], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert f"no issues found in {len(files)} source files" in proc.stdout
