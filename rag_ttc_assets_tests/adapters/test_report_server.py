"""The read-only report server: a real HTTP server on 127.0.0.1 over a store folder; only comparisons/ and
reports/ files are served, nothing else, and nothing is written."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from rag_ttc_assets.adapters.report_server import make_server, report_url, serve_in_thread


@pytest.fixture
def served(tmp_path):
    (tmp_path / "comparisons").mkdir()
    (tmp_path / "comparisons" / "diagnosis.html").write_text("<p>diagnosis</p>")
    (tmp_path / "comparisons" / ".hidden").write_text("no")
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "baseline.html").write_text("<p>arm</p>")
    (tmp_path / "arms").mkdir()
    (tmp_path / "arms" / "answers.parquet").write_text("secret rows")
    (tmp_path / "secret.txt").write_text("secret")
    server, thread = serve_in_thread(tmp_path)
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _get(url: str, method: str = "GET") -> tuple[int, bytes, dict]:
    req = urllib.request.Request(url, method=method, data=b"x" if method in ("POST", "PUT") else None)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read(), {k.lower(): v for k, v in r.headers.items()}
    except urllib.error.HTTPError as e:
        return e.code, b"", {k.lower(): v for k, v in e.headers.items()}


def test_serves_the_reports_and_nothing_else(served):
    status, body, headers = _get(served + "/comparisons/diagnosis.html")
    assert status == 200 and body == b"<p>diagnosis</p>" and headers["content-type"].startswith("text/html")
    assert headers["x-content-type-options"] == "nosniff"
    assert _get(served + "/reports/baseline.html")[:2] == (200, b"<p>arm</p>")
    for path in ("/secret.txt", "/arms/answers.parquet", "/comparisons/../secret.txt", "/comparisons/%2e%2e/secret.txt",
                 "/comparisons/.hidden", "/comparisons/", "/comparisons", "/", "/reports/missing.html"):
        assert _get(served + path)[0] == 404, path


def test_it_is_read_only(served):
    for method in ("POST", "PUT", "DELETE"):
        assert _get(served + "/comparisons/diagnosis.html", method)[0] in (405, 501), method


def test_it_binds_the_loopback_interface_only(tmp_path):
    with pytest.raises(ValueError, match="loopback"):
        make_server(tmp_path, 0, host="0.0.0.0")


def test_report_url_follows_the_environment(monkeypatch):
    monkeypatch.delenv("RAG_TTC_REPORTS_URL", raising=False)
    assert report_url("comparisons", "diagnosis.html") is None
    monkeypatch.setenv("RAG_TTC_REPORTS_URL", "http://127.0.0.1:3001/")
    assert report_url("comparisons", "a--b.html") == "http://127.0.0.1:3001/comparisons/a--b.html"
