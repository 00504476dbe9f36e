"""A small read-only HTTP server of the store's case reports and diagnoses (its `comparisons/` and `reports/`
folders) on 127.0.0.1, so the Dagster UI's metadata can link them as URLs: a browser will not open a file:// link
from an http:// page.

GET and HEAD only; a path outside the two folders, a hidden file or a directory is 404 (no listing); every
answer carries `X-Content-Type-Options: nosniff` and the case report's own Content-Security-Policy travels in the
page itself.
"""

from __future__ import annotations

import os
import threading
from functools import partial
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

SERVED = ("comparisons", "reports")
REPORTS_URL_ENV = "RAG_TTC_REPORTS_URL"  # where `rag-ttc serve-reports` answers, e.g. http://127.0.0.1:3001


ANNOTATE_URL_ENV = "RAG_TTC_ANNOTATE_URL"  # where `rag-ttc annotate` answers, e.g. http://127.0.0.1:3002


def annotate_url() -> str | None:
    """The labelling page's address when RAG_TTC_ANNOTATE_URL says where `rag-ttc annotate` answers (the case report
    and the Dagster UI's metadata link it); an address that is not http(s) is ignored."""
    url = os.environ.get(ANNOTATE_URL_ENV, "").rstrip("/")
    return url if url.startswith(("http://", "https://")) else None


def report_url(folder: str, name: str) -> str | None:
    """The URL of a served file (`comparisons/diagnosis.html`) when RAG_TTC_REPORTS_URL says where the server is."""
    from urllib.parse import quote

    base = os.environ.get(REPORTS_URL_ENV, "").rstrip("/")
    return f"{base}/{folder}/{quote(name)}" if base else None


class _Handler(SimpleHTTPRequestHandler):
    def __init__(self, *args, root: Path, **kwargs):
        self._root = root
        super().__init__(*args, directory=str(root), **kwargs)

    def translate_path(self, path: str) -> str:
        parts = [p for p in unquote(urlsplit(path).path).split("/") if p]
        if len(parts) < 2 or parts[0] not in SERVED or any(p.startswith(".") or p in ("..",) or "\\" in p
                                                           for p in parts):
            return ""
        target = (self._root / Path(*parts)).resolve()
        base = (self._root / parts[0]).resolve()
        if base not in target.parents or not target.is_file():
            return ""
        return str(target)

    def send_head(self):
        path = self.translate_path(self.path)
        if not path:
            self.send_error(HTTPStatus.NOT_FOUND, "not a served report")
            return None
        return super().send_head()

    def end_headers(self):
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def do_POST(self):  # noqa: N802
        self.send_error(HTTPStatus.METHOD_NOT_ALLOWED)

    do_PUT = do_DELETE = do_PATCH = do_POST  # noqa: N815

    def log_message(self, format, *args):  # noqa: A002
        pass


def make_server(store_root: Path, port: int = 0, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    """The server, bound (port 0: a free port, `server.server_port`); serve_forever() serves it."""
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError(f"serve-reports binds the loopback interface only, not {host!r}")
    return ThreadingHTTPServer((host, port), partial(_Handler, root=Path(store_root)))


def serve_in_thread(store_root: Path, port: int = 0) -> tuple[ThreadingHTTPServer, threading.Thread]:
    server = make_server(store_root, port)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread
