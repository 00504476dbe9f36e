"""The per-arm JSON summaries are typed (core.arm_summaries, core.judge_summaries): every model takes what a real
run wrote, and a file edited by hand (a field renamed, a wrong type, a field missing) fails on read naming the file
and the field, through the store and through `rag-ttc report`."""

import json
import pickle
from pathlib import Path

import pytest

from rag_ttc_assets.adapters.store import ArmJson, ArtifactStore, SummaryError, declared_names, model_of
from rag_ttc_assets.core import arm_summaries as S
from rag_ttc_assets.core import judge_summaries as J
from rag_ttc_assets.diagnosis.flow import FLOW_BRANCHES, QUALITIES
from rag_ttc_assets.judging.statement_judge import REQUEST_VERDICTS
from rag_ttc_assets.core.supply import LOOKUP_BRANCHES
from rag_ttc_assets_tests.e2e.test_cli import rag_ttc
from rag_ttc_assets_tests.support.store_snapshot import VOLATILE

GOLDEN = Path(__file__).parent / "e2e" / "golden" / "mini_baseline.json"


def _golden_summaries() -> dict[str, dict]:
    """The JSON summaries the mini lab's baseline wrote (e2e/golden, kept by test_column_schema from a real run).
    The snapshot leaves out the fields that vary between runs (store_snapshot.VOLATILE: where the dataset's files
    were); they are put back as the writer writes them, a path as a string."""
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    out = {}
    for key, content in golden.items():
        arm, name = key.split("/", 1)
        if name.endswith(".json"):
            fields = model_of(name).model_fields
            out[name] = {**content, **{k: f"datasets/mini/{k}" for k in VOLATILE if k in fields}}
    return out


def test_every_file_names_its_model_and_a_name_stays_a_string():
    files = declared_names(ArmJson)
    assert len(files) == 13
    for constant, name in files.items():
        assert isinstance(name, str) and isinstance(name, S.ArmFile) and name.endswith(".json"), constant
        assert model_of(name) is name.model and model_of(str(name)) is name.model
        assert json.dumps({name: 1}) == json.dumps({str(name): 1})
        again = pickle.loads(pickle.dumps(name))  # a name crosses processes (the dask executor) with its model
        assert again == name and again.model is name.model
    with pytest.raises(ValueError, match="not a per-arm JSON file"):
        model_of("undeclared.json")


def test_fixed_shapes_follow_the_constants_they_count():
    assert set(J.FlowAccounting.model_fields) == set(FLOW_BRANCHES)
    assert set(FLOW_BRANCHES) <= set(J.FailureFlow.model_fields)
    assert set(J.Qualities.model_fields) == set(QUALITIES)
    assert set(J.LookupAccounting.model_fields) == set(LOOKUP_BRANCHES)
    assert set(J.RequestVerdicts.model_fields) == set(REQUEST_VERDICTS)


def test_every_model_accepts_what_a_real_run_wrote():
    summaries = _golden_summaries()
    # The lab arm writes ten of the thirteen (the import files and Phoenix's annotations are an imported arm's).
    assert set(summaries) == set(map(str, declared_names(ArmJson).values())) - {
        ArmJson.IMPORT_MAPPING, ArmJson.IMPORTED_SPANS, ArmJson.PHOENIX_ANNOTATIONS}
    for name, content in summaries.items():
        # Every field read back as written: the model holds the whole file, nothing coerced, nothing dropped.
        assert model_of(name).model_validate(content).model_dump(exclude_unset=True) == content, name


def _store_with(tmp_path, name: str, content) -> ArtifactStore:
    store = ArtifactStore(tmp_path / "store")
    store.write_arm_json("baseline", name, content)
    return store


def _hand_edit(store: ArtifactStore, name: str, edit) -> None:
    path = store.arm_path("baseline", name)
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")


def test_the_store_writes_the_same_bytes_and_reads_the_model(tmp_path):
    flow = _golden_summaries()[ArmJson.FAILURE_FLOW]
    store = _store_with(tmp_path, ArmJson.FAILURE_FLOW, flow)
    assert store.arm_path("baseline", ArmJson.FAILURE_FLOW).read_bytes() == \
        json.dumps(flow, indent=1, ensure_ascii=False).encode() + b"\n"
    assert store.read_arm_json("baseline", ArmJson.FAILURE_FLOW) == flow
    typed = store.read_summary("baseline", ArmJson.FAILURE_FLOW)
    assert isinstance(typed, J.FailureFlow)
    assert typed.hit_rate.measured == flow["hit_rate"]["measured"] and typed.lookup_flow is None


def _rename(d):
    d["hit_rate"]["request_measured_n"] = d["hit_rate"].pop("request_measured")


def _retype(d):
    d["hit_rate"]["cases"] = "7"


def _drop(d):
    del d["accounting"]["ok"]["wrong"]


@pytest.mark.parametrize("edit, field, says", [
    (_rename, "hit_rate.request_measured", "Field required"),  # the old name is missing ...
    (_retype, "hit_rate.cases", "Input should be a valid integer"),
    (_drop, "accounting.ok.wrong", "Field required"),
])
def test_a_hand_edited_summary_fails_on_read_naming_file_and_field(tmp_path, edit, field, says):
    store = _store_with(tmp_path, ArmJson.FAILURE_FLOW, _golden_summaries()[ArmJson.FAILURE_FLOW])
    _hand_edit(store, ArmJson.FAILURE_FLOW, edit)
    path = store.arm_path("baseline", ArmJson.FAILURE_FLOW)
    for read in (store.read_arm_json, store.read_summary):
        with pytest.raises(SummaryError) as e:
            read("baseline", ArmJson.FAILURE_FLOW)
        message = str(e.value)
        assert str(path) in message and "arm 'baseline'" in message and f"field '{field}': {says}" in message
        assert "\n" not in message


def test_a_hand_added_field_and_a_writer_with_another_shape_fail(tmp_path):
    store = _store_with(tmp_path, ArmJson.CONTRACT_SUMMARY, _golden_summaries()[ArmJson.CONTRACT_SUMMARY])
    _hand_edit(store, ArmJson.CONTRACT_SUMMARY, lambda d: d.update(valid_share=0.75))
    with pytest.raises(SummaryError, match="field 'valid_share': Extra inputs are not permitted"):
        store.read_arm_json("baseline", ArmJson.CONTRACT_SUMMARY)
    store.arm_path("baseline", ArmJson.CONTRACT_SUMMARY).write_text("{\"total\": 3,", encoding="utf-8")
    with pytest.raises(SummaryError, match="contract_summary.json is not JSON"):
        store.read_arm_json("baseline", ArmJson.CONTRACT_SUMMARY)
    # A writer is checked before any byte is written: a count written as a float never reaches the store.
    bad = {**_golden_summaries()[ArmJson.ADMISSION_SUMMARY], "queries": 8.0}
    with pytest.raises(SummaryError, match="field 'queries': Input should be a valid integer"):
        store.write_arm_json("other", ArmJson.ADMISSION_SUMMARY, bad)
    assert not store.arm_path("other", ArmJson.ADMISSION_SUMMARY).exists()


def test_report_on_a_hand_edited_summary_says_file_and_field_in_one_line(mini_lab):
    mini_lab.store.write_arm_json("baseline", ArmJson.FAILURE_FLOW, _golden_summaries()[ArmJson.FAILURE_FLOW])
    _hand_edit(mini_lab.store, ArmJson.FAILURE_FLOW, _retype)
    code, out, err = rag_ttc("report", "baseline")
    assert code == 1, (out, err)
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith("rag-ttc: error: ") and str(mini_lab.store.arm_path("baseline", ArmJson.FAILURE_FLOW)) in err
    assert "field 'hit_rate.cases': Input should be a valid integer" in err


def test_a_typed_reader_reads_what_the_dicts_held(mini_lab):
    from rag_ttc_assets.stages.arm_comparisons import sweep_rows  # late: polars, as the comparisons load it

    summaries = _golden_summaries()
    member = mini_lab.arms.family("context")[0]
    for name in (ArmJson.CONTRACT_SUMMARY, ArmJson.RETRIEVAL_SUMMARY, ArmJson.ADMISSION_SUMMARY,
                 ArmJson.REQUEST_COMPLETENESS):
        mini_lab.store.write_arm_json(member, name, summaries[name])
    c, r, a, d = (summaries[n] for n in (ArmJson.CONTRACT_SUMMARY, ArmJson.RETRIEVAL_SUMMARY,
                                         ArmJson.ADMISSION_SUMMARY, ArmJson.REQUEST_COMPLETENESS))
    parameter, rows = sweep_rows(mini_lab.store, mini_lab.arms, "context")  # the other member has no summaries: left out
    assert (parameter, rows) == ("context_runes", [{
        "arm": member, "context_runes": mini_lab.arms[member].context_runes, "valid": c["valid"],
        "recall_10": r["summary"]["recall_10"], "requests_supported": d["requests_supported"],
        "graded_completeness": d["graded_completeness"], "omitted_chunks": a["omitted_chunks"],
        "admission_coverage": a["admission_coverage"]}])
