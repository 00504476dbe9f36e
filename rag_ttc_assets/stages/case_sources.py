"""What a case report reads of one arm besides its tables in the store (report.collect.arm_views), as one record:
loaded by stages.resolve.case_sources (the loader), read by the report. No logic."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rag_ttc_assets.adapters.store import Built
from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.chunking import Chunk
from rag_ttc_assets.core.prompts import Prompt
from rag_ttc_assets.core.records import Question

if TYPE_CHECKING:
    import polars as pl


@dataclass(frozen=True)
class CaseSources:
    """What a case report reads of one arm besides the arm's own tables in the store (report.collect.arm_views):
    its config, questions, chunks (an imported arm's: its documents) and the built chunks they came from (None for an
    imported arm), the prompts it names (field -> prompt, in prompt_fields' order), and its contexts and per-request
    coverage (stages.arm_supply), computed when the report reaches them."""

    arm: str
    cfg: ArmConfig
    questions: list[Question]
    chunks: list[Chunk]
    built_chunks: Built | None
    prompts: dict[str, Prompt]
    contexts: Callable[[], pl.DataFrame]
    coverage: Callable[[], pl.DataFrame]
