"""The arms file (`arms.yaml`) parsed into typed, frozen arm configs (core.arms' `ArmConfig`): defaults, named arms,
sweep families, comparisons and their multiple-testing settings.

Named arms and sweep-family members are both expanded from `defaults`, so every arm can be printed, copied into a
run record and compared. Errors (`ArmsError`) name the file, the arm and the field.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from rag_ttc_assets.core.arms import ArmConfig, Frozen

ARM_NAME = re.compile(r"^[a-z0-9-]+$")


class Family(Frozen):
    """A sweep: one parameter and its values, plus fixed overrides. Members become arms."""

    parameter: str
    values: list[Any] = Field(min_length=1)
    fixed: dict[str, Any] = Field(default_factory=dict)
    name: str = "{family}-{value}"
    names: list[str] | None = None
    description: str = ""

    @model_validator(mode="after")
    def _names_match(self) -> Family:
        if self.names is not None and len(self.names) != len(self.values):
            raise ValueError(f"names has {len(self.names)} entries but values has {len(self.values)}")
        return self


class ArmsFile(Frozen):
    defaults: dict[str, Any] = Field(default_factory=dict)
    arms: dict[str, dict[str, Any] | None] = Field(default_factory=dict)
    families: dict[str, Family] = Field(default_factory=dict)
    comparisons: list[tuple[str, str]] = Field(default_factory=list)
    # How the comparisons' p-values are adjusted for multiple testing (core.multiple_testing), and the level at
    # which an adjusted p-value is significant.
    p_adjust: Literal["holm", "bh"] = "holm"
    alpha: float = Field(default=0.05, gt=0, lt=1)


class ArmsError(ValueError):
    """arms.yaml cannot be used; the message names the file, the arm and the field."""


class Arms:
    """All arms of one arms file, expanded, in a stable order (named arms first, then families)."""

    def __init__(self, arms: dict[str, ArmConfig], families: dict[str, list[str]],
                 family_specs: dict[str, Family], comparisons: list[tuple[str, str]], source: str,
                 p_adjust: str = "holm", alpha: float = 0.05):
        self.arms = arms
        self.families = families
        self.family_specs = family_specs
        self.comparisons = comparisons
        self.source = source
        self.p_adjust = p_adjust
        self.alpha = alpha

    @property
    def names(self) -> list[str]:
        return list(self.arms)

    def __getitem__(self, name: str) -> ArmConfig:
        if name not in self.arms:
            raise ArmsError(f"{self.source}: unknown arm {name!r}; known arms: {', '.join(self.arms)}")
        return self.arms[name]

    def family(self, name: str) -> list[str]:
        if name not in self.families:
            raise ArmsError(f"{self.source}: unknown family {name!r}; known families: {', '.join(self.families)}")
        return self.families[name]


def _fmt_errors(source: str, where: str, e: ValidationError) -> str:
    lines = []
    for err in e.errors():
        field = ".".join(str(p) for p in err["loc"]) or "(arm)"
        lines.append(f"{source}: {where}: field {field!r}: {err['msg']}")
    return "\n".join(lines)


def _build(source: str, where: str, merged: dict[str, Any]) -> ArmConfig:
    try:
        return ArmConfig.model_validate(merged)
    except ValidationError as e:
        raise ArmsError(_fmt_errors(source, where, e)) from None


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def parse_arms(raw: Any, source: str = "arms.yaml") -> Arms:
    """Expand a parsed arms file into effective arm configs; raise ArmsError naming the field."""
    if raw is None:
        raw = {}
    try:
        spec = ArmsFile.model_validate(raw)
    except ValidationError as e:
        raise ArmsError(_fmt_errors(source, "(top level)", e)) from None
    defaults = spec.defaults
    _build(source, "defaults", defaults)
    arms: dict[str, ArmConfig] = {}

    def add(name: str, cfg: ArmConfig, where: str) -> None:
        if not ARM_NAME.fullmatch(name):
            raise ArmsError(f"{source}: {where}: arm name {name!r} is not a valid partition key (use [a-z0-9-]+)")
        if name in arms and arms[name] != cfg:
            raise ArmsError(f"{source}: {where}: duplicate arm {name!r} with a different configuration")
        arms[name] = cfg

    for name, over in spec.arms.items():
        add(name, _build(source, f"arms.{name}", _merge(defaults, over or {})), f"arms.{name}")
    families: dict[str, list[str]] = {}
    for fam, f in spec.families.items():
        members = []
        for i, value in enumerate(f.values):
            over = dict(f.fixed)
            if isinstance(value, dict):
                over.update(value)
                shown = value.get(f.parameter, "-".join(str(v) for v in value.values()))
            else:
                over[f.parameter] = value
                shown = value
            if f.names is not None:
                name = f.names[i]
            else:
                name = f.name.format(family=fam, value=shown, **{k: v for k, v in over.items() if k != "value"})
            cfg = _build(source, f"families.{fam}.values[{i}]", _merge(defaults, over))
            add(name, cfg, f"families.{fam}.values[{i}]")
            members.append(name)
        families[fam] = members
    for i, (a, b) in enumerate(spec.comparisons):
        for n in (a, b):
            if n not in arms:
                raise ArmsError(f"{source}: comparisons[{i}]: unknown arm {n!r}")
    return Arms(arms, families, dict(spec.families), list(spec.comparisons), source, spec.p_adjust, spec.alpha)


def parse_arms_file(data: bytes, source: str) -> Arms:
    """An arms file's bytes, parsed and validated; errors name `source` (the file) and the line or arm and field.
    Reading the file is the caller's (adapters.input_files.load_arms)."""
    import yaml  # type: ignore[import-untyped]  # local: core stays importable without yaml; PyYAML has no stubs

    try:
        raw = _load_yaml(data.decode("utf-8"), source)
    except yaml.YAMLError as e:
        raise ArmsError(f"{source}: malformed YAML: {e}") from None
    except UnicodeDecodeError as e:
        raise ArmsError(f"{source}: not valid UTF-8 at byte {e.start}: {e.reason}") from None
    return parse_arms(raw, source)


def _load_yaml(text: str, p: str) -> Any:
    """Safe-load `text` in one pass (libyaml's parser when available), rejecting duplicate keys:
    YAML silently keeps the last of two equal keys; a duplicated arm must be an error instead."""
    loader = _duplicate_rejecting_loader()(text)
    loader.arms_path = p
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


_LOADER: type[Any] | None = None  # a yaml loader class (PyYAML has no stubs: types-PyYAML is no dependency)


def _duplicate_rejecting_loader() -> type[Any]:
    global _LOADER
    if _LOADER is None:
        import yaml

        class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]  # a base chosen at run time
            arms_path = None

        def construct(loader: Any, node: Any, deep: bool = False) -> Any:
            seen = set()
            for key_node, _ in node.value:
                key = loader.construct_object(key_node, deep=deep)
                if key in seen:
                    raise ArmsError(f"{loader.arms_path}: line {key_node.start_mark.line + 1}: duplicate key {key!r}")
                seen.add(key)
            return yaml.SafeLoader.construct_mapping(loader, node, deep)

        Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct)
        _LOADER = Loader
    return _LOADER
