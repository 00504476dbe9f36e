"""The object store's pre-flight: can this process write `RAG_TTC_HOME=s3://...` with the AWS variables it has?

Run by `rag-ttc run` before it materializes and by the first asset of each Dagster step process, so a store the
run cannot use fails before any provider call, with one line naming the setting and what to do. Credentials are
named by variable, never printed."""

from __future__ import annotations

import os
import uuid

from rag_ttc_assets.adapters.atomic import StoreError

CREDENTIALS = "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"


def _split(uri: str) -> tuple[str, str]:
    bucket, _, prefix = uri.split("://", 1)[1].partition("/")
    return bucket, prefix.strip("/")


def endpoint() -> str:
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or "AWS's default S3 endpoint"


def check_writable(uri: str, home: str | None = None) -> None:
    """PUT and DELETE a probe object under the store's prefix `uri` and list it; StoreError says what is wrong,
    naming RAG_TTC_HOME (`home`, the folder the store is in)."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError, NoCredentialsError

    bucket, prefix = _split(uri)
    where = f"RAG_TTC_HOME={home or uri}"
    if not bucket:
        raise StoreError(f"{where}: no bucket in the URI; use s3://<bucket>/<prefix>")
    ep = endpoint()
    if ep.startswith("http://") and os.environ.get("AWS_ALLOW_HTTP", "").lower() != "true":
        raise StoreError(f"{where}: AWS_ENDPOINT_URL={ep} is plain http, which LanceDB refuses unless "
                         "AWS_ALLOW_HTTP=true; set AWS_ALLOW_HTTP=true (or use an https endpoint)")
    session = boto3.session.Session()
    if session.get_credentials() is None:
        raise StoreError(f"{where}: no AWS credentials found; set {CREDENTIALS} (or AWS_PROFILE) for the bucket")
    client = session.client("s3", config=Config(retries={"max_attempts": 1, "mode": "standard"},
                                                connect_timeout=5, read_timeout=20))
    key = f"{prefix}/.probe/{uuid.uuid4().hex}".lstrip("/")
    step = "PutObject"
    try:
        client.put_object(Bucket=bucket, Key=key, Body=b"")
        step = "ListObjectsV2"
        client.list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1)
        step = "DeleteObject"
        client.delete_object(Bucket=bucket, Key=key)
    except EndpointConnectionError as e:
        raise StoreError(f"{where}: cannot reach the object store at AWS_ENDPOINT_URL={ep} ({e.__class__.__name__}); "
                         "start it or fix AWS_ENDPOINT_URL") from None
    except NoCredentialsError:
        raise StoreError(f"{where}: no AWS credentials found; set {CREDENTIALS} for the bucket") from None
    except ClientError as e:
        code = e.response.get("Error", {}).get("Code", "")
        if code in ("NoSuchBucket", "404"):
            raise StoreError(f"{where}: bucket {bucket!r} does not exist at {ep}; create it, or fix the bucket "
                             "in RAG_TTC_HOME") from None
        if code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken"):
            raise StoreError(f"{where}: the object store rejects the credentials in {CREDENTIALS} ({code}); "
                             "set valid ones for the bucket") from None
        if code in ("AccessDenied", "403", "AllAccessDisabled"):
            raise StoreError(f"{where}: the credentials in AWS_ACCESS_KEY_ID may not write s3://{bucket}/{prefix} "
                             f"({step}: {code}); grant s3:PutObject, s3:GetObject, s3:DeleteObject and s3:ListBucket "
                             "on it, or use credentials that have them") from None
        raise StoreError(f"{where}: the object store at {ep} refused {step} ({code or e}); check the bucket and "
                         f"{CREDENTIALS}") from None
    except BotoCoreError as e:
        raise StoreError(f"{where}: the object store at AWS_ENDPOINT_URL={ep} failed ({e.__class__.__name__}: {e}); "
                         "check AWS_ENDPOINT_URL") from None
