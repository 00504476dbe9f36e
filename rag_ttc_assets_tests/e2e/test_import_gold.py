"""RAGChecker rows scored against their gold answers, through the user's path: `rag-ttc import-outputs` (a file
whose rows carry no retrieved context is refused, a few rows without one are counted), the gold answers' requests
derived (`validate` without derive-requests, then `rag-ttc derive-requests`, citation markers left out), a stale
derived-requests file named once by `validate`, and derive-requests saying why nothing is derived."""

from __future__ import annotations

import json

from rag_ttc_assets_tests.conftest import MINI_DEFAULTS
from rag_ttc_assets_tests.e2e.test_cli import rag_ttc

TOPICS = ["river", "mountain", "desert", "ocean", "forest"]


def _rows(n: int = 5) -> list[dict]:
    """RAGChecker rows as a real set carries them: gold answers with citation markers, numbered answers."""
    rows = []
    for i, t in enumerate(TOPICS[:n]):
        rows.append({
            "query_id": f"q{i}", "query": f"What is the largest {t} number {i} and where is it located?",
            "gt_answer": f"The largest {t} number {i} is Alpha{i} [1]. It is located in region R{i} [1][2]; "
                         f"scientists date it to {i} thousand years ago [1, 3]. It is visited often.[Doc 2]",
            "response": f"The largest {t} number {i} is Alpha{i} [1]. It lies in region R{i} [2].",
            "retrieved_context": [
                {"doc_id": f"d{i}a", "text": f"Alpha{i} is the largest {t} of its kind. It lies in region R{i}."},
                {"doc_id": f"d{i}b", "text": f"Scientists say {t} Alpha{i} was formed {i} thousand years ago."}]})
    return rows


def _lab(tmp_path, monkeypatch):
    (tmp_path / "datasets").mkdir()
    (tmp_path / "arms.yaml").write_text(MINI_DEFAULTS.replace("dataset: mini", "dataset: rc") + (
        "arms:\n  rc:\n    supply: imported\n    source: {file: rc.json, format: ragchecker}\n"), encoding="utf-8")
    for k, v in {"RAG_TTC_DATASETS": tmp_path / "datasets", "RAG_TTC_HOME": tmp_path / "home",
                 "RAG_TTC_ARMS": tmp_path / "arms.yaml", "DAGSTER_HOME": tmp_path / "dh"}.items():
        monkeypatch.setenv(k, str(v))
    (tmp_path / "dh").mkdir()
    return tmp_path


def _import(root, rows, name="rc", *flags):
    (root / f"{name}.json").write_text(json.dumps({"results": rows}), encoding="utf-8")
    return rag_ttc("import-outputs", str(root / f"{name}.json"), str(root / "datasets" / name),
                   "--format", "ragchecker", *flags)


def test_rows_without_retrieved_context_are_refused_or_counted_never_an_empty_corpus(tmp_path, monkeypatch):
    root = _lab(tmp_path, monkeypatch)
    none = [dict(r, retrieved_context=[]) for r in _rows()]
    code, out, err = _import(root, none, "empty")
    assert code == 1, out
    assert ("empty.json: no row carries a retrieved context (field 'retrieved_context' is empty in all 5 rows, the "
            "first results[0] (query_id q0))") in err
    assert not (root / "datasets" / "empty").exists()  # nothing written, so nothing `validate` then rejects

    some = _rows()
    some[1]["retrieved_context"] = some[3]["retrieved_context"] = []
    code, out, err = _import(root, some, "some")
    assert code == 0, err
    assert ("2 of 5 rows have no retrieved context (results[1] (query_id q1), results[3] (query_id q3)): those "
            "questions retrieved nothing") in out
    code, out, err = rag_ttc("validate", str(root / "datasets" / "some"))
    assert code == 0, err

    blank = _rows()
    blank[2]["retrieved_context"][1]["text"] = "  "
    code, out, err = _import(root, blank, "blank")
    assert code == 1 and not (root / "datasets" / "blank").exists()
    assert "blank.json: results[2] (query_id q2): retrieved_context[1]: field 'text' is empty" in err


def test_imported_gold_answers_are_derived_into_requests_and_a_stale_derivation_is_named_once(tmp_path,
                                                                                             monkeypatch):
    root = _lab(tmp_path, monkeypatch)
    code, out, err = _import(root, _rows(), "rc", "--json")
    assert code == 0, err
    made = json.loads(out)
    # Each question keeps its gold answer and no request of its own: its requests come from the gold answer.
    assert (made["questions"], made["gold_answers"], made["questions_with_derived_requests"]) == (5, 5, 5)
    assert made["derived_requests_offline"] == 5 * 4 and made["questions_as_one_request"] == 0
    evaluation = json.loads((root / "datasets" / "rc" / "evaluation.json").read_text())
    assert all(q["requests"] == [] and q["gold_answer"] for q in evaluation["questions"])

    # Without derive-requests, validate (and run) read the offline rule's requests.
    code, out, err = rag_ttc("validate", str(root / "datasets" / "rc"), "--json")
    assert code == 0, err
    assert json.loads(out)["requests_derived"] == 20

    code, out, err = rag_ttc("derive-requests", "rc")
    assert code == 0, err
    assert out.startswith("rc: 20 requests derived for 5 questions by rule local/claims-v1")
    written = json.loads((root / "datasets" / "rc" / "derived_requests.json").read_text())
    claims = {r["id"]: r["text"] for q in written["questions"] for r in q["requests"]}
    # Citation markers ([1], [1][2], [1, 3], [Doc 2]) are not part of a claim.
    assert [claims[f"q2.d{n}"] for n in range(1, 5)] == [
        "The largest desert number 2 is Alpha2", "It is located in region R2",
        "scientists date it to 2 thousand years ago", "It is visited often"]
    assert not [c for c in claims.values() if "[" in c]

    # The evaluation edited after deriving: validate names the stale file, both digests and what to run, once.
    path = root / "datasets" / "rc" / "evaluation.json"
    evaluation["questions"][0]["gold_answer"] += " It is old."
    path.write_text(json.dumps(evaluation, indent=1), encoding="utf-8")
    code, out, err = rag_ttc("validate", str(root / "datasets" / "rc"))
    assert code == 1
    assert err.startswith("dataset problem:\n") and err.count("\n  - ") == 1, err
    assert "derived_requests.json: (top level): evaluation_digest: stale: derived from evaluation sha256:" in err
    assert written["evaluation_digest"] in err and "rag-ttc derive-requests rc" in err
    assert "needs at least one request" not in err

    # Another file imported into the same folder would leave that derived file stale: refused, nothing written.
    before = path.read_bytes()
    code, out, err = _import(root, _rows(3), "rc")
    assert code == 1 and path.read_bytes() == before
    assert "derived_requests.json holds requests derived from another evaluation (sha256:" in err
    assert ("delete that file (or import into another folder), import again, then run `rag-ttc derive-requests rc`"
            in err)


def test_derive_requests_says_why_nothing_is_derived(tmp_path, monkeypatch):
    root = _lab(tmp_path, monkeypatch)
    code, _, err = _import(root, _rows(2))
    assert code == 0, err
    path = root / "datasets" / "rc" / "evaluation.json"
    evaluation = json.loads(path.read_text())
    # As an earlier import-outputs wrote them: one request each, the whole question with its gold answer.
    for q in evaluation["questions"]:
        q["requests"] = [{"id": f"{q['id']}.r1", "text": q["text"], "evidence": [], "gold_answer": q["gold_answer"]}]
    path.write_text(json.dumps(evaluation, indent=1), encoding="utf-8")
    code, out, err = rag_ttc("derive-requests", "rc")
    assert code == 1 and "0 requests derived" not in out
    assert ("nothing to derive in rc: all 2 questions with a gold_answer have requests of their own (q0, q1)"
            in err)
    assert "as an earlier `rag-ttc import-outputs` wrote them: import the file again" in err

    for q in evaluation["questions"]:
        del q["gold_answer"]
    path.write_text(json.dumps(evaluation, indent=1), encoding="utf-8")
    code, out, err = rag_ttc("derive-requests", "rc")
    assert code == 1 and "nothing to derive in rc: none of its 2 questions has a gold_answer" in err
