"""Per-claim support labels measured against the support judge (docs/judges.md):

  per-claim    the support judge's verdict on each claim (its statements that fall inside the claim's text, all
               supported) against every human label read as binary (supported; partially or not supported: not),
               Cohen's kappa, accuracy and confusion; the annotators with each other and each label against the
               majority of the others (ceilings); per answer, the judge's faithfulness (its own supported share)
               against the share of the answer's claims the majority finds supported, beside one annotator's share
               against the majority of the others' (claim_agreement).

The labels are read by labelling.human_labels (`kind: claim`); the statistics are judging.judge_agreement's. Pure: the
caller hands in the labels and each support judge's verdicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict

from rag_ttc_assets.labelling.human_labels import SUPPORT, ClaimLabel, Item, Row, flat
from rag_ttc_assets.judging.judge_agreement import (JsonObject, _annotator_pairs, _share, _unshared_pairs,
                                                    categorical_agreement, correlation, majority, majority_agreement)


class ClaimVerdict(TypedDict):
    """The support judge's verdict on one claim (claim_verdicts): every statement placed in it supported, and their
    reasons joined."""
    supported: bool
    reason: str


def claim_verdicts(claims: Sequence[tuple[int, str]], statements: Sequence[JsonObject]) -> dict[int, ClaimVerdict]:
    """The support judge's verdict on each claim (position, text) of one answer, from its statement verdicts
    ({"text", "supported", "reason"}, in answer order): each statement is placed, in order, in the first claim, at
    or after the last one placed, whose text holds it after what was placed there already (a claim the judge split
    takes its pieces in turn; a claim repeated in the answer gets the repeated statement); a claim is supported
    when every statement placed in it is. A claim with no statement placed in it (the judge dropped it: no content
    words, abstention boilerplate) is absent: not measured."""
    ordered = sorted(claims)
    placed: dict[int, list[JsonObject]] = {}
    at, offset = 0, 0  # the claim placed in last, and where in its text the last statement placed there ended
    for s in statements:
        text = flat(s.get("text") or "")
        if not text:
            continue
        for k in range(at, len(ordered)):
            found = flat(ordered[k][1]).find(text, offset if k == at else 0)
            if found >= 0:
                placed.setdefault(ordered[k][0], []).append(s)
                at, offset = k, found + len(text)
                break
    return {pos: {"supported": all(bool(s.get("supported")) for s in got),
                  "reason": " | ".join(str(s.get("reason") or "") for s in got)}
            for pos, got in placed.items()}


def claim_agreement(labels: Sequence[ClaimLabel], judges: Mapping[str, Mapping[Item, ClaimVerdict]],
                    faithfulness: Mapping[str, Mapping[Row, float | None]], seed: int = 0) -> JsonObject:
    """Per-claim support labels against each support judge (name -> (arm, question, claim) -> {"supported",
    "reason"} of the claims it measured, claim_verdicts), every label read as binary (ClaimLabel.addressed):
    kappa, accuracy and confusion, the disagreements listed; the annotators with each other; against the majority
    (majority_agreement: judge vs majority, and like for like an annotator vs the others beside each judge vs the
    others); and per answer (arm, question) each judge's faithfulness (name -> (arm, question) -> its supported
    share of the answer's statements) against the share of the answer's claims the majority finds supported
    (ties left out), with the ceiling, each annotator's share against the majority of the others' over the claims
    where that majority is defined (three or more labels), beside each judge against that same majority."""
    rows: list[JsonObject] = []
    for name, scored in judges.items():
        human: list[bool] = []
        judge: list[bool] = []
        disagree: list[JsonObject] = []
        unmeasured = 0
        for lab in labels:
            s = scored.get(lab.item)
            if s is None:
                unmeasured += 1
                continue
            human.append(lab.addressed)
            judge.append(bool(s["supported"]))
            if lab.addressed != bool(s["supported"]):
                disagree.append({"arm": lab.arm, "question": lab.question, "claim": lab.claim, "text": lab.text,
                                 "annotator": lab.annotator, "human": lab.support, "judge": bool(s["supported"]),
                                 "judge_reason": s.get("reason"), "line": lab.line})
        rows.append({"rater": name, "kind": "judge", **categorical_agreement(human, judge, (True, False)),
                     "not_measured": unmeasured, "disagreements": disagree})
    pairs = _annotator_pairs(labels, lambda lab: lab.addressed)
    three_way = _annotator_pairs(labels, lambda lab: lab.support)  # the same items, the labels as given
    for (x, y), both in pairs.items():
        rows.append({"rater": f"{x} vs {y}", "kind": "ceiling",
                     **categorical_agreement([p[0] for p in both], [p[1] for p in both], (True, False)),
                     "three_way": categorical_agreement([p[0] for p in three_way[(x, y)]],
                                                        [p[1] for p in three_way[(x, y)]], SUPPORT),
                     "not_measured": 0, "disagreements": []})
    as_addressed = {name: {k: {"addressed": v["supported"]} for k, v in scored.items()}
                    for name, scored in judges.items()}
    return {"labels": len(labels), "annotators": sorted({lab.annotator for lab in labels}), "rows": rows,
            "annotator_pairs_sharing_no_item": _unshared_pairs(labels, len(pairs)),
            "support_shares": {s: sum(1 for lab in labels if lab.support == s) / len(labels) for s in SUPPORT}
            if labels else {},
            "majority": majority_agreement(labels, as_addressed),
            "answers": _claim_answers(labels, faithfulness, seed)}


def _claim_answers(labels: Sequence[ClaimLabel], faithfulness: Mapping[str, Mapping[Row, float | None]],
                   seed: int) -> JsonObject:
    """claim_agreement's per-answer reading."""
    by_row: dict[Row, dict[int, list[tuple[str, bool]]]] = {}
    for lab in labels:
        by_row.setdefault((lab.arm, lab.question), {}).setdefault(lab.claim, []).append((lab.annotator, lab.addressed))
    people: dict[Row, float] = {}
    loo: dict[tuple[Row, str], tuple[list[bool], list[bool]]] = {}  # (row, annotator) -> (their labels, the others' majority)
    for row, claims in by_row.items():
        decided = [m for m in (majority([v for _, v in labs]) for labs in claims.values()) if m is not None]
        if decided:
            people[row] = _share(decided)
        for labs in claims.values():
            if len(labs) < 3:
                continue
            for i, (ann, v) in enumerate(labs):
                m = majority([x for _, x in labs[:i] + labs[i + 1:]])
                if m is not None:
                    point = loo.setdefault((row, ann), ([], []))
                    point[0].append(v)
                    point[1].append(m)
    out: list[JsonObject] = []
    for name, scores in faithfulness.items():
        pts = [(s, y) for row, y in people.items() if (s := scores.get(row)) is not None]
        out.append({"rater": name, "kind": "judge", "against": "the majority",
                    **correlation([p[0] for p in pts], [p[1] for p in pts], seed), "not_measured": len(people) - len(pts)})
    if loo:
        out.append({"rater": "an annotator vs the others", "kind": "ceiling", "against": "the majority of the others",
                    **correlation([_share(v) for v, _ in loo.values()], [_share(m) for _, m in loo.values()], seed),
                    "not_measured": 0})
        for name, scores in faithfulness.items():
            pts = [(s, _share(m)) for (row, _), (_, m) in loo.items() if (s := scores.get(row)) is not None]
            out.append({"rater": f"{name} vs the others", "kind": "judge", "against": "the majority of the others",
                        **correlation([p[0] for p in pts], [p[1] for p in pts], seed),
                        "not_measured": len(loo) - len(pts)})
    return {"answers": len(by_row), "rows": out}
