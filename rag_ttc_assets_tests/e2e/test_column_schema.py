"""Each table asset shows its declared columns (core.tables) as Dagster's column schema, read back from the
instance `rag-ttc run` wrote to; the tables a whole run writes are the declared ones, column for column; and what
they hold is what the golden snapshot of the same run holds."""

import json
import os
from pathlib import Path

from dagster import AssetKey, AssetRecordsFilter, DagsterInstance

from rag_ttc_assets.adapters.table_types import schema_of
from rag_ttc_assets.core.tables import ONLY_IMPORTED, ONLY_JURY, Table
from rag_ttc_assets.defs import graph
from rag_ttc_assets.defs.arm_registry import COLUMN_SCHEMA, column_schema
from rag_ttc_assets_tests.e2e.test_cli import rag_ttc
from rag_ttc_assets_tests.support.store_snapshot import arm_files, differences, write_golden

GOLDEN = Path(__file__).parent / "golden" / "mini_baseline.json"


def _latest_metadata(instance, asset: str, arm: str) -> dict:
    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey(asset), asset_partitions=[arm]), limit=1).records
    assert records, f"{asset} has no materialization of {arm}"
    return records[0].asset_materialization.metadata


def test_every_table_asset_shows_its_declared_columns_in_dagster(mini_lab, tmp_path):
    env = {"DAGSTER_HOME": str(tmp_path / "dh")}
    code, out, err = rag_ttc("run", "baseline", "--json", env=env)
    assert code == 0, err
    assert json.loads(out)["arms"]["baseline"]["ran"][-1] == "run_record"
    specs = [s for s in graph.load() if s.column_schemas]
    assert {s.name for s in specs} == {"imported_source", "retrieval_rows", "admitted_contexts", "answers",
                                       "contract_results", "judge_verdicts", "request_judgments",
                                       "request_completeness", "failure_flow"}
    os.environ["DAGSTER_HOME"] = env["DAGSTER_HOME"]
    try:
        with DagsterInstance.get() as instance:
            shown = {}
            for s in specs:
                meta = _latest_metadata(instance, s.name, "baseline")
                if s.name == "imported_source":  # a lab arm imports nothing: no table, no schema
                    assert meta["used_by_arm"].value is False and COLUMN_SCHEMA not in meta
                    continue
                shown[s.name] = meta[COLUMN_SCHEMA].value
                for key, schema in s.column_schemas.items():
                    assert meta[key].value == schema, (s.name, key)
    finally:
        del os.environ["DAGSTER_HOME"]
    assert shown["answers"] == column_schema(Table.ANSWERS)
    assert [c.name for c in shown["retrieval_rows"].columns] == [c.name for c in Table.RETRIEVAL_ROWS.columns]
    status = next(c for c in shown["contract_results"].columns if c.name == "status")
    assert status.type == "str" and status.description.startswith("valid / parse_failure")

    # What the run wrote is what is declared: every column of every table (a lab arm's own), with its type.
    written = {t: mini_lab.store.read_table("baseline", t).schema for t in (
        Table.RETRIEVAL_ROWS, Table.ADMITTED_CONTEXTS, Table.REQUEST_COVERAGE, Table.ANSWERS, Table.CONTRACT_RESULTS,
        Table.JUDGE_VERDICTS, Table.REQUEST_JUDGMENTS, Table.REQUEST_OUTCOMES, Table.QUESTION_COMPLETENESS,
        Table.ABSTENTION_OUTCOMES, Table.FAILURE_FLOW)}
    for t, schema in written.items():
        # Not this arm's: an imported arm's columns, a request judge panel's (the ANN columns are null here).
        others = {c.name for c in t.columns if c.only in (ONLY_IMPORTED, ONLY_JURY)}
        declared = {k: v for k, v in schema_of(t).items() if k not in others}
        assert dict(schema) == declared, t

    # Behaviour kept: every table and JSON summary the run wrote equals the golden snapshot taken of the same run
    # (support/store_snapshot: the fields that vary between two identical runs left out). A refactor must leave it
    # equal; a change of behaviour on purpose rewrites it (RAG_TTC_UPDATE_GOLDEN=1) and the diff shows what changed.
    now = arm_files(mini_lab.store.root)
    if os.environ.get("RAG_TTC_UPDATE_GOLDEN"):
        write_golden(GOLDEN, now)
    changed = differences(json.loads(GOLDEN.read_text(encoding="utf-8")), now)
    assert not changed, ("the mini lab's baseline wrote other tables than the golden snapshot "
                         f"({GOLDEN.name}; rewrite it with RAG_TTC_UPDATE_GOLDEN=1 if the change is meant):\n"
                         + "\n".join(changed))
