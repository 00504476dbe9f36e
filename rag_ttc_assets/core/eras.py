"""Representation eras in a comparison (first seed, section 2.2): representations built by another builder or in
another model era are not silently compared as if one had produced both, and a change of representation provider
is never misclassified as a chunking or prompt effect.

Two arms' representations differ when their builder, builder model, builder prompt digest or era differ. The
comparison then says so; when chunking or the answer prompt changed as well, it is refused unless allowed, because
the difference cannot be attributed to either.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

FIELDS = ("builder", "builder_model", "prompt_digest", "era")
# The parameters a difference would otherwise be attributed to (the seed's hypotheses H1 and H3).
CONFOUNDED = ("chunk_runes", "overlap_runes", "prompt")


class EraChangeError(ValueError):
    """The arms' representation era changed along with their chunking or prompt."""


def describe(rep: Mapping[str, Any]) -> str:
    """"contextual/1 by local/contextual (offline baseline; prompt representation-context-v1 sha256:1a2b3c4d…;
    era local/contextual)", or "titled/1 (era titled/1)" for a template."""
    if not rep.get("builder_model"):
        return f"{rep.get('builder')} (era {rep.get('era')})"
    notes = ["offline baseline"] if rep.get("offline_baseline") else []
    if rep.get("builder_prompt"):
        notes.append(f"prompt {rep['builder_prompt']} {str(rep.get('prompt_digest'))[:15]}…")
    notes.append(f"era {rep.get('era')}")
    return f"{rep.get('builder')} by {rep['builder_model']} ({'; '.join(notes)})"


def era_change(arm_a: str, rep_a: Mapping[str, Any], arm_b: str, rep_b: Mapping[str, Any],
               changed: Iterable[str], allow: bool) -> dict[str, Any]:
    """What the comparison states about the arms' representations: the fields that differ, the chunking or prompt
    parameters changed with them, and its line. Raise EraChangeError when both changed and it is not allowed."""
    differ = [f for f in FIELDS if rep_a.get(f) != rep_b.get(f)]
    confounded = sorted(c for c in set(changed) if c in CONFOUNDED)
    both = f"{arm_a} {describe(rep_a)}, {arm_b} {describe(rep_b)}"
    if not differ:
        line = f"representations: the same builder and era for both arms ({describe(rep_a)})"
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
    return {"differ": differ, "confounded": confounded, "allowed": bool(differ and confounded), "line": line,
            "representations": {arm_a: dict(rep_a), arm_b: dict(rep_b)}}


def _what(confounded: list[str]) -> list[str]:
    return sorted({"chunking" if c in ("chunk_runes", "overlap_runes") else "the prompt" for c in confounded})
