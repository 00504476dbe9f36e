"""Definitions load, partitions are the arms, and a whole arm materializes in-process."""

import json

from dagster import DagsterInstance

from rag_ttc_assets.adapters.input_files import load_arms
from rag_ttc_assets_tests.conftest import REPO


def test_definitions_load_with_one_partition_per_arm(monkeypatch):
    import importlib
    import os

    import rag_ttc_assets.definitions

    # As `dagster dev -m rag_ttc_assets.definitions` loads it: a fresh import in an environment with no lab
    # overrides (an earlier test may have imported the module under a temporary lab's RAG_TTC_* variables).
    for var in [v for v in os.environ if v.startswith("RAG_TTC_")]:
        monkeypatch.delenv(var)
    defs = importlib.reload(rag_ttc_assets.definitions).defs

    from rag_ttc_assets.defs.partitions import removed_arms
    from rag_ttc_assets.lab import Lab

    job = defs.resolve_job_def("arm_job")
    # An arm removed from the file keeps its partition while the store has its outputs (defs/partitions.py).
    removed = removed_arms(Lab.from_env())
    assert job.partitions_def.get_partition_keys() == [*load_arms(REPO / "arms.yaml").names, *removed]
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.group_name in {"ingest", "indexes", "retrieval", "generation", "evaluation", "diagnostics",
                                   "arm_config", "labels"}, key
        assert node.kinds, key
        assert node.description and "\n" not in node.description.strip(), key


def _materialize(arm, instance, raise_on_error=True):
    from rag_ttc_assets.definitions import build_definitions

    result = build_definitions().resolve_job_def("arm_job").execute_in_process(
        partition_key=arm, instance=instance, raise_on_error=raise_on_error)
    return result


def _materialized(arm, instance):
    result = _materialize(arm, instance)
    assert result.success
    return {ev.asset_key.to_user_string(): ev.materialization.metadata
            for ev in result.get_asset_materialization_events()}


def _value(meta, key):
    return meta[key].value


def test_arm_materializes_through_both_indexes_and_a_k_sweep_shares_them(mini_lab):
    instance = DagsterInstance.ephemeral()
    first = _materialized("baseline", instance)
    second = _materialized("evidence-k-5", instance)  # differs from baseline only in evidence_k

    for asset in ("chunks", "representations", "bm25_index", "vector_index"):
        assert _value(first[asset], "cache") == "build", asset
        assert _value(second[asset], "cache") == "hit", asset
        assert _value(first[asset], "content_digest") == _value(second[asset], "content_digest")
    assert _value(first["vector_index"], "embedding_calls_this_run") > 0
    assert _value(second["vector_index"], "embedding_calls_this_run") == 0

    # The ranked lists too: evidence_k is downstream of retrieval, so both arms share one retrieval.
    shared = [p for p in (mini_lab.store.root / "cache" / "retrieval_rows").iterdir() if not p.name.startswith(".")]
    assert len(shared) == 1
    assert mini_lab.store.read_table("baseline", "retrieval_rows").equals(
        mini_lab.store.read_table("evidence-k-5", "retrieval_rows"))
    # Retrieval metrics come from the ranked list, so evidence_k cannot move them.
    for m in ("recip_rank", "recall_10", "ndcg_cut_10", "success_10", "evaluated", "undefined"):
        assert _value(first["retrieval_summary"], m) == _value(second["retrieval_summary"], m)
    assert _value(first["retrieval_summary"], "undefined") == 1  # the unanswerable question
    assert _value(first["retrieval_summary"], "evaluated") == 7
    assert _value(first["admitted_contexts"], "requests_admitted") <= _value(second["admitted_contexts"],
                                                                             "requests_admitted")
    upstream = _value(first["chunks"], "upstream_digests")
    assert upstream["corpus"].startswith("sha256:")


def test_tight_context_omits_whole_chunks(mini_lab):
    instance = DagsterInstance.ephemeral()
    _materialized("tight", instance)
    contexts = mini_lab.store.read_table("tight", "admitted_contexts")
    chunks_seen = 0
    for row in contexts.iter_rows(named=True):
        assert row["used_runes"] <= row["max_runes"] == 700
        assert set(row["admitted_chunk_ids"]) | set(row["omitted_chunk_ids"]) == set(row["selected_chunk_ids"])
        assert sum(row["evidence_runes"]) == row["used_runes"]
        chunks_seen += len(row["omitted_chunk_ids"])
    assert chunks_seen > 0


def test_digest_mismatch_fails_before_chunking(mini_lab):
    ev_path = mini_lab.datasets_dir / "mini" / "evaluation.json"
    ev = json.loads(ev_path.read_text())
    ev["corpus_digest"] = "sha256:" + "0" * 64
    ev_path.write_text(json.dumps(ev))
    result = _materialize("baseline", DagsterInstance.ephemeral(), raise_on_error=False)
    assert not result.success
    failures = [ev for ev in result.all_events if ev.is_step_failure]
    assert [f.step_key for f in failures] == ["corpus_binding"]
    message = failures[0].step_failure_data.error.cause.message
    assert "sha256:" + "0" * 64 in message and "corpus.json" in message and "evaluation.json" in message
    assert not (mini_lab.store.root / "cache" / "chunks").exists()


def test_counterfactual_arms_withhold_and_plant_and_are_scored(mini_lab):
    arms = mini_lab.arms_file.read_text().replace(
        "  bm25-only: {retrieval: bm25}",
        "  bm25-only: {retrieval: bm25}\n  withheld: {counterfactual: withheld-relevant}\n"
        "  planted: {counterfactual: planted-falsehood}\n  reversed: {evidence_order: reversed}")
    mini_lab.arms_file.write_text(arms)
    instance = DagsterInstance.ephemeral()
    for arm in ("baseline", "withheld", "planted", "reversed"):
        assert _materialize(arm, instance).success, arm
    store = mini_lab.store
    base = {r["query_id"]: r for r in store.read_table("baseline", "admitted_contexts").iter_rows(named=True)}
    cov = store.read_table("withheld", "request_coverage")
    withheld = {r["query_id"]: r for r in store.read_table("withheld", "admitted_contexts").iter_rows(named=True)}
    for r in cov.iter_rows(named=True):  # nothing that supports a request survives
        assert not set(r["supporting_chunk_ids"]) & set(withheld[r["query_id"]]["admitted_chunk_ids"])
    assert any(w["withheld_chunk_ids"] for w in withheld.values())
    for qid, w in withheld.items():
        assert set(w["admitted_chunk_ids"]) | set(w["withheld_chunk_ids"]) == set(base[qid]["admitted_chunk_ids"])
    cf = store.read_arm_json("withheld", "request_completeness.json")["counterfactual"]
    assert cf["withheld_requests"] > 0 and cf["correct_abstentions"] <= cf["withheld_requests"]

    planted = {r["query_id"]: r for r in store.read_table("planted", "admitted_contexts").iter_rows(named=True)}
    p = json.loads(planted["mini-01"]["planted"])
    assert [x["chunk_id"] for x in p] == planted["mini-01"]["admitted_chunk_ids"][: len(p)]
    assert all(x["planted"] != x["original"] and x["kind"] in ("number", "negation", "swap") for x in p)
    cf = store.read_arm_json("planted", "request_completeness.json")["counterfactual"]
    assert cf["planted_claims"] == sum(len(json.loads(r["planted"])) for r in planted.values()) > 0
    assert 0 <= cf["repeated"] <= cf["planted_claims"]
    # The planted chunk reached the prompt: the raw answer rows were generated from it.
    answers = store.read_table("planted", "answers")
    assert answers.height == 8
    # The judges measured on what is known by construction: the answers that repeat a planted falsehood.
    from rag_ttc_assets.core.counterfactual import Planted, repeats

    contracts = {r["query_id"]: r for r in store.read_table("planted", "contract_results").iter_rows(named=True)}
    verdicts = {r["query_id"]: r for r in store.read_table("planted", "judge_verdicts").iter_rows(named=True)}
    repeating = [q for q, r in planted.items() if contracts[q]["status"] == "valid"
                 and any(repeats(contracts[q]["answer"], Planted(**x)) for x in json.loads(r["planted"]))]
    jm = store.read_arm_json("planted", "judge_summary.json")["judge_measurement"]
    gold = jm["sensitivity"]["gold_judge"]
    assert gold["of"] == sum(verdicts[q]["contradicts_gold"] is not None for q in repeating) == len(repeating)
    assert gold["flagged"] == sum(bool(verdicts[q]["contradicts_gold"]) for q in repeating)
    assert repeating and jm["sensitivity"]["request_judge"]["of"] >= 1
    baseline_jm = store.read_arm_json("baseline", "judge_summary.json")["judge_measurement"]
    assert baseline_jm["sensitivity"]["gold_judge"] == {"flagged": 0, "of": 0, "share": None}  # nothing planted

    from rag_ttc_assets.stages.arm_comparisons import compare_two, read_pair

    rep = compare_two(read_pair(mini_lab.store, mini_lab.arms, "baseline", "reversed"))
    assert rep.admitted_sets.model_dump() == {"identical": 8, "questions": 8, "position_only": True}
    assert rep.changed_parameters == {"evidence_order": ["ranked", "reversed"]}
