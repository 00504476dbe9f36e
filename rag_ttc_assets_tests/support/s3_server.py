"""A real S3 API server on 127.0.0.1 for tests: moto's standalone server (`python -m moto.server`) in its own
process, started once per test session, with IAM authentication on, so a bucket without write permission, unknown
credentials and a missing bucket are refused as a real endpoint refuses them.

    server = S3Server.start()            # or the session fixture `s3_server`
    server.create_bucket("my-bucket")
    env = server.env("my-bucket")        # RAG_TTC_HOME=s3://my-bucket/lab and the AWS_* variables
    env = server.env("my-bucket", readonly=True)   # credentials that may read but not write

Each test gets its own bucket (fixture `s3_bucket`): the server is shared, the buckets are not."""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REGION = "us-east-1"
ADMIN_POLICY = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
READ_POLICY = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Action": ["s3:GetObject", "s3:ListBucket", "s3:GetBucketLocation"], "Resource": "*"}]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class S3Server:
    endpoint: str
    proc: subprocess.Popen | None
    keys: dict[str, tuple[str, str]] = field(default_factory=dict)  # user -> (access key id, secret)

    @classmethod
    def start(cls, log: Path | None = None) -> S3Server:
        """moto's server on a free port, IAM users `admin` (everything) and `reader` (read and list only), then
        authentication switched on (every later request must be signed by one of their keys)."""
        port = free_port()
        out = open(log, "w") if log else subprocess.DEVNULL
        proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        server = cls(f"http://127.0.0.1:{port}", proc)
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    server.stop()
                    raise RuntimeError(f"moto server did not start on port {port} (exit {proc.poll()})") from None
                time.sleep(0.2)
        try:
            server._users()
        except BaseException:
            server.stop()  # a server it could not set up is not left running
            raise
        return server

    def _client(self, service: str, user: str | None = "admin"):
        import boto3

        key, secret = self.keys.get(user, ("bootstrap", "bootstrap"))
        return boto3.client(service, endpoint_url=self.endpoint, region_name=REGION, aws_access_key_id=key,
                            aws_secret_access_key=secret)

    def _users(self) -> None:
        iam = self._client("iam", None)
        for user, policy in (("admin", ADMIN_POLICY), ("reader", READ_POLICY)):
            iam.create_user(UserName=user)
            iam.put_user_policy(UserName=user, PolicyName=f"{user}-policy", PolicyDocument=json.dumps(policy))
            k = iam.create_access_key(UserName=user)["AccessKey"]
            self.keys[user] = (k["AccessKeyId"], k["SecretAccessKey"])
        # From now on moto checks every request's signature and the user's policy.
        req = urllib.request.Request(f"{self.endpoint}/moto-api/reset-auth", data=b"0", method="POST",
                                     headers={"Content-Type": "application/octet-stream"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert resp.status == 200

    def create_bucket(self, bucket: str) -> str:
        self._client("s3").create_bucket(Bucket=bucket)
        return bucket

    def s3(self, user: str = "admin"):
        """A boto3 S3 client of `user`, to look at or damage objects as a test."""
        return self._client("s3", user)

    def env(self, bucket: str, prefix: str = "lab", readonly: bool = False) -> dict[str, str]:
        """The environment of a lab whose store is s3://bucket/prefix on this server: RAG_TTC_HOME and the
        standard AWS variables (the `reader` user's keys when `readonly`)."""
        key, secret = self.keys["reader" if readonly else "admin"]
        return {"RAG_TTC_HOME": f"s3://{bucket}/{prefix}", "AWS_ENDPOINT_URL": self.endpoint,
                "AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret, "AWS_DEFAULT_REGION": REGION,
                "AWS_ALLOW_HTTP": "true", "AWS_EC2_METADATA_DISABLED": "true"}

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


def forget_clients() -> None:
    """Drop s3fs's cached filesystems, which keep the credentials they were made with."""
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()


_buckets = itertools.count(1)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """One moto S3 server for the whole test session (stopped at its end)."""
    server = S3Server.start(log=tmp_path_factory.mktemp("moto") / "moto.log")
    yield server
    server.stop()


@pytest.fixture
def s3_bucket(s3_server, monkeypatch, tmp_path):
    """A fresh bucket for this test; the environment points the lab's store at s3://<bucket>/lab, and this
    worker's local cache (RAG_TTC_LOCAL_CACHE) at tmp_path/local-cache."""
    bucket = s3_server.create_bucket(f"test-{os.getpid()}-{next(_buckets)}")
    for k, v in {**s3_server.env(bucket), "RAG_TTC_LOCAL_CACHE": str(tmp_path / "local-cache")}.items():
        monkeypatch.setenv(k, v)
    forget_clients()
    yield bucket
    forget_clients()
