"""The labels two arms were measured on, told apart: `rag-ttc compare` names the labels that differ when their labels
versions do (labelling.label_diff), reading each version from where the lab keeps it."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_ttc_assets.adapters.store import ArtifactStore
from rag_ttc_assets.core.dataset import sha256_digest
from rag_ttc_assets.labelling.label_drift import LabelDrift
from rag_ttc_assets.labelling.label_diff import label_differences
from rag_ttc_assets.stages.reports import labels_used

SHOWN = 20  # lines the refusal prints; --json has every one


def find_version(digest: str, candidates: Iterable[Path]) -> Path | None:
    """The first of `candidates` (labels files: the dataset's evaluation.json, its labels/ versions, a run record's
    copy) whose bytes have `digest`."""
    for path in candidates:
        try:
            if path.is_file() and sha256_digest(path.read_bytes()) == digest:
                return path
        except OSError:
            continue
    return None


def _candidates(dataset: Path, runs: Path) -> list[Path]:
    """Where a labels version the arm ran with is kept: its dataset's evaluation.json, the versions `rag-ttc labels
    update` keeps under labels/, and the copy each of its run records holds (`runs`: core.run_records.RunFolders)."""
    return [dataset / "evaluation.json", *sorted((dataset / "labels").glob("evaluation.v*.json"), reverse=True),
            *sorted(runs.glob("*/inputs/evaluation.json"), reverse=True)]


@dataclass(frozen=True)
class LabelVersions:
    """Two arms' labels versions: each one's digest, the file holding that version (None: kept nowhere the lab looks)
    and, when both are found, the versions' contents (the evaluation files)."""

    digests: dict[str, str]
    files: dict[str, Path | None]
    evaluations: dict[str, Any] | None


def read_label_versions(store: ArtifactStore, folders: dict[str, tuple[Path, Path]]) -> LabelVersions:
    """The labels versions of the arms of `folders` (arm -> its dataset's folder and its runs' folder), read where
    the lab keeps them."""
    digests = {arm: labels_used(store, arm)["evaluation_digest"] for arm in folders}
    files = {arm: find_version(digests[arm], _candidates(*folders[arm])) for arm in folders}
    both = all(path is not None for path in files.values())
    return LabelVersions(digests, files, {arm: json.loads(path.read_text(encoding="utf-8")) for arm, path in
                                          files.items() if path is not None} if both else None)


def labels_that_differ(versions: LabelVersions, a: str, b: str) -> LabelDrift:
    """Each arm's labels digest and the file holding that version, and the labels that differ between them (None,
    with why, when a version is kept nowhere the lab looks)."""
    digests = {arm: versions.digests[arm] for arm in (a, b)}
    named = {arm: str(versions.files[arm]) if versions.files[arm] else None for arm in (a, b)}
    if versions.evaluations is None:
        missing = [arm for arm in (a, b) if versions.files[arm] is None]
        return LabelDrift(digests=digests, files=named, differ=None,
                          why_not=f"the labels version of {' and '.join(missing)} is kept neither in the dataset "
                          "(evaluation.json, labels/) nor in a run record: the labels that differ cannot be named")
    ev = versions.evaluations
    return LabelDrift(digests=digests, files=named, differ=label_differences(ev[a], ev[b]))


def drift_text(drift: LabelDrift, a: str, b: str) -> str:
    """The lines naming the labels that differ (a is `a`'s version, b is `b`'s)."""
    if drift.differ is None:
        return str(drift.why_not)
    if not drift.differ:
        return (f"no label differs between {a}'s labels and {b}'s: the versions differ only in the hashes and corpus "
                "binding `rag-ttc labels update` stamps")
    lines = [f"labels that differ ({len(drift.differ)}; a: {a}'s version, b: {b}'s):"]
    lines += [f"  {d}" for d in drift.differ[:SHOWN]]
    if len(drift.differ) > SHOWN:
        lines.append(f"  … and {len(drift.differ) - SHOWN} more (--json lists every one)")
    return "\n".join(lines)
