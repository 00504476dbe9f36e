"""Representation eras in a comparison (first seed, section 2.2): representations built by another builder or in
another model era are not silently compared as if one had produced both, and a change of representation provider
is never misclassified as a chunking or prompt effect.

Two arms' representations differ when their builder, builder model, builder prompt digest or era differ. The
comparison then says so; when chunking or the answer prompt changed as well, it is refused unless allowed, because
the difference cannot be attributed to either.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from rag_ttc_assets.core.compare_records import RepresentationEra

FIELDS = ("builder", "builder_model", "prompt_digest", "era")
# The parameters a difference would otherwise be attributed to (the seed's hypotheses H1 and H3).
CONFOUNDED = ("chunk_runes", "overlap_runes", "prompt")


class EraChangeError(ValueError):
    """The arms' representation era changed along with their chunking or prompt."""


class Built(Protocol):
    """Who built an arm's representations: core.arm_summaries.Representations, core.run_report.RepresentationsView,
    or `Builder` (read from a stored record)."""

    @property
    def builder(self) -> str | None: ...
    @property
    def builder_model(self) -> str | None: ...
    @property
    def builder_prompt(self) -> str | None: ...
    @property
    def prompt_digest(self) -> str | None: ...
    @property
    def era(self) -> str | None: ...
    @property
    def offline_baseline(self) -> bool | None: ...


class Builder(BaseModel):
    """The builder fields of a representations record (ArmJson.REPRESENTATIONS, or an imported arm's
    imported.import_stage.representations_record): None where the record has no such field; its other fields ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    builder: str | None = None
    builder_model: str | None = None
    builder_prompt: str | None = None
    prompt_digest: str | None = None
    era: str | None = None
    offline_baseline: bool | None = None


def describe(rep: Built) -> str:
    """"contextual/1 by local/contextual (offline baseline; prompt representation-context-v1 sha256:1a2b3c4d…;
    era local/contextual)", or "titled/1 (era titled/1)" for a template."""
    if not rep.builder_model:
        return f"{rep.builder} (era {rep.era})"
    notes = ["offline baseline"] if rep.offline_baseline else []
    if rep.builder_prompt:
        notes.append(f"prompt {rep.builder_prompt} {str(rep.prompt_digest)[:15]}…")
    notes.append(f"era {rep.era}")
    return f"{rep.builder} by {rep.builder_model} ({'; '.join(notes)})"


def era_change(arm_a: str, rep_a: Mapping[str, Any], arm_b: str, rep_b: Mapping[str, Any],
               changed: Iterable[str], allow: bool) -> RepresentationEra:
    """What the comparison states about the arms' representations (each arm's record as stored): the fields that
    differ, the chunking or prompt parameters changed with them, and its line. Raise EraChangeError when both changed
    and it is not allowed."""
    built_a, built_b = Builder.model_validate(rep_a), Builder.model_validate(rep_b)
    fields_a, fields_b = built_a.model_dump(include=set(FIELDS)), built_b.model_dump(include=set(FIELDS))
    differ = [f for f in FIELDS if fields_a[f] != fields_b[f]]
    confounded = sorted(c for c in set(changed) if c in CONFOUNDED)
    both = f"{arm_a} {describe(built_a)}, {arm_b} {describe(built_b)}"
    if not differ:
        line = f"representations: the same builder and era for both arms ({describe(built_a)})"
    elif confounded:
        line = (f"REPRESENTATION ERA CHANGED ({', '.join(differ)} differ: {both}) together with "
                f"{', '.join(confounded)}: a difference between these arms is not attributable to "
                f"{' or '.join(_what(confounded))} alone")
        if not allow:
            raise EraChangeError(
                f"{line}. Rebuild one arm's representations with the other's builder and era "
                "(representation, representation_builder, representation_prompt, representation_era), or pass "
                "--allow-era-change to compare anyway (the report then says so).")
    else:
        line = (f"representations differ ({', '.join(differ)}): {both}; a difference between these arms includes "
                "the representation change")
    return RepresentationEra(differ=differ, confounded=confounded, allowed=bool(differ and confounded), line=line,
                             representations={arm_a: dict(rep_a), arm_b: dict(rep_b)})


def _what(confounded: list[str]) -> list[str]:
    return sorted({"chunking" if c in ("chunk_runes", "overlap_runes") else "the prompt" for c in confounded})
