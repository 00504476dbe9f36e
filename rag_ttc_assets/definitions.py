"""The one Definitions object: assets by stage, the lab and provider resources, and the per-arm job."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from dagster import AssetSelection, Definitions, define_asset_job  # noqa: E402

from rag_ttc_assets.defs import diagnostics, graph, label_assets  # noqa: E402
from rag_ttc_assets.defs.executors import executor_from_env  # noqa: E402
from rag_ttc_assets.defs.io_managers import DiagnosisIOManager, RecordIOManager  # noqa: E402
from rag_ttc_assets.defs.partitions import arm_partitions  # noqa: E402
from rag_ttc_assets.defs.arm_registry import build_assets, build_checks  # noqa: E402
from rag_ttc_assets.defs.resources import LabResource, ProviderResource  # noqa: E402
from rag_ttc_assets.defs.staleness import config_sensor, config_specs  # noqa: E402
from rag_ttc_assets.lab import Lab  # noqa: E402

JOB = "arm_job"


def build_definitions(lab: Lab | None = None, provider: ProviderResource | None = None) -> Definitions:
    """Definitions whose partitions are the arms of `lab` (default: the RAG_TTC_* environment); `provider` is the
    provider resource the assets call models through (default: `ProviderResource()`, the arms' own models)."""
    lab = lab or Lab.from_env()
    partitions = arm_partitions(lab)
    graph.load()  # every defs module imported: every arm_asset registered, a new module's included
    assets = [*build_assets(partitions), diagnostics.arm_comparisons, *diagnostics.DIAGNOSIS_ASSETS,
              *label_assets.ASSETS]
    checks = build_checks(partitions)
    per_arm = [a for a in assets if a.partitions_def is not None]
    job = define_asset_job(JOB, selection=AssetSelection.assets(*per_arm) | AssetSelection.checks(*checks),
                           description="Materialize every stage of one arm (one partition).")
    resource = LabResource(arms_file=str(lab.arms_file), datasets_dir=str(lab.datasets_dir),
                           prompts_dir=str(lab.prompts_dir), home=str(lab.home),
                           provider_cache=str(lab.provider_cache) if lab.provider_cache is not None else None)
    comparisons = define_asset_job("comparisons_job", selection=AssetSelection.assets(diagnostics.arm_comparisons),
                                   description="Compare the arm pairs of `comparisons` and plot the sweeps.")
    written = define_asset_job("diagnosis_job", selection=AssetSelection.assets(*diagnostics.DIAGNOSIS_ASSETS),
                               description="Write the diagnosis of every materialized arm and compared pair, and "
                                           "the case reports of the arms it links.")
    label_jobs = [define_asset_job(f"{a.key.path[-1]}_job", selection=AssetSelection.assets(a))
                  for a in label_assets.ASSETS]
    return Definitions(assets=[*assets, *config_specs(partitions)], asset_checks=checks,
                       jobs=[job, comparisons, written, *label_jobs],
                       sensors=[config_sensor(lab, partitions)],
                       resources={"lab": resource, "provider": provider or ProviderResource(),
                                  # typed records between the sweep's assets, in the lab's store
                                  "records": RecordIOManager(lab=resource),
                                  "diagnosis_files": DiagnosisIOManager(lab=resource)},
                       executor=executor_from_env())  # RAG_TTC_EXECUTOR (docs/cluster.md); None: Dagster's default


defs = build_definitions()
