"""`rag-ttc bench --only scale --chunks N`: Tantivy and each LanceDB index type at N chunks, the lab's calls against
the same calls made to the libraries directly on the same data.

The corpus is generated (`generate`, seeded): N chunks of WORDS words drawn from a Zipf-like vocabulary of made-up
consonant-vowel words, and QUERIES questions, each planted on one target chunk: QUERY_FROM_TARGET of its rarest
words and QUERY_NOISE random ones. The vectors come from a fast deterministic embedder that is a baseline, not a
language model (`hashing_embed`: signed feature hashing of each word, weighted by its -log probability, into DIM
dimensions, unit-normalised; MiniLM would take about fifteen hours for a million chunks on two cores). Its
neighbourhoods are flatter than a language model's, so an index's recall here is a floor, not a forecast.

For Tantivy and for each LanceDB index type (`flat`, `ivf_pq`, `ivf_hnsw_sq`, `ivf_hnsw_pq`, the parameters in
INDEXES) it reports:

- build seconds and peak resident memory, each build in a fresh child process (the lab's `bm25.build_index` /
  `vectors.build_table` + `vectors.build_index`, and the reference: the same library calls written out), and
  the size on disk (for LanceDB, the index alone beside the table and index);
- p50 / p95 single-query latency: the lab's `BM25Index.search` / `VectorIndex.search` against the library called
  directly (the same query, the same K + OVERFETCH candidates, the same parameters), alternating which goes first,
  on the same built index;
- recall@10 of the index's list against the exact list of the same table (`bypass_vector_index`), and the
  planted target's success@10;
- the ratios lab / direct of build time and of summed query time (target <= 1.1).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag_ttc_assets.adapters import bm25, vectors
from rag_ttc_assets.bench import harness
from rag_ttc_assets.bench.bench_records import Record
from rag_ttc_assets.core.ann import OVERFETCH, query_params, resolve_build
from rag_ttc_assets.core.arms import VectorIndexConfig

SEED = 30_000_001
EMBED_SEED = 3_001
DIM = 384
WORDS = 40
VOCAB = 50_000
QUERIES = 200
QUERY_FROM_TARGET, QUERY_NOISE = 5, 2
K = 10
TARGET = 1.1
EMBEDDER = f"hashing-idf-{DIM} (baseline: signed feature hashing of words, not a language model)"
# The parameters each index type is measured with: its query parameters, and build parameters left unset take the
# lab's defaults for N vectors (core.ann.resolve_build: LanceDB's documented defaults, num_partitions = sqrt(N)).
INDEXES: dict[str, dict] = {
    "flat": {},
    "ivf_pq": {"nprobes": 20, "refine_factor": 10},
    "ivf_hnsw_sq": {"nprobes": 20, "ef": 100},
    "ivf_hnsw_pq": {"nprobes": 20, "ef": 150, "refine_factor": 5},
}


def _log(msg: str) -> None:
    print(f"bench scale: {msg}", file=sys.stderr, flush=True)


# --- the generated corpus ---------------------------------------------------------------------------------------

def vocabulary(n: int = VOCAB) -> np.ndarray:
    """`n` made-up words, consonant-vowel-consonant-vowel-consonant (none is an English stopword)."""
    cons, vows = "bcdfghjklmnpqrstvwxz", "aeiou"
    out = []
    for i in range(n):
        a, i2 = divmod(i, 20)
        b, a = divmod(a, 5)
        c, b = divmod(b, 20)
        d, c = divmod(c, 5)
        out.append(cons[i2] + vows[a] + cons[b] + vows[c] + cons[d % 20] + ("" if d < 20 else str(d // 20)))
    return np.array(out)


def word_probabilities(n: int = VOCAB) -> np.ndarray:
    p = 1.0 / (np.arange(n) + 10.0)
    return p / p.sum()


@dataclass(frozen=True)
class Generated:
    """The generated corpus: word IDs of every chunk (chunks x WORDS), and per query its word IDs and its planted
    target chunk (a row index)."""

    words: np.ndarray
    targets: np.ndarray
    query_words: np.ndarray


class Built(Record):
    """One build in its child (build_child): seconds, and the child's peak resident memory after and before it."""

    seconds: float
    peak_mb: float
    peak_before_build_mb: float


class EngineRow(Record):
    """One engine built by the lab's adapter and by the library directly, then queried both ways (alternating);
    recall_10_vs_exact for a vector index, index_only_mb for an approximate one (absent from the JSON otherwise)."""

    engine: str
    build_params: dict[str, Any]
    query_params: dict[str, Any]
    build_s: float
    direct_build_s: float
    build_ratio: float
    peak_mb: float
    direct_peak_mb: float
    size_mb: float
    queries: int
    p50_ms: float
    p95_ms: float
    direct_p50_ms: float
    direct_p95_ms: float
    query_ratio: float
    planted_success_10: float
    recall_10_vs_exact: float | None = None
    index_only_mb: float | None = None
    OMIT_WHEN_NONE = ("recall_10_vs_exact", "index_only_mb")


class ScaleReport(Record):
    """`rag-ttc bench --only scale`'s report (run_scale)."""

    chunks: int
    queries: int
    dimension: int
    embedder: str
    seed: int
    cpus: int | None
    target_ratio: float
    engines: dict[str, EngineRow]


def generate(chunks: int, queries: int = QUERIES, seed: int = SEED) -> Generated:
    """Word IDs of every chunk (chunks x WORDS), and per query its word IDs and its planted target chunk."""
    rng = np.random.default_rng(seed)
    words = rng.choice(VOCAB, size=(chunks, WORDS), p=word_probabilities())
    targets = rng.choice(chunks, size=min(queries, chunks), replace=False)
    # The rarest words of the target (highest IDs: lowest probability), then random noise words.
    rare = np.sort(words[targets], axis=1)[:, ::-1][:, :QUERY_FROM_TARGET]
    noise = rng.choice(VOCAB, size=(len(targets), QUERY_NOISE), p=word_probabilities())
    return Generated(words.astype(np.int32), targets.astype(np.int64),
                     np.concatenate([rare, noise], axis=1).astype(np.int32))


def texts(word_ids: np.ndarray) -> list[str]:
    vocab = vocabulary()
    return [" ".join(row) for row in vocab[word_ids]]


def chunk_ids(n: int) -> list[str]:
    return [f"gen-{i:07d}#chunk-0" for i in range(n)]


def hashing_embed(word_ids: np.ndarray, dim: int = DIM, batch: int = 20_000) -> np.ndarray:
    """Unit vectors: each word adds its -log probability, with a seeded sign, to one seeded dimension."""
    rng = np.random.default_rng(EMBED_SEED)
    slot = rng.integers(0, dim, VOCAB)
    weight = rng.choice([-1.0, 1.0], VOCAB) * -np.log(word_probabilities())
    out = np.empty((word_ids.shape[0], dim), dtype=np.float32)
    for start in range(0, word_ids.shape[0], batch):
        w = word_ids[start:start + batch]
        rows = np.repeat(np.arange(w.shape[0]), w.shape[1])
        m = np.bincount(rows * dim + slot[w].reshape(-1), weights=weight[w].reshape(-1),
                        minlength=w.shape[0] * dim).reshape(w.shape[0], dim)
        m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
        out[start:start + batch] = m
    return out


# --- builds, each in a child process (its peak memory its own) --------------------------------------------------

def _maxrss_mb() -> float:
    return harness.maxrss_mb()  # the child's own peak (see there)


def build_child(data: str, engine: str, side: str, dest: str, params_json: str) -> dict:
    """In a fresh process: build `engine` (tantivy or a LanceDB index type) into `dest` from the generated data in
    `data`, by the lab's adapter (`side` lab) or the libraries called directly (`side` direct)."""
    import pyarrow as pa

    params = json.loads(params_json)
    folder = Path(data)
    n = int(np.load(folder / "words.npy", mmap_mode="r").shape[0])
    ids = chunk_ids(n)
    if engine == "tantivy":
        docs = list(zip(ids, texts(np.load(folder / "words.npy"))))
    else:
        vecs = np.load(folder / "vectors.npy")
        vectors._lancedb()
    before = _maxrss_mb()
    t0 = time.perf_counter()
    if engine == "tantivy" and side == "lab":
        bm25.build_index(Path(dest), docs)
    elif engine == "tantivy":
        import tantivy

        Path(dest).mkdir(parents=True)
        sb = tantivy.SchemaBuilder()
        sb.add_text_field(bm25.FIELD_ID, stored=True, tokenizer_name="raw")
        sb.add_text_field(bm25.FIELD_BODY, stored=False, tokenizer_name=bm25.ANALYZER)
        index = tantivy.Index(sb.build(), path=dest)
        index.register_tokenizer(bm25.ANALYZER, bm25._analyzer())
        writer = index.writer(heap_size=64_000_000, num_threads=1)
        for cid, text in docs:
            writer.add_document(tantivy.Document(**{bm25.FIELD_ID: cid, bm25.FIELD_BODY: text}))
        writer.commit()
        writer.wait_merging_threads()
    elif side == "lab":
        vectors.build_table(Path(dest), ids, vecs)
        if engine != "flat":
            vectors.build_index(Path(dest), params)
    else:
        import lancedb

        table = lancedb.connect(dest).create_table(vectors.TABLE, data=pa.table({
            "chunk_id": pa.array(ids, pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1), pa.float32()), vecs.shape[1])}))
        if engine != "flat":
            table.create_index("vector", config=vectors.index_config(params), name=vectors.INDEX)
    seconds = time.perf_counter() - t0
    return Built(seconds=seconds, peak_mb=_maxrss_mb(), peak_before_build_mb=before).model_dump()


def _child(call: str, args: list) -> dict:
    code = ("import json, sys; from rag_ttc_assets.bench import scale; "
            f"print('RESULT ' + json.dumps(scale.{call}(*sys.argv[1:])))")
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
           "LANCEDB_LOG": os.environ.get("LANCEDB_LOG", "error")}
    proc = subprocess.run([sys.executable, "-c", code, *map(str, args)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env, cwd=root)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"scale bench child {call}{tuple(args)[1:3]} failed (exit {proc.returncode}): "
                           f"{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def _size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


# --- queries ----------------------------------------------------------------------------------------------------

def _percentile(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q))


def _alternate(lab_fn, direct_fn, n: int) -> tuple[list[float], list[float], list, list]:
    """Time query i by the lab and directly, alternating which goes first; the results of each side."""
    lab_t, direct_t, lab_r, direct_r = [], [], [], []
    for i in range(n):
        order = ((lab_fn, lab_t, lab_r), (direct_fn, direct_t, direct_r))
        for fn, times, results in (order if i % 2 == 0 else order[::-1]):
            t0 = time.perf_counter()
            results.append(fn(i))
            times.append(time.perf_counter() - t0)
    return lab_t, direct_t, lab_r, direct_r


def query_tantivy(path: Path, gen: Generated) -> dict[str, Any]:
    import tantivy

    lab = bm25.BM25Index(path)
    index = tantivy.Index.open(str(path))
    index.register_tokenizer(bm25.ANALYZER, bm25._analyzer())
    index.reload()
    searcher, analyzer, schema = index.searcher(), bm25._analyzer(), index.schema
    questions = texts(gen.query_words)

    def direct(i):
        terms = sorted(set(analyzer.analyze(questions[i])))
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(schema, bm25.FIELD_BODY, t)) for t in terms])
        return [searcher.doc(a)[bm25.FIELD_ID][0] for _, a in searcher.search(query, K + OVERFETCH).hits][:K]

    lab_t, direct_t, lab_r, _ = _alternate(lambda i: [c for c, _ in lab.search(questions[i], K)], direct,
                                           len(questions))
    return _query_result(lab_t, direct_t, gen, lab_r, None)


def query_lancedb(path: Path, gen: Generated, qvecs: np.ndarray, query: dict) -> dict[str, Any]:
    lab = vectors.VectorIndex(path, query=query)
    table = vectors._lancedb().connect(str(path)).open_table(vectors.TABLE)

    def direct(i):
        q = table.search(qvecs[i]).distance_type("cosine")
        for name, value in query.items():
            q = getattr(q, name)(value)
        return q.limit(K + OVERFETCH).select(["chunk_id", "_distance"]).to_arrow().column("chunk_id").to_pylist()[:K]

    lab_t, direct_t, lab_r, _ = _alternate(lambda i: [c for c, _ in lab.search(qvecs[i], K)], direct, len(qvecs))
    exact = [[c for c, _ in h] for h in lab.search_many(qvecs, K, exact=True)]
    return _query_result(lab_t, direct_t, gen, lab_r, exact)


def _query_result(lab_t, direct_t, gen: Generated, lab_r, exact) -> dict[str, Any]:
    """The query fields of an engine's row (EngineRow: queries to recall_10_vs_exact)."""
    ids = chunk_ids(int(gen.words.shape[0]))
    planted = [ids[t] for t in gen.targets]
    out = {"queries": len(lab_t), "p50_ms": _percentile(lab_t, 50) * 1000, "p95_ms": _percentile(lab_t, 95) * 1000,
           "direct_p50_ms": _percentile(direct_t, 50) * 1000, "direct_p95_ms": _percentile(direct_t, 95) * 1000,
           "query_ratio": sum(lab_t) / sum(direct_t),
           "planted_success_10": sum(p in r for p, r in zip(planted, lab_r)) / len(lab_r)}
    if exact is not None:
        out["recall_10_vs_exact"] = float(np.mean([len(set(a) & set(e)) / len(e) for a, e in zip(lab_r, exact)]))
    return out


# --- the measurement --------------------------------------------------------------------------------------------

def run_scale(chunks: int, home: str | Path | None = None, queries: int = QUERIES,
              engines: tuple[str, ...] = ("tantivy", *INDEXES)) -> ScaleReport:
    """Generate the corpus, build every engine both ways, query them; the report."""
    owned = home is None
    base = Path(tempfile.mkdtemp(prefix="rag-ttc-scale-")) if owned else Path(home).expanduser().resolve()
    base.mkdir(parents=True, exist_ok=True)
    try:
        data = base / "data"
        data.mkdir(exist_ok=True)
        t0 = time.perf_counter()
        gen = generate(chunks, queries)
        np.save(data / "words.npy", gen.words)
        vecs = hashing_embed(gen.words)
        np.save(data / "vectors.npy", vecs)
        qvecs = hashing_embed(gen.query_words)
        del vecs
        _log(f"generated {chunks} chunks and {len(gen.targets)} planted queries in {time.perf_counter() - t0:.1f} s")
        rows = {}
        for engine in engines:
            if engine == "tantivy":
                params, query = {}, {}
            else:  # an INDEXES entry may set build parameters too (any `vector_index` field of its type)
                cfg = VectorIndexConfig(type=engine, **INDEXES[engine])
                params, query = resolve_build(cfg, chunks, DIM), query_params(cfg)
            built: dict[str, Built] = {}
            for side in ("lab", "direct"):
                dest = base / f"{engine}-{side}"
                shutil.rmtree(dest, ignore_errors=True)
                _log(f"{engine}: building ({side})")
                built[side] = Built.model_validate(
                    _child("build_child", [str(data), engine, side, str(dest), json.dumps(params)]))
            dest = base / f"{engine}-lab"
            _log(f"{engine}: {queries} queries, lab and direct alternating")
            q = (query_tantivy(dest, gen) if engine == "tantivy"
                 else query_lancedb(dest, gen, qvecs, query))
            lab, direct = built["lab"], built["direct"]
            rows[engine] = EngineRow(
                engine="tantivy (BM25)" if engine == "tantivy" else f"lancedb {engine}", build_params=params,
                query_params=query, build_s=lab.seconds, direct_build_s=direct.seconds,
                build_ratio=lab.seconds / direct.seconds, peak_mb=lab.peak_mb, direct_peak_mb=direct.peak_mb,
                size_mb=_size_mb(dest), **q,
                index_only_mb=(None if engine in ("tantivy", "flat")
                               else _size_mb(dest / f"{_table_dir()}" / "_indices")))
            for side in ("lab", "direct"):
                shutil.rmtree(base / f"{engine}-{side}", ignore_errors=True)
        return ScaleReport(chunks=chunks, queries=len(gen.targets), dimension=DIM, embedder=EMBEDDER, seed=SEED,
                           cpus=os.cpu_count(), target_ratio=TARGET, engines=rows)
    finally:
        if owned:
            shutil.rmtree(base, ignore_errors=True)


def _table_dir() -> str:
    return f"{vectors.TABLE}.lance"


def _f(v, digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def format_scale(report: ScaleReport) -> str:
    cols = ["engine", "build_s", "build_ratio", "peak_mb", "size_mb", "index_mb", "p50_ms", "p95_ms", "query_ratio",
            "recall@10_vs_exact", "planted@10", "verdict"]
    cells = [cols]
    for r in report.engines.values():
        ok = r.build_ratio <= report.target_ratio and r.query_ratio <= report.target_ratio
        cells.append([r.engine, _f(r.build_s), _f(r.build_ratio), _f(r.peak_mb, 0), _f(r.size_mb, 1),
                      _f(r.index_only_mb, 1), _f(r.p50_ms), _f(r.p95_ms), _f(r.query_ratio),
                      _f(r.recall_10_vs_exact, 3), _f(r.planted_success_10, 3), "met" if ok else "NOT met"])
    widths = [max(len(c[i]) for c in cells) for i in range(len(cols))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(c, widths)).rstrip() for c in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    params = [f"{r.engine}: build {r.build_params or '-'}, query {r.query_params or '-'}"
              for r in report.engines.values()]
    return "\n".join([f"{report.chunks} generated chunks (seed {report.seed}), {report.queries} planted "
                      f"queries, vectors: {report.embedder}; {report.cpus} CPUs", *lines, "", *params, "",
                      "build_ratio, query_ratio = the lab's adapter / the library called directly on the same data "
                      f"(target <= {report.target_ratio}); each build in a fresh child process (peak_mb is its "
                      "peak RSS); latencies are single queries, lab and direct alternating; recall@10_vs_exact is "
                      "the index's top 10 against a flat scan of the same table; planted@10 the planted target "
                      "in the lab's top 10"])


# --- the command ------------------------------------------------------------------------------------------------

def cmd_scale(args) -> int:
    if [n for n in args.only if n != "scale"]:
        raise SystemExit("rag-ttc bench: --only scale runs alone (it builds its own generated corpus)")
    if args.chunks < 2:
        raise SystemExit(f"rag-ttc bench: --chunks must be at least 2, got {args.chunks}")
    report = run_scale(args.chunks, home=args.home)
    print(json.dumps(report.to_json(), indent=2) if args.json else format_scale(report))
    return 0

