"""The artifact store on S3-compatible object storage (`RAG_TTC_HOME=s3://<bucket>/<prefix>`), behind the same
`ArtifactStore` API as a local folder.

Endpoint and credentials come from the standard AWS variables only (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`,
`AWS_SECRET_ACCESS_KEY`, `AWS_DEFAULT_REGION`, `AWS_ALLOW_HTTP`), so s3fs, boto3 and LanceDB see the same settings.
Per-arm tables, JSON, run records and the message archive are objects, each written whole by one PUT. A shared
artifact is built into a local temporary folder, its files uploaded under `cache/<kind>/<key>/files/<content>/`,
then its manifest (each file's size, sha256 and md5) PUT last with `If-None-Match: *`: the manifest is the commit,
and when two machines build the same artifact the first manifest wins and the other adopts it. Readers trust an
artifact whose manifest is there and whose objects all have the listed size and ETag (a single PUT's ETag is the
md5 of its bytes); its files are pulled by content digest into this worker's local cache (`RAG_TTC_LOCAL_CACHE`)
and checked there by sha256, except a LanceDB table (`*.lance`), which LanceDB reads on `s3://` in place.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any, Callable

from rag_ttc_assets.adapters.atomic import SINGLE_PUT, StoreError, is_local
from rag_ttc_assets.adapters.s3_check import check_writable
from rag_ttc_assets.adapters.store import MANIFEST, ArtifactStore, Built, digest_tree, file_lock, move_into_place

SCHEMES = ("s3",)
LOCAL_CACHE_ENV = "RAG_TTC_LOCAL_CACHE"


def is_object_uri(value: Any) -> bool:
    return isinstance(value, str) and value.split("://", 1)[0] in SCHEMES and "://" in value


def remote_root(uri: str):
    """The `UPath` of an object-store URI (a pathlib-like handle over s3fs), with s3fs's listing cache off (another
    machine may have written since the last listing) and botocore's standard retries (throttling, 5xx)."""
    from upath import UPath

    return UPath(uri.rstrip("/"), use_listings_cache=False,
                 config_kwargs={"retries": {"max_attempts": 3, "mode": "standard"}})


def local_cache_dir(explicit: str | Path | None = None) -> Path:
    """This worker's local cache: RAG_TTC_LOCAL_CACHE, else `rag-ttc-assets` under the user's cache folder."""
    value = explicit or os.environ.get(LOCAL_CACHE_ENV)
    if value:
        return Path(value).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return (Path(base) / "rag-ttc-assets").resolve()


def _stays_remote(rel: str) -> bool:
    """A file of a LanceDB table (inside a `*.lance` folder): LanceDB opens it on the object store, never pulled."""
    return any(part.endswith(".lance") for part in rel.split("/")[:-1])


def _file_entries(folder: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.name != MANIFEST:
            data = p.read_bytes()
            out[str(p.relative_to(folder))] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                                               "md5": hashlib.md5(data).hexdigest()}
    return out


def _etag(info: dict) -> str | None:
    """The ETag of a listed object when it is an md5 of the bytes (a single PUT without SSE-KMS), else None."""
    tag = str(info.get("ETag") or info.get("etag") or "").strip('"')
    return tag if len(tag) == 32 and all(c in "0123456789abcdef" for c in tag) else None


class ObjectArtifactStore(ArtifactStore):
    """`ArtifactStore` whose root is an object-store `UPath`; shared artifacts pulled into `local_cache`."""

    def __init__(self, root, local_cache: Path):
        self.root = root
        self.local_cache = Path(local_cache)
        self.fs = root.fs

    @property
    def uri(self) -> str:
        return str(self.root)

    # --- the pre-flight ---------------------------------------------------------------------------------------
    def check_writable(self) -> None:
        check_writable(self.uri, home=self.uri.rsplit("/", 1)[0])

    # --- shared, content-addressed artifacts ----------------------------------------------------------------
    def _read_manifest(self, final) -> dict[str, Any] | None:
        return self._remote_manifest(final)[0]

    def _remote_manifest(self, final) -> tuple[dict[str, Any] | None, str | None]:
        """(the manifest if it and every object it lists are intact, the manifest object's ETag if one is there)."""
        mpath = f"{final.path}/{MANIFEST}"
        try:
            etag = str(self.fs.info(mpath).get("ETag", "")).strip('"') or None
            manifest = json.loads(self.fs.cat_file(mpath).decode("utf-8"))
        except FileNotFoundError:
            return None, None
        except ValueError as e:
            warnings.warn(f"artifact {final} is corrupt (manifest: {e}); rebuilding it", stacklevel=3)
            return None, None
        objects = f"{final.path}/{manifest.get('objects')}"
        listed = {k[len(objects) + 1:]: v for k, v in self.fs.find(objects, detail=True).items()}
        for rel, want in (manifest.get("files") or {}).items():
            got = listed.get(rel)
            problem = ("missing" if got is None else
                       f"{got['size']} bytes, the manifest says {want['size']}" if got["size"] != want["size"] else
                       "its ETag is not the md5 the manifest lists" if _etag(got) not in (None, want["md5"]) else None)
            if problem:
                warnings.warn(f"artifact {final} is corrupt (object {rel}: {problem}); rebuilding it", stacklevel=3)
                return None, etag
        return manifest, etag

    def intact(self, path) -> bool:
        if is_local(path) or not is_object_uri(str(path)):
            return False  # a path of this worker's local cache, not a location of the store
        return self._read_manifest(remote_root(str(path))) is not None

    def _local_dir(self, kind: str, manifest: dict[str, Any]) -> Path:
        return self.local_cache / "artifacts" / kind / manifest["content_digest"].split(":", 1)[1][:24]

    def _pulled(self, kind: str, final, manifest: dict[str, Any]) -> Path | None:
        """The artifact's files in the local cache (pulled now if absent or damaged), each checked by sha256;
        None (after a warning) when an object does not match its digest."""
        local = self._local_dir(kind, manifest)
        pulled = {rel: w for rel, w in manifest["files"].items() if not _stays_remote(rel)}

        def ok(folder: Path) -> bool:
            return all((folder / rel).is_file() and hashlib.sha256((folder / rel).read_bytes()).hexdigest() == w["sha256"]
                       for rel, w in pulled.items())

        if (local / MANIFEST).is_file() and ok(local):
            return local
        local.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(self.local_cache / "locks" / f"{kind}-{local.name}.lock"):
            if (local / MANIFEST).is_file() and ok(local):
                return local
            tmp = Path(tempfile.mkdtemp(prefix=f".{local.name}.", dir=local.parent))
            try:
                for rel, want in pulled.items():
                    data = self.fs.cat_file(f"{final.path}/{manifest['objects']}/{rel}")
                    if hashlib.sha256(data).hexdigest() != want["sha256"]:
                        warnings.warn(f"artifact {final} is corrupt (object {rel} does not match its sha256); "
                                      "rebuilding it", stacklevel=4)
                        shutil.rmtree(tmp, ignore_errors=True)
                        return None
                    (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                    (tmp / rel).write_bytes(data)
                move_into_place(tmp, local, manifest)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        return local

    def _hit(self, kind: str, final, kd: str, manifest: dict[str, Any], cache_hit: bool) -> Built | None:
        local = self._pulled(kind, final, manifest)
        if local is None:
            return None
        return Built(kind, local, kd, manifest["content_digest"], cache_hit, manifest, uri=str(final))

    def build_once(self, kind: str, key: dict[str, Any], builder: Callable[[Path], dict[str, Any]],
                   reuse: Callable[[dict[str, Any]], bool] = lambda manifest: True) -> Built:
        final, kd = self.artifact_dir(kind, key)
        manifest, etag = self._remote_manifest(final)
        if manifest is not None and reuse(manifest) and (built := self._hit(kind, final, kd, manifest, True)):
            return built
        # One builder per artifact on this machine; across machines the manifest's conditional PUT decides.
        with file_lock(self.local_cache / "locks" / f"{kind}-{final.name}.lock"):
            manifest, etag = self._remote_manifest(final)
            if manifest is not None and reuse(manifest) and (built := self._hit(kind, final, kd, manifest, True)):
                return built
            return self._build(kind, key, kd, final, builder, replace=etag)

    def _build(self, kind: str, key: dict[str, Any], kd: str, final, builder, replace: str | None) -> Built:
        (self.local_cache / "tmp").mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=self.local_cache / "tmp"))
        try:
            info = builder(tmp)
            content = digest_tree(tmp)
            files = _file_entries(tmp)
            objects = f"files/{content.split(':', 1)[1][:24]}"
            manifest = {"kind": kind, "key": key, "key_digest": kd, "info": info, "content_digest": content,
                        "files": files, "objects": objects, "remote": sorted(r for r in files if _stays_remote(r))}
            for rel in files:
                self.fs.pipe_file(f"{final.path}/{objects}/{rel}", (tmp / rel).read_bytes(), chunksize=SINGLE_PUT)
            body = json.dumps(manifest, indent=1, ensure_ascii=False, default=str).encode("utf-8")
            try:
                # The commit: only if no manifest is there (or the damaged one this builder replaces is unchanged).
                if replace:
                    self.fs.pipe_file(f"{final.path}/{MANIFEST}", body, IfMatch=replace)
                else:
                    self.fs.pipe_file(f"{final.path}/{MANIFEST}", body, mode="create")
            except (FileExistsError, OSError) as e:
                if isinstance(e, FileNotFoundError):
                    raise
                winner, _ = self._remote_manifest(final)
                if winner is None:
                    raise StoreError(f"{final}: another builder committed a manifest that does not verify; "
                                     "rerun to rebuild it") from e
                if winner["objects"] != objects:
                    self.fs.rm(f"{final.path}/{objects}", recursive=True)
                if (built := self._hit(kind, final, kd, winner, False)) is None:
                    raise StoreError(f"{final}: the winning build's objects do not match its manifest; rerun") from e
                return built
            local = self._local_dir(kind, manifest)
            for rel in manifest["remote"]:
                (tmp / rel).unlink()
            move_into_place(tmp, local, manifest)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return Built(kind, local, kd, content, False, manifest, uri=str(final))

