"""A panel's jurors and candidate aggregations as raters of the rows the arms' request judges judged
(judging.judge_agreement_stage): each from the jurors' kept verdicts, the request_judgments row's `jurors` column read
through judging.juror_records.KeptJuror (judging.panel.recombine recombines the aggregations from it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from rag_ttc_assets.adapters.store import Table
from rag_ttc_assets.judging import judge_agreement as ja
from rag_ttc_assets.judging import panel
from rag_ttc_assets.judging.juror_records import KeptJuror, kept_jurors

JUDGED = "judged"
RJ = Table.REQUEST_JUDGMENTS.c  # the declared column names (core.tables)


def aggregation_name(models: list[str], aggregation: str, digest: str) -> str:
    """A candidate aggregation of a panel's jurors, recombined from their kept verdicts (judging.panel.recombine)."""
    return f"{ja.AGGREGATION}{panel.panel_name(models, aggregation)} ({digest[:19]}…)"


def aggregation_row_scores(rows: list[dict[str, Any]]) -> Iterator[tuple[str, float | None]]:
    """Per candidate aggregation of a panel (aggregation_name), the share of one answer row's requests it finds
    addressed from the jurors' kept verdicts; None unless it decides every one of them."""
    kept = [json.loads(r.get(RJ.jurors) or "[]") for r in rows]
    if not kept or not all(kept):
        return
    models = [j.model for j in kept_jurors(rows[0].get(RJ.jurors) or "[]")]
    for agg in panel.AGGREGATIONS:
        got = [panel.recombine(k, agg) for k in kept]
        share = (sum(bool(g["addressed"]) for g in got if g) / len(got)) if all(g is not None for g in got) else None
        yield aggregation_name(models, agg, rows[0][RJ.prompt_digest] or ""), share


def juror_row_scores(rows: list[dict[str, Any]]
                     ) -> Iterator[tuple[tuple[str, str], float | None, float | None]]:
    """Per juror of a panel that judged one answer row's requests, (its key (model, prompt digest), the share of the
    row's requests it found addressed, their mean coverage): each None unless it judged every one of them, as the
    request judge's own score of the row (a juror that reports no coverage: graded None)."""
    per: dict[tuple[str, str], list[KeptJuror | None]] = {}
    entries = []
    for r in rows:
        by_model = {j.model: j for j in kept_jurors(r.get(RJ.jurors) or "[]")}
        entries.append((r[RJ.prompt_digest] or "", by_model))
        for model in by_model:
            per.setdefault((model, r[RJ.prompt_digest] or ""), [])
    for key in per:
        per[key] = [by_model.get(key[0]) if digest == key[1] else None for digest, by_model in entries]
    for key, judged in per.items():
        votes = [j for j in judged if j is not None and j.status == JUDGED]
        if len(votes) < len(judged):
            yield key, None, None
            continue
        yield key, sum(bool(j.addressed) for j in votes) / len(votes), ja.graded_share([{"coverage": j.coverage}
                                                                                       for j in votes])


def juror_raters(jurors: dict[tuple[str, str], Any]) -> dict[str, Any]:
    """A panel's jurors judge with the arm's request judge prompt: a juror model that judged under one prompt digest
    is the rater `juror <model>`; one that judged under more than one (arms whose prompts differ) is one rater per
    digest, named with it as the request judge is, never pooled."""
    digests: dict[str, int] = {}
    for model, _ in jurors:
        digests[model] = digests.get(model, 0) + 1
    return {(f"juror {model}" if digests[model] == 1 else f"juror {model} ({digest[:19]}…)"): scores
            for (model, digest), scores in jurors.items()}
