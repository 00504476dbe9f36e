"""Every table built from rows is typed by its declaration (core.tables), never by its first rows (issue 41).

polars types a frame built from dicts by its first 100 rows: a table whose first rows are all of one rare kind
(unanswered, abstained, contract-invalid, not measured) left a column empty there and failed on the first ordinary
row ("could not append value ... infer_schema_length"), or typed it Null. Here each table is built by the stage
functions its asset calls, in the assets' order, from a set whose first 1,000 rows are of one rare kind, followed by
ordinary rows; every table must come out with its declared columns and dtypes. The tests are parametrized over the
declared tables: a table without a builder here fails, and no frame is built from rows outside
adapters/table_types.py (which builds with the full declared schema)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
import yaml

from rag_ttc_assets.adapters.table_types import dtype_of, schema_frame, table_frame
from rag_ttc_assets.core.tables import Table, TableSchemaError, declared_tables
from rag_ttc_assets_tests.conftest import write_dataset

RARE, ORDINARY = 1000, 10
KINDS = ("unanswered", "abstained", "contract_invalid")
PACKAGE = Path(__file__).resolve().parent.parent / "rag_ttc_assets"


def _question(i: int) -> dict:
    # Every tenth question is unanswerable, so the abstention table's first rows are rare too.
    answerable = i % 10 != 9
    return {"id": f"q{i:04d}", "text": f"Which river is number {i}?", "answerable": answerable,
            "targets": [{"doc_id": f"d{i}", "relevance": 1}] if answerable else [],
            "requests": [{"id": f"q{i:04d}.r1", "text": f"Which river is number {i}?",
                          "evidence": [{"doc_id": f"d{i}", "quote": f"The Alpha{i} is river number {i}."}]
                          if answerable else []}]}


def _doc(i: int) -> dict:
    return {"id": f"d{i}", "title": f"River {i}", "text": f"The Alpha{i} is river number {i}. It flows north."}


def _response(i: int, kind: str) -> str:
    if i >= RARE:  # an ordinary row: a valid answer citing its document (the last unanswerable one answers anyway)
        rid = f"q{i:04d}.r1"
        return json.dumps({"answer": f"The Alpha{i} is river number {i}.", "citation_chunk_ids": [f"d{i}"],
                           "abstained": False, "requests": [{"request": rid, "answer": f"The Alpha{i}.",
                                                             "citation_chunk_ids": [f"d{i}"], "supported": True}]})
    if kind == "abstained":
        return json.dumps({"answer": "The evidence does not say.", "citation_chunk_ids": [], "abstained": True})
    return json.dumps({"answer": f"river {i}"})  # contract_invalid: the contract's fields missing


@pytest.fixture(scope="module", params=KINDS)
def built(request, tmp_path_factory) -> dict[str, pl.DataFrame]:
    """Every table of an imported arm (and a tool arm's lookup cases) built by the stage functions from a set whose
    first RARE questions are all of one rare kind; each written through the store, which checks the declaration."""
    from rag_ttc_assets.core.roles import JUDGE, REQUEST_JUDGE
    from rag_ttc_assets.lab import Lab
    from rag_ttc_assets.stages import retrieval, arm_supply
    from rag_ttc_assets.diagnosis import diagnostics_stage
    from rag_ttc_assets.imported import import_stage
    from rag_ttc_assets.judging import request_judge_stage, statement_judge_stage
    from rag_ttc_assets.stages.calls import role_caller
    from rag_ttc_assets.stages.resolve import ArmInputs

    kind = request.param
    root = tmp_path_factory.mktemp(kind)
    n = RARE + ORDINARY
    write_dataset(root / "datasets" / "rare", {"documents": [_doc(i) for i in range(n)]},
                  [_question(i) for i in range(n)])
    rows = [{"query_id": f"q{i:04d}", "query": f"Which river is number {i}?", "gt_answer": f"The Alpha{i}.",
             "response": _response(i, kind), "retrieved_context": [_doc(i) | {"doc_id": f"d{i}"}]}
            for i in range(n) if i >= RARE or kind != "unanswered"]
    (root / "rc.json").write_text(json.dumps({"results": rows}))
    (root / "arms.yaml").write_text(yaml.safe_dump({"defaults": {"dataset": "rare"}, "arms": {
        "imp": {"supply": "imported", "source": {"file": "rc.json", "format": "ragchecker",
                                                 "answer_format": "contract"}},
        "tool": {"supply": "tool", "prompt": "tool-answer-v2"}}}))
    lab = Lab.from_env(arms_file=root / "arms.yaml", datasets_dir=root / "datasets", home=root / "home")
    arm = ArmInputs(lab, "imp")
    out: dict[str, pl.DataFrame] = {}

    def write(name, df):
        arm.write_table(name, df)
        out[name] = df

    read = import_stage.read_import(lab.arms_file, arm.cfg, arm.dataset, arm.questions)
    write(Table.IMPORTED_CHUNKS, read.chunks)
    write(Table.IMPORTED_ROWS, read.rows)
    write(Table.RETRIEVAL_ROWS, import_stage.retrieval_rows(arm.table(Table.IMPORTED_ROWS), arm.chunk_docs))
    contexts, coverage, _ = retrieval.admitted_contexts(
        arm.cfg, arm.questions, arm.table(Table.RETRIEVAL_ROWS), arm.support, arm.chunk_text_of, preloaded=None,
        imported_rows=arm.table(Table.IMPORTED_ROWS), lookup=None)
    write(Table.ADMITTED_CONTEXTS, contexts)
    write(Table.REQUEST_COVERAGE, coverage)
    write(Table.ANSWERS, import_stage.answers(arm.cfg, arm.table(Table.IMPORTED_ROWS), read.mapping["source_digest"]))
    write(Table.CONTRACT_RESULTS, import_stage.contract(arm.cfg, arm.table(Table.ANSWERS), arm.chunk_text))
    prompts = statement_judge_stage.JudgePrompts(statements=arm.prompt("judge_statements_prompt"),
                                                 verdicts=arm.prompt("judge_verdicts_prompt"),
                                                 gold=arm.prompt("judge_gold_prompt"))
    write(Table.JUDGE_VERDICTS, statement_judge_stage.judge(arm.cfg, arm.questions, arm.table(Table.CONTRACT_RESULTS),
                                                 arm_supply.arm_contexts(arm.store, arm.arm, arm.cfg), arm.chunk_text,
                                                 prompts, role_caller(JUDGE, lab, arm.cfg)))
    write(Table.REQUEST_JUDGMENTS, request_judge_stage.judge_requests(
        arm.cfg, arm.questions, arm.table(Table.CONTRACT_RESULTS), arm.prompt("judge_requests_prompt"),
        role_caller(REQUEST_JUDGE, lab, arm.cfg)))
    supplied_coverage = arm_supply.arm_coverage(arm.store, arm.arm, arm.cfg, arm.questions, lambda: arm.support)
    d = diagnostics_stage.completeness(
        diagnostics_stage.read_inputs(arm.store, arm.arm, arm.cfg, arm.questions, supplied_coverage),
        request_judge_stage.instrument(arm.cfg, arm.prompt("judge_requests_prompt"), arm.questions))
    write(Table.REQUEST_OUTCOMES, d.requests)
    write(Table.QUESTION_COMPLETENESS, d.questions)
    write(Table.ABSTENTION_OUTCOMES, d.abstentions)
    write(Table.FAILURE_FLOW, diagnostics_stage.failure_flow(
        diagnostics_stage.read_inputs(arm.store, arm.arm, arm.cfg, arm.questions, supplied_coverage)).flow)

    # A tool arm's lookup cases, from the same rows: the rare cases made no lookup, the ordinary ones found theirs.
    tool = ArmInputs(lab, "tool")
    for t in (Table.RETRIEVAL_ROWS, Table.REQUEST_COVERAGE, Table.CONTRACT_RESULTS, Table.JUDGE_VERDICTS,
              Table.REQUEST_JUDGMENTS):
        tool.write_table(t, arm.table(t))
    tool.write_table(Table.ADMITTED_CONTEXTS, arm_supply.tool_contexts(tool.cfg, tool.questions))
    calls = {f"q{i:04d}": json.dumps([{"call_id": "c1", "query": f"river {i}", "result_chunk_ids": [f"d{i}"],
                                       "result_doc_ids": [f"d{i}"], "error": None}]) for i in range(RARE, n)}
    answers = arm.table(Table.ANSWERS).drop(Table.ANSWERS.c.trace_id)
    tool.write_table(Table.ANSWERS, answers.with_columns(pl.Series(
        "lookups", [calls.get(q, "[]") for q in answers[Table.ANSWERS.c.query_id]], dtype=pl.String)))
    tool_coverage = arm_supply.arm_coverage(tool.store, tool.arm, tool.cfg, tool.questions, lambda: tool.support)
    inputs = diagnostics_stage.read_inputs(tool.store, tool.arm, tool.cfg, tool.questions, tool_coverage)
    lookups = diagnostics_stage.failure_flow(inputs).lookup_cases
    tool.write_table(Table.LOOKUP_CASES, lookups)
    out[Table.LOOKUP_CASES] = lookups
    return out


@pytest.mark.parametrize("table", sorted(declared_tables().values()))
def test_every_table_built_from_rare_rows_first_has_its_declared_dtypes(built, table):
    assert table in built, f"no builder here covers table {table!r}: add its stage function to `built`"
    df = built[table]
    kinds = {c.name: c for c in table.columns}
    assert set(df.columns) <= set(kinds) and {c.name for c in table.columns if c.only is None} <= set(df.columns)
    assert {k: v for k, v in df.schema.items()} == {k: dtype_of(kinds[k].type) for k in df.columns}
    assert df.height > 0, table
    # The rare rows came first and the ordinary ones after: both kinds are in the table.
    if "query_id" in df.columns and table != Table.IMPORTED_CHUNKS:
        ids = df["query_id"].to_list()
        assert ids[0] < f"q{RARE:04d}" <= ids[-1] or table == Table.LOOKUP_CASES, table


def test_the_rare_rows_are_first_and_the_ordinary_ones_are_measured(built):
    outcomes = built[Table.REQUEST_OUTCOMES]
    first = outcomes.head(RARE * 9 // 10)
    # No request judge measured the rare rows (nothing delivered, an abstention, an invalid answer): the columns the
    # judge fills are empty for the first 900 rows, which polars' 100-row inference typed Null or failed on.
    assert first["query_id"].max() < f"q{RARE:04d}" and "judged" not in set(first["judge_status"])
    assert first["verdict"].null_count() == first.height
    judgments = built[Table.REQUEST_JUDGMENTS].head(first.height)
    assert judgments["addressed"].null_count() == judgments["verdict"].null_count() == first.height
    last = outcomes.filter(pl.col("query_id") >= f"q{RARE:04d}")
    assert last.height > 0 and set(last["judge_status"]) == {"judged"} and last["verdict"].null_count() == 0
    flow = built[Table.FAILURE_FLOW]
    assert flow["branch"].null_count() == 0 and flow.height == outcomes.height


def test_no_frame_is_built_from_rows_outside_the_declared_builders():
    """A frame from rows anywhere else would be typed by its first rows: every one goes through table_frame (a
    declared table) or schema_frame (an explicit schema)."""
    pattern = re.compile(r"\b(pl|polars)\.(DataFrame|from_dicts|from_records|from_dict|from_pandas|from_arrow)\(")
    found = [f"{p.relative_to(PACKAGE)}:{n}" for p in PACKAGE.rglob("*.py") if p.name != "table_types.py"
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert found == []


def test_a_row_with_an_undeclared_or_missing_column_or_a_mistyped_value_is_refused_naming_table_row_and_column():
    row = {"query_id": "q1", "request_id": "q1.r1", "branch": "ok", "admitted": True, "answered": True,
           "supported": True, "contradicts_gold": False, "quality": "good"}
    assert table_frame(Table.FAILURE_FLOW, [row]).row(0, named=True) == row
    with pytest.raises(TableSchemaError, match=r"table 'failure_flow': row 1 \(query_id 'q1', request_id 'q1.r1'\): "
                                               r"column 'note' is not declared.*Table.FAILURE_FLOW"):
        table_frame(Table.FAILURE_FLOW, [row, {**row, "note": "x"}])
    with pytest.raises(TableSchemaError, match=r"row 0 .*column 'quality' is missing"):
        table_frame(Table.FAILURE_FLOW, [{k: v for k, v in row.items() if k != "quality"}])
    with pytest.raises(TableSchemaError, match=r"row 1 .*column 'answered' is declared bool, got 'consistent'"):
        table_frame(Table.FAILURE_FLOW, [row, {**row, "answered": "consistent"}])
    with pytest.raises(TableSchemaError, match=r"frame 'x': row 0: column 'n' is declared int, got 1.5"):
        schema_frame("frame 'x'", {"n": pl.Int64}, [{"n": 1.5}])
    # A column written for some arms only is named by the builder that writes it.
    assert "trace_id" not in table_frame(Table.ANSWERS, []).columns
    assert "trace_id" in table_frame(Table.ANSWERS, [], "trace_id").columns
    with pytest.raises(ValueError, match="column 'status' is written for every arm"):
        table_frame(Table.ANSWERS, [], "status")
