"""`rag-ttc bench`: the product's hot paths against plain references, measured side by side.

Every measurement runs the product path and a reference doing the same work in the same process,
alternating (product first on even rounds, reference first on odd rounds) and repeating R times;
the reported times are medians.  The machine is shared and noisy, so only the RATIO of the two is
compared with a target, never a wall-clock time.

    cost ratio        = product seconds / reference seconds     (lower is better; target "<= x")
    throughput ratio  = reference seconds / product seconds     (higher is better; target ">= x")

Measurements (``--only NAME``, repeatable):

- ``retrieval``: ``stages.retrieval.retrieve`` for every question of the dataset (baseline arm,
  indexes built first) vs a plain loop over the Tantivy searcher and the LanceDB table (same
  query terms, same depth, RRF summed in Python) on the same indexes.  Target cost <= 1.25.
- ``embedding``: ``adapters.embeddings.encode`` over the representation texts (as build_vectors
  calls it) vs a bare ``SentenceTransformer.encode`` on the same model object, same batch size.
  Target throughput >= 0.9.
- ``k_sweep``: the five ``evidence-k`` arms through the Dagster job up to ``admitted_contexts``
  in a fresh store vs one arm the same way in another fresh store.  Target cost <= 1.2.
- ``unused_index``: the ``retrieval-bm25`` arm's index stage (``bm25_index`` and ``vector_index``) through the
  Dagster job from a cold store vs the same arm's ``bm25_index`` alone, the same way (``bench/unused_index.py``):
  the vector index it never reads must cost nothing.  Target cost <= 1.2.
- ``metrics``: ``adapters.trec_eval.evaluate`` (what ``rag-ttc metrics`` and the retrieval_summary asset
  run) over 10,000 seeded synthetic queries vs ``pytrec_eval.RelevanceEvaluator`` called directly, its means
  by ``pytrec_eval.compute_aggregated_measure``, same measures.  Target cost <= 1.1.
- ``dagster_overhead``: every asset and check of one arm through the Dagster job (``arm_job``, in process,
  ephemeral instance), warm caches (answers and verdicts from the provider cache), vs the same asset and check
  bodies called directly in dependency order: the ratio is Dagster's own machinery (run creation, event log,
  data provenance, per-step events), since both sides run the same code of ours.  Target cost <= 1.3.  The
  retrieval graph alone (eight cheap bodies, where the fixed cost shows most) is reported beside it.
- ``memory``: peak resident memory of materializing one full arm (offline generator and judge),
  in a child process so the peak is that arm's alone.
- ``onnx_embedding``: the optional ONNX Runtime backend (``adapters.onnx_embeddings``, fp32 and int8) vs
  the torch ``embeddings.encode`` over the same representation texts, same batch size; with the mean and
  minimum cosine against the torch vectors and recall_10 / ndcg_cut_10 of the ``baseline``,
  ``embedding-onnx`` and ``embedding-onnx-int8`` arms (report only; skipped without the ``onnx`` extra).
- ``report``: headless Chromium rendering the case report of 5,000 synthetic cases (first screen painted) vs a
  plain HTML table of the same rows, same browser (``bench/report.py``).  Target cost <= 2.

The store lives under ``--home`` (default: a temporary folder, removed afterwards), never in the
user's ``.rag_ttc``.  ``--scale N`` replaces the bundled dataset by N synthetic documents
recombined from its paragraphs (see `write_scaled_dataset`).
"""

from __future__ import annotations

import argparse
import gc
import inspect
import json
import logging
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# STAGES["retrieval"]: the retrieval stage of the graph, as `rag-ttc run --stage retrieval` selects it.
from rag_ttc_assets.defs.graph import STAGES  # noqa: E402
from rag_ttc_assets.lab import PROJECT_ROOT, Lab  # noqa: E402

ITEMS = ("retrieval", "embedding", "k_sweep", "unused_index", "metrics", "dagster_overhead", "memory",
         "onnx_embedding", "code_location_import", "report")
DATASET = "pyref"
ARM = "baseline"
K_FAMILY = "evidence-k"
METRIC_QUERIES, METRIC_DOCS, METRIC_SEED = 10_000, 100, 20_251_129
SCALE_SEED = 1729
RESULT_MARK = "RAG_TTC_BENCH_RESULT "


def _log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


# --- the timing harness ------------------------------------------------------------------------

@dataclass
class Target:
    op: str  # "<=" (cost ratio) or ">=" (throughput ratio)
    value: float

    def met(self, ratio: float) -> bool:
        return ratio <= self.value if self.op == "<=" else ratio >= self.value

    def __str__(self) -> str:
        return f"{self.op} {self.value:g}"


Timing = tuple[float, float]  # (wall seconds, CPU seconds of this process, all threads)


class Stopwatch:
    """Wall and CPU time of a block. CPU time is reported beside wall time because on a shared
    machine other processes stretch the wall clock but not this process's CPU time."""

    def __enter__(self) -> Stopwatch:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu

    @property
    def timing(self) -> Timing:
        return self.wall, self.cpu


def _timed(fn: Callable[[], Any]) -> Callable[[], Timing]:
    """A side whose whole call is timed."""

    def run() -> Timing:
        with Stopwatch() as sw:
            fn()
        return sw.timing

    return run


def alternate(name: str, product: Callable[[], Timing], reference: Callable[[], Timing],
              repeat: int) -> tuple[list[Timing], list[Timing]]:
    """Run both sides `repeat` times, alternating which goes first; each side returns its own timing
    (so a side can keep its untimed setup, such as a fresh store, out of the measurement)."""
    p: list[Timing] = []
    r: list[Timing] = []
    for i in range(repeat):
        sides = [("product", product, p), ("reference", reference, r)]
        for label, fn, acc in (sides if i % 2 == 0 else sides[::-1]):
            gc.collect()
            acc.append(fn())
            _log(f"{name}: {label} {acc[-1][0]:.3f}s wall, {acc[-1][1]:.3f}s CPU (round {i + 1}/{repeat})")
    return p, r


def _ratio(kind: str | None, product: float | None, reference: float | None) -> float | None:
    if not product or not reference:
        return None
    return product / reference if kind == "cost" else reference / product if kind == "throughput" else None


def item(name: str, product_runs: list[Timing], reference_runs: list[Timing] | None, kind: str | None,
         target: Target | None, product: str, reference: str | None, **extra) -> dict:
    """One measurement's record: median wall times, their ratio, the target and the verdict (on wall
    time, as specified), and the same ratio of median CPU times beside it."""

    def med(runs, i):
        return statistics.median(t[i] for t in runs) if runs else None

    ps, rs = med(product_runs, 0), med(reference_runs, 0)
    ratio = _ratio(kind, ps, rs)
    pc, rc = med(product_runs, 1), med(reference_runs, 1)
    if ratio is None:
        verdict = "skipped" if reference is None and kind is not None else "report"
    elif target is None:
        verdict = "report"
    else:
        verdict = "meets" if target.met(ratio) else "misses"
    return {"name": name, "product_s": ps, "reference_s": rs, "ratio": ratio, "ratio_kind": kind,
            "product_cpu_s": pc, "reference_cpu_s": rc, "cpu_ratio": _ratio(kind, pc, rc),
            "target": str(target) if target else "report only", "target_op": target.op if target else None,
            "target_value": target.value if target else None, "verdict": verdict,
            "product": product, "reference": reference,
            "product_runs": [t[0] for t in product_runs], "reference_runs": [t[0] for t in reference_runs or []],
            "product_cpu_runs": [t[1] for t in product_runs],
            "reference_cpu_runs": [t[1] for t in reference_runs or []], **extra}


# --- labs, stores and datasets -----------------------------------------------------------------

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
    from rag_ttc_assets.core.dataset import sha256_digest

    corpus = json.loads((source / "corpus.json").read_text(encoding="utf-8"))
    evaluation = json.loads((source / "evaluation.json").read_text(encoding="utf-8"))
    paragraphs = [(d["id"], d.get("title", ""), p) for d in corpus["documents"]
                  for p in d["text"].split("\n\n") if p.strip()]
    rng = random.Random(seed)
    docs, sources_of = [], []
    for i in range(n_docs):
        picked = [paragraphs[rng.randrange(len(paragraphs))] for _ in range(rng.randint(2, 6))]
        sources = list(dict.fromkeys(src for src, _, _ in picked))
        docs.append({"id": f"synth-{i:06d}", "title": picked[0][1], "text": "\n\n".join(p for _, _, p in picked),
                     "metadata": {"sources": sources}})
        sources_of.append(sources)
    by_source: dict[str, list[int]] = {}
    for i, sources in enumerate(sources_of):
        for s in sources:
            by_source.setdefault(s, []).append(i)
    questions = []
    for q in evaluation["questions"]:
        grade: dict[int, int] = {}
        for t in q.get("targets", []):
            if t.get("relevance", 1) > 0:
                for i in by_source.get(t["doc_id"], []):
                    grade[i] = max(grade.get(i, 0), t.get("relevance", 1))
        targets = [{"doc_id": docs[i]["id"], "relevance": grade[i]} for i in sorted(grade)[:10]]
        questions.append({"id": q["id"], "text": q["text"], "answerable": q.get("answerable", True),
                          "targets": targets,
                          "requests": [{"id": r["id"], "text": r["text"], "evidence": []} for r in q["requests"]],
                          "gold_answer": q.get("gold_answer")})
    dest.mkdir(parents=True, exist_ok=True)
    cbytes = (json.dumps({"documents": docs}, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    ev = {"corpus_digest": sha256_digest(cbytes), "pilot": evaluation.get("pilot", []), "questions": questions}
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


def _fresh_home(base: Path, name: str) -> Path:
    home = base / name
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    return home


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
    from rag_ttc_assets.stages import indexes, ingest

    cfg = lab.arms[arm]
    ds = ingest.bind_dataset(lab, cfg)
    ch = ingest.build_chunks(lab, cfg, ds)
    reps = ingest.build_representations(lab, cfg, ds, ch)
    bm = indexes.build_bm25(lab, cfg, ds, reps)
    vec = indexes.build_vectors(lab, cfg, ds, reps)
    qemb = indexes.build_question_embeddings(lab, cfg, ds)
    chunk_docs = {c.chunk_id: c.doc_id for c in ingest.read_chunks(ch)}
    return Prepared(lab, cfg, ds, ch, reps, bm, vec, qemb, chunk_docs)


# --- 1. retrieval ------------------------------------------------------------------------------

def reference_retrieve(p: Prepared) -> dict[str, list[str]]:
    """The same retrieval as `stages.retrieval.retrieve` for an RRF arm, written as a plain loop over
    the Tantivy searcher and the LanceDB table; returns query_id -> ranked chunk IDs."""
    import numpy as np
    import tantivy

    from rag_ttc_assets.adapters import bm25 as bm25_adapter
    from rag_ttc_assets.adapters import vectors as vec_adapter
    from rag_ttc_assets.core.artifacts import SOURCE_DEPTH
    from rag_ttc_assets.stages.retrieval import arm_questions

    cfg = p.cfg
    index = tantivy.Index.open(str(p.bm25.path / "tantivy"))
    index.register_tokenizer(bm25_adapter.ANALYZER, bm25_adapter._analyzer())
    index.reload()
    searcher, analyzer, schema = index.searcher(), bm25_adapter._analyzer(), index.schema
    table = vec_adapter._lancedb().connect(str(p.vectors.path / "lancedb")).open_table(vec_adapter.TABLE)
    qids = (p.qemb.path / "question_ids.txt").read_text(encoding="utf-8").split("\n")[:-1]
    qvecs = dict(zip(qids, np.load(p.qemb.path / "questions.npy")))
    depth = max(SOURCE_DEPTH, cfg.retrieve_k)
    out: dict[str, list[str]] = {}
    docs: dict[str, list[str]] = {}
    for q in arm_questions(cfg, p.ds):
        terms = sorted(set(analyzer.analyze(q.text)))
        lexical: list[tuple[str, float]] = []
        if terms:
            query = tantivy.Query.boolean_query(
                [(tantivy.Occur.Should, tantivy.Query.term_query(schema, bm25_adapter.FIELD_BODY, t)) for t in terms])
            hits = searcher.search(query, depth + 10).hits
            lexical = sorted(((searcher.doc(a)[bm25_adapter.FIELD_ID][0], s) for s, a in hits),
                             key=lambda x: (-x[1], x[0]))[:depth]
        res = table.search(np.asarray(qvecs[q.id], dtype=np.float32)).distance_type("cosine") \
            .limit(depth + 10).to_arrow()
        dense = sorted(zip(res.column("chunk_id").to_pylist(), (1.0 - d for d in res.column("_distance").to_pylist())),
                       key=lambda x: (-x[1], x[0]))[:depth]
        fused: dict[str, float] = {}
        for ranking in (lexical, dense):  # sources in sorted order: bm25, vector
            for rank, (cid, _) in enumerate(ranking, start=1):
                fused[cid] = fused.get(cid, 0.0) + 1.0 / (cfg.rrf_k + rank)
        ranked = sorted(fused.items(), key=lambda x: (-x[1], x[0]))[: cfg.retrieve_k]
        out[q.id] = [c for c, _ in ranked]
        docs[q.id] = [p.chunk_docs[c] for c in out[q.id]]  # the ranked doc IDs, as the product has them
    return out


def bench_retrieval(spec: LabSpec, base: Path, repeat: int) -> dict:
    from rag_ttc_assets.stages.retrieval import retrieve

    lab = spec.lab(base / "shared")
    _log("retrieval: building (or finding) the baseline indexes")
    p = prepare(lab)
    if p.cfg.retrieval != "rrf":
        raise RuntimeError(f"arm {ARM!r} must use rrf retrieval for this measurement")
    box: dict[str, Any] = {}

    def product():
        box["product"] = retrieve(p.cfg, p.ds, p.bm25, p.vectors, p.qemb, p.chunk_docs)

    def reference():
        box["reference"] = reference_retrieve(p)

    product(), reference()  # warm-up: imports, page cache, LanceDB's first connection
    prod, ref = alternate("retrieval", _timed(product), _timed(reference), repeat)
    got = dict(zip(box["product"]["query_id"].to_list(), box["product"]["ranked_chunk_ids"].to_list()))
    identical = got == box["reference"]
    notes = [] if identical else ["product and reference ranked lists differ"]
    return item("retrieval", prod, ref, "cost", Target("<=", 1.25),
                "stages.retrieval.retrieve (all questions, baseline arm)",
                "plain Tantivy + LanceDB loop with RRF summed in Python",
                questions=len(got), identical_ranked_lists=identical, notes=notes,
                detail=f"{len(got)} questions; ranked lists {'identical' if identical else 'DIFFER'}")


# --- 2. embedding ------------------------------------------------------------------------------

def bench_embedding(spec: LabSpec, base: Path, repeat: int) -> dict:
    import numpy as np

    from rag_ttc_assets.adapters import embeddings
    from rag_ttc_assets.stages import ingest

    lab = spec.lab(base / "shared")
    cfg = lab.arms[ARM]
    ds = ingest.bind_dataset(lab, cfg)
    reps = ingest.build_representations(lab, cfg, ds, ingest.build_chunks(lab, cfg, ds))
    texts = ingest.read_representations(reps)["text"].to_list()
    model = embeddings._load(cfg.embedding_model)  # the one model object both sides use
    # encode's own default batch size: build_vectors calls it without one.
    batch = inspect.signature(embeddings.encode).parameters["batch_size"].default
    box: dict[str, Any] = {}

    def product():
        box["product"] = embeddings.encode(texts, cfg.embedding_model)

    def reference():
        box["reference"] = model.encode(texts, batch_size=batch, normalize_embeddings=True, show_progress_bar=False)

    model.encode(texts[:batch], batch_size=batch, normalize_embeddings=True, show_progress_bar=False)  # warm-up
    prod, ref = alternate("embedding", _timed(product), _timed(reference), repeat)
    diff = float(np.max(np.abs(box["product"] - np.asarray(box["reference"], dtype=np.float32))))
    return item("embedding", prod, ref, "throughput", Target(">=", 0.9),
                f"adapters.embeddings.encode ({len(texts)} representation texts)",
                f"SentenceTransformer.encode (batch_size={batch}, normalized, same model object)",
                texts=len(texts), batch_size=batch, max_abs_diff=diff,
                detail=f"{len(texts)} texts, batch {batch}; max |diff| {diff:.1e}")


# --- 3. k_sweep and 5. dagster_overhead: the Dagster job -------------------------------------

def materialize(lab: Lab, arms: list[str], assets: tuple[str, ...] | None) -> None:
    """Materialize `assets` (all when None) of each arm through the project's job, ephemeral instance."""
    from dagster import AssetKey, DagsterInstance

    from rag_ttc_assets.definitions import JOB, build_definitions

    job = build_definitions(lab).resolve_job_def(JOB)
    selection = [AssetKey(a) for a in assets] if assets is not None else None
    with DagsterInstance.ephemeral() as instance:
        for arm in arms:
            job.execute_in_process(run_config=QUIET, partition_key=arm, asset_selection=selection, instance=instance)


def bench_k_sweep(spec: LabSpec, base: Path, repeat: int) -> dict:
    from dagster import AssetKey, DagsterInstance

    from rag_ttc_assets.adapters import embeddings
    from rag_ttc_assets.definitions import JOB, build_definitions

    family = spec.lab(base / "shared").arms.family(K_FAMILY)
    one = family[0]
    embeddings._load(spec.lab(base / "shared").arms[one].embedding_model)  # the model load is no store's cost
    counter = {"n": 0}

    def side(arms: list[str]) -> Callable[[], Timing]:
        def run() -> Timing:
            counter["n"] += 1
            home = _fresh_home(base / "k_sweep", f"store-{counter['n']}")
            lab = spec.lab(home)
            job = build_definitions(lab).resolve_job_def(JOB)
            selection = [AssetKey(a) for a in STAGES["retrieval"]]
            with DagsterInstance.ephemeral() as instance, Stopwatch() as sw:
                for arm in arms:
                    job.execute_in_process(run_config=QUIET, partition_key=arm, asset_selection=selection,
                                           instance=instance)
            shutil.rmtree(home, ignore_errors=True)
            return sw.timing

        return run

    # Warm-up in the shared store: Dagster's first run in a process pays imports the others do not.
    materialize(spec.lab(base / "shared"), [one], STAGES["retrieval"])
    prod, ref = alternate("k_sweep", side(family), side([one]), repeat)
    return item("k_sweep", prod, ref, "cost", Target("<=", 1.2),
                f"{len(family)} arms ({', '.join(family)}) to admitted_contexts, fresh store",
                f"1 arm ({one}) to admitted_contexts, fresh store",
                arms=family, detail=f"{len(family)} arms vs 1; ideal ratio ~1 (shared artifacts built once)")


class DirectContext:
    """What the asset and check bodies read from their Dagster context (the arm, a run id, the status of
    earlier runs), supplied without Dagster: the reference side of `dagster_overhead`."""

    def __init__(self, arm: str, run_id: str):
        self.partition_key = arm
        self.run = SimpleNamespace(run_id=run_id)
        self.run_id = run_id
        self.log = logging.getLogger("rag_ttc_assets.bench.direct")  # step progress, when a body reports any
        # No Dagster instance: earlier runs are unknown, exactly as to the product's fresh ephemeral instance.
        self.instance = SimpleNamespace(get_run_by_id=lambda _run_id: None)


def graph_steps(assets: tuple[str, ...] | None) -> list[tuple[str, Callable]]:
    """The per-arm asset bodies (as registered, fingerprint wrapper included) in dependency order, each
    followed by the bodies of its checks; only `assets` and their checks when given."""
    from rag_ttc_assets.defs import graph

    specs = graph.specs()
    steps: list[tuple[str, Callable]] = []
    for name in graph.order(assets):
        steps.append((name, specs[name].fn))
        steps += [(f"{name}:{c.fn.__name__}", c.fn) for c in graph.checks() if c.asset == name]
    return steps


def lab_resource(lab: Lab):
    """The lab resource the job's steps receive (built with the definitions, as `arm_job` gets it)."""
    from rag_ttc_assets.definitions import build_definitions

    return build_definitions(lab).resources["lab"]


def direct_arm_graph(lab: Lab, arm: str, assets: tuple[str, ...] | None = None, resource=None,
                     steps: list[tuple[str, Callable]] | None = None) -> dict[str, bool]:
    """Every step of `arm_job` for `arm` (or the `assets` subgraph) as plain calls of the same asset and check
    bodies, with the same lab resource, in dependency order; returns each check's verdict.

    The bench passes `resource` and `steps` built beforehand, as the job side resolves its job beforehand:
    neither side's timing includes building definitions."""
    resource = resource if resource is not None else lab_resource(lab)
    ctx = DirectContext(arm, uuid.uuid4().hex)
    checks = {}
    for name, fn in steps if steps is not None else graph_steps(assets):
        result = fn(ctx, resource)
        if ":" in name:
            checks[name] = bool(result.passed)
    return checks


NOOP_LAYOUTS = ("as_built", "checks_in_assets", "one_step")


def noop_graph_job(assets: tuple[str, ...] | None, layout: str = "as_built"):
    """A job of the same shape as `arm_job` (same asset names, dependencies, partitions, code versions and checks)
    whose bodies do nothing but return a data version: what Dagster costs with no work of ours at all.

    `layout` tries the two restructurings that would cut Dagster's steps, to show what each would buy:
    ``as_built`` (one step per asset, one per check: `arm_job` as it is), ``checks_in_assets`` (each check
    evaluated inside its asset's step via `check_specs`), ``one_step`` (the whole graph as one `multi_asset`).
    """
    from dagster import (AssetCheckResult, AssetCheckSpec, AssetSelection, AssetSpec, DataVersion, Definitions,
                         MaterializeResult, StaticPartitionsDefinition, asset, asset_check, define_asset_job,
                         multi_asset)

    from rag_ttc_assets.defs import graph

    if layout not in NOOP_LAYOUTS:
        raise ValueError(f"layout {layout!r}: one of {', '.join(NOOP_LAYOUTS)}")
    partitions = StaticPartitionsDefinition([ARM])
    order = graph.order(assets)
    specs = [graph.specs()[name] for name in order]
    names = set(order)
    checks_of = {c.asset: c.fn.__name__ for c in graph.checks() if c.asset in names}
    inside = layout != "as_built"

    def result(name: str, **kw) -> MaterializeResult:
        return MaterializeResult(metadata={"step": name}, data_version=DataVersion(name),
                                 check_results=[AssetCheckResult(passed=True, asset_key=name, check_name=checks_of[name])]
                                 if inside and name in checks_of else [],
                                 **kw)

    def body(name):
        def noop(context):
            return result(name)
        return noop

    def check_body(context):
        return AssetCheckResult(passed=True)

    def own_checks(name):
        return [AssetCheckSpec(checks_of[name], asset=name)] if inside and name in checks_of else []

    if layout == "one_step":
        def graph(context):
            for s in specs:
                yield result(s.fn.__name__, asset_key=s.fn.__name__)

        defs_assets = [multi_asset(
            name="noop_graph", specs=[AssetSpec(s.fn.__name__, deps=[d for d in s.deps if d in names],
                                                code_version=s.code_version, partitions_def=partitions)
                                      for s in specs],
            check_specs=[c for s in specs for c in own_checks(s.fn.__name__)])(graph)]
    else:
        defs_assets = [asset(name=s.fn.__name__, partitions_def=partitions, deps=[d for d in s.deps if d in names],
                             code_version=s.code_version, check_specs=own_checks(s.fn.__name__))(body(s.fn.__name__))
                       for s in specs]
    checks = [] if inside else [asset_check(asset=c.asset, name=c.fn.__name__, partitions_def=partitions)(check_body)
                                for c in graph.checks() if c.asset in names]
    selection = AssetSelection.assets(*defs_assets)
    job = define_asset_job("noop_job", selection=selection | AssetSelection.checks(*checks) if checks else selection)
    return Definitions(assets=defs_assets, asset_checks=checks, jobs=[job]).resolve_job_def("noop_job")


def _job_checks(result) -> dict[str, bool]:
    return {f"{e.asset_key.to_user_string()}:{e.check_name}": e.passed
            for e in result.get_asset_check_evaluations()}


def bench_dagster_overhead(spec: LabSpec, base: Path, repeat: int) -> dict:
    """The whole graph of one arm through `arm_job` with warm caches vs the same bodies called directly;
    then the retrieval graph alone (report only: the cheapest bodies, so the fixed cost shows most)."""
    from dagster import AssetKey, DagsterInstance

    from rag_ttc_assets.definitions import JOB, build_definitions

    lab = spec.lab(base / "shared")
    _log("dagster_overhead: warming the shared store (every artifact of the arm built, answers and judge cached)")
    materialize(lab, [ARM], None)
    job = build_definitions(lab).resolve_job_def(JOB)
    resource = lab_resource(lab)
    out: dict[str, Any] = {}
    for label, assets in (("whole graph", None), ("retrieval graph", STAGES["retrieval"])):
        selection = [AssetKey(a) for a in assets] if assets is not None else None
        box: dict[str, Any] = {}

        def product() -> Timing:
            with DagsterInstance.ephemeral() as instance:
                with Stopwatch() as sw:
                    result = job.execute_in_process(run_config=QUIET, partition_key=ARM, asset_selection=selection,
                                                    instance=instance)
            box["product"] = (result.success, _job_checks(result),
                              len([e for e in result.all_events if e.event_type_value == "STEP_SUCCESS"]))
            return sw.timing

        steps = graph_steps(assets)

        def reference() -> Timing:
            with Stopwatch() as sw:
                box["reference"] = direct_arm_graph(lab, ARM, resource=resource, steps=steps)
            return sw.timing

        direct_arm_graph(lab, ARM, assets)  # warm-up of the direct path (first calls pay lazy imports)
        out[label] = (*alternate(f"dagster_overhead ({label})", product, reference, repeat), box,
                      len(graph_steps(assets)))
    (prod, ref, box, n_steps), (rprod, rref, _, r_steps) = out["whole graph"], out["retrieval graph"]
    ok, job_checks, job_steps = box["product"]
    retrieval = item("dagster_overhead_retrieval", rprod, rref, "cost", None, "", "")
    ref_s = statistics.median(t[0] for t in ref)
    floors = {layout: noop_floor(None, layout, repeat) for layout in NOOP_LAYOUTS}
    # The ratio these bodies would have if Dagster cost no more than its no-op floor, per layout.
    reachable = {layout: (ref_s + f) / ref_s for layout, f in floors.items()}
    floor_s, best = floors["as_built"], reachable["as_built"]
    return item("dagster_overhead", prod, ref, "cost", Target("<=", 1.3),
                f"arm_job, every asset and check of {ARM!r} ({n_steps} steps), warm caches, ephemeral instance",
                "the same asset and check bodies called directly in dependency order, same store",
                steps=n_steps, job_steps_succeeded=job_steps, job_success=ok, job_checks=job_checks,
                direct_checks=box["reference"], checks_agree=job_checks == box["reference"],
                noop_floor_s=floors, noop_floor_ratio=reachable,
                retrieval_graph={k: retrieval[k] for k in ("product_s", "reference_s", "ratio", "cpu_ratio",
                                                           "product_runs", "reference_runs")}
                | {"steps": r_steps, "noop_floor_s": noop_floor(STAGES["retrieval"], "as_built", repeat)},
                notes=["noop_floor_s: the same graph shape (names, dependencies, partitions, checks, data versions) "
                       "with bodies that do nothing, through the same executor, in three layouts: as built (a step "
                       "per asset and per check), checks inside their assets' steps, the whole graph as one "
                       "multi_asset step; noop_floor_ratio = (reference + floor) / reference, the ratio these bodies "
                       "would reach if Dagster cost no more than that floor"],
                detail=(f"{n_steps} steps, warm caches; Dagster {_per_step(prod, ref, n_steps)} ms/step, its no-op "
                        f"floor {floor_s / n_steps * 1000:.0f} ms/step (best reachable x{best:.3f}; checks in assets "
                        f"x{reachable['checks_in_assets']:.3f}; one step x{reachable['one_step']:.3f}); retrieval "
                        f"graph alone ({r_steps} steps) x{_fmt(retrieval['ratio'])}"))


def noop_floor(assets: tuple[str, ...] | None, layout: str, repeat: int) -> float:
    """Median wall seconds of the no-op job of `layout` (after one untimed warm-up run)."""
    from dagster import DagsterInstance

    job = noop_graph_job(assets, layout)
    times = []
    for i in range(repeat + 1):
        with DagsterInstance.ephemeral() as instance:
            with Stopwatch() as sw:
                ok = job.execute_in_process(run_config=QUIET, partition_key=ARM, instance=instance).success
        if not ok:
            raise RuntimeError(f"the no-op {layout} job failed")
        if i:
            times.append(sw.wall)
    _log(f"dagster_overhead: no-op floor ({layout}, {'whole' if assets is None else 'retrieval'} graph) "
         f"{statistics.median(times):.3f}s")
    return statistics.median(times)


def _per_step(prod: list[Timing], ref: list[Timing], steps: int) -> str:
    p, r = statistics.median(t[0] for t in prod), statistics.median(t[0] for t in ref)
    return f"{(p - r) / steps * 1000:.0f}"


# --- 4. metrics --------------------------------------------------------------------------------

def synthetic_metrics_case(n_queries: int = METRIC_QUERIES, n_docs: int = METRIC_DOCS, seed: int = METRIC_SEED):
    """Seeded qrels (graded 0-3, some judged documents not retrieved, every query with a relevant document,
    so the lab's undefined-query rule and trec_eval evaluate the same queries) and a run of `n_docs` per query
    (coarse scores on a third of the queries, so the docno tie-break matters)."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(n_queries):
        qid = f"q{q:05d}"
        pool = [f"d{n}" for n in rng.sample(range(5000), n_docs + 20)]
        coarse = rng.random() < 1 / 3
        run[qid] = {d: (rng.randint(0, 9) / 9 if coarse else rng.random()) for d in pool[:n_docs]}
        judged = rng.sample(pool, rng.randint(5, 30))
        qrels[qid] = {d: rng.choice((0, 0, 1, 1, 2, 3)) for d in judged}
        qrels[qid][judged[0]] = rng.choice((1, 2, 3))
    return qrels, run


def bench_metrics(spec: LabSpec, base: Path, repeat: int) -> dict:
    import pytrec_eval

    from rag_ttc_assets.adapters.trec_eval import evaluate
    from rag_ttc_assets.core.metrics import DEFAULT_MEASURES

    qrels, run = synthetic_metrics_case()
    box: dict[str, Any] = {}

    def reference():
        # pytrec_eval called directly, its means taken as its own docs show (compute_aggregated_measure).
        per_query = pytrec_eval.RelevanceEvaluator(qrels, set(DEFAULT_MEASURES)).evaluate(run)
        names = next(iter(per_query.values()))
        box["reference"] = {m: pytrec_eval.compute_aggregated_measure(m, [v[m] for v in per_query.values()])
                            for m in names}

    prod, ref = alternate("metrics", _timed(lambda: box.__setitem__("product", evaluate(qrels, run))),
                          _timed(reference), repeat)
    ours, theirs = box["product"].measures, box["reference"]
    if set(ours) != set(theirs):
        raise RuntimeError(f"metrics: the product reports {sorted(ours)}, pytrec_eval {sorted(theirs)}")
    diff = max(abs(theirs[m] - ours[m]) for m in theirs)
    return item("metrics", prod, ref, "cost", Target("<=", 1.1),
                f"adapters.trec_eval.evaluate ({METRIC_QUERIES} queries x {METRIC_DOCS} docs, graded qrels)",
                "pytrec_eval.RelevanceEvaluator + compute_aggregated_measure (same data, same measures)",
                queries=METRIC_QUERIES, evaluated=box["product"].evaluated, max_mean_abs_diff=diff,
                detail=f"{box['product'].evaluated} queries; max |mean diff| vs pytrec_eval {diff:.1e}")


# --- 6. memory ---------------------------------------------------------------------------------

def _rss_mb() -> float | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return None


def _maxrss_mb() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 2**10  # bytes on macOS, KiB on Linux


# Dagster's console logger at CRITICAL, as `rag-ttc run` runs it (its event log keeps every event): the DEBUG
# lines of a bench's in-process jobs would bury its table, and cost what no user's run pays.
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def run_child(call: str, args: list, label: str, stream_stderr: bool = False) -> dict:
    """Run `call(*args)` (a function of `rag_ttc_assets.bench` or `.growth`; arguments and result JSON values)
    in a fresh Python process, so its peak memory and imports are its own; return its result. The child's stderr
    is shown as it runs (`stream_stderr`) or quoted in the error when it fails."""
    code = ("import json, sys; from rag_ttc_assets import bench; from rag_ttc_assets.bench import growth; "
            f"print({RESULT_MARK!r} + json.dumps({call}(*map(json.loads, sys.argv[1:]))))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", code, *map(json.dumps, args)], stdout=subprocess.PIPE,
                          stderr=None if stream_stderr else subprocess.PIPE, text=True, env=env, cwd=str(PROJECT_ROOT))
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_MARK)]
    if proc.returncode != 0 or not lines:
        where = "see its stderr above" if stream_stderr else f"its stderr:\n{(proc.stderr or '')[-3000:]}"
        raise RuntimeError(f"{label} child failed (exit {proc.returncode}); {where}")
    return json.loads(lines[-1][len(RESULT_MARK):])


def memory_child(spec_json: str, home: str, arm: str = ARM) -> dict:
    """In a fresh process: materialize every asset of `arm` in a fresh store; report the memory peak."""
    lab = LabSpec.from_json(spec_json).lab(Path(home))
    from dagster import DagsterInstance

    from rag_ttc_assets.definitions import JOB, build_definitions

    job = build_definitions(lab).resolve_job_def(JOB)
    before, peak_before = _rss_mb(), _maxrss_mb()
    with DagsterInstance.ephemeral() as instance, Stopwatch() as sw:
        job.execute_in_process(run_config=QUIET, partition_key=arm, instance=instance)
    peak, after = _maxrss_mb(), _rss_mb()
    return {"seconds": sw.wall, "cpu_seconds": sw.cpu, "rss_before_mb": before, "peak_before_mb": peak_before, "ru_maxrss_mb": peak,
            "rss_after_mb": after, "rss_delta_mb": (peak - before) if before is not None else None}


def bench_memory(spec: LabSpec, base: Path, repeat: int) -> dict:
    home = _fresh_home(base, "memory")
    _log(f"memory: materializing every asset of {ARM!r} in a child process")
    try:
        m = run_child("bench.memory_child", [json.dumps(spec.as_json()), str(home)], "memory")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return item("memory", [(m["seconds"], m["cpu_seconds"])], None, None, None,
                f"every asset of {ARM!r} (answers and judge offline), fresh store, child process", None,
                **m, notes=["measured once, not repeated: a peak is not noisy the way a time is"],
                detail=f"peak RSS {m['ru_maxrss_mb']:.0f} MB; delta {m['rss_delta_mb']:.0f} MB "
                       f"over {m['rss_before_mb']:.0f} MB after imports")


# --- 7. onnx_embedding -------------------------------------------------------------------------

ONNX_ARMS = ("embedding-onnx", "embedding-onnx-int8")


def bench_onnx_embedding(spec: LabSpec, base: Path, repeat: int) -> dict:
    """ONNX Runtime fp32 and int8 throughput against the torch encode (same texts, same batch size), rotating
    which of the three goes first; their cosine agreement; and the retrieval metrics of the three arms."""
    import numpy as np

    from rag_ttc_assets.adapters import embeddings
    from rag_ttc_assets.adapters import onnx_embeddings as oe
    from rag_ttc_assets.stages import ingest
    from rag_ttc_assets.stages.retrieval import arm_questions, retrieval_metrics, retrieve

    lab = spec.lab(base / "shared")
    cfg = lab.arms[ARM]
    try:
        oe._require(oe.ONNX_FP32)
    except oe.OnnxBackendUnavailable as e:
        return item("onnx_embedding", [], None, "throughput", None, "adapters.onnx_embeddings.encode", None,
                    notes=[str(e)], detail="skipped: the onnx extra is not installed")
    ds = ingest.bind_dataset(lab, cfg)
    reps = ingest.build_representations(lab, cfg, ds, ingest.build_chunks(lab, cfg, ds))
    texts = ingest.read_representations(reps)["text"].to_list()
    batch = inspect.signature(embeddings.encode).parameters["batch_size"].default
    built = {}
    for model in oe.MODELS:  # export (or find) first: a one-time cost, reported, not timed as throughput
        with Stopwatch() as sw:
            built[model] = oe.ensure_model(model, lab.store)
        _log(f"onnx_embedding: {model} {'found' if built[model].cache_hit else 'built'} in {sw.wall:.1f}s")
    encoders = {m: oe.load(m, lab.store) for m in oe.MODELS}
    box: dict[str, Any] = {}
    sides: list[tuple[str, Callable[[], Any]]] = [
        ("torch", lambda: embeddings.encode(texts, cfg.embedding_model, batch_size=batch)),
        (oe.ONNX_FP32, lambda: encoders[oe.ONNX_FP32].encode(texts, batch_size=batch)),
        (oe.ONNX_INT8, lambda: encoders[oe.ONNX_INT8].encode(texts, batch_size=batch)),
    ]
    embeddings.encode(texts[:batch], cfg.embedding_model, batch_size=batch)  # warm-up: model load, thread pools
    for m in oe.MODELS:
        encoders[m].encode(texts[:batch], batch_size=batch)
    runs: dict[str, list[Timing]] = {name: [] for name, _ in sides}
    for i in range(repeat):
        for name, fn in sides[i % 3:] + sides[:i % 3]:
            gc.collect()
            with Stopwatch() as sw:
                box[name] = fn()
            runs[name].append(sw.timing)
            _log(f"onnx_embedding: {name} {sw.wall:.3f}s wall, {sw.cpu:.3f}s CPU (round {i + 1}/{repeat})")
    ref = np.asarray(box["torch"], dtype=np.float32)
    cosine = {}
    for m in oe.MODELS:
        c = np.sum(box[m] * ref, axis=1)
        cosine[m] = {"mean": float(c.mean()), "min": float(c.min())}
    metrics_by_arm, ranked = {}, {}
    for arm in (ARM, *ONNX_ARMS):  # the stages export and read the ONNX models in this lab's store
        p = prepare(lab, arm)
        rows = retrieve(p.cfg, p.ds, p.bm25, p.vectors, p.qemb, p.chunk_docs)
        summary = retrieval_metrics(arm_questions(p.cfg, p.ds), rows)["summary"]
        metrics_by_arm[arm] = {k: summary[k] for k in ("recall_10", "ndcg_cut_10")}
        ranked[arm] = rows["ranked_chunk_ids"].to_list()
    same_lists = {arm: sum(a == b for a, b in zip(ranked[ARM], ranked[arm])) / max(len(ranked[ARM]), 1)
                  for arm in ONNX_ARMS}

    def med(name, i):
        return statistics.median(t[i] for t in runs[name])

    int8_ratio = _ratio("throughput", med(oe.ONNX_INT8, 0), med("torch", 0))
    int8_cpu_ratio = _ratio("throughput", med(oe.ONNX_INT8, 1), med("torch", 1))
    fp32_ratio = _ratio("throughput", med(oe.ONNX_FP32, 0), med("torch", 0))
    diff = {arm: {k: metrics_by_arm[arm][k] - metrics_by_arm[ARM][k] for k in ("recall_10", "ndcg_cut_10")}
            for arm in ONNX_ARMS}
    return item("onnx_embedding", runs[oe.ONNX_FP32], runs["torch"], "throughput", None,
                f"ONNX Runtime fp32 ({len(texts)} representation texts, batch {batch})",
                "adapters.embeddings.encode (torch, same texts and batch size)",
                texts=len(texts), batch_size=batch,
                int8_s=med(oe.ONNX_INT8, 0), int8_ratio=int8_ratio, int8_cpu_ratio=int8_cpu_ratio,
                int8_runs=[t[0] for t in runs[oe.ONNX_INT8]], int8_cpu_runs=[t[1] for t in runs[oe.ONNX_INT8]],
                export={m: {"cache_hit": b.cache_hit, **b.manifest["info"]} for m, b in built.items()},
                cosine=cosine, retrieval=metrics_by_arm, retrieval_diff=diff, identical_ranked_lists=same_lists,
                detail=(f"fp32 x{_fmt(fp32_ratio)}, int8 x{_fmt(int8_ratio)} (cpu x{_fmt(int8_cpu_ratio)}); cosine "
                        f"fp32 {cosine[oe.ONNX_FP32]['mean']:.4f}/{cosine[oe.ONNX_FP32]['min']:.4f}, int8 "
                        f"{cosine[oe.ONNX_INT8]['mean']:.4f}/{cosine[oe.ONNX_INT8]['min']:.4f} (mean/min); "
                        + "; ".join(f"{arm} recall_10 {diff[arm]['recall_10']:+.4f} ndcg_cut_10 "
                                    f"{diff[arm]['ndcg_cut_10']:+.4f}" for arm in ONNX_ARMS)))


# --- 8. code location import --------------------------------------------------------------------

def _import_in_fresh_process(module: str, spec: LabSpec, home: Path) -> Timing:
    """Wall and CPU time of `python -c "import <module>"` in a fresh process (children's CPU included)."""
    env = {**os.environ, "RAG_TTC_ARMS": str(spec.arms_file), "RAG_TTC_DATASETS": str(spec.datasets_dir),
           "RAG_TTC_PROMPTS": str(spec.prompts_dir), "RAG_TTC_HOME": str(home),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, env=env,
                          cwd=str(PROJECT_ROOT))
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"import {module} failed in a fresh process: {proc.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench_code_location_import(spec: LabSpec, base: Path, repeat: int) -> dict:
    """What Dagster's multiprocess executor pays per step and `dagster dev` per reload: importing the code location
    (`rag_ttc_assets.definitions`, which loads the arms file and builds the definitions) against `import dagster`
    alone, each in a fresh process."""
    home = _fresh_home(base, "code-location-import")
    prod, ref = alternate("code_location_import",
                          lambda: _import_in_fresh_process("rag_ttc_assets.definitions", spec, home),
                          lambda: _import_in_fresh_process("dagster", spec, home), repeat)
    return item("code_location_import", prod, ref, "cost", Target("<=", 1.5),
                "import rag_ttc_assets.definitions (fresh process)", "import dagster (fresh process)",
                detail="litellm, torch, lancedb and tantivy are imported where they are called")


def bench_report(spec: LabSpec, base: Path, repeat: int) -> dict:
    from rag_ttc_assets.bench.report import bench_report as run  # its body: bench/report.py

    return run(spec, base, repeat)


def bench_unused_index(spec: LabSpec, base: Path, repeat: int) -> dict:
    from rag_ttc_assets.bench.unused_index import bench_unused_index as run  # its body: bench/unused_index.py

    return run(spec, base, repeat)


MEASUREMENTS: dict[str, Callable[[LabSpec, Path, int], dict]] = {
    "retrieval": bench_retrieval, "embedding": bench_embedding, "k_sweep": bench_k_sweep,
    "unused_index": bench_unused_index, "metrics": bench_metrics, "dagster_overhead": bench_dagster_overhead, "memory": bench_memory,
    "onnx_embedding": bench_onnx_embedding, "code_location_import": bench_code_location_import,
    "report": bench_report,
}


# --- running and printing ----------------------------------------------------------------------

def run_bench(only: list[str] | None = None, repeat: int = 3, home: str | Path | None = None,
              scale: int | None = None) -> dict:
    """Run the selected measurements (all by default, in the documented order); return the report."""
    names = list(dict.fromkeys(only)) if only else list(ITEMS)
    unknown = [n for n in names if n not in MEASUREMENTS]
    if unknown:
        raise ValueError(f"unknown measurement(s) {', '.join(unknown)}; known: {', '.join(ITEMS)}")
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    names = [n for n in ITEMS if n in names]
    owned = home is None
    base = Path(tempfile.mkdtemp(prefix="rag-ttc-bench-")) if owned else Path(home).expanduser().resolve()
    base.mkdir(parents=True, exist_ok=True)
    try:
        spec = scaled_spec(base / "scaled", scale) if scale else bundled_spec()
        items = {}
        for name in names:
            _log(f"{name}: start")
            items[name] = MEASUREMENTS[name](spec, base, repeat)
        return {"dataset": spec.dataset, "scale": scale, "repeat": repeat, "home": None if owned else str(base),
                "python": sys.version.split()[0], "cpus": os.cpu_count(), "items": items}
    finally:
        if owned:
            shutil.rmtree(base, ignore_errors=True)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}"
    return "-" if v is None else str(v)


def format_table(report: dict) -> str:
    cols = ["name", "product_s", "reference_s", "ratio", "kind", "target", "verdict", "cpu_ratio", "detail"]
    rows = [[i["name"], i["product_s"], i["reference_s"], i["ratio"], i["ratio_kind"], i["target"], i["verdict"],
             i["cpu_ratio"], i.get("detail", "")] for i in report["items"].values()]
    cells = [cols] + [[_fmt(v) for v in r] for r in rows]
    widths = [max(len(r[c]) for r in cells) for c in range(len(cols))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    head = (f"dataset {report['dataset']}" + (f" (synthetic, {report['scale']} documents)" if report["scale"] else "")
            + f"; repeat {report['repeat']} (medians); {report['cpus']} CPUs")
    notes = [f"{i['name']}: {n}" for i in report["items"].values() for n in i.get("notes", [])]
    return "\n".join([head, *lines, *(["", *notes] if notes else []),
                      "", "cost ratio = product / reference seconds; throughput ratio = reference / product seconds;",
                      "the verdict is on wall time; cpu_ratio is the same ratio of this process's CPU seconds, "
                      "which other processes on a shared machine disturb less"])


def cmd_bench(args) -> int:
    if getattr(args, "growth", None):
        from rag_ttc_assets.bench import growth

        return growth.cmd_growth(args)
    if "scale" in (args.only or []):  # its own generated corpus and table: bench/scale.py
        from rag_ttc_assets.bench import scale

        return scale.cmd_scale(args)
    report = run_bench(only=args.only, repeat=args.repeat, home=args.home, scale=args.scale)
    print(json.dumps(report, indent=2, default=str) if args.json else format_table(report))
    return 0


def _positive(text: str) -> int:
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return v


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `bench` subcommand to an argparse subparsers object (as `rag-ttc bench`)."""
    s = subparsers.add_parser("bench", help="measure product paths against plain references (ratios)",
                              description="Run product code paths beside plain references in one process, "
                                          "alternating and repeating, and report median times, their ratio, "
                                          "the target and a verdict. Measurements: " + ", ".join(ITEMS) + ".")
    s.add_argument("--json", action="store_true")
    s.add_argument("--only", action="append", choices=[*ITEMS, "scale"], metavar="NAME",
                   help="run only this measurement (repeatable): " + ", ".join(ITEMS)
                   + "; or scale alone, with --chunks N (bench/scale.py)")
    s.add_argument("--scale", type=_positive, metavar="N",
                   help="use a synthetic corpus of N documents recombined from the bundled paragraphs")
    s.add_argument("--repeat", type=_positive, default=3, metavar="R", help="rounds per measurement (default 3)")
    s.add_argument("--home", help="store folder for the bench (default: a temporary folder, removed afterwards)")
    s.add_argument("--growth", nargs="?", const="1000,5000,10000,25000,50000", metavar="CHUNKS",
                   help="instead of the ratios, time each retrieval-side step at these chunk counts (comma-separated, "
                        "default 1000,5000,10000,25000,50000) and print the growth exponents (see bench/growth.py)")
    s.add_argument("--growth-embed-max", type=int, default=10_000, metavar="N",
                   help="with --growth: embed only sizes up to N chunks (default 10000; larger sizes index "
                        "seeded random vectors and report no embedding time)")
    from rag_ttc_assets.bench import scale

    scale.add_arguments(s)
    s.set_defaults(fn=cmd_bench)
    return s


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="rag-ttc", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    add_parser(sub)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(argv if argv[:1] == ["bench"] else ["bench", *argv])
    return args.fn(args)
