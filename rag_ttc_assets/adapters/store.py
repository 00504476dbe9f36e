"""The one artifact store: atomic writes, content-addressed shared artifacts, per-arm tables.

Shared artifacts (chunks, representations, embeddings, indexes) live under `cache/<kind>/<key>`
where the key is the digest of the upstream configuration, so arms that agree upstream reuse
them. A build happens under a file lock, into a temporary folder renamed into place, so two
processes never build the same artifact twice and a half-built artifact never looks complete.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ValidationError

from rag_ttc_assets.adapters.atomic import StoreError, atomic_write_bytes, atomic_write_json, is_local
from rag_ttc_assets.adapters.message_archive import MessageArchive
from rag_ttc_assets.core import arm_summaries, judge_summaries
from rag_ttc_assets.core.arm_summaries import M, ArmFile, SummaryError  # noqa: F401  (SummaryError re-exported)
from rag_ttc_assets.core.tables import Table, by_name  # noqa: F401  (Table re-exported: the tables, with columns)

MANIFEST = "manifest.json"


class ArmJson:
    """The per-arm JSON records and summaries (`arms/<arm>/<name>`), declared like `Table`: each name carries the
    model of what it holds (core.arm_summaries, core.judge_summaries), which the store validates on write and on read."""

    BINDING = ArmFile("binding.json", arm_summaries.Binding)
    # the labels the arm ran with: the evaluation's digest, how many current, which left out
    LABELS = ArmFile("labels.json", arm_summaries.Labels)
    # the source file's digest, what matched what, the counts
    IMPORT_MAPPING = ArmFile("import_mapping.json", arm_summaries.ImportMapping)
    # a Phoenix source's span records as read (the run record copies them)
    IMPORTED_SPANS = ArmFile("imported_spans.json", arm_summaries.ImportedSpans)
    REPRESENTATIONS = ArmFile("representations.json", arm_summaries.Representations)
    RETRIEVAL_SUMMARY = ArmFile("retrieval_summary.json", arm_summaries.RetrievalSummary)
    ADMISSION_SUMMARY = ArmFile("admission_summary.json", arm_summaries.AdmissionSummary)
    CONTRACT_SUMMARY = ArmFile("contract_summary.json", arm_summaries.ContractSummary)
    REQUEST_JUDGE_SUMMARY = ArmFile("request_judge_summary.json", judge_summaries.RequestJudgeSummary)
    JUDGE_SUMMARY = ArmFile("judge_summary.json", judge_summaries.JudgeSummary)
    REQUEST_COMPLETENESS = ArmFile("request_completeness.json", judge_summaries.RequestCompleteness)
    FAILURE_FLOW = ArmFile("failure_flow.json", judge_summaries.FailureFlow)
    # what an arm imported from Phoenix logged back to it
    PHOENIX_ANNOTATIONS = ArmFile("phoenix_annotations.json", judge_summaries.PhoenixAnnotations)


def model_of(name: str) -> type[BaseModel]:
    """The model of the per-arm JSON file `name` (an `ArmJson` name, or the same name as a plain string)."""
    model = _MODELS.get(str(name))
    if model is None:
        raise ValueError(f"{name!r} is not a per-arm JSON file ArmJson declares ({', '.join(sorted(_MODELS))})")
    return model


def declared_names(namespace: type) -> dict[str, str]:
    """`{CONSTANT: name}` of a `Table` / `ArmJson` namespace."""
    return {k: v for k, v in vars(namespace).items() if k.isupper()}


# Each declared file's model by its name, so a caller naming the file by its plain string is checked the same.
_MODELS: dict[str, type[BaseModel]] = {str(f): f.model for f in vars(ArmJson).values() if isinstance(f, ArmFile)}


def canonical_json(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def digest_of(obj: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(obj)).hexdigest()


def digest_bytes(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def digest_tree(path: Path) -> str:
    """Digest of every file under `path` except the manifest: names and bytes, in sorted order."""
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")):
        if p.is_file() and p.name != MANIFEST:
            h.update(str(p.relative_to(path)).encode())
            h.update(b"\0")
            with p.open("rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
    return "sha256:" + h.hexdigest()


def move_into_place(tmp: Path, final: Path, manifest: dict[str, Any]) -> None:
    """Write `manifest` into the built folder `tmp`, then rename it to `final` (replacing a damaged one)."""
    atomic_write_json(tmp / MANIFEST, manifest)
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)


@contextlib.contextmanager
def file_lock(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


@dataclass(frozen=True)
class Built:
    """A shared artifact: where it is, its input key digest, its content digest, and whether it was reused."""

    kind: str
    path: Path
    key_digest: str
    content_digest: str
    cache_hit: bool
    manifest: dict[str, Any]
    # The artifact's location in an object store (`s3://.../cache/<kind>/<key>`); None in a local store.
    uri: str | None = None

    def location(self, name: str) -> Path | str:
        """Where the artifact's file or folder `name` is read: in place in the object store for what stays there
        (a LanceDB table, which LanceDB opens on `s3://` itself), else under the local `path`."""
        remote = self.manifest.get("remote") or []
        if self.uri is not None and any(r == name or r.startswith(name + "/") for r in remote):
            return f"{self.uri}/{self.manifest['objects']}/{name}"
        return self.path / name

    @property
    def where(self) -> str:
        """The artifact's location in its store: its folder, or its object-store URI."""
        return self.uri or str(self.path)


class ArtifactStore:
    def __init__(self, root: Path | str):
        self.root = Path(root)

    def check_writable(self) -> None:
        """Pre-flight: a store the run cannot write fails before any provider call (StoreError, naming
        RAG_TTC_HOME). Locally: the root, or the folder it would be created in, is writable by this user."""
        folder = self.root
        while not folder.exists() and folder.parent != folder:
            folder = folder.parent
        if not (folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)):
            raise StoreError(f"RAG_TTC_HOME: the store {self.root} is not writable ({folder} is not a folder this "
                             "user can write); point RAG_TTC_HOME at one")

    # --- shared, content-addressed artifacts -------------------------------------------------
    def artifact_dir(self, kind: str, key: dict[str, Any]) -> tuple[Path, str]:
        kd = digest_of(key)
        return self.root / "cache" / kind / kd.split(":", 1)[1][:24], kd

    def _read_manifest(self, final: Path) -> dict[str, Any] | None:
        mpath = final / MANIFEST
        if not mpath.is_file():
            return None
        try:
            manifest = json.loads(mpath.read_text(encoding="utf-8"))
            if manifest.get("content_digest") != digest_tree(final):
                raise ValueError("content digest does not match the files")
            return manifest
        except (ValueError, OSError) as e:
            warnings.warn(f"artifact {final} is corrupt ({e}); rebuilding it", stacklevel=3)
            return None

    def intact(self, path: Path | str) -> bool:
        """Whether the shared artifact at `path` is there and matches its manifest (a corrupt one warns)."""
        return self._read_manifest(Path(path)) is not None

    def build_once(self, kind: str, key: dict[str, Any], builder: Callable[[Path], dict[str, Any]],
                   reuse: Callable[[dict[str, Any]], bool] = lambda manifest: True) -> Built:
        """Return the artifact for `key`, building it with `builder(tmp_dir) -> info` if absent or corrupt, or
        when `reuse(manifest)` says the intact one must be rebuilt."""
        final, kd = self.artifact_dir(kind, key)
        manifest = self._read_manifest(final)
        if manifest is not None and reuse(manifest):
            return Built(kind, final, kd, manifest["content_digest"], True, manifest)
        with file_lock(self.root / "locks" / f"{kind}-{final.name}.lock"):
            manifest = self._read_manifest(final)  # another process may have built it meanwhile
            if manifest is not None and reuse(manifest):
                return Built(kind, final, kd, manifest["content_digest"], True, manifest)
            final.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
            try:
                info = builder(tmp)
                manifest = {"kind": kind, "key": key, "key_digest": kd, "info": info,
                            "content_digest": digest_tree(tmp)}
                move_into_place(tmp, final, manifest)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        return Built(kind, final, kd, manifest["content_digest"], False, manifest)

    # --- the requests sent to providers --------------------------------------------------------
    @property
    def messages(self):
        """The content-addressed archive of the messages (and tools) every provider call was sent."""
        return MessageArchive(self.root / "messages")

    # --- cross-arm outputs -------------------------------------------------------------------
    @property
    def comparisons_dir(self) -> Path:
        """Where `rag-ttc compare` and the `arm_comparisons` asset write pair reports and sweep plots."""
        return self.root / "comparisons"

    # --- per-arm tables ---------------------------------------------------------------------
    def arm_path(self, arm: str, name: str) -> Path:
        return self.root / "arms" / arm / name

    def table_path(self, arm: str, name: str) -> Path:
        return self.arm_path(arm, f"{name}.parquet")

    def write_table(self, arm: str, name: str, df) -> str:
        """Write a polars DataFrame as Parquet atomically; return the digest of the bytes written.

        `name` is a declared table (core.tables.Table): the frame's columns are checked against its declaration
        first (TableSchemaError naming the arm, table and column), so nothing undeclared is ever written."""
        from rag_ttc_assets.adapters.table_types import conform  # late: polars loads only when a table is written

        df = conform(by_name(name), arm, df)
        buf = io.BytesIO()
        df.write_parquet(buf)
        data = buf.getvalue()
        atomic_write_bytes(self.table_path(arm, name), data)
        return digest_bytes(data)

    def read_table(self, arm: str, name: str):
        import polars as pl

        path = self.table_path(arm, name)
        if not path.is_file():
            raise FileNotFoundError(
                f"{path}: the {name!r} table of arm {arm!r} has not been materialized; "
                f"materialize its upstream assets first (rag-ttc run {arm})"
            )
        return pl.read_parquet(path if is_local(path) else io.BytesIO(path.read_bytes()))

    def write_arm_json(self, arm: str, name: str, obj: Any) -> str:
        """Write a per-arm JSON file (`name` declared in `ArmJson`) atomically; return the digest of the bytes.

        What is written is first read back through the file's model (core.arm_summaries, core.judge_summaries): a field its writer renamed,
        left out or typed otherwise fails here (SummaryError naming the arm, file and field), before any byte is
        written. The bytes are the object's own dump, as they always were."""
        data = json.dumps(obj, indent=1, ensure_ascii=False, default=str).encode() + b"\n"
        path = self.arm_path(arm, name)
        self._validated(arm, name, path, data)  # from the bytes: no second copy of the object (a 1M-question summary)
        atomic_write_bytes(path, data)
        return digest_bytes(data)

    def read_arm_json(self, arm: str, name: str) -> Any:
        """A per-arm JSON file as written (plain JSON), checked against its model first: a file another rules
        version wrote, or one edited by hand, fails with a SummaryError naming the arm, the file and the field."""
        return self._read_checked(arm, name)[0]

    def read_summary(self, arm: str, name: ArmFile[M]) -> M:
        """A per-arm JSON file as its model (core.arm_summaries, core.judge_summaries), for attribute access: `read_summary(arm,
        ArmJson.FAILURE_FLOW).hit_rate.measured`."""
        return self._read_checked(arm, name)[1]  # type: ignore[return-value]  # validated by name.model

    def _read_checked(self, arm: str, name: str) -> tuple[Any, BaseModel]:
        path = self.arm_path(arm, name)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: not materialized yet for arm {arm!r} (rag-ttc run {arm})")
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as e:
            raise SummaryError(f"{path}: arm {arm!r}: {name} is not JSON ({e}); rerun the asset that writes it "
                               f"(rag-ttc run {arm})") from None
        return obj, self._validated(arm, name, path, obj)

    @staticmethod
    def _validated(arm: str, name: str, path: Path, obj: Any) -> BaseModel:
        """`obj` (parsed JSON, or the JSON bytes themselves) as the model of `name`; SummaryError when it is not."""
        model = model_of(name)
        try:
            return model.model_validate_json(obj) if isinstance(obj, bytes) else model.model_validate(obj)
        except ValidationError as e:
            where = model.__module__.removeprefix("rag_ttc_assets.")
            raise SummaryError(f"{path}: arm {arm!r}: {name} does not hold a {model.__name__} ({where}): "
                               f"{arm_summaries.problems(e)}; written by another version, or edited by hand? Rerun "
                               f"the asset that writes it (rag-ttc run {arm})") from None
