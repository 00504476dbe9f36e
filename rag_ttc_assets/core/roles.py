"""The provider roles: every model the lab calls through a provider, declared once with the arm fields it reads.

A role's `Caller` (stages.calls.role_caller) takes its model, budget and thread-pool size from the fields named
here, and its provider cache namespace from here: two roles never share cached replies, so a judge's reply is
never served as an answer. Adding a role: a `ProviderRole` below, its fields on `ArmConfig` (core/arms.py) and in
the declaration of the artifact it builds (core/artifacts.py), and a `role_caller(ROLE, ...)` where it calls.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import cast

from rag_ttc_assets.core.arms import ArmConfig, ModelConfig

# The Dagster concurrency pool of every asset whose step calls a provider (`arm_asset(pool=...)`).
PROVIDER_POOL = "provider"


@dataclass(frozen=True)
class ProviderRole:
    """One provider role. `name` is how rows, budgets' errors and metadata name it (`provider_role`); the
    `*_field`s are `ArmConfig` fields (None: the role runs outside an arm, its command passes them)."""

    name: str
    model_field: str | None
    budget_field: str | None
    namespace: str  # the provider cache's namespace of its replies
    workers_field: str | None  # the size of the thread pool its calls run on
    asset: str | None  # the asset whose step calls it (None: a command)
    calls: tuple[str, ...] = ()  # the calls it makes per item, when more than one
    panel_field: str | None = None  # an ArmConfig list of models replacing `model_field` (a panel's jurors)
    era_field: str | None = None  # the cache namespace is per era: a new era gets fresh replies

    # The *_field each method reads is a str for a role that runs in an arm; for a command's role (None) getattr
    # raises TypeError: the casts only tell mypy the field's type.
    def model(self, cfg: ArmConfig) -> ModelConfig:
        return cast(ModelConfig, getattr(cfg, cast(str, self.model_field)))

    def models(self, cfg: ArmConfig) -> list[ModelConfig]:
        """The models the role calls for `cfg`: a panel's jurors when it has them, else its one model."""
        return list(getattr(cfg, self.panel_field) or [self.model(cfg)]) if self.panel_field else [self.model(cfg)]

    def budget(self, cfg: ArmConfig) -> int:
        return cast(int, getattr(cfg, cast(str, self.budget_field)))

    def workers(self, cfg: ArmConfig) -> int:
        return cast(int, getattr(cfg, cast(str, self.workers_field)))

    def cache_namespace(self, cfg: ArmConfig | None = None) -> str:
        """The namespace, with the era's digest for a per-era role (a provider that changed the model behind its
        name, say, gets fresh replies, never those cached under another era)."""
        if self.era_field is None:
            return self.namespace
        era = getattr(cfg, self.era_field)
        return f"{self.namespace}-{hashlib.sha256(era.encode('utf-8')).hexdigest()[:16]}"

    def label(self, model: ModelConfig, cfg: ArmConfig | None = None) -> str:
        """The role as one caller's errors name it: a panel's juror by its model."""
        if self.panel_field and cfg is not None and getattr(cfg, self.panel_field):
            return f"{self.name} {model.model}"
        return self.name


ANSWERS = ProviderRole("generator", "generator", "generation_budget", "generation", "generation_workers", "answers")
# The statement judge's calls: statements, verdicts against the admitted evidence, and the gold judge's verdicts
# against the gold evidence, all one instrument (one model, budget and cache namespace).
JUDGE = ProviderRole("judge", "judge", "judge_budget", "judging", "generation_workers", "judge_verdicts",
                     calls=("statements", "verdicts", "gold"))
REQUEST_JUDGE = ProviderRole("request judge", "request_judge", "request_judge_budget", "request_judging",
                             "generation_workers", "request_judgments", panel_field="request_judges")
REPRESENTATION_BUILDER = ProviderRole("representation builder", "representation_builder", "representation_budget",
                                      "representations", "generation_workers", "representations",
                                      era_field="representation_era_label")
# `rag-ttc derive-requests`: its model, budget and workers are the command's options.
REQUEST_DERIVER = ProviderRole("request deriver", None, None, "derive_requests", None, None)

ROLES: tuple[ProviderRole, ...] = (ANSWERS, JUDGE, REQUEST_JUDGE, REPRESENTATION_BUILDER, REQUEST_DERIVER)
