"""`rag-ttc bench --growth`: how each step of the retrieval side grows with the corpus.

For each chunk count (default 1,000, 5,000, 10,000, 25,000 and 50,000 chunks of the baseline arm's
chunking) a synthetic dataset is written with `labs.write_scaled_dataset`, taking the smallest
number of documents that gives at least that many chunks (the seeded generator makes every
smaller dataset a prefix of a larger one), in a child of its own (`write_size`). Each size then runs
in a fresh child process started by a parent that never held a corpus, so the peak resident memory
is that size's alone, and times the product's own functions, in order:

    dataset         stages.ingest.bind_dataset as every asset calls it: the dataset was parsed and
                    validated once in the warm-up, so this is core.dataset's in-process cache
                    check (read and digest both files)
    chunking        stages.ingest.build_chunks (chunk, Parquet, manifest) in a fresh store
    representations stages.ingest.build_representations
    tantivy         stages.indexes.build_bm25 (Tantivy index)
    embedding       adapters.embeddings.encode over the representation texts (as build_vectors calls it)
    lancedb         adapters.vectors.build_table (the LanceDB table build_vectors writes)
    retrieval       stages.retrieval.retrieve for every question (a fixed set: the bundled questions)
    admission       the chunks gold evidence and the ranked lists name, admit, request_support, request_coverage
                    (the admitted_contexts asset)

The model is loaded and the question embeddings built before any timing. Every step but embedding runs
`--repeat` rounds (default 3), each into a fresh store so each build is a build, and reports the median;
embedding runs once. Embedding all-MiniLM-L6-v2
on a 2-core CPU runs at roughly 20 chunks a second, so sizes above `embed_max` chunks are not embedded:
their `embedding` cell is "-" and their LanceDB table holds seeded random unit vectors of the model's
dimension (a flat LanceDB table's write and exhaustive cosine search cost the same whatever the
values; the ranked lists of those sizes mean nothing and are not reported). Such sizes are marked
in the table.

The growth exponent between two sizes is log(t2 / t1) / log(n2 / n1), n the chunk count: ~1 is
linear, ~2 quadratic, below 1 a fixed cost still dominating. Exponents above 1.3 are flagged.

The vectors reach LanceDB in slices (`vectors.build_table_batches`), the random ones written to a file once per
size (untimed) and read back a slice at a time, so no size holds a whole-corpus float matrix or list of IDs.
Below the table, issue 46's targets: the child's peak resident memory at the largest size (and, below a million
chunks, extrapolated to a million along the line through the two largest sizes) against 4 GB, and each step's
exponent from the smallest to the largest size, in CPU seconds, against its target (admission <= 1.05, the others
<= 1.15). Printed, never asserted.
"""

from __future__ import annotations

import gc
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from rag_ttc_assets.adapters import embeddings, torch_embeddings, vectors
from rag_ttc_assets.adapters.store import Built
from rag_ttc_assets.bench import harness, labs
from rag_ttc_assets.bench.bench_records import Record
from rag_ttc_assets.core.chunking import chunk_text
from rag_ttc_assets.core.corpus_table import parse_corpus
from rag_ttc_assets.core.tables import Table

DEFAULT_CHUNKS = (1_000, 5_000, 10_000, 25_000, 50_000)
DEFAULT_EMBED_MAX = 10_000
STEPS = ("dataset", "chunking", "representations", "tantivy", "embedding", "lancedb", "retrieval", "admission")
SUPERLINEAR = 1.3
# Issue 46's targets, printed beside the measured figures (never asserted): the child's peak resident memory at a
# million chunks, and each step's growth exponent over the whole measured range (smallest to largest size).
PEAK_TARGET_MB = 4096
TARGET_CHUNKS = 1_000_000
EXPONENT_TARGETS = {"admission": 1.05}
EXPONENT_TARGET_OTHERS = 1.15  # "as linear as today": 0.94 to 1.11 from 50,000 to 1,000,000 chunks before streaming
TARGET_STEPS = ("chunking", "representations", "tantivy", "lancedb", "retrieval", "admission")
MIN_SECONDS_FOR_EXPONENT = 0.05  # below this a time is mostly noise; its exponent is shown in parentheses


class GrowthSize(Record):
    """One size as its child measured it (growth_child): the median seconds (wall and CPU) of each step in STEPS
    (None: not run), every round's wall seconds, and the child's resident memory after the warm-up and at its peak."""

    documents: int
    chunks: int
    questions: int
    embedded: bool
    repeat: int
    seconds: dict[str, float | None]
    cpu_seconds: dict[str, float | None]
    runs: dict[str, list[float]]
    rss_base_mb: float | None
    peak_rss_mb: float
    peak_over_base_mb: float | None
    target_chunks: int | None = None  # the size asked for (run_growth); `chunks` is what the documents gave


class Exponents(Record):
    """Each step's growth exponent between two consecutive sizes (and peak_over_base_mb's)."""

    from_: int = Field(alias="from")
    to: int
    exponents: dict[str, float | None]


class GrowthReport(Record):
    """`rag-ttc bench --growth`'s report (run_growth)."""

    arm: str
    chunk_runes: int
    overlap_runes: int
    embed_max: int
    repeat: int
    cpus: int | None
    python: str
    total_seconds: float
    sizes: list[GrowthSize]
    exponents: list[Exponents]
    home: str | None


@dataclass(frozen=True)
class Target:
    """A figure issue 46 sets a target for (targets): measured (`figure`; None: not measured), its target, unit
    (MB or exponent), and for an exponent the wall-seconds one beside it."""

    name: str
    figure: float | None
    target: float
    unit: str
    wall: float | None = None
    detail: str | None = None

    @property
    def measured(self) -> str:
        return "-" if self.figure is None else f"{self.figure:.{0 if self.unit == 'MB' else 2}f}"

    @property
    def verdict(self) -> str:
        return "-" if self.figure is None else ("meets" if self.figure <= self.target else "NOT met")


def parse_sizes(text: str) -> list[int]:
    """'1000,5k,10000' -> [1000, 5000, 10000] (sorted, unique, positive)."""
    out = []
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        mult = 1000 if part.lower().endswith("k") else 1
        value = int(float(part[:-1]) * mult) if mult != 1 else int(part)
        if value < 1:
            raise ValueError(f"chunk counts must be positive, got {part!r}")
        out.append(value)
    if not out:
        raise ValueError("no chunk counts given")
    return sorted(set(out))


def documents_for(chunk_targets: list[int], chunk_runes: int, overlap_runes: int) -> dict[int, tuple[int, int]]:
    """chunk target -> (documents, chunks): the smallest synthetic prefix with at least that many chunks."""
    top = max(chunk_targets)
    n_docs = max(8, top)  # a bundled paragraph mix gives >= ~1 chunk per document: an upper bound
    with tempfile.TemporaryDirectory(prefix="rag-ttc-growth-cal-") as tmp:
        while True:
            path = labs.write_scaled_dataset(Path(tmp) / f"cal-{n_docs}", n_docs)
            corpus = parse_corpus((path / "corpus.json").read_bytes())
            if corpus is None:
                raise ValueError(f"{path / 'corpus.json'}: the synthetic corpus does not parse as a corpus")
            out: dict[int, tuple[int, int]] = {}
            total, pending = 0, sorted(chunk_targets)
            for i, (doc_id, text) in enumerate(corpus.id_texts(), start=1):
                total += len(chunk_text(doc_id, text, chunk_runes, overlap_runes))
                while pending and total >= pending[0]:
                    out[pending.pop(0)] = (i, total)
                if not pending:
                    return out
            n_docs *= 2


def growth_child(spec_json: str, home: str, embed: bool, repeat: int = 3, seed: int = labs.SCALE_SEED) -> dict:
    """In a fresh process: time every step for one size (see the module docstring); return the record (a
    GrowthSize's JSON: it crosses back to the parent as JSON)."""
    import numpy as np
    import polars as pl

    from rag_ttc_assets.stages import coverage, indexes, ingest  # late: polars loads only when this runs
    from rag_ttc_assets.stages import retrieval as stage  # late: polars, pytrec_eval load only when this runs

    spec = labs.LabSpec.from_json(spec_json)
    lab = spec.lab(Path(home))
    cfg = lab.arms[labs.ARM]
    # Untimed warm-up: imports, the model, the question embeddings (a fixed cost, not a growing one).
    torch_embeddings.load(cfg.embedding_model)
    dim = embeddings.dimension(cfg.embedding_model)
    qemb = indexes.build_question_embeddings(lab.store, cfg, ingest.bind_dataset(lab.datasets_dir, cfg))
    vectors._lancedb()  # lancedb's and tantivy's imports are a fixed cost, not a growing one
    import tantivy  # noqa: F401
    rss_base = harness.rss_mb()
    runs: dict[str, list[tuple[float, float]]] = {s: [] for s in STEPS}

    def timed(name, fn):
        gc.collect()
        with harness.Stopwatch() as sw:
            value = fn()
        runs[name].append(sw.timing)
        harness.log(f"growth: {name} {sw.wall:.3f}s")
        return value

    vecs = None
    for i in range(repeat):
        # Each round builds into a fresh store, so every build is a build, never a cache hit.
        lab_i = spec.lab(Path(home) / f"round-{i}")
        ds = timed("dataset", lambda: ingest.bind_dataset(lab_i.datasets_dir, cfg))
        ch = timed("chunking", lambda: ingest.build_chunks(lab_i.store, cfg, ds))
        reps = timed("representations", lambda: ingest.build_representations(lab_i.store, cfg, ds, ch))
        bm = timed("tantivy", lambda: indexes.build_bm25(lab_i.store, cfg, reps))
        # Streamed: the representation rows are read in slices of vectors.BATCH_ROWS (IDs, and texts only when
        # embedding), and the random vectors are written to a file once and read back a slice at a time, so the
        # round never holds a whole-corpus Python list of IDs or texts, nor the whole float matrix (a million
        # 384-d vectors are 1.5 GB).
        reps_file = reps.path / "representations.parquet"
        if embed and vecs is None:  # once: it dominates, and its time is steady
            texts = pl.read_parquet(reps_file, columns=["text"])["text"].to_list()
            vecs = timed("embedding", lambda: embeddings.encode(texts, cfg.embedding_model))
            del texts

        raw = Path(home) / "growth-vectors.f32"  # the random vectors, written once (untimed), read a slice at a time
        if not embed and not raw.exists():
            rng = np.random.default_rng(seed)
            with open(raw, "wb") as f:
                for _, part in _slices(reps_file, ["chunk_id"]):
                    v = rng.standard_normal((part.height, dim), dtype=np.float32)
                    v /= np.linalg.norm(v, axis=1, keepdims=True)
                    v.tofile(f)

        def vector_batches():
            for start, part in _slices(reps_file, ["chunk_id"]):
                ids = part["chunk_id"].to_list()
                if embed:
                    yield ids, vecs[start:start + len(ids)]
                else:
                    yield ids, np.fromfile(raw, np.float32, len(ids) * dim, offset=start * dim * 4).reshape(-1, dim)

        vec_dir = Path(home) / f"round-{i}" / "growth-vectors"
        timed("lancedb", lambda: vectors.build_table_batches(vec_dir / "lancedb", vector_batches(), dim))
        vec = Built("vector_index", vec_dir, "", "", False, {})
        # The chunk -> document map retrieval reads, as stages.retrieval.retrieve_once builds it.
        chunk_docs = dict(pl.read_parquet(ch.path / "chunks.parquet", columns=["chunk_id", "doc_id"]).iter_rows())
        rows = timed("retrieval", lambda: stage.retrieve(cfg, ds, bm, vec, qemb, chunk_docs))
        del chunk_docs

        def admission():  # as the admitted_contexts asset reads its chunks (stages.resolve.ArmInputs)
            questions = stage.arm_questions(cfg, ds)
            docs = {ev.doc_id for q in questions for r in q.requests for ev in r.evidence}
            support = coverage.request_support(ds, questions, ingest.read_chunks(ch, docs))
            ranked = {c for ids in rows[Table.RETRIEVAL_ROWS.c.ranked_chunk_ids].to_list() for c in ids}
            contexts = stage.admit(cfg, rows, ingest.chunk_texts(ch, ranked), questions, support)
            return coverage.request_coverage(questions, support, rows, contexts)

        timed("admission", admission)
    peak = harness.maxrss_mb()

    def med(name, k):
        return statistics.median(t[k] for t in runs[name]) if runs[name] else None

    return GrowthSize(
        documents=len(ds.corpus), chunks=int(ch.manifest["info"]["chunks"]), questions=rows.height, embedded=embed,
        repeat=repeat, seconds={s: med(s, 0) for s in STEPS}, cpu_seconds={s: med(s, 1) for s in STEPS},
        runs={s: [t[0] for t in v] for s, v in runs.items()}, rss_base_mb=rss_base, peak_rss_mb=peak,
        peak_over_base_mb=(peak - rss_base) if rss_base is not None else None).to_json()


def _slices(parquet: Path, columns: list[str]):
    """(first row, frame) for each slice of vectors.BATCH_ROWS rows of `columns` of a Parquet file, read lazily."""
    import pyarrow.parquet as pq  # late: the bench's child only
    import polars as pl

    rows = pq.ParquetFile(parquet).metadata.num_rows
    lazy = pl.scan_parquet(parquet).select(columns)  # typed by the file's schema, never by its first rows
    for start in range(0, rows, vectors.BATCH_ROWS):
        yield start, lazy.slice(start, vectors.BATCH_ROWS).collect()


def write_size(root: str, n_docs: int) -> dict:
    """In a child of its own: write one size's synthetic dataset and arms file under `root`; return the lab spec
    (`LabSpec.as_json`). Writing a million chunks' corpus peaks at about 5.8 GB, and a child started by a parent that
    large reports that peak as its own (ru_maxrss survives fork and exec), as the measured size's child did."""
    return labs.scaled_spec(Path(root), n_docs).as_json()


def _run_child(spec: dict, home: Path, embed: bool, repeat: int) -> GrowthSize:
    return GrowthSize.model_validate(harness.run_child(
        "growth.growth_child", [json.dumps(spec), str(home), embed, repeat], "growth", stream_stderr=True))


def exponent(t1: float | None, t2: float | None, n1: int, n2: int) -> float | None:
    if not t1 or not t2 or t1 <= 0 or t2 <= 0 or n1 == n2:
        return None
    return math.log(t2 / t1) / math.log(n2 / n1)


def run_growth(chunks: list[int] | None = None, embed_max: int = DEFAULT_EMBED_MAX,
               home: str | Path | None = None, repeat: int = 3) -> GrowthReport:
    """Measure every size (smallest first); return the report with per-step exponents."""
    sizes = sorted(set(chunks or DEFAULT_CHUNKS))
    owned = home is None
    base = Path(tempfile.mkdtemp(prefix="rag-ttc-growth-")) if owned else Path(home).expanduser().resolve()
    base.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        arms = labs.bundled_spec().lab(base / "probe").arms[labs.ARM]
        # In a child of its own: the calibration parses a corpus as large as the largest size, and a child forked
        # from a parent that large starts with its peak resident memory (ru_maxrss survives fork and exec), so
        # every smaller size would report the calibration's peak, not its own.
        plan = {int(k): tuple(v) for k, v in harness.run_child(
            "growth.documents_for", [sizes, arms.chunk_runes, arms.overlap_runes], "growth calibration").items()}
        results = []
        for target in sizes:
            n_docs, expected = plan[target]
            embed = expected <= embed_max
            harness.log(f"growth: {target} chunks -> {n_docs} documents ({expected} chunks), "
                       f"{'embedding' if embed else 'random vectors, embedding not measured'}")
            root = harness.fresh_home(base, f"size-{target}")
            spec = harness.run_child("growth.write_size", [str(root), n_docs], "growth dataset")
            results.append(_run_child(spec, root / "home", embed, repeat).model_copy(update={"target_chunks": target}))
            shutil.rmtree(root, ignore_errors=True)
        exps = []
        for a, b in zip(results, results[1:]):
            e = {**{s: exponent(a.seconds[s], b.seconds[s], a.chunks, b.chunks) for s in STEPS},
                 "peak_over_base_mb": exponent(a.peak_over_base_mb, b.peak_over_base_mb, a.chunks, b.chunks)}
            exps.append(Exponents(from_=a.chunks, to=b.chunks, exponents=e))
        return GrowthReport(arm=labs.ARM, chunk_runes=arms.chunk_runes, overlap_runes=arms.overlap_runes,
                            embed_max=embed_max, repeat=repeat, cpus=os.cpu_count(), python=sys.version.split()[0],
                            total_seconds=time.perf_counter() - started, sizes=results, exponents=exps,
                            home=None if owned else str(base))
    finally:
        if owned:
            shutil.rmtree(base, ignore_errors=True)


def _short(n: int) -> str:
    return f"{n / 1000:g}k" if n >= 1000 else str(n)


def format_growth(report: GrowthReport) -> str:
    sizes, exps = report.sizes, report.exponents
    head = ["step"] + [f"{s.chunks:,}" + ("" if s.embedded else "*") for s in sizes] \
        + [f"b {_short(e.from_)}-{_short(e.to)}" for e in exps]

    def exp_cell(e: float | None, small: bool) -> str:
        if e is None:
            return "-"
        text = f"{e:.2f}" + ("!" if e > SUPERLINEAR and not small else "")
        return f"({text})" if small else text

    rows = [["documents"] + [f"{s.documents:,}" for s in sizes] + [""] * len(exps),
            ["questions"] + [str(s.questions) for s in sizes] + [""] * len(exps)]
    for step in STEPS:
        cells = [step] + ["-" if (t := s.seconds[step]) is None else f"{t:.3f}" for s in sizes]
        for a, b, e in zip(sizes, sizes[1:], exps):
            small = min(a.seconds[step] or 0, b.seconds[step] or 0) < MIN_SECONDS_FOR_EXPONENT
            cells.append(exp_cell(e.exponents[step], small))
        rows.append(cells)
    rows.append(["peak_rss_mb"] + [f"{s.peak_rss_mb:.0f}" for s in sizes] + [""] * len(exps))
    rows.append(["peak_over_base_mb"] + [f"{s.peak_over_base_mb:.0f}" for s in sizes]
                + [exp_cell(e.exponents["peak_over_base_mb"], False) for e in exps])
    cells = [head] + rows
    widths = [max(len(r[c]) for r in cells) for c in range(len(head))]
    lines = ["  ".join(v.ljust(w) if c == 0 else v.rjust(w) for c, (v, w) in enumerate(zip(r, widths))).rstrip()
             for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    notes = [f"growth of the {report.arm} arm's retrieval side ({report.chunk_runes}/{report.overlap_runes}-rune "
             f"chunks), median wall seconds per step over {report.repeat} rounds in fresh stores (embedding: "
             f"one round), one child process per size; {report.cpus} CPUs; "
             f"total {report.total_seconds:.0f} s",
             *lines, "",
             "b a-b = growth exponent log(t_b / t_a) / log(n_b / n_a) over chunk counts: ~1 linear, ~2 quadratic; "
             f"'!' marks > {SUPERLINEAR}; (parenthesized) when a time is under {MIN_SECONDS_FOR_EXPONENT} s (noise)"]
    if any(not s.embedded for s in sizes):
        notes.append(f"* not embedded (embedding measured up to {report.embed_max:,} chunks): LanceDB and "
                     "retrieval ran on seeded random unit vectors of the model's dimension")
    notes.append("peak_rss_mb: the child's peak resident memory; peak_over_base_mb: its growth over the resident "
                 "memory after imports, the model and the question embeddings")
    if len(sizes) > 1:
        notes += ["", *format_targets(report)]
    return "\n".join(notes)


def targets(report: GrowthReport) -> list[Target]:
    """The figures issue 46 sets targets for, from the report: the peak at the largest size (and, below a million
    chunks, its straight-line extrapolation from the two largest sizes), and each step's whole-range exponent in
    wall and CPU seconds (the verdict on CPU seconds: a shared machine's load moves wall time, not CPU time)."""
    sizes = report.sizes
    a, b = sizes[0], sizes[-1]
    span = f"{a.chunks:,} to {b.chunks:,} chunks"
    out = [Target(f"peak_rss_mb at {b.chunks:,} chunks", b.peak_rss_mb, PEAK_TARGET_MB, "MB")]
    if b.chunks < TARGET_CHUNKS and len(sizes) > 1:
        p, q = sizes[-2], sizes[-1]
        slope = (q.peak_rss_mb - p.peak_rss_mb) / (q.chunks - p.chunks)
        out.append(Target(f"peak_rss_mb at {TARGET_CHUNKS:,} chunks, extrapolated",
                          q.peak_rss_mb + slope * (TARGET_CHUNKS - q.chunks), PEAK_TARGET_MB, "MB",
                          detail=f"a line through {p.chunks:,} and {q.chunks:,}: {slope * 1000:.2f} MB per 1,000 "
                                 "chunks"))
    for step in TARGET_STEPS:
        wall = exponent(a.seconds[step], b.seconds[step], a.chunks, b.chunks)
        cpu = exponent(a.cpu_seconds[step], b.cpu_seconds[step], a.chunks, b.chunks)
        out.append(Target(f"{step} exponent, {span}", cpu, EXPONENT_TARGETS.get(step, EXPONENT_TARGET_OTHERS),
                          "exponent", wall=wall))
    return out


def format_targets(report: GrowthReport) -> list[str]:
    rows = [["figure", "measured", "wall", "target", "verdict"]]
    for t in targets(report):
        rows.append([t.name, t.measured, "" if t.wall is None else f"{t.wall:.2f}", f"<= {t.target:g}", t.verdict])
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return ["issue 46 targets: peak resident memory of the child (MB), and each step's growth exponent over the "
            "whole range in CPU seconds (measured; its wall-seconds exponent beside it)", *lines,
            *[f"{t.name}: {t.detail}" for t in targets(report) if t.detail]]


def cmd_growth(args) -> int:
    report = run_growth(parse_sizes(args.growth), embed_max=args.growth_embed_max, home=args.home,
                        repeat=args.repeat)
    print(json.dumps(report.to_json(), indent=2, default=str) if args.json else format_growth(report))
    return 0
