"""A `rag-ttc run` waiting for the `provider` pool (another run holds its one slot) sleeps while it waits, and
SIGINT or SIGTERM ends it within seconds: exit 130, the Dagster run canceled, its pending claim gone, its run
record interrupted. (Dagster 1.13's in-process executor neither sleeps in that wait nor looks at the signals.)"""

import json
import os
import signal
import time

import pytest
from dagster import DagsterInstance

from rag_ttc_assets.core.roles import PROVIDER_POOL
from rag_ttc_assets_tests.conftest import MINI_ARMS, REPO, mini_corpus, mini_questions, write_dataset
from rag_ttc_assets_tests.support.reliability import cli, cli_start, kill_group, lab_env

HOLDER = "another-run-holding-the-slot"


def _cpu_s(pid: int) -> float:
    """The process's user + system CPU time so far (/proc/PID/stat, fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _waiting(storage, proc, timeout: float = 240) -> str:
    """The run id of the step of `proc` that waits for a slot, once there is one."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the run ended before it waited for the pool"
        pending = [s for s in storage.get_concurrency_info(PROVIDER_POOL).pending_steps if s.run_id != HOLDER]
        if pending:
            return pending[0].run_id
        time.sleep(0.2)
    raise AssertionError("no step waited for the pool")


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads CPU time from /proc")
def test_a_run_waiting_for_the_provider_pool_sleeps_and_ends_on_sigint_or_sigterm(tmp_path):
    corpus = mini_corpus()
    write_dataset(tmp_path / "datasets" / "mini", corpus, mini_questions(corpus))
    (tmp_path / "arms.yaml").write_text(MINI_ARMS, encoding="utf-8")
    env = lab_env(tmp_path)
    home = tmp_path / "dh"
    home.mkdir()
    (home / "dagster.yaml").write_text((REPO / "dagster.yaml").read_text())  # the pool's limit: 1
    with DagsterInstance.from_config(str(home)) as instance:
        storage = instance.event_log_storage
        storage.set_concurrency_slots(PROVIDER_POOL, 1)
        assert storage.claim_concurrency_slot(PROVIDER_POOL, HOLDER, "answers").is_claimed

        for n, sig in enumerate((signal.SIGINT, signal.SIGTERM)):
            proc = cli_start("run", "bm25-only", "--stage", "answers", env=env, out=tmp_path / f"run{n}")
            try:
                run_id = _waiting(storage, proc)
                time.sleep(1.0)  # past the first claim checks
                cpu = _cpu_s(proc.pid)
                time.sleep(2.0)
                waiting_cpu = _cpu_s(proc.pid) - cpu
                assert proc.poll() is None
                assert waiting_cpu < 0.2, waiting_cpu  # it sleeps: a busy wait spends up to 2 s (a core)
                sent = time.monotonic()
                proc.send_signal(sig)
                code = proc.wait(timeout=30)
                took = time.monotonic() - sent
            finally:
                kill_group(proc)
            err = (tmp_path / f"run{n}.stderr").read_text()
            print(f"\n{sig.name}: {waiting_cpu:.2f} s CPU over 2 s of waiting; exit {code} {took:.1f} s after")
            assert took < 5 and code == 130, (took, code, err[-3000:])
            assert "Traceback" not in err
            assert (f"rag-ttc: error: arm 'bm25-only': run {run_id} interrupted while waiting for a `provider` "
                    f"pool slot (another run held it); Dagster records it CANCELED") in err, err[-3000:]
            assert instance.get_run_by_id(run_id).status.value == "CANCELED"
            info = storage.get_concurrency_info(PROVIDER_POOL)
            assert not [s for s in info.pending_steps if s.run_id == run_id]  # its claim is gone
            assert info.active_run_ids == {HOLDER}
            code, out, err = cli("runs", "bm25-only", "--json", env=env)
            assert code == 0, err[-3000:]
            record = next(r for r in json.loads(out) if r["dagster_run_id"] == run_id)
            assert record["status"] == "interrupted" and "waiting for a `provider` pool slot" in record["reason"]
