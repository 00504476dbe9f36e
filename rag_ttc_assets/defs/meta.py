"""Metadata helpers: numbers as numbers, tables as Markdown, artifacts with their digests."""

from __future__ import annotations

from typing import Any

from dagster import DataVersion, MetadataValue

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
            out[prefix + k] = MetadataValue.float(v)
    return out


def artifact_metadata(built: Built, config: dict[str, Any], upstream: dict[str, str]) -> dict[str, Any]:
    return {
        "cache": MetadataValue.text("hit" if built.cache_hit else "build"),
        "cache_hit": MetadataValue.bool(built.cache_hit),
        "content_digest": MetadataValue.text(built.content_digest),
        "key_digest": MetadataValue.text(built.key_digest),
        "effective_config": MetadataValue.json(config),
        "upstream_digests": MetadataValue.json(upstream),
        "path": MetadataValue.path(str(built.path)),
        **numbers(built.manifest.get("info", {})),
    }


def version_of(digest: str) -> DataVersion:
    return DataVersion(digest.split(":", 1)[-1][:32])


CLI_SOURCE_TAG = ("rag_ttc/source", "cli")  # runs `rag-ttc run` executes in its own process


def run_status_lookup(context):
    """Dagster's word on a run (SUCCESS, FAILURE, CANCELED, STARTED...), for marking run records."""
    return instance_status_lookup(context.instance)


def instance_status_lookup(instance):
    def status_of(run_id: str) -> str | None:
        run = instance.get_run_by_id(run_id)
        if run is None:
            return None
        # The CLI executes a run in its own process, which nothing monitors: killed, it leaves the run
        # STARTED for ever. None lets the run record's pid (that process) say whether it is alive.
        if run.status.value == "STARTED" and run.tags.get(CLI_SOURCE_TAG[0]) == CLI_SOURCE_TAG[1]:
            return None
        return run.status.value

    return status_of
