"""Helpers for the reliability tests: a synthetic dataset, a fake model that answers and judges, arms
files pointed at a FakeOpenAIServer, and the two ways a user runs the lab (CLI subprocess, Dagster job)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import yaml

from rag_ttc_assets.defs.graph import STAGES
from rag_ttc_assets_tests.conftest import REPO, _first_sentence, _name, mini_corpus, write_dataset

KEY_ENV = "RAG_TTC_REL_KEY"  # the NAME the arms give as api_key_env
KEY = "sk-rel-test-key-0000"  # the key itself, for tests that do not hunt for it
DOCS = ["assert", "break", "continue", "del", "global", "import", "pass", "raise", "return", "nonlocal"]
ANSWERS_UPTO = list(STAGES["answers"])


def synthetic_dataset(dest: Path, n: int) -> Path:
    """`n` short single-request questions over the mini corpus, each with a verbatim quote; unique texts,
    so every question is its own provider request."""
    corpus = mini_corpus()
    docs = {d["id"]: d for d in corpus["documents"]}
    qs = []
    for i in range(n):
        doc_id = DOCS[i % len(DOCS)]
        qid = f"q{i:04d}"
        text = f"What does the {_name(doc_id)} statement do? (case {i})"
        qs.append({"id": qid, "text": text, "answerable": True, "targets": [{"doc_id": doc_id, "relevance": 1}],
                   "requests": [{"id": f"{qid}.r1", "text": text,
                                 "evidence": [{"doc_id": doc_id, "quote": _first_sentence(docs[doc_id]["text"])}]}]})
    return write_dataset(dest, corpus, qs)


def fake_model(messages: list[dict]) -> str:
    """A well-behaved model: answers citing the first admitted chunk; as a judge, one supported statement."""
    prompt = messages[-1]["content"]
    if "<task>extract_statements</task>" in prompt:
        return json.dumps({"statements": ["The statement does what the evidence says."]})
    if "<task>verify_statements</task>" in prompt:
        return json.dumps({"verdicts": [{"statement": 1, "supported": True, "evidence": [1]}],
                           "answer_relevance": 1.0})
    if "<task>verify_against_gold</task>" in prompt:
        return json.dumps({"verdicts": [{"statement": 1, "supported": True, "contradicts_gold": False,
                                         "evidence": [1]}]})
    first = re.search(r'<chunk id="([^"]+)">\n([^\n]*)', prompt)
    return json.dumps({"answer": first.group(2) or "see the chunk", "citation_chunk_ids": [first.group(1)],
                       "abstained": False})


def remote_model(base_url: str, **over) -> dict:
    return {"model": "openai/fake-model", "api_base": base_url, "api_key_env": KEY_ENV, "timeout_s": 5,
            "max_retries": 1, **over}


def arms_text(dataset: str, arms: dict, base_url: str | None = None, judge_remote: bool = False, **defaults) -> str:
    """An arms file: small arms (600-rune chunks, retrieve_k 5, evidence_k 2), generator at `base_url`."""
    d = {"dataset": dataset, "chunk_runes": 600, "overlap_runes": 60, "retrieve_k": 5, "evidence_k": 2,
         "context_runes": 4000, **defaults}
    if base_url:
        d.setdefault("generator", remote_model(base_url))
        d.setdefault("allow_unpriced_provider", True)
        if judge_remote:
            d.setdefault("judge", remote_model(base_url))
    return yaml.safe_dump({"defaults": d, "arms": arms}, sort_keys=False)


def lab_env(root: Path, **extra: str) -> dict[str, str]:
    """The environment of a lab under `root`: arms file, datasets, store, Dagster home, the API key."""
    return {"RAG_TTC_ARMS": str(root / "arms.yaml"), "RAG_TTC_DATASETS": str(root / "datasets"),
            "RAG_TTC_HOME": str(root / "home"), "DAGSTER_HOME": str(root / "dh"), KEY_ENV: KEY,
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **extra}


def _env(env: dict[str, str]) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("RAG_TTC_") and k != "DAGSTER_HOME"}
    return {**base, **env}


def cli(*args: str, env: dict[str, str], timeout: float = 600) -> tuple[int, str, str]:
    """`rag-ttc ARGS` as a user runs it: a subprocess in the project folder."""
    proc = subprocess.Popen([sys.executable, "-m", "rag_ttc_assets.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(env), cwd=REPO, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = proc.communicate()
        raise AssertionError(f"rag-ttc {' '.join(args)} still running after {timeout}s; its stderr ends:\n"
                             + err[-5000:]) from None
    return proc.returncode, out, err


def cli_in_process(*args: str, env: dict[str, str], capsys) -> tuple[int, str, str]:
    """`rag-ttc ARGS` through the command's own entry point (`rag_ttc_assets.cli.main`) in this process, with the
    environment `cli` gives its subprocess (no other lab's RAG_TTC_* or DAGSTER_HOME); the process's environment
    restored after. For the calls of a test that is not about the process boundary (one subprocess keeps that)."""
    from rag_ttc_assets.cli import main  # late: the whole CLI, only for the tests that call it

    saved = dict(os.environ)
    capsys.readouterr()
    try:
        os.environ.clear()
        os.environ.update(_env(env))
        code = main(list(args))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    got = capsys.readouterr()
    return code, got.out, got.err


def cli_start(*args: str, env: dict[str, str], out: Path) -> subprocess.Popen:
    """`rag-ttc ARGS` in its own process group, stdout and stderr to `out`.{stdout,stderr}."""
    return subprocess.Popen([sys.executable, "-m", "rag_ttc_assets.cli", *args], env=_env(env), cwd=REPO,
                            stdout=open(f"{out}.stdout", "w"), stderr=open(f"{out}.stderr", "w"),
                            start_new_session=True)


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def cli_error(stderr: str) -> str:
    """The CLI's one error: the text after the last `rag-ttc: error: `."""
    assert stderr.count("rag-ttc: error: ") == 1, stderr[-3000:]
    return stderr.split("rag-ttc: error: ", 1)[1].strip()


def materialize(arm: str, instance, assets: list[str] | None = None, raise_on_error: bool = False):
    """The arm's job for one partition, in process, as the UI's Materialize runs it."""
    from dagster import AssetKey

    from rag_ttc_assets.definitions import build_definitions

    job = build_definitions().resolve_job_def("arm_job")
    selection = [AssetKey(a) for a in assets] if assets else None
    return job.execute_in_process(partition_key=arm, instance=instance, asset_selection=selection,
                                  raise_on_error=raise_on_error)


def step_failures(result) -> dict[str, str]:
    """step key -> the message of the user error that failed it."""
    out = {}
    for ev in result.all_events:
        if ev.is_step_failure:
            err = ev.step_failure_data.error
            out[ev.step_key] = (err.cause.message if err.cause else err.message).strip()
    return out


def asked(server, since: int = 0) -> Counter:
    """Question ids of the requests `server` received from request `since` on, with their counts."""
    ids: Counter = Counter()
    for r in server.requests[since:]:
        ids["q%04d" % int(re.search(r"\(case (\d+)\)", r["body"]["messages"][-1]["content"]).group(1))] += 1
    return ids


def files_containing(root: Path, needle: bytes) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]
