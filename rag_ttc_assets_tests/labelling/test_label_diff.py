"""labelling.label_diff: the labels that differ between two labels versions, stamps ignored."""

from rag_ttc_assets.core.dataset import sha256_digest
from rag_ttc_assets.labelling.label_diff import label_differences
from rag_ttc_assets.labelling.label_drift_stage import find_version


def _ev(quote="The fee is 5 EUR.", doc="fees", stale=None, targets=("fees",), extra_request=False, **stamp):
    e = {"doc_id": doc, "quote": quote, **stamp, **({"stale": stale} if stale else {})}
    requests = [{"id": "q1.r1", "text": "fee?", "evidence": [e]}]
    if extra_request:
        requests.append({"id": "q1.r2", "text": "when?", "evidence": []})
    return {"questions": [{"id": "q1", "text": "fee?", "targets": [{"doc_id": t} for t in targets],
                           "requests": requests}]}


def test_each_kind_of_difference_is_named_and_stamps_are_not():
    assert label_differences(_ev(), _ev(quote_sha256="sha256:x", corpus_digest="sha256:y")) == []
    assert label_differences(_ev(), _ev(quote="The fee is 7 EUR.")) == [
        "request 'q1.r1' evidence[0]: quote 'The fee is 5 EUR.' -> 'The fee is 7 EUR.'"]
    assert label_differences(_ev(), _ev(doc="pricing", stale="gone")) == [
        "request 'q1.r1' evidence[0]: document fees -> pricing; stale: no -> gone"]
    assert label_differences(_ev(), _ev(targets=("fees", "pricing"))) == [
        "question 'q1' targets: [fees] -> [fees, pricing]"]
    assert label_differences(_ev(), _ev(extra_request=True)) == ["request 'q1.r2': only in b's labels"]
    assert label_differences(_ev(), {"questions": []}) == ["question 'q1': only in a's labels"]


def test_find_version_by_digest(tmp_path):
    (tmp_path / "v1.json").write_bytes(b"one")
    (tmp_path / "v2.json").write_bytes(b"two")
    files = [tmp_path / "missing.json", tmp_path / "v1.json", tmp_path / "v2.json"]
    assert find_version(sha256_digest(b"two"), files) == tmp_path / "v2.json"
    assert find_version(sha256_digest(b"three"), files) is None
