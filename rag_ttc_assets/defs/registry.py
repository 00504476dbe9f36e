"""Per-arm assets are declared once and built against the partitions of a given arms file.

Partitions come from the arms file when the definitions load, and tests load definitions for
their own arms file, so the asset decorator is applied in `build_assets`, not at import.
"""

from collections.abc import Callable
from dataclasses import dataclass

from dagster import AssetsDefinition, PartitionsDefinition, asset


@dataclass(frozen=True)
class ArmAssetSpec:
    fn: Callable
    group: str
    kinds: frozenset[str]
    deps: tuple[str, ...]
    code_version: str
    pool: str | None = None


SPECS: list[ArmAssetSpec] = []


def arm_asset(*, group: str, kinds: set[str], deps: tuple[str, ...] = (), code_version: str,
              pool: str | None = None):
    """Declare a per-arm asset; the function's docstring first line is its UI description."""

    def register(fn):
        SPECS.append(ArmAssetSpec(fn, group, frozenset(kinds), tuple(deps), code_version, pool))
        return fn

    return register


def build_assets(partitions_def: PartitionsDefinition) -> list[AssetsDefinition]:
    out = []
    for s in SPECS:
        description = (s.fn.__doc__ or "").strip().splitlines()[0]
        out.append(asset(name=s.fn.__name__, partitions_def=partitions_def, group_name=s.group, kinds=set(s.kinds),
                         deps=list(s.deps), code_version=s.code_version, description=description,
                         pool=s.pool)(s.fn))
    return out
