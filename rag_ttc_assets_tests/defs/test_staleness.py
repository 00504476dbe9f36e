"""Dagster's own staleness after an arms-file edit: two arms materialized once, then each test edits the arms
file, loads the definitions again (what "Reload definitions" does) and reads Dagster's stale status per asset
partition, as the UI's partition view does, and what `rag-ttc run` would run from the same determination."""

import pytest
from dagster import DagsterInstance

from rag_ttc_assets.defs.graph import STAGES, deps
from rag_ttc_assets_tests.conftest import MINI_ARMS, mini_corpus, mini_questions, write_dataset

ALL = list(STAGES["all"])


def downstream(name: str) -> set[str]:
    out: set[str] = set()
    for n in ALL:  # topological order
        if any(d == name or d in out for d in deps()[n]):
            out.add(n)
    return out


@pytest.fixture(scope="module")
def lab_root(tmp_path_factory):
    """A mini lab with `baseline` and `evidence-k-5` materialized into one instance."""
    from rag_ttc_assets.defs.staleness import observe

    root = tmp_path_factory.mktemp("staleness")
    corpus = mini_corpus()
    write_dataset(root / "datasets" / "mini", corpus, mini_questions(corpus))
    (root / "arms.yaml").write_text(MINI_ARMS, encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        for k, v in {"RAG_TTC_ARMS": "arms.yaml", "RAG_TTC_DATASETS": "datasets", "RAG_TTC_HOME": "home"}.items():
            mp.setenv(k, str(root / v))
        instance = DagsterInstance.ephemeral()
        defs, lab = _load()
        observe(instance, lab, lab.arms.names)
        for arm in ("baseline", "evidence-k-5"):
            assert defs.resolve_job_def("arm_job").execute_in_process(partition_key=arm, instance=instance).success
        yield root, instance, mp
        (root / "arms.yaml").write_text(MINI_ARMS, encoding="utf-8")


def _load():
    from rag_ttc_assets.definitions import build_definitions
    from rag_ttc_assets.lab import Lab

    lab = Lab.from_env()
    return build_definitions(lab), lab


def edit(root, new: str):
    """The arms file with `baseline: {}` replaced, and the definitions loaded again."""
    (root / "arms.yaml").write_text(MINI_ARMS.replace("  baseline: {}", f"  baseline: {new}"), encoding="utf-8")
    return _load()


def status(instance, defs, lab, arm):
    from rag_ttc_assets.defs.staleness import dagster_status, observe

    observe(instance, lab, [arm])
    return dagster_status(instance, defs.resolve_asset_graph(), arm, ALL)


def stale(statuses) -> set[str]:
    assert {s for s, _ in statuses.values()} <= {"FRESH", "STALE"}, statuses
    return {n for n, (s, _) in statuses.items() if s == "STALE"}


def test_judge_budget_leaves_chunks_and_indexes_fresh(lab_root):
    from rag_ttc_assets.defs.staleness import to_run

    root, instance, mp = lab_root
    defs, lab = edit(root, "{judge_budget: 19000}")
    baseline = status(instance, defs, lab, "baseline")
    assert stale(baseline) == {"judge_verdicts", *downstream("judge_verdicts")} == {
        "judge_verdicts", "judge_summary", "request_completeness", "failure_flow", "phoenix_annotations",
        "run_record"}
    # The cause is visible: which observed configuration changed, and which field of it.
    assert baseline["judge_verdicts"][1] == [
        "arm_config/judge_verdicts has a new data version (judge_budget: 20000 -> 19000)"]
    assert baseline["run_record"][1] == ["arm_config/run_record has a new data version (upstream judge_summary "
                                         "changed; upstream failure_flow changed)"]
    assert stale(status(instance, defs, lab, "evidence-k-5")) == set()  # the other partition is untouched
    # `rag-ttc run` selects from the same determination.
    assert list(to_run(instance, lab, defs.resolve_asset_graph(), "baseline", ALL)) == [
        n for n in ALL if n in stale(baseline)]

    defs, lab = edit(root, "{}")  # the edit undone: the observed version is the one materialized again
    assert stale(status(instance, defs, lab, "baseline")) == set()


def test_chunk_runes_makes_everything_downstream_of_chunks_stale(lab_root):
    root, instance, mp = lab_root
    defs, lab = edit(root, "{chunk_runes: 500}")
    baseline = status(instance, defs, lab, "baseline")
    assert stale(baseline) == {"chunks", *downstream("chunks")} == set(ALL) - {"corpus_binding", "labels",
                                                                                "imported_source"}
    assert baseline["chunks"][1] == ["arm_config/chunks has a new data version (chunk_runes: 600 -> 500)"]
    assert stale(status(instance, defs, lab, "evidence-k-5")) == set()
    edit(root, "{}")


def test_a_prompt_text_edit_is_a_cause_too(lab_root, tmp_path):
    """A prompt file read by the answers, changed in place (same name): answers onward are stale."""
    import shutil

    root, instance, mp = lab_root
    from rag_ttc_assets.lab import PROJECT_ROOT

    prompts = tmp_path / "prompts"
    shutil.copytree(PROJECT_ROOT / "prompts", prompts)
    mp.setenv("RAG_TTC_PROMPTS", str(prompts))
    try:
        defs, lab = edit(root, "{}")
        assert stale(status(instance, defs, lab, "baseline")) == set()  # same texts, another folder
        (prompts / f"{lab.arms['baseline'].prompt}.txt").write_text(
            (prompts / f"{lab.arms['baseline'].prompt}.txt").read_text() + "\nBe brief.\n")
        baseline = status(instance, defs, lab, "baseline")
        assert stale(baseline) == {"answers", *downstream("answers")}
        assert baseline["answers"][1] == ["arm_config/answers has a new data version (prompt file changed)"]
    finally:
        mp.delenv("RAG_TTC_PROMPTS")
        edit(root, "{}")
        assert stale(status(instance, *_load(), "baseline")) == set()


def test_a_labels_edit_makes_the_labels_and_what_reads_them_stale_not_the_corpus_side(lab_root):
    """evaluation.json edited (what `rag-ttc labels update` does, or a person's repair): the `labels` asset (whose
    data version is the labels' digest) and everything downstream of it are stale in every arm of the dataset, the
    corpus binding, chunks, representations and indexes are not; undone, nothing is."""
    root, instance, mp = lab_root
    path = root / "datasets" / "mini" / "evaluation.json"
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(original.replace('"mini-01"', '"mini-01"', 1).replace("\n}", "\n }", 1) + "\n",
                        encoding="utf-8")
        defs, lab = _load()
        for arm in ("baseline", "evidence-k-5"):
            statuses = status(instance, defs, lab, arm)
            assert stale(statuses) == {"labels", *downstream("labels")}, arm
            assert not stale(statuses) & {"corpus_binding", "chunks", "representations", "bm25_index",
                                          "vector_index"}
            assert statuses["labels"][1] == ["arm_config/labels has a new data version (labels file changed)"]
        assert "retrieval_rows" in downstream("labels") and "run_record" in downstream("labels")
    finally:
        path.write_text(original, encoding="utf-8")
    defs, lab = _load()
    assert stale(status(instance, defs, lab, "baseline")) == set()


def test_a_removed_arm_keeps_its_partition_and_history(lab_root):
    from dagster import AssetKey

    root, instance, mp = lab_root
    (root / "arms.yaml").write_text(MINI_ARMS.replace("  evidence-k-5: {evidence_k: 5}\n", "")
                                    .replace("  - [baseline, evidence-k-5]\n", "  - [baseline, tight]\n"))
    try:
        defs, lab = _load()
        assert "evidence-k-5" not in lab.arms.arms
        partitions = defs.resolve_assets_def("chunks").partitions_def.get_partition_keys()
        assert "evidence-k-5" in partitions and "tight" in partitions  # kept for its history; the others as ever
        records = instance.fetch_materializations(AssetKey("run_record"), limit=10).records
        assert "evidence-k-5" in {r.partition_key for r in records}
        removed = status(instance, defs, lab, "evidence-k-5")
        assert stale(removed) == set(ALL)
        assert removed["chunks"][1] == ["arm_config/chunks has a new data version (arm removed from arms.yaml)"]
        assert stale(status(instance, defs, lab, "baseline")) == set()
        result = defs.resolve_job_def("arm_job").execute_in_process(
            partition_key="evidence-k-5", instance=instance, asset_selection=[AssetKey("corpus_binding")],
            raise_on_error=False)
        assert not result.success
        (failure,) = [e for e in result.all_events if e.is_step_failure]
        assert "arm 'evidence-k-5' is no longer in the arms file; its partition keeps the history" in (
            failure.step_failure_data.error.cause.message)
    finally:
        edit(root, "{}")
    assert stale(status(instance, *_load(), "evidence-k-5")) == set()  # back in the file: as materialized


def test_the_sensor_observes_only_what_changed(lab_root):
    from dagster import SensorResult, SkipReason, build_sensor_context

    root, instance, mp = lab_root
    defs, lab = edit(root, "{}")
    sensor = defs.get_sensor_def("arm_config_sensor")
    for arm in lab.arms.names:  # whatever earlier tests left observed
        status(instance, defs, lab, arm)
    assert isinstance(sensor(build_sensor_context(instance=instance)), SkipReason)

    # An edit after the definitions loaded: the sensor reads the files afresh, the partitions are the loaded ones.
    (root / "arms.yaml").write_text(MINI_ARMS.replace("tight: {context_runes: 700}", "tight: {context_runes: 800}"))
    try:
        result = sensor(build_sensor_context(instance=instance))
        assert isinstance(result, SensorResult)
        observed = {(e.asset_key.path[1], e.partition): e.metadata["changed"].value for e in result.asset_events}
        assert set(observed) == {(n, "tight") for n in ["admitted_contexts", *downstream("admitted_contexts")]}
        assert observed[("admitted_contexts", "tight")] == "context_runes: 700 -> 800"
    finally:
        edit(root, "{}")
