"""`rag-ttc bench --only ann_realistic --chunks N`: each approximate index type on realistic vectors (a real
embedding model over real text, grown to N while keeping its neighbourhoods), beside the hashed vectors of the
scale bench as the adversarial floor; a sweep of the query parameters drawn as a recall-latency curve.

**The realistic vectors.** The public corpus is WiCE (Kamoi, Goyal, Rodriguez, Durrett, EMNLP 2023; annotations
ODC-BY, text CC-BY-SA and Common Crawl's terms): the full text of the web articles its Wikipedia claims cite. It is
read only from the folder the environment variable RAG_TTC_HUMAN_LABELS names (`wice/entailment_retrieval/claim`,
through `adapters.wice_reader`); without it the realistic part is skipped (the bench says so, naming the variable) and
only the floor runs. The distinct articles are chunked with the lab's chunker (`core.chunking.chunk_corpus`,
CHUNK_RUNES runes, OVERLAP_RUNES overlap) and embedded once with the bundled MiniLM (`adapters.embeddings.encode`,
batches of 64); the vectors are cached as `.npy` under the cache folder (RAG_TTC_BENCH_CACHE, else
`~/.cache/rag-ttc/ann-realistic`), named by the SHA-256 of the model, the chunker and every chunk's text, so a
rerun skips the encode. The queries are the claims themselves (real sentences whose cited article is in the
table; no claim is a row of the table), embedded the same way.

**Growing to N** (`grow`): the real vectors are rows 0..R-1; each further row is a real vector (drawn uniformly,
seeded) plus Gaussian noise, renormalised to unit length. The noise's scale is measured on the real vectors: the
median cosine distance of a real vector to its 10th exact neighbour (among the other real vectors) is
`spread`; the noise has standard deviation L / sqrt(dim) per dimension with L = sqrt(1 / (1 - spread)^2 - 1),
so its length is about L and, being nearly orthogonal to the source in 384 dimensions, it puts the renormalised
row at a cosine distance of about `spread` from its source: a synthetic row is about as far from its source as
the source's 10th neighbour. The neighbourhoods stay real ones, each grown by noisy copies. The spread is
printed.

**The floor**: the scale bench's generated corpus and `hashing_embed` vectors (`bench.scale`), N rows and its
planted queries: signed feature hashing of made-up words, with no neighbourhoods.

**Per set and index type** (`ivf_pq`, `ivf_hnsw_sq`, `ivf_hnsw_pq`; build parameters the lab's defaults for N
vectors, `core.ann.resolve_build`): build seconds (the lab's `vectors.build_index` on a table already written),
index size on disk, and for each query setting of SWEEP: recall@10 of the lab's `VectorIndex.search` against the
exact top 10 (a brute-force cosine scan in NumPy of the same vectors) and the p50 / p95 latency of single queries.
Each line is printed beside the target: recall@10 >= TARGET_RECALL at p95 <= TARGET_P95_MS.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag_ttc_assets.adapters import embeddings, vectors
from rag_ttc_assets.adapters.wice_reader import WiceError, read_wice
from rag_ttc_assets.bench import scale
from rag_ttc_assets.bench.bench_records import Record
from rag_ttc_assets.core.ann import resolve_build, resolve_query
from rag_ttc_assets.core.arms import VectorIndexConfig
from rag_ttc_assets.core.chunking import CHUNKER_VERSION, chunk_corpus

ENV = "RAG_TTC_HUMAN_LABELS"
CACHE_ENV = "RAG_TTC_BENCH_CACHE"
WICE_FOLDER = "wice"
CHUNK_RUNES, OVERLAP_RUNES = 400, 40
K = 10
QUERIES = 200
SEED = 46_002
TARGET_RECALL, TARGET_P95_MS = 0.95, 20.0
TYPES = ("ivf_sq", "ivf_rq", "ivf_pq", "ivf_hnsw_sq", "ivf_hnsw_pq")
# The query settings swept on one build per index type (LanceDB's own query parameters).
SWEEP: dict[str, list[dict]] = {
    "ivf_sq": [{"nprobes": p, "refine_factor": r} for r in (1, 5) for p in (10, 20, 40, 80, 160)] + [{}],
    "ivf_rq": [{"nprobes": p, "refine_factor": r} for r in (1, 10) for p in (10, 20, 40, 80, 160)] + [{}],
    "ivf_pq": [{"nprobes": p, "refine_factor": r} for r in (1, 10) for p in (5, 10, 20, 40, 80)],
    "ivf_hnsw_sq": [{"nprobes": p, "ef": e} for e in (120, 300) for p in (5, 10, 20, 40, 80)],
    "ivf_hnsw_pq": [{"nprobes": p, "ef": 150, "refine_factor": r} for r in (1, 5) for p in (5, 10, 20, 40, 80)],
}


class Point(Record):
    """One query setting of a type's sweep: the query parameters the index was searched with, recall@K of the
    exact top K (mean over the queries), the latency percentiles, and whether it meets the target."""

    query: dict[str, Any]
    recall_10: float
    p50_ms: float
    p95_ms: float
    met: bool


class TypeResult(Record):
    """One index type built with the lab's defaults on a set, and its sweep."""

    type: str
    build_params: dict[str, Any]
    build_s: float
    index_mb: float
    points: list[Point]


class SetResult(Record):
    """One set of vectors (realistic or the hashed floor): its table, and each index type measured on it."""

    rows: int
    queries: int
    table_write_s: float
    table_mb: float
    types: dict[str, TypeResult]


class AnnReport(Record):
    """`rag-ttc bench --only ann_realistic`'s report (run_ann_realistic); real_rows, spread_10 and source only when
    the realistic set ran, plot only when a curve was drawn (absent from the JSON otherwise)."""

    chunks: int
    k: int
    target_recall: float
    target_p95_ms: float
    cpus: int | None
    sets: dict[str, SetResult]
    notes: list[str]
    real_rows: int | None = None
    spread_10: float | None = None
    source: str | None = None
    plot: str | None = None
    OMIT_WHEN_NONE = ("real_rows", "spread_10", "source", "plot")


@dataclass(frozen=True)
class Vectors:
    """A set's source vectors: row IDs, the rows, the query vectors, and what they are (`source`)."""

    ids: list[str]
    vectors: np.ndarray
    queries: np.ndarray
    source: str = ""


def _log(msg: str) -> None:
    print(f"bench ann_realistic: {msg}", file=sys.stderr, flush=True)


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "rag-ttc" / "ann-realistic").expanduser()


# --- the realistic vectors --------------------------------------------------------------------------------------

def wice_corpus(root: Path) -> tuple[list[str], list[str], list[str]]:
    """(chunk IDs, chunk texts, query texts) of the WiCE folder under `root`: the distinct cited articles chunked
    by the lab's chunker, and the claims."""
    claims = read_wice(root / WICE_FOLDER)
    articles: dict[str, str] = {}
    for doc_id, doc in claims.documents.items():
        articles.setdefault(doc.text, doc_id)  # an article cited by two claims is chunked once
    chunks = chunk_corpus([(doc_id, text) for text, doc_id in articles.items()], CHUNK_RUNES, OVERLAP_RUNES)
    queries = list(dict.fromkeys(r["text"] for q in claims.questions for r in q.requests))
    return [c.chunk_id for c in chunks], [c.text for c in chunks], queries


def embed_cached(texts: list[str], what: str, cache: Path | None = None) -> np.ndarray:
    """The bundled MiniLM's vectors of `texts`, from the cache when an earlier run encoded the same texts."""
    h = hashlib.sha256(f"{embeddings.DEFAULT_MODEL}\0{CHUNKER_VERSION}\0".encode())
    for t in texts:
        h.update(t.encode())
        h.update(b"\0")
    folder = cache or cache_dir()
    path = folder / f"{what}-{h.hexdigest()[:32]}.npy"
    if path.is_file():
        _log(f"{what}: {len(texts)} vectors from the cache ({path.name})")
        return np.load(path)
    t0 = time.perf_counter()
    _log(f"{what}: encoding {len(texts)} texts with {embeddings.DEFAULT_MODEL} (batches of 64; cached afterwards)")
    out = embeddings.encode(texts, batch_size=64).astype(np.float32)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, out)
    tmp.replace(path)
    _log(f"{what}: encoded in {time.perf_counter() - t0:.0f} s")
    return out


def clustered(n: int, queries: int, dim: int = 384, centres: int = 50, seed: int = SEED) -> Vectors:
    """A stand-in for real vectors when no real corpus is at hand (the test): unit vectors around `centres` random
    centres, and queries drawn the same way (not rows of the table)."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centres, dim)).astype(np.float32)

    def draw(m: int) -> np.ndarray:
        v = c[rng.integers(0, centres, m)] + 0.6 * rng.standard_normal((m, dim)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    return Vectors([f"clustered-{i:06d}" for i in range(n)], draw(n), draw(queries),
                   "clustered (synthetic stand-in: 50 Gaussian centres)")


# --- growing to N -------------------------------------------------------------------------------------------------

def exact_topk(table: np.ndarray, queries: np.ndarray, k: int, exclude_self: bool = False,
               batch: int = 256) -> np.ndarray:
    """Row indices of the exact top k by cosine (unit vectors: the dot product), best first."""
    out = np.empty((queries.shape[0], k), dtype=np.int64)
    for s in range(0, queries.shape[0], batch):
        sims = queries[s:s + batch] @ table.T
        if exclude_self:
            sims[np.arange(sims.shape[0]), np.arange(s, s + sims.shape[0])] = -np.inf
        part = np.argpartition(-sims, k, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(sims, part, axis=1), axis=1, kind="stable")
        out[s:s + batch] = np.take_along_axis(part, order, axis=1)
    return out


def spread(real: np.ndarray, k: int = K, sample: int = 2_000, seed: int = SEED) -> float:
    """Median cosine distance of a real vector to its k-th exact neighbour among the other real vectors (over a
    seeded sample of at most `sample` of them)."""
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(real.shape[0], size=min(sample, real.shape[0]), replace=False))
    sims = real[rows] @ real.T
    sims[np.arange(rows.size), rows] = -np.inf
    kth = -np.partition(-sims, k - 1, axis=1)[:, k - 1]
    return float(np.median(1.0 - kth))


def grow(real: np.ndarray, real_ids: list[str], n: int, d: float, seed: int = SEED) -> tuple[np.ndarray, list[str]]:
    """`n` unit rows: the real ones, then noisy copies of seeded random real ones, each at a cosine distance of
    about `d` from its source (the module's docstring)."""
    if n <= real.shape[0]:
        return real[:n].copy(), real_ids[:n]
    rng = np.random.default_rng(seed)
    dim = real.shape[1]
    out = np.empty((n, dim), dtype=np.float32)
    out[:real.shape[0]] = real
    length = np.sqrt(1.0 / (1.0 - min(d, 0.99)) ** 2 - 1.0)
    sigma = np.float32(length / np.sqrt(dim))
    src = rng.integers(0, real.shape[0], n - real.shape[0])
    for s in range(0, src.size, 50_000):
        part = src[s:s + 50_000]
        v = real[part] + sigma * rng.standard_normal((part.size, dim), dtype=np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        out[real.shape[0] + s:real.shape[0] + s + part.size] = v
    ids = list(real_ids) + [f"grown-{i:07d}~{real_ids[j]}" for i, j in enumerate(src.tolist())]
    return out, ids


# --- per index type: one build, the sweep --------------------------------------------------------------------------

def _size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def measure_type(folder: Path, table_dir: Path, index_type: str, n: int, dim: int, qvecs: np.ndarray,
                 exact: np.ndarray, ids: list[str], sweep: list[dict]) -> TypeResult:
    """Build `index_type` with the lab's defaults on a copy of the written table, then run every query setting."""
    dest = folder / index_type
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(table_dir, dest)
    params = resolve_build(VectorIndexConfig(type=index_type), n, dim)
    t0 = time.perf_counter()
    vectors.build_index(dest, params)
    build_s = time.perf_counter() - t0
    index_mb = _size_mb(dest / f"{vectors.TABLE}.lance" / "_indices")
    exact_ids = [[ids[j] for j in row] for row in exact]
    points = []
    for query in sweep:
        q = {k: v for k, v in query.items() if not (k == "refine_factor" and v == 1)}
        if q.get("nprobes", 0) > params["num_partitions"]:  # a small table: more probes than partitions
            continue
        # As an arm would take it (an error here is a bad SWEEP entry); `{}` measures the lab's defaults for the type.
        q = resolve_query(VectorIndexConfig(type=index_type, **q), params)
        index = vectors.VectorIndex(dest, query=q)
        index.search(qvecs[0], K)  # warm: the first query opens the index files
        times, recalls = [], []
        for i in range(qvecs.shape[0]):
            t = time.perf_counter()
            got = [c for c, _ in index.search(qvecs[i], K)]
            times.append(time.perf_counter() - t)
            recalls.append(len(set(got) & set(exact_ids[i])) / K)
        p95 = float(np.percentile(times, 95)) * 1000
        r = float(np.mean(recalls))
        points.append(Point(query=q, recall_10=r, p50_ms=float(np.percentile(times, 50)) * 1000, p95_ms=p95,
                            met=r >= TARGET_RECALL and p95 <= TARGET_P95_MS))
        _log(f"{index_type} {q}: recall@10 {r:.3f}, p95 {p95:.1f} ms")
    shutil.rmtree(dest, ignore_errors=True)
    return TypeResult(type=index_type, build_params=params, build_s=build_s, index_mb=index_mb, points=points)


def measure_set(name: str, folder: Path, table: np.ndarray, ids: list[str], qvecs: np.ndarray,
                types: tuple[str, ...], sweep: dict[str, list[dict]]) -> SetResult:
    """Write the table once with the lab's adapter, compute the exact lists, measure each index type."""
    t0 = time.perf_counter()
    table_dir = folder / f"{name}-table"
    shutil.rmtree(table_dir, ignore_errors=True)
    vectors.build_table(table_dir, ids, table)
    write_s = time.perf_counter() - t0
    exact = exact_topk(table, qvecs, K)
    _log(f"{name}: table of {len(ids)} rows written in {write_s:.0f} s; exact lists computed")
    table_mb = _size_mb(table_dir)
    measured = {}
    for t in types:
        _log(f"{name}: {t}: building with the lab's defaults for {len(ids)} vectors")
        measured[t] = measure_type(folder, table_dir, t, len(ids), table.shape[1], qvecs, exact, ids, sweep[t])
    shutil.rmtree(table_dir, ignore_errors=True)
    return SetResult(rows=len(ids), queries=int(qvecs.shape[0]), table_write_s=write_s, table_mb=table_mb,
                     types=measured)


# --- the measurement ----------------------------------------------------------------------------------------------

def run_ann_realistic(chunks: int, home: str | Path | None = None, source: str = "wice",
                      queries: int = QUERIES, types: tuple[str, ...] = TYPES, floor: bool = True,
                      sweep: dict[str, list[dict]] | None = None, plot: str | Path | None = None) -> AnnReport:
    """The report. `source`: `wice` (the real corpus through RAG_TTC_HUMAN_LABELS; skipped, with a
    note naming the variable, when it is unset) or `clustered` (a synthetic stand-in, for the test)."""
    sweep = sweep or SWEEP
    owned = home is None
    base = Path(tempfile.mkdtemp(prefix="rag-ttc-ann-")) if owned else Path(home).expanduser().resolve()
    base.mkdir(parents=True, exist_ok=True)
    sets: dict[str, SetResult] = {}
    notes: list[str] = []
    grown: dict[str, Any] = {}  # real_rows, spread_10 and source, when the realistic set runs
    try:
        real = None
        if source == "clustered":
            real = clustered(min(chunks, 2_000), queries)
        elif os.environ.get(ENV):
            root = Path(os.environ[ENV]).expanduser()
            ids, texts, qtexts = wice_corpus(root)
            rng = np.random.default_rng(SEED)
            qtexts = [qtexts[i] for i in sorted(rng.choice(len(qtexts), size=min(queries, len(qtexts)),
                                                             replace=False))]
            real = Vectors(ids, embed_cached(texts, "wice-chunks"), embed_cached(qtexts, "wice-claims"),
                           f"WiCE cited articles ({len(ids)} chunks of {CHUNK_RUNES} runes, overlap "
                           f"{OVERLAP_RUNES}; all-MiniLM-L6-v2); queries: {len(qtexts)} WiCE claims")
        else:
            notes.append(f"realistic vectors skipped: {ENV} is not set (it names the folder holding "
                                   f"{WICE_FOLDER}/entailment_retrieval/claim, the WiCE data)")
        if real is not None:
            d = spread(real.vectors)
            table, tids = grow(real.vectors, real.ids, chunks, d)
            grown = {"real_rows": len(real.ids), "spread_10": d, "source": real.source}
            sets["realistic"] = measure_set("realistic", base, table, tids, real.queries, types, sweep)
            del table
        if floor:
            gen = scale.generate(chunks, queries)
            table = scale.hashing_embed(gen.words)
            sets["hashed"] = measure_set("hashed", base, table, scale.chunk_ids(chunks),
                                                   scale.hashing_embed(gen.query_words), types, sweep)
            del table
        report = AnnReport(chunks=chunks, k=K, target_recall=TARGET_RECALL, target_p95_ms=TARGET_P95_MS,
                           cpus=os.cpu_count(), sets=sets, notes=notes, **grown)
        if plot:
            from rag_ttc_assets.adapters import plots  # late: matplotlib, only when a curve is drawn

            drawn = plots.recall_latency_curves(plot, curves(report), TARGET_RECALL, TARGET_P95_MS,
                                                f"recall@10 vs p95 latency, {chunks} vectors", dashed=("hashed",))
            report = report.model_copy(update={"plot": str(drawn)})
        return report
    finally:
        if owned:
            shutil.rmtree(base, ignore_errors=True)


def curves(report: AnnReport) -> dict[str, list[tuple[float, float]]]:
    """Per set and index type, its sweep's (p95 ms, recall@10) points."""
    return {f"{s} {t}": [(p.p95_ms, p.recall_10) for p in r.points]
            for s, res in report.sets.items() for t, r in res.types.items()}


def best(points: list[Point]) -> Point | None:
    """The cheapest (lowest p95) setting that meets the target, else the one of highest recall."""
    met = [p for p in points if p.met]
    return min(met, key=lambda p: p.p95_ms) if met else max(points, key=lambda p: p.recall_10, default=None)


def _f(v, digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def _table(cells: list[list[str]]) -> list[str]:
    widths = [max(len(c[i]) for c in cells) for i in range(len(cells[0]))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(c, widths)).rstrip() for c in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def format_report(report: AnnReport) -> str:
    k = report.k
    out = [f"{report.chunks} vectors per set, recall@{k} of the index against the exact top "
           f"{k}; target: recall@{k} >= {report.target_recall} at p95 <= "
           f"{report.target_p95_ms:.0f} ms; {report.cpus} CPUs"]
    if report.source is not None:
        out.append(f"realistic: {report.source}; {report.real_rows} real rows grown to {report.chunks} "
                   f"(each added row: a real row + Gaussian noise, renormalised); spread (median cosine distance to "
                   f"the 10th exact neighbour among the real rows): {report.spread_10:.4f}")
    if "hashed" in report.sets:
        out.append("hashed (floor): bench/scale.py's generated words, hashing-idf-384 vectors, its planted queries")
    out.extend(report.notes)
    cells = [["set", "type", "build_s", "index_mb", "query", "recall@10", "p50_ms", "p95_ms", "target"]]
    for s, res in report.sets.items():
        for t, r in res.types.items():
            for i, p in enumerate(r.points):
                cells.append([s, t, _f(r.build_s, 1) if i == 0 else "", _f(r.index_mb, 1) if i == 0 else "",
                              json.dumps(p.query, separators=(",", ":")), _f(p.recall_10, 3), _f(p.p50_ms),
                              _f(p.p95_ms), "met" if p.met else "NOT met"])
    out.extend(["", *_table(cells), ""])
    summary = [["set", "type", "best setting", "recall@10", "p95_ms", "target"]]
    for s, res in report.sets.items():
        for t, r in res.types.items():
            b = best(r.points)
            if b is None:
                continue
            summary.append([s, t, json.dumps(b.query, separators=(",", ":")), _f(b.recall_10, 3),
                            _f(b.p95_ms), "met" if b.met else "NOT met"])
    out.append("best per type (the lowest p95 that meets the target, else the highest recall):")
    out.extend(_table(summary))
    met = [f"{s} {t}" for s, res in report.sets.items() for t, r in res.types.items() if any(p.met for p in r.points)]
    out.append("")
    out.append(f"target met by: {', '.join(met) if met else 'no index type'}")
    if report.plot:
        out.append(f"recall-latency curve: {report.plot}")
    return "\n".join(out)


def cmd_ann_realistic(args) -> int:
    if [n for n in args.only if n != "ann_realistic"]:
        raise SystemExit("rag-ttc bench: --only ann_realistic runs alone (it builds its own vectors)")
    if args.chunks < 2 * K:
        raise SystemExit(f"rag-ttc bench: --chunks must be at least {2 * K}, got {args.chunks}")
    try:
        report = run_ann_realistic(args.chunks, home=args.home, plot=getattr(args, "plot", None))
    except WiceError as e:  # the folder RAG_TTC_HUMAN_LABELS names is not the WiCE data: say which file and field
        raise SystemExit(f"rag-ttc bench: {ENV}: {e}") from None
    print(json.dumps(report.to_json(), indent=2) if args.json else format_report(report))
    return 0
