"""Representations: the text each chunk is indexed and embedded as (seed section 2.3), and who built it.

`plain` and `titled` are string templates; `contextual` is built by a model (core.contextual). Every representation
row records its builder, model, prompt digest and era, so representations of different eras never share an index.
"""

from __future__ import annotations

from typing import Any

from rag_ttc_assets.core.chunking import Chunk
from rag_ttc_assets.core.contextual import CONTEXTUAL_VERSION

TEMPLATES = {"plain": "plain/1", "titled": "titled/1"}
BUILDERS = {**TEMPLATES, "contextual": CONTEXTUAL_VERSION}
# Kinds whose text a builder model writes (through litellm, cached and budgeted like every provider call).
MODEL_BUILT = frozenset({"contextual"})
BUILT = "built"  # a row's status when its representation is what its builder was asked for
PARSE_FAILURE = "parse_failure"


# What an arm records of its representations (ArmJson.REPRESENTATIONS): the builder and the outcome.
RECORD = ("representation", "builder", "builder_model", "builder_prompt", "prompt_digest", "era", "offline_baseline",
          "representations", "statuses", "not_built", "retryable", "provider_calls", "cache_hits")


def represent(chunk: Chunk, title: str, representation: str) -> str:
    if representation == "plain":
        return chunk.text
    if representation == "titled":
        # The title carries the section's subject, which a mid-section chunk often never names.
        return f"{title}\n\n{chunk.text}" if title else chunk.text
    if representation in MODEL_BUILT:
        raise ValueError(f"representation {representation!r} is built by a model (stages.representation_rows), "
                         "not a template")
    raise ValueError(f"unknown representation {representation!r}; known: {', '.join(BUILDERS)}")


def era_of(representation: str, builder_model: str, era: str | None) -> str:
    """The era an arm's representations belong to: the arm's label, else the builder model's string for a
    model-built kind, else the template's name."""
    if era:
        return era
    return builder_model if representation in MODEL_BUILT else BUILDERS[representation]


def identity(representation: str, builder_model: str | None, prompt: str | None, prompt_digest: str | None,
             era: str, offline_baseline: bool) -> dict[str, Any]:
    """What every representation row and summary records about its builder."""
    model_built = representation in MODEL_BUILT
    return {"representation": representation, "builder": BUILDERS[representation],
            "builder_model": builder_model if model_built else None,
            "builder_prompt": prompt if model_built else None,
            "prompt_digest": prompt_digest if model_built else None,
            "era": era, "offline_baseline": bool(model_built and offline_baseline)}
