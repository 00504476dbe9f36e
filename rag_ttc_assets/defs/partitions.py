"""One partition per arm, read from the arms file when the definitions load, and one per arm removed from it
whose outputs the store still has, so its history stays (staleness.py observes it as removed)."""

import re

from dagster import StaticPartitionsDefinition

from rag_ttc_assets.lab import Lab


def removed_arms(lab: Lab) -> list[str]:
    """Arms no longer in the arms file with a folder of outputs in the store."""
    root = lab.store.root / "arms"
    try:
        if not root.is_dir():
            return []
        names = [p.name for p in root.iterdir() if p.is_dir()]
    except Exception:  # noqa: BLE001
        if lab.local:
            raise
        return []  # an object store not reachable as configured: the run's pre-flight says why (check_writable)
    return sorted(n for n in names if n not in lab.arms.arms and re.fullmatch(r"[a-z0-9-]+", n))


def arm_partitions(lab: Lab) -> StaticPartitionsDefinition:
    return StaticPartitionsDefinition([*lab.arms.names, *removed_arms(lab)])
