"""The lab resource (where arms, datasets, prompts and the artifact store live) and the provider resource (the
lab's access to the models it calls, one `Caller` per role of core.roles)."""

from __future__ import annotations

from dagster import ConfigurableResource

from rag_ttc_assets.core.arms import ArmConfig, ModelConfig
from rag_ttc_assets.core.arms_file import ArmsError
from rag_ttc_assets.core.progress import NO_PROGRESS
from rag_ttc_assets.core.roles import ProviderRole
from rag_ttc_assets.defs.progress_reporter import step_progress
from rag_ttc_assets.lab import Lab
from rag_ttc_assets.stages.calls import Caller, role_caller
from rag_ttc_assets.stages.resolve import ArmInputs


class LabResource(ConfigurableResource):
    """Paths default to the RAG_TTC_* environment variables, then the project folder."""

    arms_file: str | None = None
    datasets_dir: str | None = None
    prompts_dir: str | None = None
    home: str | None = None
    provider_cache: str | None = None

    def lab(self) -> Lab:
        return Lab.from_env(self.arms_file, self.datasets_dir, self.prompts_dir, self.home, self.provider_cache)

    def arm(self, name: str) -> tuple[Lab, ArmConfig]:
        lab = self.lab()
        if name not in lab.arms.arms:  # a partition kept for its history (defs/partitions.py)
            raise ArmsError(f"{lab.arms_file}: arm {name!r} is no longer in the arms file; its partition keeps the "
                            "history of its materializations. Add the arm back to materialize it again")
        return lab, lab.arms[name]

    def inputs(self, context) -> ArmInputs:
        """The partition's arm, its dataset, chunks, indexes and tables, each opened once (stages.resolve)."""
        from dagster import AssetExecutionContext

        # An asset's long builds report progress; a check only reads.
        progress = step_progress(context) if isinstance(context, AssetExecutionContext) else NO_PROGRESS
        lab, _ = self.arm(context.partition_key)  # a removed arm's partition: the clear error
        preflight(lab)
        return ArmInputs(lab, context.partition_key, progress)


class ProviderResource(ConfigurableResource):
    """The models the lab calls through litellm: per provider role (core.roles) a Caller with the arm's model,
    budget and cache namespace, the lab's provider cache and the store's message archive. A test hands in another
    resource (a subclass) to send the calls elsewhere."""

    def caller(self, role: ProviderRole, lab: Lab, cfg: ArmConfig, model: ModelConfig | None = None) -> Caller:
        """`role`'s Caller for the arm `cfg` (`model`: one of its models, a panel's juror)."""
        return role_caller(role, lab, cfg, model=model)

    def callers(self, role: ProviderRole, lab: Lab, cfg: ArmConfig) -> list[Caller]:
        """One Caller per model of `role` for `cfg`: a panel's jurors, or its one model."""
        return [self.caller(role, lab, cfg, m) for m in role.models(cfg)]


_checked: set[str] = set()


def preflight(lab: Lab) -> None:
    """The store's pre-flight (`check_writable`), once per process and store: the first asset a step process runs
    fails on a store it cannot write, before any provider call."""
    where = str(lab.store.root)
    if where not in _checked:
        lab.store.check_writable()
        _checked.add(where)
