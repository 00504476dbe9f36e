"""A seeded synthetic pair report of any size (the bench's 5,000 cases), shaped as `collect.pair_model` makes one:
the same fields, one to three requests per case, 20 ranked chunks per arm, answers, verdicts and messages as sent
(chunk texts referenced, as the real model keeps them), drawn from a chunk table of `chunks` texts. Pure."""

from __future__ import annotations

import random

from rag_ttc_assets.core.case_comparison import buckets
from rag_ttc_assets.core.compare_records import CaseValues, Transitions
from rag_ttc_assets.diagnosis.flow import FLOW_BRANCHES
from rag_ttc_assets.core.records import Question, Request
from rag_ttc_assets.core.transitions import transitions
from rag_ttc_assets.report import model

WORDS = ("the", "evidence", "chunk", "request", "answer", "admitted", "context", "budget", "ranked", "statement",
         "class", "method", "attribute", "returns", "raises", "value", "object", "module", "name", "scope")
STATES = ("admitted", "admitted", "admitted", "omitted", "selected", "ranked")


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def _view(rng: random.Random, qid: str, requests: list[str], branches: dict[str, str], chunk_ids: list[str]) -> dict:
    ranked_ids = rng.sample(chunk_ids, 20)
    states = [STATES[min(i // 4, len(STATES) - 1)] if i < 8 else "ranked" for i in range(20)]
    ranked = [[cid, rng.randint(1, 40), rng.randint(1, 40), states[i], i < 2, [requests[0]] if i == 0 else [],
               [requests[-1]] if i == 1 else []] for i, cid in enumerate(ranked_ids)]
    answer = _text(rng, 40)
    return {
        "ranked": ranked, "evidence_k": 5, "used_runes": rng.randint(2000, 6000), "max_runes": 12000,
        "selected": ranked_ids[:8], "admitted": [r[0] for r in ranked if r[3] == "admitted"],
        "omitted": [r[0] for r in ranked if r[3] == "omitted"],
        "requests": {r: {"branch": branches[r], "answered": branches[r] == "ok", "supported": branches[r] == "ok",
                         "contradicts_gold": False, "judge_status": "judged", "addressed": branches[r] == "ok",
                         "verdict": "consistent", "excerpt": _text(rng, 12), "excerpt_cites": ranked_ids[:1],
                         "reason": "covers 0.80 of gold"} for r in requests},
        "contract": {"status": "valid", "reason": "", "answer": answer, "abstained": False,
                     "citations": ranked_ids[:2]},
        "answer": {"model": "local/extractive", "status": "ok", "cache_hit": False,
                   "raw_response": '{"answer": "' + answer + '"}', "error": None},
        "judge": {"model": "local/lexical", "status": "judged", "faithfulness": 1.0, "contradicts_gold": False,
                  "verdicts": [{"statement": 1, "text": answer, "supported": True, "evidence": [1],
                                "reason": "content-word recall 1.00"}], "gold_verdicts": []},
        "messages_sent": [{"messages": [{"role": "user", "content": [
            f"<question>{qid}</question>\nEvidence:\n", *[{"chunk": c} for c in ranked_ids[:5]]]}], "tools": None}],
    }


def synthetic_pair_model(n_cases: int, seed: int = 0, chunks: int = 2000) -> dict:
    """A pair report model of `n_cases` cases (headline values, deltas, buckets, transitions, per-arm views)."""
    rng = random.Random(seed)
    chunk_ids = [f"doc-{i // 4}#chunk-{i % 4}" for i in range(chunks)]
    table = {cid: [cid.split("#")[0], 1200, " ".join(_text(rng, 15) for _ in range(8))] for cid in chunk_ids}
    questions: list[Question] = []
    flow_a, flow_b, per_case = {}, {}, {}
    for i in range(n_cases):
        qid = f"syn-{i:05d}"
        reqs = [f"{qid}.r{j}" for j in range(1, rng.randint(1, 3) + 1)]
        questions.append(Question(id=qid, text=_text(rng, 18), answerable=True,
                                  requests=[Request(id=r, text=_text(rng, 10)) for r in reqs]))
        for r in reqs:
            flow_a[r] = (qid, rng.choice(FLOW_BRANCHES))
            flow_b[r] = (qid, flow_a[r][1] if rng.random() < 0.85 else rng.choice(FLOW_BRANCHES))
        a = round(rng.random(), 2)
        per_case[qid] = (a, a if rng.random() < 0.8 else round(rng.random(), 2))
    values = {c: CaseValues(a=a, b=b) for c, (a, b) in per_case.items()}
    deltas = {c: v.b - v.a for c, v in values.items() if v.a is not None and v.b is not None}
    rows, matrix = buckets(list(deltas.values())), transitions(flow_a, flow_b)
    catastrophic = [c for c, d in deltas.items() if d <= -0.5]
    comparison = {
        "a": "syn-a", "b": "syn-b", "n": n_cases, "headline": "completeness",
        "metrics": {"completeness": {"n": n_cases, "of": n_cases, "mean_a": 0.5, "mean_b": 0.5, "mean_delta": 0.0,
                                     "ci_low": -0.01, "ci_high": 0.01, "p_value": 0.5, "p_adjusted": 0.5,
                                     "significant": False, "test": "sign_flip_monte_carlo", "gains": 0, "losses": 0,
                                     "ties": n_cases}},
        "buckets": [b.model_dump() for b in rows], "catastrophic": [{"case_id": c} for c in catastrophic],
        "transitions": matrix, "per_case": {c: v.model_dump() for c, v in values.items()},
        "changed_parameters": {"evidence_k": [5, 8]},
        "p_adjust": {"method": "holm", "method_name": "Holm step-down", "alpha": 0.05, "m": 1,
                     "family": "the metrics of this comparison"}}
    views_a, views_b = {}, {}
    for q in questions:
        reqs = [r.id for r in q.requests]
        views_a[q.id] = _view(rng, q.id, reqs, {r: flow_a[r][1] for r in reqs}, chunk_ids)
        views_b[q.id] = _view(rng, q.id, reqs, {r: flow_b[r][1] for r in reqs}, chunk_ids)
    arm = {"label_use": "none", "config": {}, "flow": {}, "flow_total": 0, "hit_rate": {}, "chunk_set": 0,
           "instruments": {"answer_model": "local/extractive", "judge_model": "local/lexical",
                           "request_judge_model": "local/lexical", "request_judge_prompt_digest": "sha256:0",
                           "label_use": "none", "prompts": {}},
           "completeness_measured": {"requests_measured": 0, "requests_total": 0, "questions_measured": 0,
                                     "questions_total": 0}}
    return {"kind": "pair", "title": f"synthetic: {n_cases} cases",
            "arms": [{**arm, "name": "syn-a", "title": "syn-a"}, {**arm, "name": "syn-b", "title": "syn-b"}],
            "comparison": comparison, "branches": list(FLOW_BRANCHES), "chunks": [table],
            "cases": model.pair_cases(questions, views_a, views_b, model.PairFacts(
                values, frozenset(catastrophic), Transitions.model_validate(matrix).cells, rows)), "plots": {}}


def plain_table(report: dict) -> str:
    """The reference: the same case rows as one plain HTML table, no script, no style."""
    from html import escape

    rows = "".join(
        f"<tr><td>{escape(c['id'])}</td><td>{escape(c['question'])}</td><td>{c['a']}</td><td>{c['b']}</td>"
        f"<td>{c['delta']}</td><td>{escape(c['bucket'] or '')}</td><td>{escape(', '.join(c['changed']))}</td>"
        f"<td>{'catastrophic' if c['catastrophic'] else ''}</td></tr>" for c in report["cases"])
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>cases</title></head><body><table><thead><tr>"
            "<th>case</th><th>question</th><th>a</th><th>b</th><th>delta</th><th>bucket</th><th>transitions</th>"
            f"<th>catastrophic</th></tr></thead><tbody>{rows}</tbody></table></body></html>")
