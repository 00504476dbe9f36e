"""Human labels beside the judges: which labels file a case report or a diagnosis reads, the people's per-request
labels of each case (several annotators all kept), and the judge's completeness corrected by them
(labelling.ppi, prediction-powered) for a compared pair.

Where labels come from: the file named (`--labels FILE` on `rag-ttc report` and `rag-ttc diagnose`), else the
store's default `annotations/labels.jsonl` (where `rag-ttc annotate` writes) when it exists, else none. The Dagster
assets (`arm_comparisons`, `diagnosis`) read the default file the same way, and record its sha256 with what they
wrote: a labels file is an input the report read. Labels reach only the report and the diagnosis, never an answer
generator or a retrieval.
"""

from __future__ import annotations

import hashlib
import statistics
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING

from rag_ttc_assets.labelling import human_labels as hl
from rag_ttc_assets.diagnosis.diagnosis_inputs import HumanCorrection, Interval, LabelCorrections
from rag_ttc_assets.core.jsonl import json_lines
from rag_ttc_assets.core.run_records import RunFolders

if TYPE_CHECKING:
    from rag_ttc_assets.adapters.store import ArtifactStore
    from rag_ttc_assets.core.arms_file import Arms

DEFAULT = Path("annotations") / "labels.jsonl"  # under the store's root, as `rag-ttc annotate` writes it


def default_path(store: ArtifactStore) -> Path:
    return store.root / DEFAULT


def resolve(store: ArtifactStore, path: str | Path | None) -> Path | None:
    """The labels file to read: `path` when given (it must exist), else the store's default when it exists."""
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise hl.LabelsError([hl.LabelProblem(str(p), "(file)", "(file)", "file not found")])
        return p
    p = default_path(store)
    return p if p.is_file() else None


class HumanLabels:
    """A labels file read and checked once (labelling.human_labels.parse_labels against the catalog of the arms it
    may name, `catalog_of()`, built only when the file is UTF-8 text: a bad file is refused naming file, line and
    field), its records, and its sha256."""

    def __init__(self, path: Path, catalog_of: Callable[[], hl.Catalog], strict: bool = True):
        raw = path.read_bytes()
        self.path = path
        self.sha256 = "sha256:" + hashlib.sha256(raw).hexdigest()
        self.not_read: str | None = None
        try:
            text = raw.decode("utf-8")
            self.labels = hl.parse_labels(text, str(path), catalog_of())
        except (hl.LabelsError, UnicodeDecodeError) as e:
            if strict:
                if isinstance(e, UnicodeDecodeError):
                    raise hl.LabelsError([hl.LabelProblem(str(path), f"byte {e.start}", "(file)",
                                                          "not UTF-8 text")]) from None
                raise
            # The store's default file, read without being asked for (an asset, a report without --labels): a
            # labelling round on arms or questions this lab no longer has must not stop the report. Nothing of it is
            # read; why is recorded with its digest and said where the labels would be.
            self.labels, self.records = hl.Labels([], []), []
            self.not_read = (str(e) if isinstance(e, hl.LabelsError) else f"{path}: byte {e.start}: not UTF-8 text")
            return
        self.records = [rec for _, rec, _ in json_lines(text)]

    def summary(self) -> dict:
        requests = [r for r in self.records if r.get("kind") == "request"]
        out = {"path": str(self.path), "sha256": self.sha256, "request_labels": len(requests),
               "annotators": sorted({r["annotator"] for r in requests})}
        if self.not_read:
            out["not_read"] = self.not_read
        return out

    def by_case(self, arm: str) -> dict[str, dict[str, list[hl.RequestLabel]]]:
        """question -> request -> the people's labels of `arm`'s answer (every annotator, in file order)."""
        out: dict[str, dict[str, list[hl.RequestLabel]]] = {}
        for r in self.labels.requests:
            if r.arm == arm:
                out.setdefault(r.question, {}).setdefault(r.request, []).append(r)
        return out


def read(store: ArtifactStore, path: str | Path | None, *, arms: Arms, arms_file: Path,
         datasets_dir: Path) -> HumanLabels | None:
    """The labels a report or diagnosis reads (resolve), checked against the `arms` of `arms_file`, their questions
    (under `datasets_dir`) and the answer rows in `store`; None when there are none. A file named is refused when bad
    (LabelsError naming file, line and field); the default file, when bad, is kept unread with `not_read` saying why,
    so an asset or a report that did not ask for it still runs."""
    p = resolve(store, path)
    if p is None:
        return None

    def catalog_of() -> hl.Catalog:
        from rag_ttc_assets.judging.judge_agreement_stage import catalog, read_arm_rows  # late: polars

        return catalog(read_arm_rows(store, datasets_dir, arms), arms_file)

    return HumanLabels(p, catalog_of, strict=path is not None)


def current_run_id(runs: RunFolders, arm: str) -> str | None:
    """The run the arm's rows now come from, as the labelling page reads it (labelling.annotate_stage)."""
    from rag_ttc_assets.labelling.annotate_stage import current_run_id  # late: polars (stages.inspect)

    return current_run_id(runs, arm)


def case_labels(labels: list[hl.RequestLabel], run_id: str | None, answer_sha256: str | None) -> list[dict]:
    """The shown fields of one request's labels: the person's case (or, for a label written by hand without one,
    its `addressed` and `verdict`), annotator, note, gold quote, and `older` when the label was made on an older run
    of the arm (its run_id is not the arm's current run) or on another answer (its answer_sha256 differs)."""
    out = []
    for r in labels:
        p, older = r.provenance, None
        if p.run_id and run_id and p.run_id != run_id:
            older = f"on an older answer: labelled on run {p.run_id}; the row now comes from run {run_id}"
            if p.answer_sha256 and answer_sha256 and p.answer_sha256 != answer_sha256:
                older += ", with another answer"
        elif p.answer_sha256 and answer_sha256 and p.answer_sha256 != answer_sha256:
            older = "on an older answer: the answer labelled is not the answer the arm now gives"
        case = p.case or f"addressed {str(r.addressed).lower()}" + (f", verdict {r.verdict}" if r.verdict else "")
        out.append({"annotator": r.annotator, "case": case, "addressed": r.addressed, "verdict": r.verdict,
                    "note": p.note or "", "quote": p.quote, "quote_chunk_id": p.quote_chunk_id, "older": older,
                    "line": r.line})
    return out


# -- the corrected difference of a compared pair (the diagnosis) ------------------------------------------------------

def corrected_difference(f: dict, y: dict, p: dict, a: str, b: str, s: dict | None = None) -> dict | None:
    """b - a corrected by the labels, by the same estimator `rag-ttc accept` uses (the one place a difference is
    estimated for the diagnosis): paired per question where the arms answer the same questions and at least two are
    labelled in both (labelling.ppi_difference.paired_difference), else each arm's own estimate
    (independent_difference). `f`, `y`, `p`, `s`: arm -> question -> the judge's completeness, the people's, the
    recorded sampling probability and stratum."""
    from rag_ttc_assets.labelling import ppi_difference  # late: numpy and scipy

    s = s or {a: {}, b: {}}
    return (ppi_difference.paired_difference(f[b], f[a], y[b], y[a], p[b], p[a], s_arm=s[b], s_base=s[a])
            or ppi_difference.independent_difference(f[b], f[a], y[b], y[a], p[b], p[a], s_arm=s[b], s_base=s[a]))


def _interval(d: dict | None) -> Interval | None:
    """A difference's mean and interval as the diagnosis reads them (the estimate's other fields stay here)."""
    return None if not d else Interval(mean=d["mean"], low=d["low"], high=d["high"])


def judge_difference(judge_a: list[float], judge_b: list[float], z: float = 1.959963984540054) -> dict | None:
    """b - a of the judge's own completeness over every row it measured whole, with the normal 95% interval of a
    difference of two means (independent samples, as corrected_difference reads the corrected one)."""
    if len(judge_a) < 2 or len(judge_b) < 2:
        return None
    d = statistics.fmean(judge_b) - statistics.fmean(judge_a)
    se = (statistics.variance(judge_a) / len(judge_a) + statistics.variance(judge_b) / len(judge_b)) ** 0.5
    return {"mean": d, "low": d - z * se, "high": d + z * se}


def pair_corrections(store: ArtifactStore, labels: HumanLabels, pairs: list[tuple[str, str]]) -> list[HumanCorrection]:
    """Per compared pair whose two arms both carry per-request labels, and per request judge that scored both: the
    judge's difference b - a over all its rows, and the difference corrected by the labels (labelling.ppi)."""
    from rag_ttc_assets.labelling import ppi  # late: numpy and scipy
    from rag_ttc_assets.judging.judge_agreement_stage import read_judgments, row_completeness  # late: polars

    labelled = {lab_.arm for lab_ in labels.labels.requests}
    wanted = [(a, b) for a, b in pairs if a in labelled and b in labelled]
    if not wanted:
        return []
    # The judge's completeness of each row as `accept` and `judge-agreement` read it (abstentions 0).
    judges = row_completeness(read_judgments(store, {x for p in wanted for x in p}))
    human = ppi.human_row_completeness(labels.labels.requests)
    sampling = ppi.recorded_sampling(labels.records)
    out = []
    for a, b in wanted:
        p = {arm: sampling.of(arm)[0] for arm in (a, b)}
        st = {arm: sampling.of(arm)[1] for arm in (a, b)}
        for name in sorted(judges):
            f = {arm: {q: s for (x, q), s in judges[name].items() if x == arm and s is not None} for arm in (a, b)}
            if not f[a] or not f[b]:
                continue
            y = {arm: {q: v for q, v in human.get(arm, {}).items() if q in f[arm]} for arm in (a, b)}
            est = corrected_difference(f, y, p, a, b, st) or {}
            judged = est.get("judge") or judge_difference(list(f[a].values()), list(f[b].values()))
            out.append(HumanCorrection(
                a=a, b=b, judge=name, judge_difference=_interval(judged), corrected=_interval(est.get("ppi")),
                estimator=est.get("estimator"), labels=sum(1 for x in labels.labels.requests if x.arm in (a, b)),
                labelled={arm: len(y[arm]) for arm in (a, b)}, rows={arm: len(f[arm]) for arm in (a, b)},
                weighting=est.get("weighting")))
    return out


def corrections(store: ArtifactStore, labels: HumanLabels | None, pairs: list[tuple[str, str]]) -> LabelCorrections:
    """What a diagnosis reads of the labels (the `label_corrections` asset, `rag-ttc diagnose`): the file read and
    the corrected differences of the compared `pairs` (pair_corrections); nothing when there is no labels file."""
    if labels is None:
        return LabelCorrections()
    return LabelCorrections(human_labels=labels.summary(), corrections=pair_corrections(store, labels, pairs))
