"""`mypy --strict` on the typed records and the pure logic that is typed whole (issue 43): the models of what
crosses a module boundary (an arm's JSON summaries, the judges' inputs, the arms file, the tables' columns) and the
core modules whose every function is annotated. A module joins STRICT once it passes; none leaves. The rest of core
is checked by the same command when it is named here; `--follow-imports=silent` reads what they import for its
types without reporting on it."""

import subprocess
import sys

import pytest

from rag_ttc_assets_tests.conftest import REPO

pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -c constraints.txt -e '.[test]'")

STRICT = [
    "accept_records", "derivation_result", "arm_summaries", "judge_summaries", "judge_inputs", "arms", "artifacts",
    "tables", "contract", "records", "label_sampling", "compare_guards", "phoenix_source", "prompt_markup", "prompts",
    "response_formats", "jsonl", "trec_files", "ann", "chunking", "contextual", "entailment", "eras", "fusion",
    "metrics", "multiple_testing", "evidence_map", "lfqa", "progress", "pyramid", "representations", "usage", "wice",
    "diagnosis_inputs", "ppi", "ppi_difference", "ppi_records", "human_labels", "judge_agreement", "claim_agreement",
    "completeness", "measured", "annotation", "compare_records", "diagnosis", "diagnosis_decisions",
    "diagnosis_findings", "diagnosis_sentences", "diagnosis_records", "inspect_view", "run_report", "import_mapping",
    "judging", "beir", "judge_measurement", "lexical_judge", "transitions", "counterfactual", "claim_sets",
    "label_diff", "answer_rows", "flow", "panel", "learned_judge", "compare_metrics", "admission", "derive_requests",
    "agreement_records", "run_records", "juror_records", "convert_records", "label_log",
    "label_drift",
]


def test_the_typed_modules_pass_mypy_strict():
    files = [str(REPO / "rag_ttc_assets" / "core" / f"{m}.py") for m in STRICT]
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental",
                           "--cache-dir=/dev/null", *files], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert f"no issues found in {len(files)} source files" in proc.stdout
