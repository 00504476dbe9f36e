"""What the labelling page (`rag-ttc annotate`, cli/annotate.py) shows, read from the store and the arms the command
loaded: the rows to label (the arms' answer rows, or a --sample file's rows in its order) and each row's view:
`inspect`'s view of the question, with the texts of its admitted and omitted chunks, the arm's current run id and
corpus digest."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_ttc_assets.adapters.store import ArmJson, ArtifactStore, Table
from rag_ttc_assets.core.chunking import Chunk
from rag_ttc_assets.core.run_records import RunFolders
from rag_ttc_assets.labelling.annotation import AnnotationError, parse_sample
from rag_ttc_assets.stages.inspect import InspectedArm, inspect_question
from rag_ttc_assets.stages.run_record import read_status


class SourceError(RuntimeError):
    """The rows cannot be served: one line naming the arm or file and what to do."""


@dataclass(frozen=True)
class Row:
    """A row to label: an arm's answer to a question; from a --sample file, also the run it was drawn from, its
    stratum and its inclusion probability (labelling.annotation.parse_sample's fields, in its order)."""

    arm: str
    question: str
    run_id: str | None = None
    stratum: Any = None
    probability: float | None = None


class Source:
    """What the page shows: the rows to label (arms x questions, or a --sample file's rows in its order) and each
    row's view (the `inspect` view of the question plus its chunks' texts), read once per row. `arms`: each arm to
    label as `inspect` reads it (stages.inspect.InspectedArm, loaded by the command), in the order given; `store` and
    `runs` where its tables and run records are."""

    def __init__(self, store: ArtifactStore, runs: RunFolders, arms: dict[str, InspectedArm], sample: Path | None):
        self.store, self.inspected, self.arms = store, arms, list(arms)
        self._chunks: dict[str, dict[str, Chunk]] = {}
        self.rows, self.run_ids, self.corpus = {}, {}, {}
        for a in self.arms:
            try:
                contract = store.read_table(a, Table.CONTRACT_RESULTS)
            except FileNotFoundError:
                raise SourceError(f"arm {a!r} has no answers yet: run `rag-ttc run {a}` first") from None
            self.rows[a] = set(contract["query_id"].to_list())
            self.run_ids[a] = current_run_id(runs, a)
            self.corpus[a] = (store.read_arm_json(a, ArmJson.BINDING) or {}).get("corpus_digest")
        if sample is not None:
            try:
                text = sample.read_text(encoding="utf-8")
            except OSError as e:
                raise SourceError(f"--sample {sample}: {e.strerror}") from None
            try:
                self.items = [Row(**r) for r in parse_sample(text, str(sample), self.rows)]
            except AnnotationError as e:
                raise SourceError(str(e)) from None
        else:
            self.items = [Row(a, q.id) for a in self.arms for q in arms[a].dataset.evaluation.questions
                          if q.id in self.rows[a]]
        if not self.items:
            raise SourceError(f"no answer rows to label in {', '.join(self.arms)}")
        self._views: dict[int, dict] = {}
        self._lock = threading.Lock()

    def view(self, i: int) -> dict:
        with self._lock:
            if i not in self._views:
                item = self.items[i]
                inspected = inspect_question(self.store, self.inspected[item.arm], item.question)
                chunks = self._chunks_of(item.arm)
                shown = [c.chunk_id for c in inspected.ranked if c.state in ("admitted", "omitted", "selected")]
                v = inspected.model_dump()  # the page's JSON: the view's fields, then the chunks' texts
                v["chunks"] = {c: chunks[c].text for c in shown}
                v["chunk_doc"] = {c: chunks[c].doc_id for c in shown}
                self._views[i] = v
            return self._views[i]

    def _chunks_of(self, arm: str) -> dict[str, Chunk]:
        """The arm's chunks by id, read once (its lab chunks, or an imported arm's documents)."""
        if arm not in self._chunks:
            self._chunks[arm] = {c.chunk_id: c for c in self.inspected[arm].chunk_list()}
        return self._chunks[arm]


def current_run_id(runs: RunFolders, arm: str) -> str | None:
    """The Dagster run id of the arm's last complete run record (the run whose rows the page shows)."""
    root = runs.of(arm)
    done = [read_status(d) for d in sorted(root.glob("*"))] if root.is_dir() else []
    done = [s for s in done if s.status == "complete"]
    return done[-1].dagster_run_id if done else None


