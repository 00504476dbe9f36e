"""Per-arm assets are declared once and built against the partitions of a given arms file.

Partitions come from the arms file when the definitions load, and tests load definitions for
their own arms file, so the asset decorator is applied in `build_assets`, not at import.
"""

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from dagster import (AssetChecksDefinition, AssetKey, AssetsDefinition, PartitionsDefinition, PreviewWarning,
                     TableColumn, TableSchema, asset, asset_check)

from rag_ttc_assets.core.arms import ArmConfig, config_digest
from rag_ttc_assets.core.artifacts import Artifact, field_values
from rag_ttc_assets.core.tables import TableName


@dataclass(frozen=True)
class ArmAssetSpec:
    fn: Callable
    group: str
    kinds: frozenset[str]
    deps: tuple[str, ...]
    artifacts: tuple[Artifact, ...]
    pool: str | None = None
    writes: tuple[str, ...] = ()
    # Fingerprint inputs that are no arm field (Lab.fingerprint_inputs): `labels`, the dataset's labels files.
    reads: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.fn.__name__

    @property
    def code_version(self) -> str:
        return "+".join(a.version for a in self.artifacts)

    @property
    def config(self) -> tuple[str, ...]:
        """The arm fields the asset reads: its artifacts' declarations (core.artifacts), in order, once each."""
        return tuple(dict.fromkeys(f for a in self.artifacts for f in a.all_fields))

    def fields_for(self, cfg: ArmConfig) -> tuple[str, ...]:
        """The arm fields this arm's asset depends on (conditional fields where they apply, core.artifacts)."""
        return tuple(dict.fromkeys(f for a in self.artifacts for f in a.fields_for(cfg)))

    def field_values(self, cfg: ArmConfig) -> dict:
        """The values of `fields_for(cfg)` (only the declared parts of a field declared in parts)."""
        return field_values(self.artifacts, cfg)

    def inputs_of(self, cfg: ArmConfig, inputs: dict[str, str]) -> dict[str, str]:
        """The digests of the files this arm's asset reads: those its fields name, and its `reads`."""
        return {f: inputs.get(f) for f in (*self.fields_for(cfg), *self.reads) if f in inputs}

    def unused(self, cfg: ArmConfig) -> dict[str, str]:
        """The asset's artifacts this arm never reads, with the reason (core.usage)."""
        return {a.name: r for a in self.artifacts if (r := a.unused_reason(cfg)) is not None}

    @property
    def column_schemas(self) -> dict[str, TableSchema]:
        return column_schemas(self.writes)


COLUMN_SCHEMA = "dagster/column_schema"


def column_schemas(writes: tuple[str, ...]) -> dict[str, TableSchema]:
    """The declared columns of the tables in `writes` (core.tables) as Dagster column schemas: the first table's
    under `dagster/column_schema` (the UI's Columns), each other's under `column_schema/<table>`."""
    tables = [w for w in writes if isinstance(w, TableName)]
    return {COLUMN_SCHEMA if i == 0 else f"column_schema/{t}": column_schema(t) for i, t in enumerate(tables)}


def column_schema(table: TableName) -> TableSchema:
    """A table's declaration (core.tables) as Dagster's column schema: name, type, description per column."""
    return TableSchema(columns=[
        TableColumn(name=c.name, type=c.type, description=c.description + (f" (only {c.only})" if c.only else ""))
        for c in table.columns])


SPECS: list[ArmAssetSpec] = []


def arm_asset(*, artifact: Artifact | tuple[Artifact, ...], group: str, kinds: set[str], deps: tuple[str, ...] = (),
              pool: str | None = None, writes: tuple[str, ...] = (), reads: tuple[str, ...] = ()):
    """Declare a per-arm asset; the function's docstring first line is its UI description.

    `artifact` is what the asset builds (core.artifacts; several when it builds a shared artifact along the
    way, its own last): their versions make its code version, their fields the arm fields it reads, which
    with its upstream assets' fingerprints make its fingerprint, the data version of its observed
    `arm_config/<asset>` source, so a change is Dagster's staleness for that arm (staleness.py).
    `writes` names the per-arm tables and JSON files (`Table.*`, `ArmJson.*`) the asset writes: the
    one declaration of each (test_graph checks it against the body's store writes).
    `group` also places the asset in a `rag-ttc run --stage` (see `defs.graph.STAGE_GROUPS`).
    `reads` names fingerprint inputs that are no arm field: `("labels",)` for the asset that reads the dataset's
    labels (their digest moves its fingerprint, and so its downstream's, and nothing else's).
    """

    artifacts = artifact if isinstance(artifact, tuple) else (artifact,)

    def register(fn):
        if artifacts[-1].name != fn.__name__:
            raise ValueError(f"asset {fn.__name__!r} declares artifact {artifacts[-1].name!r} as its own")
        SPECS.append(ArmAssetSpec(_fingerprinted(fn, writes), group, frozenset(kinds), tuple(deps), artifacts, pool,
                                  tuple(writes), tuple(reads)))
        return fn

    return register


FINGERPRINT = "rag_ttc/fingerprint"
CONFIG_GROUP = "arm_config"  # the observed sources of the arms' configurations (staleness.py)


def config_key(asset: str) -> AssetKey:
    """The observed source `arm_config/<asset>` that `asset` reads: its data version is the asset's fingerprint."""
    return AssetKey([CONFIG_GROUP, asset])


def fingerprints(cfg: ArmConfig, inputs: dict[str, str]) -> dict[str, str]:
    """Per asset: digest of its code version, the arm fields it reads, its inputs, and its upstream fingerprints.

    `inputs` are content digests outside the arm config (dataset files, prompt texts), keyed by
    the config field that names them.
    """
    dumped = cfg.model_dump(mode="json")
    # Every step asks twice (the observed source, the materialization's metadata): computed once per process.
    key = (config_digest(dumped), tuple(sorted(inputs.items())), tuple((s.fn.__name__, s.code_version) for s in SPECS))
    if key not in _FINGERPRINTS:
        if len(_FINGERPRINTS) >= 256:
            _FINGERPRINTS.clear()
        _FINGERPRINTS[key] = _fingerprints(dumped, cfg, inputs)
    return dict(_FINGERPRINTS[key])


_FINGERPRINTS: dict[tuple, dict[str, str]] = {}


def _fingerprints(dumped: dict, cfg: ArmConfig, inputs: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    specs = {s.fn.__name__: s for s in SPECS}

    def fp(name: str) -> str:
        if name not in out:
            s = specs[name]
            fields = s.field_values(cfg)
            state = {"code_version": s.code_version, "config": fields,
                     "inputs": s.inputs_of(cfg, inputs),
                     "upstream": {d: fp(d) for d in s.deps}}
            # Only when some artifact is unused: every other fingerprint stays what it was.
            out[name] = config_digest({**state, "unused": sorted(unused)} if (unused := s.unused(cfg)) else state)
        return out[name]

    for name in specs:
        fp(name)
    return out


def _fingerprinted(fn, writes: tuple[str, ...] = ()):
    """Record the asset's fingerprint in its materialization metadata, and the column schema of each table it
    writes (an artifact the arm does not use writes none)."""
    schemas = column_schemas(tuple(writes))

    @functools.wraps(fn)  # Dagster reads `fn`'s signature through it: its resources (lab, provider) are required
    def wrapped(context, lab, **resources):
        result = fn(context, lab, **resources)
        lab_, cfg = lab.arm(context.partition_key)
        digest = fingerprints(cfg, lab_.fingerprint_inputs(cfg))[fn.__name__]
        metadata = result.metadata or {}
        used = getattr(metadata.get("used_by_arm"), "value", True)
        return result._replace(metadata={**metadata, **(schemas if used else {}), FINGERPRINT: digest})

    return wrapped


def build_assets(partitions_def: PartitionsDefinition) -> list[AssetsDefinition]:
    out = []
    for s in SPECS:
        description = (s.fn.__doc__ or "").strip().splitlines()[0]
        # Each asset also reads its observed configuration, so an arm's edit is Dagster's staleness (staleness.py).
        out.append(asset(name=s.fn.__name__, partitions_def=partitions_def, group_name=s.group, kinds=set(s.kinds),
                         deps=[*s.deps, config_key(s.name)], code_version=s.code_version, description=description,
                         pool=s.pool, metadata=s.column_schemas)(s.fn))
    return out


@dataclass(frozen=True)
class ArmCheckSpec:
    fn: Callable
    asset: str
    description: str
    blocking: bool


CHECK_SPECS: list[ArmCheckSpec] = []


def arm_check(*, asset: str, description: str, blocking: bool = False):
    """Declare a per-arm asset check (a plain validation wrapped in AssetCheckResult)."""

    def register(fn):
        CHECK_SPECS.append(ArmCheckSpec(fn, asset, description, blocking))
        return fn

    return register


def build_checks(partitions_def: PartitionsDefinition) -> list[AssetChecksDefinition]:
    # Partitioned checks are a preview feature in this Dagster; we rely on them knowingly.
    warnings.filterwarnings("ignore", category=PreviewWarning)
    return [asset_check(asset=s.asset, name=s.fn.__name__, description=s.description, blocking=s.blocking,
                        partitions_def=partitions_def)(s.fn) for s in CHECK_SPECS]
