"""Read what a case report shows from the store, each table once per arm, and hand the rows to `model`."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rag_ttc_assets.adapters.message_archive import MessageArchiveError
from rag_ttc_assets.adapters.report_server import annotate_url
from rag_ttc_assets.adapters.store import ArmJson, ArtifactStore, Built, Table
from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.labelling.annotation import annotate_command, answer_sha256
from rag_ttc_assets.core.chunking import Chunk
from rag_ttc_assets.core.compare_records import PairReport
from rag_ttc_assets.core.compare_metrics import DIRECTIONS
from rag_ttc_assets.diagnosis.completeness import judge_grades
from rag_ttc_assets.core.request_derivation import describe
from rag_ttc_assets.diagnosis.flow import FLOW_BRANCHES
from rag_ttc_assets.core.records import Question
from rag_ttc_assets.core.run_records import RunFolders
from rag_ttc_assets.labelling import human_page
from rag_ttc_assets.report import model
from rag_ttc_assets.stages.arm_comparisons import arm_title
from rag_ttc_assets.core.tables import QUERY_ID
from rag_ttc_assets.stages.case_sources import CaseSources

ANS = Table.ANSWERS.c  # the declared column names (core.tables)


class ReportError(LookupError):
    """A table or archived request the report needs is missing or unreadable (names the arm, table and row)."""


@dataclass(frozen=True)
class ArmSide:
    """One arm as a case report shows it: its questions, every case's view (`model.arm_case`, keyed by question
    id), its chunks and their digest (arms of one chunking share a chunk table), and its instruments (`info`)."""

    arm: str
    questions: list[Question]
    views: dict[str, dict]
    chunks: list[Chunk]
    chunks_digest: str
    info: dict  # the page's arm header (arm_info), as the page reads it
    title: str  # as tables show the arm


def _by(rows, key: str = QUERY_ID.name) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(r[key], []).append(r)
    return out


def _one(rows) -> dict[str, dict]:
    return {r[QUERY_ID.name]: r for r in rows}


def _sent(store: ArtifactStore, arm: str, qid: str, digests) -> list[dict]:
    sent = []
    for i, d in enumerate(digests or []):
        try:
            sent.append(store.messages.get(d))
        except (MessageArchiveError, ValueError) as e:
            raise ReportError(f"arm {arm!r}, table 'answers', row {qid!r}, field 'messages_digests'[{i}]: {e}") from None
    return sent


def _human_of(arm: str, labels: human_page.HumanLabels | None, run_id: str | None, views: dict) -> None:
    """Each case's people's labels beside its judges (view["human"]: request -> labels), each flagged when made on
    an older run (the arm's rows now come from run `run_id`) or another answer of the arm."""
    if labels is None:
        return
    for qid, by_request in labels.by_case(arm).items():
        view = views.get(qid)
        if view is None:
            continue
        sha = answer_sha256(view)
        view["human"] = {rid: human_page.case_labels(labs, run_id, sha) for rid, labs in by_request.items()}


ArmViews = Callable[[str, human_page.HumanLabels | None], ArmSide]
"""One arm's ArmSide, read when called, with the people's labels given beside the judges (arm_views over the arm's
CaseSources, stages.resolve.case_sources): how a page writer reads the arms it shows."""


def arm_views(sources: CaseSources, store: ArtifactStore, runs: RunFolders,
              labels: human_page.HumanLabels | None = None) -> ArmSide:
    """Every case of one arm as `model.arm_case` sees it, the arm's questions and chunks (`sources`), its tables read
    from `store`, and its instruments; with `labels`, the people's labels of its cases beside the judges, flagged
    against the arm's current run (read from `runs`)."""
    arm, cfg = sources.arm, sources.cfg
    chunks = sources.chunks
    texts = {c.chunk_id: c.text for c in chunks}
    retrieval = _one(store.read_table(arm, Table.RETRIEVAL_ROWS).iter_rows(named=True))
    contexts = _one(sources.contexts().iter_rows(named=True))
    answers = _one(store.read_table(arm, Table.ANSWERS).iter_rows(named=True))
    contracts = _one(store.read_table(arm, Table.CONTRACT_RESULTS).iter_rows(named=True))
    judges = _one(store.read_table(arm, Table.JUDGE_VERDICTS).iter_rows(named=True))
    flows = _by(store.read_table(arm, Table.FAILURE_FLOW).iter_rows(named=True))
    judgments = _by(store.read_table(arm, Table.REQUEST_JUDGMENTS).iter_rows(named=True))
    coverage = _by(sources.coverage().iter_rows(named=True))
    rows = list(store.read_table(arm, Table.REQUEST_OUTCOMES).iter_rows(named=True))
    if not judge_grades(rows):  # a judge that reports no coverage grades nothing: no request shows a 0
        rows = [{**r, Table.REQUEST_OUTCOMES.c.coverage: None} for r in rows]
    outcomes = _by(rows)
    questions = sources.questions
    views = {}
    for q in questions:
        answer = answers.get(q.id)
        views[q.id] = model.arm_case(
            retrieval.get(q.id), contexts.get(q.id), contracts.get(q.id), answer, judges.get(q.id),
            flows.get(q.id, []), judgments.get(q.id, []), coverage.get(q.id, []),
            _sent(store, arm, q.id, answer.get(ANS.messages_digests)) if answer else [], texts, cfg.evidence_k,
            outcomes.get(q.id, []))
    _human_of(arm, labels, human_page.current_run_id(runs, arm) if labels is not None else None, views)
    prompts = {field: {"name": p.name, "digest": p.digest} for field, p in sources.prompts.items()}
    info = arm_info(store, arm, cfg, prompts)
    return ArmSide(arm, list(questions), views, chunks, _chunks_digest(sources.built_chunks, chunks), info,
                   info["title"])


def _chunks_digest(built: Built | None, chunks: list[Chunk]) -> str:
    """The chunks' content digest (the built chunks'; None for an imported arm, whose chunks are its imported
    documents: their list's digest)."""
    if built is not None:
        return built.content_digest
    return "sha256:" + hashlib.sha256(json.dumps([c.model_dump() for c in chunks], sort_keys=True)
                                      .encode()).hexdigest()


def arm_info(store: ArtifactStore, arm: str, cfg: ArmConfig, prompts: dict[str, dict[str, str]]) -> dict:
    """The arm's name as tables show it, its configuration `cfg`, instruments (answer model, judges, the digests of
    its `prompts`: field -> name and digest, oracle or not), its failure flow, hit rate and the N measured of M of
    its completeness, read from `store`."""
    flow = store.read_summary(arm, ArmJson.FAILURE_FLOW)
    completeness = store.read_summary(arm, ArmJson.REQUEST_COMPLETENESS)
    judge = completeness.request_judge
    derived = judge.requests_derived
    return {"name": arm, "title": arm_title(store, arm, cfg), "label_use": cfg.label_use,
            "config": cfg.model_dump(mode="json"),
            "instruments": {"answer_model": cfg.generator.model, "judge_model": cfg.judge.model,
                            "request_judge_model": judge.model,
                            "request_judge_prompt_digest": judge.prompt_digest,
                            "label_use": cfg.label_use, "prompts": prompts,
                            # Requests derived from gold answers (core.request_derivation) are labels: say by what.
                            "requests_derived": describe(derived and derived.model_dump())},
            "flow": {b: getattr(flow, b) for b in FLOW_BRANCHES}, "flow_total": flow.total,
            "hit_rate": flow.hit_rate.model_dump(),
            "completeness_measured": {k: getattr(completeness, k) for k in (
                "requests_measured", "requests_total", "questions_measured", "questions_total",
                "graded_completeness", "requests_graded", "requests_answered_share")}}


def png_data(path: str | Path | None) -> str | None:
    """A PNG as a data: URI, so the page needs no file beside it."""
    path = Path(path) if isinstance(path, str) else path  # a Path, or an object store's UPath
    if not path or not path.is_file():
        return None
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode()


def _chunk_sets(sides: list[ArmSide], cases: list[dict]) -> tuple[list[dict], list[int]]:
    """One chunk table per distinct chunking (arms of the same chunking share it), and each arm's index in it."""
    sets, index, digests = [], [], []
    for i, side in enumerate(sides):
        if side.chunks_digest in digests:
            j = digests.index(side.chunks_digest)
            sets[j].update(model.chunk_table(side.chunks, cases, i))
        else:
            digests.append(side.chunks_digest)
            sets.append(model.chunk_table(side.chunks, cases, i))
            j = len(sets) - 1
        index.append(j)
    return sets, index


def pair_model(report: PairReport, side_a: ArmSide, side_b: ArmSide, hl: human_page.HumanLabels | None) -> dict:
    """The page model of a pair report (`compare_two`'s or `arm_comparisons`'), the JSON written beside it shown
    whole; its arms a and b as arm_views read them, with the human labels `hl` (labelling.human_page.read)."""
    a, b = report.a, report.b
    questions = {q.id: q for q in side_a.questions + side_b.questions}
    cases = model.pair_cases(list(questions.values()), side_a.views, side_b.views, model.PairFacts.of(report))
    sets, index = _chunk_sets([side_a, side_b], cases)
    plots = report.plots or {}
    return model.finite_or_none({
        "kind": "pair", "title": f"{side_b.title} vs {side_a.title}",
        "arms": [{**side_a.info, "chunk_set": index[0]}, {**side_b.info, "chunk_set": index[1]}],
        "comparison": report.to_json(), "directions": DIRECTIONS, "branches": list(FLOW_BRANCHES), "chunks": sets,
        "cases": cases, "annotate": {"command": annotate_command([a, b]), "url": annotate_url()},
        "human_labels": hl.summary() if hl else None,
        "plots": {"delta_histogram": png_data(plots.get("delta_histogram")),
                  "buckets": png_data(plots.get("buckets")),
                  "graded_delta_histogram": png_data(plots.get("graded_delta_histogram"))}})


def single_model(side: ArmSide, flow_png: str | Path | None = None, hl: human_page.HumanLabels | None = None) -> dict:
    """The page model of one arm's report (`side`, as arm_views read it): its failure flow (and plot), hit rate, and
    its cases by branch; with human labels `hl` (labelling.human_page.read), the people's label of each labelled
    request beside the judges."""
    arm = side.arm
    cases = model.arm_cases(side.questions, side.views)
    sets, index = _chunk_sets([side], cases)
    return model.finite_or_none({
        "kind": "arm", "title": side.title, "arms": [{**side.info, "chunk_set": index[0]}],
        "branches": list(FLOW_BRANCHES), "chunks": sets, "cases": cases,
        "annotate": {"command": annotate_command([arm]), "url": annotate_url()},
        "human_labels": hl.summary() if hl else None,
        "plots": {"failure_flow": png_data(flow_png)}})
