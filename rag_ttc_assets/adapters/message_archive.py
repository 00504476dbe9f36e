"""Content-addressed archive of the requests sent to providers: `{"messages", "tools"}` of each call, so a row
can show exactly what the model saw.

One gzip'd canonical JSON file per digest, at `root/ab/<hex>.json.gz` (root: the store's `messages` folder),
written once by temp file and rename (readers see no file or a whole one). The digest is
`sha256:<hex>` of the canonical JSON, so the same request always gives the same digest and one file."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path

from rag_ttc_assets.adapters.provider_cache import canonical_json
from rag_ttc_assets.adapters.atomic import atomic_write_bytes

_DIGEST = re.compile(r"^sha256:([0-9a-f]{64})$")


class MessageArchiveError(LookupError):
    """A digest the archive does not hold, or a file that does not match its digest."""


def request(messages: list[dict], tools: list[dict] | None = None) -> dict:
    """What is archived for one call: the messages and the tools offered (None when none were)."""
    return {"messages": messages, "tools": tools or None}


def digest_of(messages: list[dict], tools: list[dict] | None = None) -> str:
    """`sha256:<hex>` of the request's canonical JSON (what `put` returns, without writing anything)."""
    try:
        body = canonical_json(request(messages, tools))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"message archive: the request is not plain JSON: {exc}") from exc
    return "sha256:" + hashlib.sha256(body.encode("utf-8")).hexdigest()


class MessageArchive:
    def __init__(self, root: Path | str):
        self.root = Path(root) if isinstance(root, str) else root  # a Path, or an object store's UPath

    def path_for(self, digest: str) -> Path:
        m = _DIGEST.match(digest or "")
        if m is None:
            raise ValueError(f"message archive {self.root}: {digest!r} is not a sha256:<64 hex digits> digest")
        hexdigest = m.group(1)
        return self.root / hexdigest[:2] / f"{hexdigest}.json.gz"

    def put(self, messages: list[dict], tools: list[dict] | None = None) -> str:
        """Archive the request (once per digest) and return its digest."""
        digest = digest_of(messages, tools)
        path = self.path_for(digest)
        if not path.is_file():
            body = canonical_json(request(messages, tools)).encode("utf-8")
            atomic_write_bytes(path, gzip.compress(body, mtime=0))
        return digest

    def get(self, digest: str) -> dict:
        """The archived `{"messages", "tools"}` of `digest`; MessageArchiveError names the file when it is
        missing, unreadable or does not match its digest."""
        path = self.path_for(digest)
        try:
            body = gzip.decompress(path.read_bytes())
        except FileNotFoundError:
            raise MessageArchiveError(f"{path}: no archived request {digest}") from None
        except (OSError, EOFError) as exc:
            raise MessageArchiveError(f"{path}: archived request {digest} is not readable gzip ({exc})") from None
        if "sha256:" + hashlib.sha256(body).hexdigest() != digest:
            raise MessageArchiveError(f"{path}: archived request does not match its digest {digest}")
        return json.loads(body.decode("utf-8"))
