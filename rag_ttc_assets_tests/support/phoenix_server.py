"""A real Arize Phoenix server on 127.0.0.1 for tests (`phoenix serve`, the `arize-phoenix` package of the `phoenix`
extra): free HTTP and gRPC ports, a fresh working folder (its SQLite database), telemetry and every public-internet
request of its own (web fonts, pixels, the sandbox download) off, started once per test session and stopped at its
end by its own process group.

Phoenix 20.x binds its gRPC collector to every interface (`[::]:<port>`, phoenix/server/grpc_server.py) whatever
PHOENIX_HOST says; the server is started through `python -c LAUNCH`, which rewrites that address to 127.0.0.1
before Phoenix's own entry point (`phoenix.server.main:main`, the `phoenix` console script) runs, so nothing of the
test session listens beyond the loopback interface.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from rag_ttc_assets_tests.support.s3_server import free_port

MISSING = ("Arize Phoenix is not installed (the `phoenix serve` server and its client): "
           "pip install -c constraints.txt -e '.[test]' (the `phoenix` extra)")
START_TIMEOUT_S = 180.0  # first start on a busy 2-core machine: imports and the database migrations

# grpc.aio's Server.add_insecure_port is the one call Phoenix makes to bind its collector.
LAUNCH = """
import sys
import grpc.aio._server as _grpc_server
_bind = _grpc_server.Server.add_insecure_port
_grpc_server.Server.add_insecure_port = lambda self, address: _bind(self, address.replace("[::]:", "127.0.0.1:"))
from phoenix.server.main import main
sys.argv = ["phoenix", "serve"]
main()
"""


def phoenix_missing() -> str | None:
    """None when the server and its client are installed; else what is missing and how to install it. Looked up
    without importing `phoenix` (whose __init__ loads the whole server)."""
    spec = importlib.util.find_spec("phoenix")
    roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    for part in (("server", "main.py"), ("client", "__init__.py")):
        if not any(root.joinpath(*part).is_file() for root in roots):
            return MISSING
    return None


@dataclass
class PhoenixServer:
    host: str
    port: int
    grpc_port: int
    working_dir: Path
    process: subprocess.Popen
    log_path: Path

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def otlp_http_endpoint(self) -> str:
        """Where OTLP/HTTP (protobuf) trace exports go."""
        return f"{self.base_url}/v1/traces"

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def environment(host: str, port: int, grpc_port: int, working_dir: Path) -> dict[str, str]:
    """Phoenix's own variables (phoenix/config.py of the pinned version) for a closed, throwaway server."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
    return {**env, "PHOENIX_HOST": host, "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(grpc_port),
            "PHOENIX_WORKING_DIR": str(working_dir),
            "PHOENIX_TELEMETRY_ENABLED": "false", "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false"}


def healthy(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/healthz", timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def start(root: Path | None = None, host: str = "127.0.0.1", timeout_s: float = START_TIMEOUT_S) -> PhoenixServer:
    """Start `phoenix serve` in its own process group and wait for /healthz; raise with its log's tail if it does
    not come up."""
    root = Path(root or tempfile.mkdtemp(prefix="rag-ttc-phoenix-"))
    working_dir = root / "phoenix"
    working_dir.mkdir(parents=True, exist_ok=True)
    port, grpc_port = free_port(), free_port()
    log_path = root / "phoenix.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen([sys.executable, "-c", LAUNCH], stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, cwd=root, start_new_session=True,
                                   env=environment(host, port, grpc_port, working_dir))
    server = PhoenixServer(host, port, grpc_port, working_dir, process, log_path)
    deadline = time.monotonic() + timeout_s
    while not healthy(server.base_url):
        if process.poll() is not None or time.monotonic() > deadline:
            stop(server)
            raise RuntimeError(f"phoenix serve did not come up on {server.base_url} within {timeout_s:.0f} s "
                               f"(exit code {process.returncode}); its log:\n{server.log_tail()}")
        time.sleep(0.5)
    return server


def stop(server: PhoenixServer) -> None:
    """SIGTERM to the server's process group, then SIGKILL if it lingers."""
    if server.process.poll() is not None:
        return
    try:
        os.killpg(server.process.pid, signal.SIGTERM)
        server.process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(server.process.pid, signal.SIGKILL)
        server.process.wait(timeout=10)
    except ProcessLookupError:
        pass


def phoenix_fixture():
    """The session fixture (imported by e2e/conftest.py): one server for every test of the session. Without
    Phoenix installed it skips, naming what to install, and fails under RAG_TTC_REQUIRE_ALL (.ci/run sets it)."""
    import pytest

    from rag_ttc_assets_tests.support.required import skip_or_fail

    @pytest.fixture(scope="session")
    def phoenix_server(tmp_path_factory):
        missing = phoenix_missing()
        if missing:
            skip_or_fail(missing)
        server = start(tmp_path_factory.mktemp("phoenix"))
        try:
            yield server
        finally:
            stop(server)

    return phoenix_server
