"""The labs a measurement runs in: the bundled dataset or a synthetic one scaled from it, the baseline arm's shared
artifacts built, and materializing through the project's job."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_ttc_assets.bench.harness import QUIET
from rag_ttc_assets.core.dataset import sha256_digest
from rag_ttc_assets.core.records import Corpus, Document, Evaluation
from rag_ttc_assets.lab import PROJECT_ROOT, Lab

DATASET = "pyref"
ARM = "baseline"
K_FAMILY = "evidence-k"
SCALE_SEED = 1729


@dataclass(frozen=True)
class LabSpec:
    """Where a measurement's lab reads arms, datasets and prompts; each measurement picks its home."""

    arms_file: Path
    datasets_dir: Path
    prompts_dir: Path
    dataset: str

    def lab(self, home: Path) -> Lab:
        return Lab(arms_file=self.arms_file, datasets_dir=self.datasets_dir, prompts_dir=self.prompts_dir,
                   home=Path(home).resolve())

    @classmethod
    def from_json(cls, text: str) -> LabSpec:
        """The spec a parent passed to a child process (`as_json`, serialized)."""
        return cls(**{k: (v if k == "dataset" else Path(v)) for k, v in json.loads(text).items()})

    def as_json(self) -> dict:
        return {k: str(v) for k, v in self.__dict__.items()}


def bundled_spec() -> LabSpec:
    # Explicit project paths, not RAG_TTC_*: the bench always measures the bundled dataset and arms.
    return LabSpec(PROJECT_ROOT / "arms.yaml", PROJECT_ROOT / "datasets", PROJECT_ROOT / "prompts", DATASET)


def write_scaled_dataset(dest: Path, n_docs: int, source: Path = PROJECT_ROOT / "datasets" / DATASET,
                         seed: int = SCALE_SEED) -> Path:
    """A synthetic dataset of `n_docs` documents, each 2-6 paragraphs of the bundled corpus picked by a
    seeded generator, with an evaluation bound to its exact bytes.

    Questions keep the bundled ids, texts and request texts (without evidence quotes, which need
    not survive recombination). Targets are a small synthetic set: a synthetic document is relevant
    to a question, at the bundled grade, when it contains a paragraph of one of the question's
    bundled target documents (at most 10 per question, lowest document numbers first).
    """
    corpus = Corpus.model_validate_json((source / "corpus.json").read_bytes())
    evaluation = Evaluation.model_validate_json((source / "evaluation.json").read_bytes())
    paragraphs = [(d.id, d.title, p) for d in corpus.documents for p in d.text.split("\n\n") if p.strip()]
    rng = random.Random(seed)
    docs: list[Document] = []
    sources_of = []
    for i in range(n_docs):
        picked = [paragraphs[rng.randrange(len(paragraphs))] for _ in range(rng.randint(2, 6))]
        sources = list(dict.fromkeys(src for src, _, _ in picked))
        docs.append(Document(id=f"synth-{i:06d}", title=picked[0][1], text="\n\n".join(p for _, _, p in picked),
                             metadata={"sources": sources}))
        sources_of.append(sources)
    by_source: dict[str, list[int]] = {}
    for i, sources in enumerate(sources_of):
        for s in sources:
            by_source.setdefault(s, []).append(i)
    questions = []
    for q in evaluation.questions:
        grade: dict[int, int] = {}
        for t in q.targets:
            if t.relevance > 0:
                for i in by_source.get(t.doc_id, []):
                    grade[i] = max(grade.get(i, 0), t.relevance)
        targets = [{"doc_id": docs[i].id, "relevance": grade[i]} for i in sorted(grade)[:10]]
        questions.append({"id": q.id, "text": q.text, "answerable": q.answerable, "targets": targets,
                          "requests": [{"id": r.id, "text": r.text, "evidence": []} for r in q.requests],
                          "gold_answer": q.gold_answer})
    dest.mkdir(parents=True, exist_ok=True)
    cbytes = (json.dumps(Corpus(documents=docs).model_dump(), ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    ev = {"corpus_digest": sha256_digest(cbytes), "pilot": evaluation.pilot, "questions": questions}
    (dest / "corpus.json").write_bytes(cbytes)
    (dest / "evaluation.json").write_text(json.dumps(ev, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return dest


def scaled_spec(root: Path, n_docs: int) -> LabSpec:
    """The bundled arms pointed at a synthetic dataset of `n_docs` documents written under `root`."""
    import yaml

    name = f"synthetic-{n_docs}"
    write_scaled_dataset(root / "datasets" / name, n_docs)
    arms = yaml.safe_load((PROJECT_ROOT / "arms.yaml").read_text(encoding="utf-8"))
    arms.setdefault("defaults", {})["dataset"] = name
    for over in (arms.get("arms") or {}).values():
        if isinstance(over, dict) and "dataset" in over:
            over["dataset"] = name
    (root / "arms.yaml").write_text(yaml.safe_dump(arms, sort_keys=False), encoding="utf-8")
    return LabSpec(root / "arms.yaml", root / "datasets", PROJECT_ROOT / "prompts", name)




@dataclass
class Prepared:
    """The baseline arm's shared artifacts, built (or found) in one store."""

    lab: Lab
    cfg: Any
    ds: Any
    chunks: Any
    reps: Any
    bm25: Any
    vectors: Any
    qemb: Any
    chunk_docs: dict[str, str]


def prepare(lab: Lab, arm: str = ARM) -> Prepared:
    from rag_ttc_assets.stages import indexes, ingest  # late: polars loads only when this runs

    cfg = lab.arms[arm]
    ds = ingest.bind_dataset(lab.datasets_dir, cfg)
    ch = ingest.build_chunks(lab.store, cfg, ds)
    reps = ingest.build_representations(lab.store, cfg, ds, ch)
    bm = indexes.build_bm25(lab.store, cfg, reps)
    vec = indexes.build_vectors(lab.store, cfg, reps)
    qemb = indexes.build_question_embeddings(lab.store, cfg, ds)
    chunk_docs = {c.chunk_id: c.doc_id for c in ingest.read_chunks(ch)}
    return Prepared(lab, cfg, ds, ch, reps, bm, vec, qemb, chunk_docs)


def materialize(lab: Lab, arms: list[str], assets: tuple[str, ...] | None) -> None:
    """Materialize `assets` (all when None) of each arm through the project's job, ephemeral instance."""
    from dagster import AssetKey, DagsterInstance

    from rag_ttc_assets.definitions import JOB, build_definitions  # late: dagster, polars load only when this runs

    job = build_definitions(lab).resolve_job_def(JOB)
    selection = [AssetKey(a) for a in assets] if assets is not None else None
    with DagsterInstance.ephemeral() as instance:
        for arm in arms:
            job.execute_in_process(run_config=QUIET, partition_key=arm, asset_selection=selection, instance=instance)
