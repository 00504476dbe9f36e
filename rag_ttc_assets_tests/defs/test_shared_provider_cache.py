"""RAG_TTC_PROVIDER_CACHE: several stores (machines) share one provider cache, a folder or an fsspec URI.

In process through the job with fsspec's in-memory filesystem (the code path of s3://, gs://... : whole-object
writes and reads through fsspec), and through the CLI in subprocesses with a `file://` URI."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from dagster import DagsterInstance

from rag_ttc_assets.definitions import JOB, build_definitions
from rag_ttc_assets.lab import Lab, LabPathError
from rag_ttc_assets.stages.run_record import COMPLETE, list_runs
from rag_ttc_assets_tests.conftest import REPO


def _answers_and_judge_calls(lab: Lab, arm: str) -> tuple[dict, dict, dict]:
    from rag_ttc_assets.stages.generation import calls_summary

    answers = calls_summary(lab.store.read_table(arm, "answers")).to_json()
    judged = lab.store.read_arm_json(arm, "judge_summary.json")
    requests = lab.store.read_arm_json(arm, "request_judge_summary.json")
    return answers, {k: judged[k] for k in ("provider_calls", "cache_hits")}, \
        {k: requests[k] for k in ("provider_calls", "cache_hits")}


def test_two_stores_share_one_fsspec_provider_cache(mini_lab, tmp_path, monkeypatch):
    import fsspec

    uri = f"memory://rag-ttc-shared-{uuid.uuid4().hex[:8]}/provider-cache"
    monkeypatch.setenv("RAG_TTC_PROVIDER_CACHE", uri)
    runs = {}
    for home in ("store-a", "store-b"):
        monkeypatch.setenv("RAG_TTC_HOME", str(tmp_path / home))
        lab = Lab.from_env()
        assert lab.provider_cache == uri and lab.provider_cache_root == uri
        job = build_definitions(lab).resolve_job_def(JOB)
        with DagsterInstance.ephemeral() as instance:
            assert job.execute_in_process(partition_key="baseline", instance=instance).success
        runs[home] = _answers_and_judge_calls(lab, "baseline")
        (record,) = [r for r in list_runs(lab.runs, "baseline") if r.status == COMPLETE]
        run_dir = Path(record.run_dir)
        assert json.loads((run_dir / "config.json").read_text())["provider_cache"] == uri
        # The run record states where its metrics came from (the seed's section 10.2).
        source = json.loads((run_dir / "results" / "provider-provenance.json").read_text())
        expected = "provider calls only" if home == "store-a" else "cache hits only"
        assert source["provider_cache"] == uri
        assert source["answers"]["from"] == expected
        # The offline judge (local/lexical) calls no provider: computed in process, then served from the cache.
        judged = "offline baseline, no provider call" if home == "store-a" else "cache hits only"
        assert source["judge"]["from"] == source["request_judge"]["from"] == judged
        assert f"| answers | {source['answers']['provider_calls']} | {source['answers']['cache_hits']} | {expected} |" \
            in (run_dir / "summary.md").read_text()
        assert not (tmp_path / home / "provider_cache").exists()  # nothing cached beside the store
    (a_answers, a_judge, a_requests), (b_answers, b_judge, b_requests) = runs["store-a"], runs["store-b"]
    assert a_answers["provider_calls"] > 0 and a_answers["cache_hits"] == 0
    # The offline judges' calls are no provider calls; their replies are cached all the same.
    assert a_judge == a_requests == {"provider_calls": 0, "cache_hits": 0}
    # The second store made no provider call at all: every answer and verdict came from the shared cache.
    assert b_answers["provider_calls"] == 0 and b_answers["cache_hits"] == a_answers["provider_calls"]
    assert b_judge["provider_calls"] == 0 and b_judge["cache_hits"] > 0
    assert b_requests["provider_calls"] == 0 and b_requests["cache_hits"] > 0
    fs, root = fsspec.core.url_to_fs(uri)
    depth = len(root.rstrip("/").split("/"))
    by_kind: dict[str, int] = {}
    for e in fs.find(root):
        by_kind[e.split("/")[depth]] = by_kind.get(e.split("/")[depth], 0) + 1
    # One entry per reply; beside them the embedding cache (`vectors`), written only by the process that embeds the
    # mini corpus first (an earlier test in the same process may have), so not counted.
    calls = {k: n for k, n in by_kind.items() if k != "vectors"}
    assert calls == {"generation": a_answers["provider_calls"], "judging": b_judge["cache_hits"],
                     "request_judging": b_requests["cache_hits"]}, by_kind
    fs.rm(root, recursive=True)


@pytest.mark.slow
def test_cli_runs_in_two_stores_share_a_file_uri_cache(mini_lab, tmp_path):
    shared = tmp_path / "shared-cache"
    env = {**os.environ, "RAG_TTC_PROVIDER_CACHE": f"file://{shared}", "DAGSTER_HOME": str(tmp_path / "dagster"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    (tmp_path / "dagster").mkdir()
    outs = []
    for home in ("store-a", "store-b"):
        proc = subprocess.run([sys.executable, "-m", "rag_ttc_assets.cli", "run", "baseline"], capture_output=True,
                              text=True, cwd=REPO, timeout=600, env={**env, "RAG_TTC_HOME": str(tmp_path / home)})
        assert proc.returncode == 0, proc.stderr[-3000:]
        outs.append(_answers_and_judge_calls(Lab.from_env(home=str(tmp_path / home)), "baseline"))
    assert outs[0][0]["provider_calls"] > 0
    assert outs[1][0]["provider_calls"] == outs[1][1]["provider_calls"] == outs[1][2]["provider_calls"] == 0
    # The offline baselines' sentence encodings (adapters/vector_cache) are shared there too.
    assert {p.name for p in shared.iterdir()} == {"generation", "judging", "request_judging", "vectors"}
    assert any((shared / "vectors").rglob("*.npz"))
    assert not (tmp_path / "store-a" / "provider_cache").exists()


def test_unusable_cache_uri_is_refused_naming_the_variable(mini_lab, monkeypatch):
    monkeypatch.setenv("RAG_TTC_PROVIDER_CACHE", "nosuchfs://bucket/cache")
    with pytest.raises(LabPathError, match=r"RAG_TTC_PROVIDER_CACHE: 'nosuchfs://bucket/cache': no fsspec filesystem"):
        Lab.from_env()
    monkeypatch.delenv("RAG_TTC_PROVIDER_CACHE")
    assert Lab.from_env().provider_cache_root == Lab.from_env().home / "provider_cache"


def test_provenance_names_calls_hits_or_a_mixture():
    from rag_ttc_assets.stages.run_record import provenance

    assert provenance(3, 0) == "provider calls only"
    assert provenance(0, 3) == "cache hits only"
    assert provenance(2, 1) == "mixture of provider calls and cache hits"
    assert provenance(0, 0) == "no provider results"
