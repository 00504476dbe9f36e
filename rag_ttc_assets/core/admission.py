"""Evidence selection, ordering and the rune budget (the seed's AdmitCompleteChunks).

    select_evidence:  the first evidence_k ranked chunk IDs.
    order_evidence:   "ranked" keeps the order, "reversed" puts the best chunk last (nearest the
                      question), "shuffled" permutes with random.Random(seed).shuffle.
    admit_complete_chunks: walk chunks in order; admit chunk i whole iff
                      used_runes + runes(i) <= max_runes, else record it as omitted and go on, so a
                      later, smaller chunk may still fit.  A chunk is never split.

A rune is a Unicode code point (Go's rune), so runes(text) = len(text) in Python.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from rag_ttc_assets.core import counterfactual
from rag_ttc_assets.core.answer_rows import Coverage, Row
from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.records import Question
from rag_ttc_assets.core.tables import Table

# The admitted_contexts rows, read by the table's declared column names.
CTX = Table.ADMITTED_CONTEXTS.c

EvidenceOrder = Literal["ranked", "reversed", "shuffled"]


class EvidenceItem(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    chunk_id: str
    text: str
    runes: int


class AdmittedContext(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    evidence: list[EvidenceItem]
    omitted_chunk_ids: list[str]
    used_runes: int
    max_runes: int


def select_evidence(ranked_chunk_ids: list[str], evidence_k: int) -> list[str]:
    if evidence_k < 0:
        raise ValueError(f"evidence_k must be >= 0, got {evidence_k}")
    return list(ranked_chunk_ids[:evidence_k])


def order_evidence(selected_ids: list[str], order: EvidenceOrder, seed: int = 0) -> list[str]:
    if order == "ranked":
        return list(selected_ids)
    if order == "reversed":
        return list(reversed(selected_ids))
    if order == "shuffled":
        shuffled = list(selected_ids)
        # A private generator: the permutation depends on seed alone, never on global random state.
        random.Random(seed).shuffle(shuffled)
        return shuffled
    raise ValueError(f"order must be 'ranked', 'reversed' or 'shuffled', got {order!r}")


def admit_complete_chunks(chunks: list[tuple[str, str]], max_runes: int) -> AdmittedContext:
    """Admit (chunk_id, text) pairs whole, in the given order, within max_runes code points."""
    if isinstance(max_runes, bool) or not isinstance(max_runes, int) or max_runes <= 0:
        raise ValueError(f"max_runes must be a positive integer, got {max_runes!r}")
    evidence: list[EvidenceItem] = []
    omitted: list[str] = []
    seen: set[str] = set()
    used = 0
    for position, (chunk_id, text) in enumerate(chunks):
        if chunk_id in seen:
            raise ValueError(f"chunks[{position}]: duplicate chunk_id {chunk_id!r}")
        seen.add(chunk_id)
        runes = len(text)
        if used + runes <= max_runes:
            evidence.append(EvidenceItem(chunk_id=chunk_id, text=text, runes=runes))
            used += runes
        else:
            omitted.append(chunk_id)
    return AdmittedContext(evidence=evidence, omitted_chunk_ids=omitted, used_runes=used, max_runes=max_runes)


# --- one arm's admitted context per question, and what it covered (data in, data out) --------------------------

def context_row(cfg: ArmConfig, query_id: str, ranked_chunk_ids: list[str], chunk_text: Mapping[str, str],
                question: Question | None = None, support: Mapping[str, list[str]] | None = None) -> dict[str, Any]:
    """One question's admitted context: the evidence_k cut, the evidence order, then whole-chunk admission under
    context_runes (`cfg`: the arm's ArmConfig).

    Counterfactual arms then change the admitted set and record exactly how: `withheld-relevant` removes every
    admitted chunk that supports a request (`withheld_chunk_ids`; `support` from the evaluation's gold quotes);
    `planted-falsehood` puts, first, one chunk per request contradicting its gold quote (`planted`, with the
    alteration). Both arms declare their use of the labels (ArmConfig.label_use).
    """
    import json

    selected = select_evidence(ranked_chunk_ids, cfg.evidence_k)
    ordered = order_evidence(selected, cfg.evidence_order, cfg.shuffle_seed)
    ctx = admit_complete_chunks([(c, chunk_text[c]) for c in ordered], cfg.context_runes)
    admitted = [e.chunk_id for e in ctx.evidence]
    runes = {e.chunk_id: e.runes for e in ctx.evidence}
    withheld: list[str] = []
    planted: list[counterfactual.Planted] = []
    if cfg.counterfactual == "withheld-relevant" and question is not None:
        supporting = {c for req in question.requests for c in (support or {}).get(req.id, [])}
        admitted, withheld = counterfactual.withhold(admitted, supporting)
    elif cfg.counterfactual == "planted-falsehood" and question is not None and question.answerable:
        planted = [counterfactual.plant(req.id, req.evidence[0].quote) for req in question.requests if req.evidence]
        planted = [p for p in planted if p.kind != "none"]
        admitted = [p.chunk_id for p in planted] + admitted
        runes.update({p.chunk_id: len(p.planted) for p in planted})
    return {
        "query_id": query_id, "evidence_k": cfg.evidence_k, "evidence_order": cfg.evidence_order,
        "selected_chunk_ids": selected,
        "admitted_chunk_ids": admitted,
        "evidence_runes": [runes[c] for c in admitted], "evidence_offsets": [0] * len(admitted),
        "omitted_chunk_ids": ctx.omitted_chunk_ids,
        "used_runes": sum(runes[c] for c in admitted), "max_runes": ctx.max_runes,
        "counterfactual": cfg.counterfactual,
        "withheld_chunk_ids": withheld,
        "planted": json.dumps([p.model_dump() for p in planted]), "supply": "retrieval",
    }


def coverage_rows(questions: Iterable[Question], support: Mapping[str, list[str]], ranked: Mapping[str, set[str]],
                  contexts: Mapping[str, Row], exact_ranked: Mapping[str, set[str]] | None = None
                  ) -> list[dict[str, Any]]:
    """Per request: is a supporting chunk ranked, selected, admitted (chunk level). `ranked` and `contexts` are
    per question ID: the ranked chunk IDs (for preloaded and tool arms, what was in context) and the context row.
    `exact_ranked`, for an arm with an approximate vector index (core.ann): the ranked list it would have had with
    the exact vector list; each row's `exact_ranked` says whether a supporting chunk is in it (None otherwise)."""
    rows = []
    for q in questions:
        c = contexts[q.id]
        for req in q.requests:
            sup = support.get(req.id, [])
            rows.append({
                "query_id": q.id, "request_id": req.id, "has_evidence": bool(sup),
                "supporting_chunk_ids": sup,
                "ranked": any(s in ranked[q.id] for s in sup),
                "selected": any(s in c[CTX.selected_chunk_ids] for s in sup),
                "admitted": any(s in c[CTX.admitted_chunk_ids] for s in sup),
                "exact_ranked": (None if exact_ranked is None or q.id not in exact_ranked
                                 else any(s in exact_ranked[q.id] for s in sup)),
            })
    return rows


def _with_evidence(coverage: Iterable[Row | Coverage]) -> list[Coverage]:
    """The coverage rows (as read, or records) of the requests with gold evidence."""
    return [c for c in (r if isinstance(r, Coverage) else Coverage.of(r) for r in coverage) if c.has_evidence]


def _mean(xs: list[int]) -> float:
    return float(sum(xs) / len(xs)) if xs else 0.0


def admission_summary(coverage: Iterable[Row | Coverage], contexts: list[Row], supply: str = "retrieval"
                      ) -> dict[str, Any]:
    """The admission boundary in numbers: omissions, admitted chunks and runes, requests ranked/selected/admitted.
    A tool arm admits nothing before generation: its lookup flow (failure_flow) reports what the lookups supplied.
    `contexts`: the admitted_contexts rows."""
    with_ev = _with_evidence(coverage)
    n = 0 if supply == "tool" else len(with_ev)
    omitted = [len(c[CTX.omitted_chunk_ids]) for c in contexts]
    mean = _mean
    return {
        "supply": supply,
        "queries": len(contexts),
        "queries_with_omissions": sum(1 for o in omitted if o > 0),
        "omitted_chunks": sum(omitted),
        "mean_admitted_chunks": mean([len(c[CTX.admitted_chunk_ids]) for c in contexts]),
        "mean_used_runes": mean([c[CTX.used_runes] for c in contexts]),
        "max_runes": max((c[CTX.max_runes] for c in contexts), default=0),
        "requests_with_evidence": n,
        "requests_ranked": sum(r.ranked for r in with_ev),
        "requests_selected": sum(r.selected for r in with_ev),
        "requests_admitted": sum(r.admitted for r in with_ev),
        "admission_coverage": float(sum(r.admitted for r in with_ev) / n) if n else None,
    }


BOUNDARIES = ("ranked", "selected", "admitted")


def _at(c: Coverage, boundary: str) -> bool:
    """Whether a supporting chunk of the request reached `boundary` (one of BOUNDARIES)."""
    return {"ranked": c.ranked, "selected": c.selected, "admitted": c.admitted}[boundary]


def hit_rates(coverage: Iterable[Row | Coverage]) -> dict[str, Any]:
    """Hit rate over all cases at each boundary (ranked, selected, admitted), from the coverage rows (as read, or
    records) of the requests with gold evidence: a question is a hit when every one of its requests is; no
    generation involved."""
    with_ev = _with_evidence(coverage)
    out: dict[str, Any] = {"questions": len({r.query_id for r in with_ev}), "requests": len(with_ev)}
    for boundary in BOUNDARIES:
        hits: dict[str, bool] = {}
        for r in with_ev:
            hits[r.query_id] = hits.get(r.query_id, True) and _at(r, boundary)
        n_req = sum(_at(r, boundary) for r in with_ev)
        out[boundary] = {"question_hits": sum(hits.values()),
                         "question_hit_rate": sum(hits.values()) / len(hits) if hits else None,
                         "request_hits": n_req, "request_hit_rate": n_req / len(with_ev) if with_ev else None}
    return out
