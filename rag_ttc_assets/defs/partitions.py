"""One partition per arm, read from the arms file when the definitions load, and one per arm removed from it
whose outputs the store still has, so its history stays (staleness.py observes it as removed)."""

import re

from dagster import StaticPartitionsDefinition

from rag_ttc_assets.lab import Lab


def removed_arms(lab: Lab) -> list[str]:
    """Arms no longer in the arms file with a folder of outputs in the store."""
    root = lab.store.root / "arms"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir()
                  if p.is_dir() and p.name not in lab.arms.arms and re.fullmatch(r"[a-z0-9-]+", p.name))


def arm_partitions(lab: Lab) -> StaticPartitionsDefinition:
    return StaticPartitionsDefinition([*lab.arms.names, *removed_arms(lab)])
