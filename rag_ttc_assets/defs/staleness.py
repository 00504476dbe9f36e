"""Dagster's own staleness for arm configurations: each per-arm asset reads an observed source asset,
`arm_config/<asset>`, whose data version per partition is that asset's fingerprint (`registry.fingerprints`).

An edit of the arms file, a prompt or a dataset changes the fingerprints of exactly the assets that read it
and of everything downstream; once observed (by `arm_config_sensor`, or by `rag-ttc run` before it selects
what to run), Dagster marks those asset partitions stale, with the changed source as the cause and the
observation's metadata saying which field changed. docs/staleness.md says why this mechanism and its limits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from dagster import (AssetKey, AssetObservation, AssetRecordsFilter, AssetSpec, DagsterEventType, DagsterInstance,
                     DefaultSensorStatus, MetadataValue, PartitionsDefinition, SensorEvaluationContext, SensorResult,
                     SkipReason, sensor)
from pydantic import BaseModel, ConfigDict

from rag_ttc_assets.defs import graph
from rag_ttc_assets.defs.dagster_private import stale_status_resolver
from rag_ttc_assets.defs.arm_registry import CONFIG_GROUP, FINGERPRINT, SPECS, config_key, fingerprints
from rag_ttc_assets.lab import Lab

REMOVED = "removed"  # the data version of an arm no longer in the arms file
DATA_VERSION_TAG = "dagster/data_version"


class ConfigState(BaseModel):
    """An asset's configuration as one arm reads it: the observation's `state` metadata. An arm no longer in the arms
    file is only its `removed` fingerprint and why (`arm`). Read back from an older observation, a field it lacks is
    its default (nothing to compare), a field it has that this version does not is ignored."""

    model_config = ConfigDict(frozen=True)

    fingerprint: str | None = None
    arm: str | None = None  # a removed arm's only
    code_version: str | None = None
    config: dict[str, Any] = {}
    inputs: dict[str, Any] = {}
    upstream: dict[str, Any] = {}
    unused: dict[str, Any] = {}

    def to_json(self) -> dict[str, Any]:
        """The observation's metadata: the fields in this order, `unused` only when some artifact is unused."""
        if self.fingerprint == REMOVED:
            return {"fingerprint": self.fingerprint, "arm": self.arm}
        return {"fingerprint": self.fingerprint, "code_version": self.code_version, "config": self.config,
                "inputs": self.inputs, "upstream": self.upstream, **({"unused": self.unused} if self.unused else {})}


class StaleStatus(NamedTuple):
    """Dagster's stale status of an asset partition (FRESH, STALE, MISSING) and its root causes, as text."""

    state: str
    causes: list[str]


def config_specs(partitions_def: PartitionsDefinition) -> list[AssetSpec]:
    """One observed source per per-arm asset: the arm's configuration as that asset reads it."""
    return [AssetSpec(config_key(s.name), partitions_def=partitions_def, group_name=CONFIG_GROUP, kinds={"yaml"},
                      description=f"The arm's configuration as {s.name} reads it: its fields, prompt and dataset "
                                  "digests, code version and upstream fingerprints (observed, not materialized).")
            for s in SPECS]


def arm_state(lab: Lab, arm: str) -> dict[str, ConfigState]:
    """Per asset of `arm`: its fingerprint and what it is made of, as observation metadata; an arm the arms
    file no longer has is `removed`."""
    if arm not in lab.arms.arms:
        return {s.name: ConfigState(fingerprint=REMOVED, arm=f"removed from {lab.arms_file.name}") for s in SPECS}
    cfg = lab.arms[arm]
    inputs = lab.fingerprint_inputs(cfg)
    fps = fingerprints(cfg, inputs)
    return {s.name: ConfigState(fingerprint=fps[s.name], code_version=s.code_version, config=s.field_values(cfg),
                                inputs=s.inputs_of(cfg, inputs), upstream={d: fps[d] for d in s.deps},
                                unused=s.unused(cfg)) for s in SPECS}


def what_changed(before: ConfigState | None, now: ConfigState) -> str:
    """One line naming what differs between two observations of an asset's configuration."""
    if before is None:
        return "first observation"
    if now.fingerprint == REMOVED:
        return f"arm {now.arm}"
    if before.fingerprint == REMOVED:
        return "arm back in the arms file"
    out = []
    if before.code_version != now.code_version:
        out.append(f"code_version: {before.code_version} -> {now.code_version}")
    for f, v in now.config.items():
        if before.config.get(f, v) != v:
            out.append(f"{f}: {_short(before.config[f])} -> {_short(v)}")
    out += [f"{f} file changed" for f, v in now.inputs.items() if before.inputs.get(f, v) != v]
    was, unused = before.unused, now.unused
    out += [f"{a}: used_by_arm {str(a not in was).lower()} -> {str(a not in unused).lower()}"
            for a in sorted(set(was) ^ set(unused))]
    out += [f"upstream {d} changed" for d, v in now.upstream.items() if before.upstream.get(d, v) != v]
    return "; ".join(out) or "fingerprint changed"


def _short(v) -> str:
    text = str(v)
    return text if len(text) <= 60 else text[:57] + "..."


def pending_observations(instance: DagsterInstance, lab: Lab, arms: Sequence[str]) -> list[AssetObservation]:
    """The observations to record: each (asset, arm) whose fingerprint differs from its last observed one."""
    states = {arm: arm_state(lab, arm) for arm in arms}
    out = []
    for s in SPECS:
        key = config_key(s.name)
        latest = instance.event_log_storage.get_latest_tags_by_partition(
            key, DagsterEventType.ASSET_OBSERVATION, [DATA_VERSION_TAG], list(arms))
        for arm in arms:
            now = states[arm][s.name]
            last = latest.get(arm, {}).get(DATA_VERSION_TAG)
            if last == now.fingerprint:
                continue
            before = None
            if last is not None:
                record = instance.fetch_observations(AssetRecordsFilter(asset_key=key, asset_partitions=[arm]),
                                                     limit=1).records[0]
                before = _state_of(record.asset_observation.metadata)
            changed = what_changed(before, now)
            out.append(AssetObservation(key, partition=arm, tags={DATA_VERSION_TAG: now.fingerprint},
                                        description=changed,
                                        metadata={"changed": changed, FINGERPRINT: now.fingerprint,
                                                  "state": MetadataValue.json(now.to_json())}))
    return out


def _state_of(metadata) -> ConfigState | None:
    state = metadata.get("state")
    return ConfigState.model_validate(state.value) if state is not None else None


def observe(instance: DagsterInstance, lab: Lab, arms: Sequence[str]) -> int:
    """Record the pending observations of `arms` (runless events, as the sensor's are); how many."""
    events = pending_observations(instance, lab, arms)
    for e in events:
        instance.report_runless_asset_event(e)
    return len(events)


def config_sensor(lab: Lab, partitions_def: PartitionsDefinition):
    """Observes the arms' configurations every few seconds, reading `lab`'s files afresh each time; the
    partitions are those the definitions loaded (an arm added to the file waits for "Reload definitions";
    one removed from it is observed as removed)."""
    arms = tuple(partitions_def.get_partition_keys())

    @sensor(name="arm_config_sensor", minimum_interval_seconds=5, default_status=DefaultSensorStatus.RUNNING,
            description="Observes each arm's configuration as each asset reads it (arms file, prompts, dataset "
                        "digests), so an edit marks exactly the affected asset partitions stale.")
    def arm_config_sensor(context: SensorEvaluationContext):
        fresh = Lab(lab.arms_file, lab.datasets_dir, lab.prompts_dir, lab.home, lab.provider_cache)
        events = pending_observations(context.instance, fresh, arms)
        if not events:
            return SkipReason("every arm's configuration is as last observed")
        return SensorResult(asset_events=events)

    return arm_config_sensor


def dagster_status(instance: DagsterInstance, asset_graph, arm: str, names: Sequence[str]
                   ) -> dict[str, StaleStatus]:
    """Per asset of `names`: Dagster's stale status for the `arm` partition and its root causes, as text: what the
    UI's partition view shows."""
    resolver = stale_status_resolver(instance, asset_graph)
    return {n: StaleStatus(resolver.get_status(AssetKey(n), arm).value,
                           [_cause_text(instance, c) for c in resolver.get_stale_root_causes(AssetKey(n), arm)])
            for n in names}


def to_run(instance: DagsterInstance, lab: Lab, asset_graph, arm: str, names: Sequence[str],
           force: bool = False) -> dict[str, str]:
    """The assets of `names` (in topological order) to run for `arm`, each with why: Dagster's stale status
    after observing the arm's configuration (never materialized, or stale with its root causes), rows left
    incomplete (provider faults, budget stops), a shared artifact no longer matching its digest; and
    everything downstream of those, whose data versions are only known once they ran."""
    observe(instance, lab, [arm])
    status = dagster_status(instance, asset_graph, arm, names)
    deps = graph.deps()
    why: dict[str, str] = {}
    for name in names:
        state, causes = status[name].state, status[name].causes
        upstream = [d for d in deps[name] if d in why]
        if force:
            why[name] = "forced (--force)"
        elif state == "MISSING":
            why[name] = "never materialized"
        elif state == "STALE":
            why[name] = "; ".join(causes)
        else:
            records = instance.fetch_materializations(
                AssetRecordsFilter(asset_key=AssetKey(name), asset_partitions=[arm]), limit=1).records
            if reason := _incomplete(lab, records[0].asset_materialization.metadata) if records else None:
                why[name] = reason
            elif upstream:
                why[name] = f"downstream of {', '.join(upstream)}"
    return why


def _cause_text(instance: DagsterInstance, cause) -> str:
    text = f"{cause.asset_key.to_user_string()} {cause.reason}"
    if cause.asset_key.path[0] == CONFIG_GROUP:
        records = instance.fetch_observations(
            AssetRecordsFilter(asset_key=cause.asset_key, asset_partitions=[cause.partition_key]), limit=1).records
        if records and (changed := records[0].asset_observation.metadata.get("changed")) is not None:
            text += f" ({changed.value})"
    return text


def _incomplete(lab: Lab, meta) -> str | None:
    """Why a materialization Dagster calls fresh is still not done: rows it could not finish, or a shared
    artifact damaged or removed since (its digest no longer matches), which is rebuilt, not trusted."""
    incomplete = meta.get("incomplete_rows")
    if incomplete is not None and incomplete.value:
        return f"{incomplete.value} incomplete row(s)"
    if "cache_hit" in meta and not lab.store.intact(meta["path"].value):
        return f"shared artifact {meta['path'].value} is damaged or missing"
    return None
