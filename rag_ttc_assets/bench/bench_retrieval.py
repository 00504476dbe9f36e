"""`retrieval`, `embedding` and `onnx_embedding`: the product's retrieval and embedding paths against plain loops
over the same libraries and model objects."""

from __future__ import annotations

import gc
import inspect
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rag_ttc_assets.adapters import (bm25 as bm25_adapter, embeddings, onnx_embeddings as oe, torch_embeddings,
                                     vectors as vec_adapter)
from rag_ttc_assets.bench.harness import Stopwatch, Target, Timing, alternate, fmt, item, log, ratio_of, timed
from rag_ttc_assets.bench.labs import ARM, LabSpec, Prepared, prepare
from rag_ttc_assets.bench.bench_records import Record
from rag_ttc_assets.bench.bench_registry import measurement
from rag_ttc_assets.core.artifacts import SOURCE_DEPTH
from rag_ttc_assets.core.tables import Table

ROWS = Table.RETRIEVAL_ROWS.c  # the retrieval rows' declared columns (core.tables)


class Agreement(Record):
    """An ONNX model's cosine agreement with the torch encode over the texts: mean and lowest."""

    mean: float
    min: float


class RetrievalFigures(Record):
    """An arm's retrieval metrics the onnx_embedding bench reports (or their difference from the torch arm's)."""

    recall_10: float
    ndcg_cut_10: float


def reference_retrieve(p: Prepared) -> dict[str, list[str]]:
    """The same retrieval as `stages.retrieval.retrieve` for an RRF arm, written as a plain loop over
    the Tantivy searcher and the LanceDB table; returns query_id -> ranked chunk IDs."""
    import numpy as np
    import tantivy

    from rag_ttc_assets.stages.retrieval import arm_questions  # late: polars, pytrec_eval load only when this runs

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


@measurement("retrieval")
def bench_retrieval(spec: LabSpec, base: Path, repeat: int) -> dict:
    from rag_ttc_assets.stages.retrieval import retrieve  # late: polars, pytrec_eval load only when this runs

    lab = spec.lab(base / "shared")
    log("retrieval: building (or finding) the baseline indexes")
    p = prepare(lab)
    if p.cfg.retrieval != "rrf":
        raise RuntimeError(f"arm {ARM!r} must use rrf retrieval for this measurement")
    product_rows: Any = None
    reference_lists: dict[str, list[str]] = {}

    def product():
        nonlocal product_rows
        product_rows = retrieve(p.cfg, p.ds, p.bm25, p.vectors, p.qemb, p.chunk_docs)

    def reference():
        nonlocal reference_lists
        reference_lists = reference_retrieve(p)

    product(), reference()  # warm-up: imports, page cache, LanceDB's first connection
    prod, ref = alternate("retrieval", timed(product), timed(reference), repeat)
    got = dict(zip(product_rows[ROWS.query_id].to_list(), product_rows[ROWS.ranked_chunk_ids].to_list()))
    identical = got == reference_lists
    notes = [] if identical else ["product and reference ranked lists differ"]
    return item("retrieval", prod, ref, "cost", Target("<=", 1.25),
                "stages.retrieval.retrieve (all questions, baseline arm)",
                "plain Tantivy + LanceDB loop with RRF summed in Python",
                questions=len(got), identical_ranked_lists=identical, notes=notes,
                detail=f"{len(got)} questions; ranked lists {'identical' if identical else 'DIFFER'}")


@measurement("embedding")
def bench_embedding(spec: LabSpec, base: Path, repeat: int) -> dict:
    import numpy as np

    from rag_ttc_assets.stages import ingest  # late: polars loads only when this runs

    lab = spec.lab(base / "shared")
    cfg = lab.arms[ARM]
    ds = ingest.bind_dataset(lab.datasets_dir, cfg)
    reps = ingest.build_representations(lab.store, cfg, ds, ingest.build_chunks(lab.store, cfg, ds))
    texts = ingest.read_representations(reps)["text"].to_list()
    model = torch_embeddings.load(cfg.embedding_model)  # the one model object both sides use
    # encode's own default batch size: build_vectors calls it without one.
    batch = inspect.signature(embeddings.encode).parameters["batch_size"].default
    product_vectors: Any = None
    reference_vectors: Any = None

    def product():
        nonlocal product_vectors
        product_vectors = embeddings.encode(texts, cfg.embedding_model)

    def reference():
        nonlocal reference_vectors
        reference_vectors = model.encode(texts, batch_size=batch, normalize_embeddings=True, show_progress_bar=False)

    model.encode(texts[:batch], batch_size=batch, normalize_embeddings=True, show_progress_bar=False)  # warm-up
    prod, ref = alternate("embedding", timed(product), timed(reference), repeat)
    diff = float(np.max(np.abs(product_vectors - np.asarray(reference_vectors, dtype=np.float32))))
    return item("embedding", prod, ref, "throughput", Target(">=", 0.9),
                f"adapters.embeddings.encode ({len(texts)} representation texts)",
                f"SentenceTransformer.encode (batch_size={batch}, normalized, same model object)",
                texts=len(texts), batch_size=batch, max_abs_diff=diff,
                detail=f"{len(texts)} texts, batch {batch}; max |diff| {diff:.1e}")


ONNX_ARMS = ("embedding-onnx", "embedding-onnx-int8")


@measurement("onnx_embedding")
def bench_onnx_embedding(spec: LabSpec, base: Path, repeat: int) -> dict:
    """ONNX Runtime fp32 and int8 throughput against the torch encode (same texts, same batch size), rotating
    which of the three goes first; their cosine agreement; and the retrieval metrics of the three arms."""
    import numpy as np

    from rag_ttc_assets.stages import ingest  # late: polars loads only when this runs
    # late: polars, pytrec_eval load only when this runs
    from rag_ttc_assets.stages.retrieval import arm_questions, retrieval_metrics, retrieve

    lab = spec.lab(base / "shared")
    cfg = lab.arms[ARM]
    try:
        oe._require(oe.ONNX_FP32)
    except oe.OnnxBackendUnavailable as e:
        return item("onnx_embedding", [], None, "throughput", None, "adapters.onnx_embeddings.encode", None,
                    notes=[str(e)], detail="skipped: the onnx extra is not installed")
    ds = ingest.bind_dataset(lab.datasets_dir, cfg)
    reps = ingest.build_representations(lab.store, cfg, ds, ingest.build_chunks(lab.store, cfg, ds))
    texts = ingest.read_representations(reps)["text"].to_list()
    batch = inspect.signature(embeddings.encode).parameters["batch_size"].default
    built = {}
    for model in oe.MODELS:  # export (or find) first: a one-time cost, reported, not timed as throughput
        with Stopwatch() as sw:
            built[model] = oe.ensure_model(model, lab.store)
        log(f"onnx_embedding: {model} {'found' if built[model].cache_hit else 'built'} in {sw.wall:.1f}s")
    encoders = {m: oe.load(m, lab.store) for m in oe.MODELS}
    encoded: dict[str, Any] = {}  # side name -> its vectors, from the last round
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
                encoded[name] = fn()
            runs[name].append(sw.timing)
            log(f"onnx_embedding: {name} {sw.wall:.3f}s wall, {sw.cpu:.3f}s CPU (round {i + 1}/{repeat})")
    ref = np.asarray(encoded["torch"], dtype=np.float32)
    cosine: dict[str, Agreement] = {}
    for m in oe.MODELS:
        c = np.sum(encoded[m] * ref, axis=1)
        cosine[m] = Agreement(mean=float(c.mean()), min=float(c.min()))
    metrics_by_arm: dict[str, RetrievalFigures] = {}
    ranked = {}
    for arm in (ARM, *ONNX_ARMS):  # the stages export and read the ONNX models in this lab's store
        p = prepare(lab, arm)
        rows = retrieve(p.cfg, p.ds, p.bm25, p.vectors, p.qemb, p.chunk_docs)
        summary = retrieval_metrics(arm_questions(p.cfg, p.ds), rows)["summary"]
        metrics_by_arm[arm] = RetrievalFigures(recall_10=summary["recall_10"], ndcg_cut_10=summary["ndcg_cut_10"])
        ranked[arm] = rows[ROWS.ranked_chunk_ids].to_list()
    same_lists = {arm: sum(a == b for a, b in zip(ranked[ARM], ranked[arm])) / max(len(ranked[ARM]), 1)
                  for arm in ONNX_ARMS}

    def med(name, i):
        return statistics.median(t[i] for t in runs[name])

    int8_ratio = ratio_of("throughput", med(oe.ONNX_INT8, 0), med("torch", 0))
    int8_cpu_ratio = ratio_of("throughput", med(oe.ONNX_INT8, 1), med("torch", 1))
    fp32_ratio = ratio_of("throughput", med(oe.ONNX_FP32, 0), med("torch", 0))
    torch_figures = metrics_by_arm[ARM]
    diff = {arm: RetrievalFigures(recall_10=metrics_by_arm[arm].recall_10 - torch_figures.recall_10,
                                  ndcg_cut_10=metrics_by_arm[arm].ndcg_cut_10 - torch_figures.ndcg_cut_10)
            for arm in ONNX_ARMS}
    return item("onnx_embedding", runs[oe.ONNX_FP32], runs["torch"], "throughput", None,
                f"ONNX Runtime fp32 ({len(texts)} representation texts, batch {batch})",
                "adapters.embeddings.encode (torch, same texts and batch size)",
                texts=len(texts), batch_size=batch,
                int8_s=med(oe.ONNX_INT8, 0), int8_ratio=int8_ratio, int8_cpu_ratio=int8_cpu_ratio,
                int8_runs=[t[0] for t in runs[oe.ONNX_INT8]], int8_cpu_runs=[t[1] for t in runs[oe.ONNX_INT8]],
                export={m: {"cache_hit": b.cache_hit, **b.manifest["info"]} for m, b in built.items()},
                cosine={m: a.to_json() for m, a in cosine.items()},
                retrieval={arm: f.to_json() for arm, f in metrics_by_arm.items()},
                retrieval_diff={arm: f.to_json() for arm, f in diff.items()}, identical_ranked_lists=same_lists,
                detail=(f"fp32 x{fmt(fp32_ratio)}, int8 x{fmt(int8_ratio)} (cpu x{fmt(int8_cpu_ratio)}); cosine "
                        f"fp32 {cosine[oe.ONNX_FP32].mean:.4f}/{cosine[oe.ONNX_FP32].min:.4f}, int8 "
                        f"{cosine[oe.ONNX_INT8].mean:.4f}/{cosine[oe.ONNX_INT8].min:.4f} (mean/min); "
                        + "; ".join(f"{arm} recall_10 {diff[arm].recall_10:+.4f} ndcg_cut_10 "
                                    f"{diff[arm].ndcg_cut_10:+.4f}" for arm in ONNX_ARMS)))
