"""Metadata helpers: numbers as numbers, tables as Markdown, artifacts with their digests."""

from __future__ import annotations

from typing import Any

from dagster import DataVersion, MaterializeResult, MetadataValue

from rag_ttc_assets.adapters.store import Built


def md_table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> MetadataValue:
    if not rows:
        return MetadataValue.md("_(no rows)_")
    cols = columns or list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(_cell(r.get(c)) for c in cols) + " |")
    return MetadataValue.md("\n".join(lines))


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4f}"
    if isinstance(v, list):
        return ", ".join(map(str, v))
    return str(v).replace("|", "\\|")


def numbers(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """The numeric entries of `d`, as metadata the UI can plot across partitions."""
    out = {}
    for k, v in d.items():
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            out[prefix + k] = MetadataValue.int(v)
        elif isinstance(v, float):
            out[prefix + k] = MetadataValue.float(round(v, 6))
    return out


def artifact_metadata(built: Built, upstream: dict[str, str]) -> dict[str, Any]:
    """A shared artifact's metadata: whether this run built it, its digests, and the store key it was built for
    (`effective_config`: the artifact's declared fields and inputs, core.artifacts)."""
    return {
        "cache": MetadataValue.text("hit" if built.cache_hit else "build"),
        "cache_hit": MetadataValue.bool(built.cache_hit),
        "content_digest": MetadataValue.text(built.content_digest),
        "key_digest": MetadataValue.text(built.key_digest),
        "effective_config": MetadataValue.json(built.manifest["key"]),
        "upstream_digests": MetadataValue.json(upstream),
        "path": MetadataValue.path(built.where),
        **numbers(built.manifest.get("info", {})),
    }


def artifact_result(built: Built, upstream: dict[str, str], **extra: Any) -> MaterializeResult:
    """A shared artifact's materialization: its metadata (artifact_metadata, plus `extra`), its content digest as
    the data version."""
    return MaterializeResult(metadata={**artifact_metadata(built, upstream), **extra},
                             data_version=version_of(built.content_digest))


def version_of(digest: str) -> DataVersion:
    return DataVersion(digest.split(":", 1)[-1][:32])


def run_status_lookup(context):
    """Dagster's word on a run (SUCCESS, FAILURE, CANCELED, STARTED...), for marking run records."""

    def status_of(run_id: str) -> str | None:
        run = context.instance.get_run_by_id(run_id)
        return run.status.value if run else None

    return status_of
