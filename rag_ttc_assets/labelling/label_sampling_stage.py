"""The rows of an arm `rag-ttc sample-labels` samples from (labelling/label_sampling.py): read from the store."""

from __future__ import annotations

import json
from collections import Counter

from rag_ttc_assets.adapters.store import ArtifactStore, Table
from rag_ttc_assets.core.run_records import RunFolders
from rag_ttc_assets.labelling import label_sampling as ls
from rag_ttc_assets.stages.run_record import list_runs


class NotJudged(ValueError):
    pass


def arm_rows(store: ArtifactStore, runs: RunFolders, arm: str) -> list[ls.Row]:
    """The arm's answer rows: the judge's completeness (share of the row's requests addressed), the row's failure-flow
    branch (the branch most of its requests land in; ties by name) and, for a panel, whether its jurors split on any
    of the row's requests."""
    RJ, FLOW = Table.REQUEST_JUDGMENTS.c, Table.FAILURE_FLOW.c
    try:
        rj = store.read_table(arm, Table.REQUEST_JUDGMENTS)
    except FileNotFoundError:
        raise NotJudged(f"arm {arm!r} has no request judgments (run it first: rag-ttc run {arm})") from None
    try:
        flow = {(r[FLOW.query_id], r[FLOW.request_id]): r[FLOW.branch]
                for r in store.read_table(arm, Table.FAILURE_FLOW).iter_rows(named=True)}
    except FileNotFoundError:
        flow = {}
    runs = [r.dagster_run_id for r in list_runs(runs, arm) if r.dagster_run_id]
    run_id = runs[-1] if runs else ""
    by_q: dict[str, list[dict]] = {}
    for r in rj.iter_rows(named=True):
        by_q.setdefault(r[RJ.query_id], []).append(r)
    rows = []
    for q, reqs in sorted(by_q.items()):
        branches = Counter(flow.get((q, r[RJ.request_id]), "no failure flow") for r in reqs)
        branch = sorted(branches.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        completeness = sum(bool(r[RJ.addressed]) for r in reqs) / len(reqs)
        kept = [json.loads(r.get(RJ.jurors) or "[]") for r in reqs]
        panel = any(kept)
        split = any(len({j.get("addressed") for j in k if j.get("addressed") is not None}) > 1 for k in kept)
        rows.append(ls.Row(q, run_id, branch, completeness, split if panel else None))
    return rows
