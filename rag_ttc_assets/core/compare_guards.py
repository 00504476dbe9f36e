"""Guards on a comparison of two arms, and what changed between them.

A comparison is refused when the arms were judged against different label versions (`label_drift`) or their
request completeness was measured by different request judges, prompts or rules (`instrument_drift`), unless the
caller allows it (the report then says so); `attribute_changes` names the configuration fields whose values
differ, so a token or latency delta is attributed to the parameters that changed.

Pure: dicts in, dicts out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ABSENT = "<absent>"  # attribute_changes: the key is missing from that config (JSON-able, unlike a sentinel object)


class LabelDriftError(ValueError):
    """The two arms were judged against different label versions."""


class InstrumentDriftError(ValueError):
    """The two arms' request completeness came from different request judges or judge prompts."""


# -- guards and attribution --------------------------------------------------------------------

def label_drift(digest_a: str, digest_b: str, allow: bool) -> bool:
    """True when the label digests differ (and allow is True); raise LabelDriftError when not allowed."""
    if digest_a == digest_b:
        return False
    if not allow:
        raise LabelDriftError(
            f"label drift: arm a was judged against labels {digest_a}, arm b against {digest_b}. "
            "Labels get revised; a comparison across label versions is refused, because a case may "
            "have changed its label rather than its answer. Pass --allow-label-drift to compare anyway."
        )
    return True


def instrument_drift(arm_a: str, instrument_a: Mapping[str, Any], arm_b: str, instrument_b: Mapping[str, Any],
                     allow: bool) -> list[str]:
    """The instrument fields (request judge model, prompt digest, call parameters, the offline judges' rules
    version, a panel's rules version: judging.panel.PANEL_RULES, the learned juror's fitted parameters) that differ
    between the arms; raise InstrumentDriftError naming both when any differs and it is not allowed."""
    # `entailment`: which jurors are of kind entailment, and their prompt's digest (judging.request_judge_stage.instrument).
    differ = [k for k in ("model", "prompt_digest", "params", "rules", "entailment", "panel_rules", "learned")
              if instrument_a.get(k) != instrument_b.get(k)]
    if differ and not allow:
        shown = "; ".join(f"{k}: {arm_a} {instrument_a.get(k)!r}, {arm_b} {instrument_b.get(k)!r}" for k in differ)
        raise InstrumentDriftError(
            f"instrument drift: the arms' request completeness was measured by different request judges ({shown}). "
            "One instrument for every arm of a comparison: rerun one arm with the other's request_judge and "
            "judge_requests_prompt, or pass --allow-instrument-drift to compare anyway (the report then says so).")
    return differ


def _flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in config.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(_flatten(value, path + "."))
        else:
            flat[path] = value  # lists and empty dicts are compared whole, as values
    return flat


def _same(x: Any, y: Any) -> bool:
    # True == 1 in Python, but a flag turned into a count is a change of parameter.
    return isinstance(x, bool) == isinstance(y, bool) and x == y


def attribute_changes(config_a: Mapping[str, Any], config_b: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Flat dotted keys whose values differ, key -> (a, b), sorted by key; ABSENT where a key is missing.

    So a token or latency delta is attributed to the parameters that changed, e.g.
    {"context_runes": (12000, 40000), "evidence_k": (5, 8)}.
    """
    out: dict[str, tuple[Any, Any]] = {}
    _changes(config_a, config_b, "", out)
    return dict(sorted(out.items()))


def _changes(a: Mapping[str, Any], b: Mapping[str, Any], prefix: str, out: dict[str, tuple[Any, Any]]) -> None:
    # Into a key both sides hold as a mapping; a mapping on one side only (an imported arm's `source` against
    # another arm's None) is one change of the whole value, not one per key it holds.
    for key in a.keys() | b.keys():
        x, y = a.get(key, ABSENT), b.get(key, ABSENT)
        if isinstance(x, Mapping) and x and isinstance(y, Mapping) and y:
            _changes(x, y, f"{prefix}{key}.", out)
        elif (key in a) != (key in b) or not _same(x, y):
            out[prefix + key] = (x, y)
