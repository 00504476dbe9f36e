"""`rag-ttc serve-reports`: the store's case reports and diagnoses (comparisons/, reports/) over HTTP on
127.0.0.1, read-only, so the Dagster UI's metadata links open them (`make dev` starts it beside `dagster dev`)."""

from __future__ import annotations

from rag_ttc_assets.adapters.report_server import make_server
from rag_ttc_assets.cli.common import lab_from_args, serve_until_stopped


def cmd_serve_reports(args) -> int:
    lab = lab_from_args(args)
    server = make_server(lab.store.root, args.port)
    return serve_until_stopped(server, f"serving {lab.store.root}/comparisons and /reports at "
                                       f"http://127.0.0.1:{server.server_port}/ (read-only; Ctrl-C stops)")


def add_parser(subparsers, common) -> None:
    s = subparsers.add_parser("serve-reports", parents=[common], help="serve the case reports on 127.0.0.1",
                              description="Serve the store's comparisons/ and reports/ folders (case reports, "
                                          "diagnoses) read-only over HTTP on 127.0.0.1. With RAG_TTC_REPORTS_URL set "
                                          "to its address, the assets' metadata link the pages as URLs.")
    s.add_argument("--port", type=int, default=3001, help="port on 127.0.0.1 (default 3001; 0: any free port)")
    s.set_defaults(fn=cmd_serve_reports)
