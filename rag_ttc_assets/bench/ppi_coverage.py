"""`ppi_coverage` and `ppi_coverage_lfqa`: does the prediction-powered 95% interval (labelling/ppi.py) cover the truth, and
is it narrower than the interval from the human labels alone? (issue 44, Validation.) Not a timing: for each setting,
the share of 1,000 repeated samples whose interval holds the known truth (target >= 0.94) and the mean width of the
prediction-powered interval over the mean width of the human-only (classical) interval at the same number of labels
(target < 1).

`ppi_coverage`: a constructed arm with known truth. N = 2,000 rows; row i has m_i requests (1 to 5) each addressed
with probability p_i ~ Beta(2, 2), its true completeness Y_i the share addressed; the truth is the mean of Y over the
N rows. Two judges read every row, biased by a known amount: f_i = clip(Y_i + 0.15 + e_i, 0, 1) with e_i ~ N(0, 0.05)
("+0.15") or N(0, 0.25) ("+0.15, noisy"). n rows in {20, 50, 100} are labelled by people (their Y read): drawn
uniformly (labelling/ppi.py ppi_mean) or stratified (labelling/label_sampling.allocate: strata by the judge's score, Neyman
allocation, each row's inclusion probability n_h / N_h recorded) through the stratified estimator
(ppi_mean_stratified; its human-only interval Cochran's stratified mean of the same labels, human_mean_stratified).

`ppi_coverage_lfqa`: LFQA-Verification (Chen, Xu, Arora and Choi, arXiv:2310.12150, 2023; read from the folder
RAG_TTC_HUMAN_LABELS names, `lfqa-verification/`; skipped, naming the variable, when it is unset), the six systems'
answers to its first LFQA_QUESTIONS questions. A row is a claim (an answer sentence), its human value the share of its
three labels `supported`, the truth the mean over every measured claim of the slice (all its labels); n rows in
{20, 50, 100} treated as labelled; the judge's score is the support judge `local/lexical`'s
verdict on the claim (judging.lexical_judge.verify_statements on the documents the claim was labelled against,
judging.claim_agreement.claim_verdicts), computed once and cached (`cache_dir()`): claims the judge drops are left out,
counted."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from rag_ttc_assets.bench.harness import log
from rag_ttc_assets.bench.labs import LabSpec
from rag_ttc_assets.bench.bench_records import Record
from rag_ttc_assets.bench.bench_registry import measurement
from rag_ttc_assets.labelling.label_sampling import allocate

HUMAN_LABELS_ENV = "RAG_TTC_HUMAN_LABELS"
CACHE_ENV = "RAG_TTC_PPI_COVERAGE_CACHE"  # where the LFQA judge's verdicts are kept (default ~/.cache/rag-ttc)
REPEATS, SEED, ROWS, SIZES = 1000, 44, 2000, (20, 50, 100)
# The first 30 of LFQA's 100 questions, all six systems' answers (about 1,200 claims): judging all 600 answers once
# takes the support judge about as long as the lab's run of them (26 min on a shared machine).
LFQA_QUESTIONS = 30
COVERAGE_TARGET, WIDTH_TARGET = 0.94, 1.0
BIAS = 0.15
JUDGES = {"+0.15": 0.05, "+0.15, noisy": 0.25}  # name -> the sd of the judge's noise around Y + BIAS


class Setting(Record):
    """One setting of the study (a judge, a sampling, n labels): the share of `repeats` samples whose
    prediction-powered interval held the truth (and the human-only interval's), the mean widths and their ratio."""

    setting: str
    n: int
    repeats: int
    truth: float
    coverage: float
    human_coverage: float
    ppi_width: float
    human_width: float
    width_ratio: float
    meets: bool


class LfqaRows(Record):
    """The LFQA slice as the study reads it (lfqa_rows, and its cache file): per claim `y` the share of its labels
    supported and `f` the support judge's verdict (1/0); claims the judge dropped, labels read, the cache key, the
    slice's questions and answers."""

    y: list[float]
    f: list[float]
    dropped: int
    labels: int
    key: str
    questions: int
    answers: int


class LfqaAbout(Record):
    """What `ppi_coverage_lfqa` measured (lfqa_study): the slice, its claims, the judge's supported share, the truth."""

    questions: int
    answers: int
    claims: int
    dropped: int
    labels: int
    judge_mean: float
    truth: float


def constructed_set(seed: int = SEED, rows: int = ROWS) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(Y, judge name -> f): the true completeness of every row and each judge's score."""
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, rows)
    m = rng.integers(1, 6, rows)
    y = rng.binomial(m, p) / m
    judges = {name: np.clip(y + BIAS + rng.normal(0, sd, rows), 0, 1) for name, sd in JUDGES.items()}
    return y, judges


def _uniform_samples(rng: np.random.Generator, big_n: int, n: int, reps: int) -> np.ndarray:
    """(reps, n) row indices, each row of the result n distinct rows drawn uniformly."""
    return np.argsort(rng.random((reps, big_n)), axis=1)[:, :n]


def _strata(f: np.ndarray) -> np.ndarray:
    """A row's stratum by the judge's score (the flow branch's stand-in: judged incomplete, partly, complete)."""
    return np.digitize(f, [1 / 3, 2 / 3])


def _stratified_samples(rng: np.random.Generator, f: np.ndarray, n: int, reps: int) -> tuple[np.ndarray, np.ndarray]:
    """(labelled (reps, N) booleans, probability (N,)): per repetition n_h rows drawn uniformly in each stratum h,
    n_h by labelling.label_sampling.allocate (Neyman, the judge's sd per stratum), each row's probability n_h / N_h."""
    strata = _strata(f)
    names = sorted(set(strata.tolist()))
    sizes = {str(h): int((strata == h).sum()) for h in names}
    sds = {str(h): float(f[strata == h].std(ddof=1)) if sizes[str(h)] > 1 else 0.0 for h in names}
    alloc = allocate(sizes, sds, n)
    labelled = np.zeros((reps, f.size), dtype=bool)
    prob = np.ones(f.size)
    for h in names:
        members = np.flatnonzero(strata == h)
        k = alloc[str(h)]
        if k == 0:
            raise ValueError(f"stratum {h} gets no label at n={n}: its rows would have probability 0")
        prob[members] = k / members.size
        picks = members[_uniform_samples(rng, members.size, k, reps)]
        np.put_along_axis(labelled, picks, True, axis=1)
    return labelled, prob


def _summary(name: str, truth: float, n: int, ppi: tuple, human: tuple) -> Setting:
    (_, lo, hi), (_, hlo, hhi) = ppi, human
    coverage = float(np.mean((lo <= truth) & (truth <= hi)))
    ratio = float(np.mean(hi - lo) / np.mean(hhi - hlo))
    return Setting(setting=name, n=n, repeats=int(lo.size), truth=float(truth), coverage=coverage,
                   human_coverage=float(np.mean((hlo <= truth) & (truth <= hhi))),
                   ppi_width=float(np.mean(hi - lo)), human_width=float(np.mean(hhi - hlo)), width_ratio=ratio,
                   meets=coverage >= COVERAGE_TARGET and ratio < WIDTH_TARGET)


def study(y: np.ndarray, judges: dict[str, np.ndarray], sizes=SIZES, reps: int = REPEATS, seed: int = SEED,
          stratified: bool = True, ppi: Callable | None = None, ppi_weighted: Callable | None = None) -> list[Setting]:
    """Per judge, n and sampling: coverage of the truth (the mean of `y` over every row) by the prediction-powered
    95% interval over `reps` samples, and its width over the human-only interval's at the same n (the classical
    interval of n labels drawn uniformly). `ppi` / `ppi_weighted` replace labelling/ppi.py's uniform and stratified
    estimators (a test plants a wrong one to see the check fail); `ppi_weighted(f, y, labelled, strata,
    probability)`."""
    from rag_ttc_assets.labelling import ppi as core_ppi  # late: scipy loads only when the study runs

    ppi = ppi or core_ppi.ppi_mean
    ppi_weighted = ppi_weighted or core_ppi.ppi_mean_stratified
    truth = float(y.mean())
    out: list[Setting] = []
    for name, f in judges.items():
        for n in sizes:
            rng = np.random.default_rng([seed, n])
            idx = _uniform_samples(rng, y.size, n, reps)
            human = core_ppi.human_mean(y[idx])
            out.append(_summary(f"judge {name}, uniform", truth, n, ppi(f, y[idx], f[idx]), human))
            if stratified:
                labelled, prob = _stratified_samples(rng, f, n, reps)
                yy = np.where(labelled, y, 0.0)
                out.append(_summary(f"judge {name}, stratified", truth, n,
                                    ppi_weighted(f, yy, labelled, _strata(f), prob), human))
    return out


def constructed_study(seed: int = SEED, reps: int = REPEATS, **kw) -> list[Setting]:
    y, judges = constructed_set(seed)
    return study(y, judges, reps=reps, seed=seed, **kw)


def _line(r: Setting) -> str:
    return (f"{r.setting}, n={r.n}: coverage {r.coverage:.3f} (target >= {COVERAGE_TARGET:g}, human-only "
            f"{r.human_coverage:.3f}); width ratio {r.width_ratio:.3f} (target < {WIDTH_TARGET:g}; PPI "
            f"{r.ppi_width:.3f}, human-only {r.human_width:.3f}): {'meets' if r.meets else 'MISSES'}")


def _item(name: str, rows: list[Setting], seconds: float, cpu: float, what: str,
          about: LfqaAbout | None = None) -> dict:
    worst_cov = min((r.coverage for r in rows), default=float("nan"))
    worst_ratio = max((r.width_ratio for r in rows), default=float("nan"))
    extra = about.to_json() if about is not None else {}
    return {"name": name, "product_s": seconds, "reference_s": None, "ratio": worst_ratio, "ratio_kind": "width",
            "product_cpu_s": cpu, "reference_cpu_s": None, "cpu_ratio": None,
            "target": f"coverage >= {COVERAGE_TARGET:g}, width < {WIDTH_TARGET:g}", "target_op": None,
            "target_value": None, "verdict": "meets" if all(r.meets for r in rows) else "misses",
            "product": what, "reference": "the human-only (classical) interval at the same n",
            "product_runs": [seconds], "reference_runs": [], "product_cpu_runs": [cpu], "reference_cpu_runs": [],
            "settings": [r.to_json() for r in rows], "notes": [_line(r) for r in rows],
            "detail": f"{len(rows)} settings x {rows[0].repeats if rows else 0} samples; worst coverage {worst_cov:.3f}, "
                      f"worst width ratio {worst_ratio:.3f}", **extra}


@measurement("ppi_coverage")
def bench_ppi_coverage(spec: LabSpec, base: Path, repeat: int) -> dict:
    t, c = time.perf_counter(), time.process_time()
    rows = constructed_study()
    return _item("ppi_coverage", rows, time.perf_counter() - t, time.process_time() - c,
                 f"labelling.ppi on a constructed arm ({ROWS} rows, judges biased +{BIAS:g}), {REPEATS} samples per setting")


# --- LFQA-Verification -----------------------------------------------------------------------------------------------

def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                / "rag-ttc" / "ppi_coverage")


def _lfqa_key(root: Path, limit: int | None) -> str:
    """The cache key: the set's files' bytes, the judge's thresholds and embedding model."""
    from rag_ttc_assets.adapters.embeddings import DEFAULT_MODEL  # late: the embedding stack
    from rag_ttc_assets.judging import lexical_judge as lj  # late: only with the set at hand

    h = hashlib.sha256()
    for p in sorted([*(root / "annotations").glob("annotations-*.json"), *(root / "docs").glob("docs-*.json")]):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    h.update(json.dumps([lj.RECALL_THRESHOLD, lj.COSINE_THRESHOLD, DEFAULT_MODEL, limit]).encode())
    return h.hexdigest()[:16]


def lfqa_rows(root: Path, limit: int | None = LFQA_QUESTIONS) -> LfqaRows:
    """The six systems' answers to the first `limit` questions (None: all 100) as the study reads them (LfqaRows);
    from the cache when the set, the slice and the judge are unchanged."""
    key = _lfqa_key(root, limit)
    path = cache_dir() / f"lfqa-{key}.json"
    if path.is_file():
        return LfqaRows.model_validate_json(path.read_text(encoding="utf-8"))
    from rag_ttc_assets.adapters.embeddings import encode_memoized  # late: loads the embedding model
    from rag_ttc_assets.adapters.lfqa_reader import read_lfqa  # late: only with the set at hand
    from rag_ttc_assets.judging.claim_agreement import claim_verdicts  # late: only with the set at hand
    from rag_ttc_assets.core.claim_sets import answer_text  # late: only with the set at hand
    from rag_ttc_assets.judging.lexical_judge import extract_claims, verify_statements  # late: only with the set at hand

    cs = read_lfqa(root, limit=limit)
    y: list[float] = []
    f: list[float] = []
    dropped, labels = 0, 0
    for system in cs.systems:
        log(f"ppi_coverage_lfqa: judging {system.arm} ({len(system.answers)} answers; cached afterwards)")
        for q, claims in system.answers.items():
            evidence = [cs.documents[d].text for d in system.evidence[q]]
            verdicts, _ = verify_statements(extract_claims(answer_text(claims)), evidence, encode_memoized)
            judged = claim_verdicts(list(enumerate(c.text for c in claims)), verdicts)
            for k, c in enumerate(claims):
                labels += len(c.labels)
                if k not in judged:
                    dropped += 1
                    continue
                y.append(sum(lab == "supported" for lab in c.labels) / len(c.labels))
                f.append(1.0 if judged[k]["supported"] else 0.0)
    out = LfqaRows(y=y, f=f, dropped=dropped, labels=labels, key=key, questions=len(cs.questions),
                   answers=sum(len(s.answers) for s in cs.systems))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(out.to_json()), encoding="utf-8")
    tmp.replace(path)
    return out


def lfqa_study(root: Path, reps: int = REPEATS, seed: int = SEED, sizes=SIZES, limit: int | None = LFQA_QUESTIONS,
               **kw) -> tuple[list[Setting], LfqaAbout]:
    data = lfqa_rows(root, limit)
    y, f = np.asarray(data.y), np.asarray(data.f)
    rows = study(y, {"support judge local/lexical": f}, sizes=sizes, reps=reps, seed=seed, **kw)
    return rows, LfqaAbout(questions=data.questions, answers=data.answers, claims=int(y.size), dropped=data.dropped,
                           labels=data.labels, judge_mean=float(f.mean()), truth=float(y.mean()))


@measurement("ppi_coverage_lfqa")
def bench_ppi_coverage_lfqa(spec: LabSpec, base: Path, repeat: int) -> dict:
    root = os.environ.get(HUMAN_LABELS_ENV)
    if not root:
        why = (f"{HUMAN_LABELS_ENV} is not set: it names the folder of public human-labelled sets "
               "(lfqa-verification/)")
        return {**_item("ppi_coverage_lfqa", [], 0.0, 0.0, "labelling.ppi on LFQA-Verification's claims"),
                "product_s": None, "product_cpu_s": None, "product_runs": [], "product_cpu_runs": [], "ratio": None,
                "verdict": "skipped", "notes": [why], "detail": "skipped"}
    t, c = time.perf_counter(), time.process_time()
    try:
        rows, about = lfqa_study(Path(root) / "lfqa-verification")
    except (OSError, ValueError) as e:  # the adapter's LfqaError names the file, the record and the field
        raise SystemExit(f"rag-ttc: error: bench ppi_coverage_lfqa: {HUMAN_LABELS_ENV}={root}: {e}") from None
    item = _item("ppi_coverage_lfqa", rows, time.perf_counter() - t, time.process_time() - c,
                 "labelling.ppi on LFQA-Verification's claims, the support judge local/lexical", about)
    item["notes"].insert(0, f"LFQA-Verification (Chen et al., 2023), the six systems' answers to its first "
                            f"{about.questions} questions: {about.answers} answers, {about.claims} claims "
                            f"measured ({about.dropped} dropped by the judge), {about.labels} labels; truth (the "
                            f"share of labels supported, per claim, averaged) {about.truth:.3f}, the judge's "
                            f"supported share {about.judge_mean:.3f}")
    return item
