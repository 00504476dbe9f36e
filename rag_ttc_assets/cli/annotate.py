"""`rag-ttc annotate ARM [ARM...]`: a labelling page on 127.0.0.1 (docs/annotate.md).

Plain server-rendered HTML with a small script, served by the standard library's http.server like `serve-reports`:
every text shown is escaped (answers and chunks are untrusted) and the page's Content-Security-Policy runs only its own
script. Each change is one record appended to the change log (one write, fsynced, under a file lock, so two tabs or two
servers on the same file lose nothing: the later label wins, both stay in the log); the current labels file is the log
replayed (labelling.annotation), rewritten atomically after every change. `/labels-check` lists the dataset's gold quotes
`rag-ttc labels check` finds changed or gone, each linked to its question for repair.
"""

from __future__ import annotations

import html
import json
import re
import secrets
import sys
from dataclasses import asdict
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from rag_ttc_assets.cli.annotate_page import render_item, render_labels_check, render_pair
from rag_ttc_assets.cli.annotate_session import Annotator, LabelFiles, log_path
from rag_ttc_assets.cli.common import CliError, lab_from_args, serve_until_stopped
from rag_ttc_assets.cli.label_versions import check_dataset
from rag_ttc_assets.cli.sample_labels import write_sample
from rag_ttc_assets.labelling.annotation import AnnotationError, parse_log, replay

DEFAULT_PORT = 3002
E = html.escape


class _Handler(BaseHTTPRequestHandler):
    ann: Annotator
    port: int

    def _send(self, code: int, body: str, ctype: str, nonce: str | None = None, headers: dict | None = None):
        data = body.encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; "
                                                    f"connect-src 'self'; script-src 'nonce-{nonce or 'none'}'")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _json(self, code: int, obj) -> None:
        self._send(code, json.dumps(obj, ensure_ascii=False), "application/json; charset=utf-8")

    def _local(self) -> bool:
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
        if host not in ("127.0.0.1", "localhost", "[::1]"):
            self._send(HTTPStatus.FORBIDDEN, "the labelling page answers on 127.0.0.1 only", "text/plain")
            return False
        return True

    def do_GET(self):  # noqa: N802
        if not self._local():
            return
        path = urlsplit(self.path).path
        ann = self.ann
        try:
            if path == "/pairwise" or (path == "/" and ann.pairwise):
                if not ann.pairs:
                    self._send(HTTPStatus.NOT_FOUND, "the pairwise view needs two arms that answered the same "
                                                     "questions", "text/plain")
                    return
                k = ann.pair_resume_at(replay(ann.files.read()))
                self._send(HTTPStatus.FOUND, "", "text/plain", headers={"Location": f"/pair/{k}"})
            elif m := re.fullmatch(r"/pair/(\d+)", path):
                k = int(m.group(1))
                if k >= len(ann.pairs):
                    self._send(HTTPStatus.NOT_FOUND, f"no pair {k}: {len(ann.pairs)} pairs", "text/plain")
                    return
                nonce = secrets.token_urlsafe(12)
                self._send(HTTPStatus.OK, render_pair(ann, k, nonce), "text/html; charset=utf-8", nonce)
            elif path == "/":
                i = ann.resume_at(replay(ann.files.read()))
                self._send(HTTPStatus.FOUND, "", "text/plain", headers={"Location": f"/item/{i}"})
            elif m := re.fullmatch(r"/item/(\d+)", path):
                i = int(m.group(1))
                if i >= len(ann.source.items):
                    self._send(HTTPStatus.NOT_FOUND, f"no row {i}: rows 0 to {len(ann.source.items) - 1}",
                               "text/plain")
                    return
                nonce = secrets.token_urlsafe(12)
                self._send(HTTPStatus.OK, render_item(ann, i, nonce), "text/html; charset=utf-8", nonce)
            elif path == "/labels-check":
                self._send(HTTPStatus.OK, render_labels_check(ann), "text/html; charset=utf-8")
            elif path == "/api/state":
                state = replay(ann.files.read())
                items = [asdict(it) for it in ann.source.items]
                self._json(HTTPStatus.OK, {"annotator": ann.annotator, "items": items,
                                           "progress": asdict(ann.progress(state)), "resume": ann.resume_at(state),
                                           "pairs": ann.pairs and [p.to_json() for p in ann.pairs],
                                           "pair_progress": asdict(ann.pair_progress(state)), "order_seed": ann.seed,
                                           "labels": str(ann.files.labels), "log": str(ann.files.log)})
            else:
                self._send(HTTPStatus.NOT_FOUND, "not found", "text/plain")
        except (AnnotationError, CliError) as e:
            self._send(HTTPStatus.BAD_REQUEST, str(e), "text/plain")

    do_HEAD = do_GET  # noqa: N815

    def do_POST(self):  # noqa: N802
        if not self._local():
            return
        path = urlsplit(self.path).path
        action = {"/api/label": self.ann.label, "/api/edit": self.ann.edit, "/api/undo": self.ann.undo,
                  "/api/pair": self.ann.pair}.get(path)
        if action is None:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no action {path}"})
            return
        if not (self.headers.get("Content-Type") or "").startswith("application/json"):
            self._json(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, {"error": "send JSON (Content-Type: application/json)"})
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if not isinstance(body, dict):
                raise AnnotationError("the body is a JSON object")
            change = action(body)
        except json.JSONDecodeError as e:
            self._json(HTTPStatus.BAD_REQUEST, {"error": f"malformed JSON: {e.msg}"})
            return
        except AnnotationError as e:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(e)})
            return
        self._json(HTTPStatus.OK, {"ok": True, "seq": change.seq})

    def log_message(self, format, *args):  # noqa: A002
        pass


def make_server(ann: Annotator, port: int = 0, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError(f"annotate binds the loopback interface only, not {host!r}")
    handler = type("Handler", (_Handler,), {"ann": ann})
    return ThreadingHTTPServer((host, port), handler)


def _labels_check(lab, arms: list[str]):
    """() -> [(dataset, result)] of the arms' datasets' gold quotes `labels check` finds changed or gone."""
    def run():
        out = []
        for name in dict.fromkeys(lab.arms[a].dataset for a in arms):
            report = check_dataset(lab.dataset_dir(name), name)
            out += [(name, r) for r in report.results if r.status in ("changed", "gone")]
        return out
    return run


def cmd_annotate(args) -> int:
    lab = lab_from_args(args)
    for a in args.arms:
        lab.arms[a]
    if not args.annotator.strip():
        raise CliError("--annotator: a non-empty name")
    labels = Path(args.labels).expanduser().resolve() if args.labels else lab.store.root / "annotations" / "labels.jsonl"
    if not isinstance(labels, Path):
        raise CliError("--labels: a local file (the store is remote)")
    from rag_ttc_assets.labelling.annotate_stage import Source, SourceError  # late: polars loads only when this runs
    from rag_ttc_assets.stages.resolve import ArmInputs  # late: as above

    sample = Path(args.sample) if args.sample else None
    if args.budget is not None:
        if args.sample:
            raise CliError("--budget and --sample: give one (--budget draws a sample; --sample reads one)")
        sample = labels.with_name(labels.stem + ".sample.jsonl")
        for i, arm in enumerate(args.arms):
            rows, picks = write_sample(lab, arm, args.budget, args.sample_seed, sample, append=i > 0)
            print(f"{len(picks)} of {len(rows)} rows of arm {arm} to label, stratified by failure-flow branch and "
                  f"juror disagreement (seed {args.sample_seed}); sample: "
                  f"{(Path(args.labels) if args.labels else labels).with_name(sample.name)}", flush=True)
    try:
        source = Source(lab.store, lab.runs, {a: ArmInputs(lab, a).inspected() for a in args.arms}, sample)
    except SourceError as e:
        raise CliError(str(e)) from None
    if args.pairwise and len(args.arms) != 2:
        raise CliError(f"--pairwise: two arms, one answer of each side by side (got {len(args.arms)}: "
                       f"{', '.join(args.arms)})")
    files = LabelFiles(labels)
    shown = Path(args.labels) if args.labels else labels  # as the person typed it
    skipped = parse_log(files.log.read_text(encoding="utf-8"), str(files.log))[1] if files.log.exists() else []
    for s in skipped:
        print(s, file=sys.stderr)
    ann = Annotator(source, files, args.annotator.strip(), _labels_check(lab, args.arms), args.pairwise, args.seed)
    if args.pairwise and not ann.pairs:
        raise CliError(f"--pairwise: arms {args.arms[0]!r} and {args.arms[1]!r} answered no question in common")
    server = make_server(ann, args.port)
    return serve_until_stopped(
        server, f"labelling page at http://127.0.0.1:{server.server_port}/ (annotator {ann.annotator}; "
        + (f"{len(ann.pairs)} pairs of {args.arms[0]} and {args.arms[1]}, pairwise, A/B order seed {ann.seed}"
           if args.pairwise else f"{len(source.items)} rows of {', '.join(args.arms)}")
        + f"); labels {shown}, change log {log_path(shown)}; Ctrl-C stops")

def add_parser(subparsers, common) -> None:
    s = subparsers.add_parser(
        "annotate", parents=[common], help="a labelling page for people on 127.0.0.1",
        description="Serve a labelling page on 127.0.0.1 for materialized arms: per row the question, the answer as "
                    "the user saw it, its citations, the admitted chunks (cited spans marked) and the omitted ones; "
                    "per request the seed's four cases on keys 1-4, a gold quote highlighted in a chunk, a note; "
                    "requests added, split, merged, reworded. Every change is appended to a change log; the current "
                    "labels (judge-agreement's format) are rewritten beside it. docs/annotate.md.")
    s.add_argument("arms", nargs="+", metavar="ARM")
    s.add_argument("--annotator", required=True, help="who labels (each label carries it)")
    s.add_argument("--labels", help="the labels file to write (default: <store>/annotations/labels.jsonl; its "
                                    "change log beside it, <name>.log.jsonl)")
    s.add_argument("--sample", help="label only the rows listed in this JSON Lines file, in its order "
                                    '({"arm", "question", "run_id", "stratum", "probability"} per line)')
    s.add_argument("--budget", type=int, help="label only N rows of each arm, the ones whose labels most narrow its "
                                              "corrected completeness (as `rag-ttc sample-labels`: stratified by "
                                              "failure-flow branch and juror disagreement, each row's inclusion "
                                              "probability carried into its labels); the sample is written beside "
                                              "the labels, <name>.sample.jsonl")
    s.add_argument("--sample-seed", type=int, default=0, help="the seed of --budget's sample (default 0)")
    s.add_argument("--pairwise", action="store_true",
                   help="two arms: open the pairwise view, their answers to one question side by side (A and B in "
                        "an order drawn per question from --seed, the arms' names hidden until labelled), which is "
                        "more complete on -2..2 (keys 1-5); written as `kind: pair` labels")
    s.add_argument("--seed", type=int, default=0, help="the seed of the pairwise view's A/B order (default 0; each "
                                                       "pairwise label records it)")
    s.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0: any free port)")
    s.set_defaults(fn=cmd_annotate)
