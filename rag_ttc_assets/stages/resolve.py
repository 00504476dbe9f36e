"""One resolver per asset execution: an arm's dataset, questions, chunks, representations and indexes, each
opened at most once, whatever the asset body asks for first.

    arm = ArmInputs(lab, "baseline")
    arm.cfg, arm.dataset, arm.questions     # the arm's config, its validated dataset, its question set
    arm.chunks, arm.chunk_list, arm.chunk_text
    arm.representations, arm.bm25, arm.vectors, arm.question_embeddings   # shared artifacts (store hits)
    arm.unused                              # the indexes the arm never reads (None above), with the reason
    arm.preloaded_chunks, arm.lookup, arm.retry_prompt   # what one supply reads (None for the others)
    arm.table(Table.RETRIEVAL_ROWS)         # the arm's own tables
    case_sources(arm)                       # what a case report reads of the arm besides its tables

The stage functions take these values, never the resolver: the asset hands in what each reads.

Every shared artifact comes through the store's `build_once` with its declared key (core.artifacts), so an
asset downstream of `chunks` opens the same chunks its upstream asset built, never a rebuild.
"""

from __future__ import annotations

from collections.abc import Collection
from functools import cached_property
from typing import Any
from typing import TYPE_CHECKING

from rag_ttc_assets.adapters.store import ArtifactStore, Built, Table
from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.chunking import Chunk
from rag_ttc_assets.core.dataset import Dataset
from rag_ttc_assets.core.progress import NO_PROGRESS, Progress
from rag_ttc_assets.core.prompts import Prompt
from rag_ttc_assets.core.records import Question
from rag_ttc_assets.core.representations import MODEL_BUILT
from rag_ttc_assets.core.roles import REPRESENTATION_BUILDER
from rag_ttc_assets.core.usage import BM25_INDEX, CHUNKS, QUESTION_EMBEDDINGS, REPRESENTATIONS, VECTOR_INDEX, unused
from rag_ttc_assets.lab import Lab, prompt_fields
from rag_ttc_assets.stages import arm_supply, indexes, ingest
from rag_ttc_assets.imported import import_stage
from rag_ttc_assets.stages.calls import role_caller
from rag_ttc_assets.stages.case_sources import CaseSources
from rag_ttc_assets.stages.coverage import request_support
from rag_ttc_assets.stages.inspect import InspectedArm
from rag_ttc_assets.stages.retrieval import arm_questions

if TYPE_CHECKING:
    import polars as pl


class ArmInputs:
    def __init__(self, lab: Lab, arm: str, progress: Progress = NO_PROGRESS):
        self.lab, self.arm, self.progress = lab, arm, progress
        self.cfg: ArmConfig = lab.arms[arm]

    @property
    def store(self) -> ArtifactStore:
        return self.lab.store

    @property
    def source(self) -> str:
        """Where the arm is declared, for error messages: `<arms file>: arm '<name>'`."""
        return f"{self.lab.arms_file}: arm {self.arm!r}"

    # --- the dataset ------------------------------------------------------------------------------------
    @cached_property
    def dataset(self) -> Dataset:
        return ingest.bind_dataset(self.lab.datasets_dir, self.cfg)

    @cached_property
    def questions(self) -> list[Question]:
        return arm_questions(self.cfg, self.dataset)

    # --- shared artifacts ---------------------------------------------------------------------------------
    @property
    def imported(self) -> bool:
        """Whether the arm's chunks, ranked lists and answers come from another system (imported.import_source)."""
        return self.cfg.supply == "imported"

    @cached_property
    def chunks(self) -> Built | None:
        """The lab's chunks; None for an imported arm (its chunks are the imported documents: chunk_list)."""
        if CHUNKS in self.unused:
            return None
        return ingest.build_chunks(self.store, self.cfg, self.dataset)

    @cached_property
    def chunk_list(self) -> list[Chunk]:
        if self.imported:
            return import_stage.chunk_list(self.table(Table.IMPORTED_CHUNKS))
        return ingest.read_chunks(self.chunks)

    @cached_property
    def chunk_text(self) -> dict[str, str]:
        if self.imported:
            return {c.chunk_id: c.text for c in self.chunk_list}
        return ingest.chunk_texts(self.chunks)

    def chunk_text_of(self, ids: Collection[str]) -> dict[str, str]:
        """chunk_id -> text of the chunks `ids` only (what admission reads: the ranked lists' chunks), without
        reading a whole corpus's texts when they are not already read."""
        if self.imported or "chunk_text" in self.__dict__:
            return {i: self.chunk_text[i] for i in ids if i in self.chunk_text}
        return ingest.chunk_texts(self.chunks, ids)

    @cached_property
    def chunk_docs(self) -> dict[str, str]:
        import polars as pl

        if self.imported:
            return {c.chunk_id: c.doc_id for c in self.chunk_list}
        return dict(pl.read_parquet(self.chunks.path / "chunks.parquet", columns=["chunk_id", "doc_id"]).iter_rows())

    @cached_property
    def representations(self) -> Built | None:
        if REPRESENTATIONS in self.unused:
            return None
        # Before a representation is built or embedded: an index parameter this corpus cannot take fails here.
        self.check_vector_index()
        return ingest.build_representations(self.store, self.cfg, self.dataset, self.chunks, self.builder_prompt,
                                            lambda: role_caller(REPRESENTATION_BUILDER, self.lab, self.cfg))

    @cached_property
    def builder_prompt(self) -> Prompt | None:
        """The representation builder's prompt (a model-built kind's, its `representation_prompt`); None for a
        template kind."""
        return self.prompt("representation_prompt") if self.cfg.representation in MODEL_BUILT else None

    @cached_property
    def unused(self) -> dict[str, str]:
        """The shared artifacts this arm never reads, with the reason (core.usage): never built, None below."""
        return unused(self.cfg)

    @cached_property
    def bm25(self) -> Built | None:
        if BM25_INDEX in self.unused:
            return None
        return indexes.build_bm25(self.store, self.cfg, self.representations)

    @cached_property
    def vectors(self) -> Built | None:
        if VECTOR_INDEX in self.unused:
            return None
        self.check_vector_index()
        return indexes.build_vectors(self.store, self.cfg, self.representations, progress=self.progress)

    def check_vector_index(self) -> None:
        """An approximate index's parameters against this corpus (stages.indexes.check_vector_index): an error
        naming the arms file, arm and field before anything is embedded or indexed. The vector count is the
        chunk count (one representation per chunk), known once the arm is chunked."""
        if VECTOR_INDEX not in self.unused and self.cfg.vector_index.approximate:
            count = len(self.chunk_list) if self.imported else ingest.chunk_count(self.chunks)
            indexes.check_vector_index(self.cfg, count, self.source)

    @cached_property
    def question_embeddings(self) -> Built | None:
        if QUESTION_EMBEDDINGS in self.unused:
            return None
        return indexes.build_question_embeddings(self.store, self.cfg, self.dataset, progress=self.progress)

    @cached_property
    def preloaded_chunks(self) -> list[Chunk] | None:
        """A preloaded arm's chunks, in its document set's order (stages.arm_supply.preloaded_chunks: a document the
        corpus does not have is a PreloadError naming the arms file and arm); None for the other supplies."""
        if self.cfg.supply != "preloaded":
            return None
        return arm_supply.preloaded_chunks(self.cfg, self.dataset, self.chunk_list, self.source)

    @cached_property
    def lookup(self) -> arm_supply.Lookup | None:
        """A tool arm's `lookup` tool over its own indexes (stages.arm_supply.Lookup); None for the other supplies."""
        if self.cfg.supply != "tool":
            return None
        return arm_supply.Lookup(self.cfg, self.bm25, self.vectors, self.chunk_docs, self.store)

    @cached_property
    def support(self) -> dict[str, list[str]]:
        """Per request with gold evidence, the chunk IDs (this arm's chunking) that support it (evaluation side)."""
        if self.imported:
            return request_support(self.dataset, self.questions, self.chunk_list)
        # Only the chunks of the documents gold evidence names can support a request: the rest are never read.
        docs = {ev.doc_id for q in self.questions for r in q.requests for ev in r.evidence}
        return request_support(self.dataset, self.questions, ingest.read_chunks(self.chunks, docs))

    # --- the arm's own tables, JSON and prompts -----------------------------------------------------------
    def table(self, name: str) -> pl.DataFrame:
        return self.store.read_table(self.arm, name)

    def arm_json(self, name: str) -> Any:
        return self.store.read_arm_json(self.arm, name)

    def write_table(self, name: str, df: pl.DataFrame) -> str:
        return self.store.write_table(self.arm, name, df)

    def write_arm_json(self, name: str, value: Any) -> str:
        return self.store.write_arm_json(self.arm, name, value)

    def prompt(self, field: str) -> Prompt:
        """The prompt the arm names in `field` (prompt, judge_gold_prompt, ...), parsed for its kind."""
        return self.lab.prompt(getattr(self.cfg, field), prompt_fields(self.cfg)[field])

    @cached_property
    def retry_prompt(self) -> Prompt | None:
        """The citation check's retry prompt (`citation_retry_prompt`); None when the arm's check is off."""
        return self.prompt("citation_retry_prompt") if self.cfg.citation_check else None

    # --- what one stage function reads, as its typed record ----------------------------------------------
    def inspected(self) -> InspectedArm:
        """What `inspect` reads of this arm besides its tables (stages.inspect.inspect_question), the chunks read
        only when it asks for them."""
        return InspectedArm(name=self.arm, cfg=self.cfg, dataset=self.dataset, questions=self.questions,
                            chunk_list=lambda: self.chunk_list)


def case_sources(arm: ArmInputs) -> CaseSources:
    """The CaseSources of the arm `arm` resolves, each read once through it."""
    chunks = list(arm.chunk_list)
    return CaseSources(arm.arm, arm.cfg, arm.questions, chunks, arm.chunks,
                       {field: arm.prompt(field) for field in prompt_fields(arm.cfg)},
                       lambda: arm_supply.arm_contexts(arm.store, arm.arm, arm.cfg),
                       lambda: arm_supply.arm_coverage(arm.store, arm.arm, arm.cfg, arm.questions, lambda: arm.support))
