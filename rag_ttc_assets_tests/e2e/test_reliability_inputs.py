"""Reliability 1: bad inputs through the user's path. Each is refused with one error naming the file,
the record and the field, the same in the CLI and in the Dagster step; no provider call is made and
nothing half-written looks complete."""

import hashlib
import json
import shutil

import pytest
from dagster import DagsterInstance

from rag_ttc_assets_tests.conftest import REPO, mini_corpus
from rag_ttc_assets_tests.support.openai_server import FakeOpenAIServer
from rag_ttc_assets_tests.support.reliability import (arms_text, cli, cli_error, fake_model, lab_env, materialize,
                                                      step_failures, synthetic_dataset)


def _rebind(d, corpus_bytes: bytes) -> None:
    """Write `corpus_bytes` as the corpus and bind the evaluation to them (so only the planted problem shows)."""
    (d / "corpus.json").write_bytes(corpus_bytes)
    _edit_eval(d, lambda ev: ev.update(corpus_digest="sha256:" + hashlib.sha256(corpus_bytes).hexdigest()))


def _edit_eval(d, fn) -> None:
    ev = json.loads((d / "evaluation.json").read_text(encoding="utf-8"))
    fn(ev)
    (d / "evaluation.json").write_text(json.dumps(ev, indent=1), encoding="utf-8")


def _drop_text(ev):
    del ev["questions"][1]["text"]


def _dup_question(ev):
    q = ev["questions"][2]
    q["id"] = ev["questions"][0]["id"]
    q["requests"][0]["id"] = "other.r1"  # only the question id repeats


def _bend_quote(ev):
    ev["questions"][1]["requests"][0]["evidence"][0]["quote"] += "  (paraphrased)"


def _swap_corpus(d):
    other = mini_corpus()
    other["documents"] = other["documents"][:-1]  # another valid corpus: one document fewer
    (d / "corpus.json").write_text(json.dumps(other, indent=1) + "\n", encoding="utf-8")


# case -> (how to break the dataset, file, record, field) as the one problem must name them
DATASET_CASES = {
    "malformed-json-corpus": (lambda d: _rebind(d, b'{"documents": [\n  {"id": "a", "text": "x",}\n]}\n'),
                              "corpus.json", "line 2 column 27", "(json)"),
    "missing-required-field": (lambda d: _edit_eval(d, _drop_text), "evaluation.json", "questions[1] (id 'q0001')",
                               "text: Field required"),
    "duplicate-question-id": (lambda d: _edit_eval(d, _dup_question), "evaluation.json",
                              "questions[2] (id 'q0000')", "id: duplicate question id 'q0000'"),
    "quote-not-verbatim": (lambda d: _edit_eval(d, _bend_quote), "evaluation.json",
                           "questions[1] (id 'q0001') request 'q0001.r1'", "requests[0].evidence[0].quote"),
    "byte-order-mark": (lambda d: _rebind(d, b"\xef\xbb\xbf" + (d / "corpus.json").read_bytes()), "corpus.json",
                        "(file)", "(encoding): starts with a UTF-8 byte-order mark"),
    "invalid-utf8": (lambda d: _rebind(d, b'{"documents": [{"id": "a", "text": "caf\xe9"}]}'), "corpus.json",
                     "(file)", "(encoding): not valid UTF-8 at byte 39"),
    "digest-mismatch": (lambda d: _edit_eval(d, lambda ev: ev.update(corpus_digest="sha256:" + "0" * 64)),
                        "evaluation.json", "(top level)", "corpus_digest: the evaluation is bound to corpus sha256:00"),
    "corpus-swapped": (_swap_corpus, "evaluation.json", "(top level)", "corpus_digest: the evaluation is bound to"),
}


@pytest.fixture
def bad_lab(tmp_path, monkeypatch):
    """A lab whose arm `remote` calls a FakeOpenAIServer; the test breaks its dataset or arms file."""
    synthetic_dataset(tmp_path / "datasets" / "rel", 6)
    env = lab_env(tmp_path)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("RAG_TTC_PROMPTS", raising=False)
    with FakeOpenAIServer(fake_model) as server:
        (tmp_path / "arms.yaml").write_text(arms_text("rel", {"remote": {}}, server.base_url))
        yield tmp_path, env, server


def _nothing_looks_complete(root) -> None:
    store = root / "home" / "store"
    assert not list(store.glob("cache/*/*/manifest.json")), "a shared artifact looks built"
    assert not list(store.glob("arms/*/answers.parquet")) and not list(store.glob("arms/*/*.json"))
    # A run a step failed in has a run record only to say so (`rag-ttc runs`: failed, the step, the error).
    records = [json.loads(p.read_text()) for p in (root / "home").glob("runs/*/*/status.json")]
    assert all(r["status"] == "failed" and r["failed_step"] for r in records), records


@pytest.mark.parametrize("case", list(DATASET_CASES))
def test_bad_dataset_is_one_error_in_cli_and_dagster_with_no_provider_call(bad_lab, case):
    root, env, server = bad_lab
    d = root / "datasets" / "rel"
    corrupt, file, record, field = DATASET_CASES[case]
    corrupt(d)

    code, out, err = cli("validate", str(d), env=env)
    assert code == 1 and out == ""
    text = err.strip()
    assert text.startswith("dataset problem:\n  - "), text  # one problem, not several
    assert text.count("\n") == 1
    assert f"{d / file}: {record}: {field}" in text, text

    result = materialize("remote", DagsterInstance.ephemeral())  # the whole job, answers and judge included
    assert not result.success
    failures = step_failures(result)
    assert list(failures) == ["corpus_binding"]
    kind, message = failures["corpus_binding"].split(": ", 1)
    assert kind.rsplit(".", 1)[-1] in ("DatasetError", "DigestMismatchError")
    assert message == text  # the step says exactly what the CLI says

    assert server.request_count == 0
    _nothing_looks_complete(root)


def test_bad_dataset_through_rag_ttc_run_names_the_same_problem(bad_lab):
    root, env, server = bad_lab
    d = root / "datasets" / "rel"
    DATASET_CASES["digest-mismatch"][0](d)
    _, _, expected = cli("validate", str(d), env=env)
    code, out, err = cli("run", "remote", "--stage", "answers", env=env)
    assert code == 1
    error = cli_error(err)
    assert error.startswith("arm 'remote': run ") and "failed:\n  step corpus_binding: " in error
    assert error.endswith(expected.strip())
    assert error.count("step ") == 1  # one failed step; the rest were never started
    assert server.request_count == 0
    _nothing_looks_complete(root)


ARMS_CASES = {  # case -> (arms mapping or raw YAML, strings the one error must contain)
    "unknown-key": ({"remote": {"evidence_kk": 3}}, ["arms.remote", "'evidence_kk'", "Extra inputs are not permitted"]),
    "wrong-type": ({"remote": {"retrieve_k": "five"}}, ["arms.remote", "'retrieve_k'", "valid integer"]),
    "duplicate-arm": ("remote: {}\n  other: {}\n  remote: {evidence_k: 1}\n", ["line 18", "duplicate key 'remote'"]),
    "invalid-partition-key": ({"Remote_1": {}}, ["arms.Remote_1", "arm name 'Remote_1' is not a valid partition key"]),
    "unknown-prompt": ({"remote": {"prompt": "no-such-prompt"}},
                       ["arm 'remote'", "field 'prompt'", "unknown prompt 'no-such-prompt'"]),
    "unknown-dataset": ({"remote": {"dataset": "nope"}}, ["arm 'remote'", "field 'dataset'", "unknown dataset 'nope'"]),
    "overlap-not-below-chunk": ({"remote": {"overlap_runes": 600}},
                                ["arms.remote", "overlap_runes (600) must be smaller than chunk_runes (600)"]),
    "evidence-k-above-retrieve-k": ({"remote": {"evidence_k": 6}},
                                    ["arms.remote", "evidence_k (6) cannot exceed retrieve_k (5)"]),
    "negative-budget": ({"remote": {"generation_budget": -1}},
                        ["arms.remote", "'generation_budget'", "greater than or equal to 0"]),
    "prompt-unknown-placeholder": ({"remote": {}}, ["arm 'remote'", "field 'prompt'", "grounded-answer-v1.txt",
                                                    "unknown placeholder(s) ['context']"]),
    # Labels never reach the system under test: a prompt rendering the request annotation needs an oracle arm.
    "labels-in-prompt": ({"remote": {"prompt": "grounded-answer-multipart-v1"}},
                         ["arm 'remote'", "field 'requests_in_prompt'", "prompt 'grounded-answer-multipart-v1'",
                          "(field 'prompt')", "{{requests}}", "requests_in_prompt: oracle"]),
    "labels-in-retry-prompt": ({"remote": {"citation_check": True, "citation_retry_prompt": "restated-evidence-v1"}},
                               ["arm 'remote'", "field 'requests_in_prompt'", "prompt 'restated-evidence-v1'",
                                "(field 'citation_retry_prompt')"]),
    "oracle-without-labels": ({"remote": {"requests_in_prompt": "oracle"}},
                              ["arm 'remote'", "field 'requests_in_prompt'", "declared oracle",
                               "'grounded-answer-v1' renders no {{requests}}"]),
}


@pytest.mark.parametrize("case", list(ARMS_CASES))
def test_bad_arms_file_is_one_error_in_cli_and_at_definitions_load(bad_lab, monkeypatch, case):
    root, env, server = bad_lab
    arms, needles = ARMS_CASES[case]
    arms_file = root / "arms.yaml"
    if isinstance(arms, str):  # raw YAML: a mapping cannot hold a duplicate key
        arms_file.write_text(arms_text("rel", {"placeholder": {}}, server.base_url)
                             .replace("placeholder: {}\n", arms))
    else:
        arms_file.write_text(arms_text("rel", arms, server.base_url))
    if case == "prompt-unknown-placeholder":
        prompts = root / "prompts"
        shutil.copytree(REPO / "prompts", prompts)
        p = prompts / "grounded-answer-v1.txt"
        p.write_text(p.read_text().replace("{{evidence}}", "{{evidence}}\n{{context}}"))
        env = {**env, "RAG_TTC_PROMPTS": str(prompts)}
        monkeypatch.setenv("RAG_TTC_PROMPTS", str(prompts))
        needles = [*needles, str(p)]

    code, out, err = cli("run", "remote", "--stage", "answers", env=env)
    assert code == 1 and out == ""
    error = cli_error(err)
    assert "\n" not in error and str(arms_file) in error, error
    for needle in needles:
        assert needle in error, (needle, error)

    # The definitions do not load (the UI shows the load error), with the same message.
    from rag_ttc_assets.core.arms_file import ArmsError
    from rag_ttc_assets.definitions import build_definitions

    with pytest.raises(ArmsError) as exc:
        build_definitions()
    assert str(exc.value) == error
    assert server.request_count == 0
    _nothing_looks_complete(root)


def test_beir_import_with_qrels_naming_missing_documents(tmp_path):
    src, dest = tmp_path / "beir", tmp_path / "datasets" / "imported"
    (src / "qrels").mkdir(parents=True)
    (src / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in [
        {"_id": "d1", "title": "One", "text": "first doc"}, {"_id": "d2", "title": "", "text": "second doc"}]))
    (src / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in [
        {"_id": "q1", "text": "first?"}, {"_id": "q2", "text": "second?"}]))
    (src / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\tgone\t1\n")
    code, out, err = cli("import-beir", str(src), str(dest), env=lab_env(tmp_path))
    assert code == 1 and out == ""
    error = cli_error(err)
    assert "\n" not in error
    assert error.startswith(f"{src}/qrels/test.tsv: line 3: corpus-id 'gone' is not in {src}/corpus.jsonl")
    assert not dest.exists()  # nothing half-imported: no corpus without its evaluation
