"""`rag-ttc serve-local-llm`: llama.cpp's OpenAI-compatible server with SmolLM2-135M-Instruct on 127.0.0.1
(adapters.llama_server), until interrupted, or around one command (`-- rag-ttc run local-llm`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from rag_ttc_assets.adapters import llama_server
from rag_ttc_assets.cli.common import CliError

DESCRIPTION = (
    "Start llama.cpp's llama-server (built by `make install-local-llm`) with SmolLM2-135M-Instruct on 127.0.0.1. "
    "It requires the key in $RAG_TTC_LOCAL_LLM_KEY, the variable the local-llm arms name in api_key_env. "
    "Without a command it serves until Ctrl-C; with `-- COMMAND...` it runs the command once the server is ready, "
    "stops the server, and exits with the command's status."
)


def add_parser(sub) -> None:
    s = sub.add_parser("serve-local-llm", help="serve the local LLM over HTTP (llama.cpp's OpenAI-compatible server)",
                       description=DESCRIPTION)
    s.add_argument("--port", type=int, default=llama_server.DEFAULT_PORT,
                   help=f"port on 127.0.0.1 (default {llama_server.DEFAULT_PORT}, the one arms.yaml's local-llm arms "
                        "name)")
    s.add_argument("--log", help="the server's log file (default: a new file in the temporary folder)")
    s.add_argument("command", nargs="*", help="a command to run while the server is up (after --)")
    s.set_defaults(fn=cmd_serve_local_llm)


def cmd_serve_local_llm(args) -> int:
    from pathlib import Path

    key = os.environ.get(llama_server.KEY_ENV)
    if not key:
        raise CliError(f"set {llama_server.KEY_ENV} to any string first: the server requires it as its API key and "
                       "the local-llm arms send it (the Makefile's targets set it for you)")
    why = llama_server.available()
    if why is not None:
        raise CliError(why)
    server = llama_server.LlamaServer(args.port, key, Path(args.log) if args.log else None)
    # A plain `kill` must stop the server too: SIGTERM unwinds like Ctrl-C, through the `finally` below.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        try:
            server.start()
        except RuntimeError as error:
            raise CliError(str(error)) from None
        print(f"serving {llama_server.MODEL} at {server.base_url} (model: openai/{llama_server.MODEL}, "
              f"api_key_env: {llama_server.KEY_ENV}); log: {server.log_path}", file=sys.stderr, flush=True)
        if args.command:
            return subprocess.run(args.command, check=False).returncode
        print("Ctrl-C stops it.", file=sys.stderr, flush=True)
        server_wait(server)
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()


def server_wait(server) -> None:
    """Block until the server process ends (then say so) or a signal arrives."""
    import time

    while server.running:
        time.sleep(1)
    raise CliError(f"llama-server stopped; its log ({server.log_path}) ends:\n{server.log_tail()}")
