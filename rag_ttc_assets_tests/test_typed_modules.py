"""`mypy --strict` on the typed records and the pure logic that is typed whole (issue 43): the models of what
crosses a module boundary (an arm's JSON summaries, the judges' inputs, the arms file, the tables' columns) and the
pure modules whose every function is annotated, in core/ and in the concept folders (judging/, diagnosis/,
imported/, labelling/). A module joins STRICT once it passes; none leaves. The rest is checked by the same command
when it is named here; `--follow-imports=silent` reads what they import for its types without reporting on it."""

import subprocess
import sys

import pytest

from rag_ttc_assets_tests.conftest import REPO

pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -c constraints.txt -e '.[test]'")

STRICT = [
    "core/arms_file", "core/case_comparison", "core/corpus_table", "core/dataset", "core/extractive",
    "core/realsumm", "core/roles",
    "labelling/accept_records", "core/derivation_result", "core/arm_summaries", "core/judge_summaries",
    "judging/judge_inputs", "core/arms", "core/artifacts", "core/tables", "core/contract", "core/records",
    "labelling/label_sampling", "core/compare_guards", "imported/phoenix_source", "core/prompt_markup", "core/prompts",
    "core/response_formats", "core/jsonl", "core/trec_files", "core/ann", "core/chunking", "core/contextual",
    "judging/entailment", "core/eras", "core/fusion", "core/metrics", "core/multiple_testing", "core/evidence_map",
    "core/lfqa", "core/progress", "core/pyramid", "core/representations", "core/usage", "core/wice",
    "diagnosis/diagnosis_inputs", "labelling/ppi", "labelling/ppi_difference", "labelling/ppi_records", "labelling/human_labels",
    "judging/judge_agreement", "judging/claim_agreement", "diagnosis/completeness", "core/measured",
    "labelling/annotation", "core/compare_records", "diagnosis/diagnosis", "diagnosis/diagnosis_decisions",
    "diagnosis/diagnosis_findings", "diagnosis/diagnosis_sentences", "diagnosis/diagnosis_records",
    "core/inspect_view", "core/run_report", "imported/import_mapping", "judging/statement_judge", "core/beir",
    "judging/judge_measurement", "judging/lexical_judge", "core/transitions", "core/counterfactual",
    "core/claim_sets", "labelling/label_diff", "core/answer_rows", "diagnosis/flow", "judging/panel",
    "judging/learned_judge", "core/compare_metrics", "core/admission", "core/request_derivation",
    "judging/agreement_records", "core/run_records", "judging/juror_records", "core/convert_records",
    "labelling/label_log", "labelling/label_drift",
    "core/summaries", "core/supply", "core/text", "judging/request_judge", "imported/import_source",
    "imported/phoenix_annotations", "labelling/label_check",
]


def test_the_typed_modules_pass_mypy_strict():
    files = [str(REPO / "rag_ttc_assets" / f"{m}.py") for m in STRICT]
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental",
                           "--cache-dir=/dev/null", *files], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert f"no issues found in {len(files)} source files" in proc.stdout
