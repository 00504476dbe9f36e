"""Shared fixtures: a small real dataset cut from the bundled corpus, and a lab in a temporary folder."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from rag_ttc_assets_tests.support.required import (  # noqa: F401  (hooks)
    pytest_collection_modifyitems, pytest_configure, pytest_runtest_setup)
from rag_ttc_assets_tests.support.s3_server import s3_bucket, s3_server  # noqa: F401  (fixtures for every test)

pytest_plugins = ["pytester"]  # the tests of the test support run pytest on small test files

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rag_ttc_assets_tests.support.local_llm import llama_server  # noqa: E402,F401  (a session fixture)

REPO = Path(__file__).resolve().parent.parent
PYREF = REPO / "datasets" / "pyref"
MINI_DOCS = ["assert", "break", "continue", "del", "global", "compound--the-if-statement", "import", "pass", "raise", "return",
             "compound--the-while-statement", "compound--the-with-statement", "nonlocal", "lambda", "yield"]


def write_dataset(dest: Path, corpus: dict, questions: list[dict], pilot: list[str] | None = None) -> Path:
    """Write corpus.json and an evaluation bound to its exact bytes."""
    dest.mkdir(parents=True, exist_ok=True)
    cbytes = (json.dumps(corpus, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    (dest / "corpus.json").write_bytes(cbytes)
    ev = {"corpus_digest": "sha256:" + hashlib.sha256(cbytes).hexdigest(),
          "pilot": pilot if pilot is not None else [q["id"] for q in questions[:2]], "questions": questions}
    (dest / "evaluation.json").write_text(json.dumps(ev, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return dest


def _first_sentence(text: str) -> str:
    line = text.strip().split("\n\n")[0]
    end = line.find(". ")
    return line[: end + 1] if 30 < end < 250 else line[:120]


def mini_corpus() -> dict:
    docs = {d["id"]: d for d in json.loads((PYREF / "corpus.json").read_text(encoding="utf-8"))["documents"]}
    return {"documents": [docs[i] for i in MINI_DOCS]}


def _name(doc_id: str) -> str:
    return doc_id.split("--the-")[-1].replace("-statement", "")


def mini_questions(corpus: dict) -> list[dict]:
    docs = {d["id"]: d for d in corpus["documents"]}
    qs = []
    for n, (a, b) in enumerate([("assert", "raise"), ("break", "continue"), ("compound--the-with-statement", "yield"),
                                ("global", "nonlocal"), ("import", None), ("del", None), ("lambda", None)], 1):
        reqs = []
        for j, doc_id in enumerate([x for x in (a, b) if x], 1):
            reqs.append({"id": f"mini-{n:02d}.r{j}", "text": f"What does the {_name(doc_id)} statement do?",
                         "evidence": [{"doc_id": doc_id, "quote": _first_sentence(docs[doc_id]["text"])}]})
        text = " and ".join(f"what does the {_name(x)} statement do" for x in (a, b) if x).capitalize() + "?"
        qs.append({"id": f"mini-{n:02d}", "text": text, "answerable": True,
                   "targets": [{"doc_id": x, "relevance": 1} for x in (a, b) if x], "requests": reqs})
    qs.append({"id": "mini-99", "text": "How do I configure a proxy for pip?", "answerable": False,
               "targets": [], "requests": [{"id": "mini-99.r1", "text": "How do I configure a proxy for pip?",
                                            "evidence": []}]})
    return qs


MINI_DEFAULTS = """
defaults:
  dataset: mini
  chunk_runes: 600
  overlap_runes: 60
  retrieve_k: 10
  evidence_k: 3
  context_runes: 2000
"""
MINI_ARMS = MINI_DEFAULTS + """arms:
  baseline: {}
  evidence-k-5: {evidence_k: 5}
  tight: {context_runes: 700}
  bm25-only: {retrieval: bm25}
families:
  context:
    parameter: context_runes
    values: [700, 4000]
comparisons:
  - [baseline, evidence-k-5]
"""


def write_mini_lab(root: Path, monkeypatch, marks: dict[str, str] | None = None) -> Path:
    """The mini dataset under root/datasets, each question text with its `marks` suffix (fault markers a test
    server reads), and the environment pointing a lab at root (arms file root/arms.yaml, store root/home)."""
    corpus = mini_corpus()
    questions = mini_questions(corpus)
    for q in questions:
        q["text"] += (marks or {}).get(q["id"], "")
    write_dataset(root / "datasets" / "mini", corpus, questions)
    for k, v in {"RAG_TTC_DATASETS": root / "datasets", "RAG_TTC_HOME": root / "home",
                 "RAG_TTC_ARMS": root / "arms.yaml", "RAG_TTC_TEST_KEY": "sk-test-0123456789"}.items():
        monkeypatch.setenv(k, str(v))
    return root


@pytest.fixture
def mini_lab(tmp_path, monkeypatch):
    """A lab whose datasets, arms and store live in tmp_path; environment points the definitions at it."""
    from rag_ttc_assets.lab import Lab

    corpus = mini_corpus()
    write_dataset(tmp_path / "datasets" / "mini", corpus, mini_questions(corpus))
    (tmp_path / "arms.yaml").write_text(MINI_ARMS, encoding="utf-8")
    monkeypatch.setenv("RAG_TTC_ARMS", str(tmp_path / "arms.yaml"))
    monkeypatch.setenv("RAG_TTC_DATASETS", str(tmp_path / "datasets"))
    monkeypatch.setenv("RAG_TTC_HOME", str(tmp_path / "home"))
    return Lab.from_env()
