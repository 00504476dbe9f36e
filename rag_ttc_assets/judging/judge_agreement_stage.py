"""The judges of the arms a labels file names, measured against its human labels (labelling.human_labels,
judging.judge_agreement, judging.claim_agreement).

Every judge that scored those rows: each arm's request judge (per-request labels; pairwise `completeness`: the share
of the row's requests it found addressed, and for a judge that reports coverage, graded: their mean coverage) and its
support judge (pairwise `faithfulness`); a panel's jurors likewise, each from its own verdicts; one rater per
instrument (model and prompt digest; an offline judge's arms judged under different rules versions, one rater per
version; a panel's juror, one rater per prompt digest when its arms' prompts differ), pooled over the arms it measured; and, beside them in the completeness tables,
the plain content-word recall of the gold answer (a reference scorer, no judge). Per-claim support labels are read
against each arm's support judge: its statement verdicts placed in the labelled claims, and its faithfulness per
answer (claim_scores).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_ttc_assets.adapters.input_files import load_dataset
from rag_ttc_assets.adapters.store import ArmJson, ArtifactStore, Table, atomic_write_bytes
from rag_ttc_assets.labelling import human_labels as hl
from rag_ttc_assets.judging import judge_agreement as ja
from rag_ttc_assets.judging import panel
from rag_ttc_assets.judging.agreement_records import (AgreementReport, Bootstrap, ClaimLabels, CompletenessEstimate,
                                                      Confusion, CorrelationRow, Majority, PairAspect, PanelAggregation,
                                                      RequestCompleteness, RequestEdits, RequestLabels,
                                                      counted_aggregations, validated)
from rag_ttc_assets.labelling.estimate_records import Estimate
from rag_ttc_assets.judging.claim_agreement import claim_agreement, claim_verdicts
from rag_ttc_assets.core.arms_file import Arms
from rag_ttc_assets.core.contract import ABSTAINED, FREE_TEXT, VALID
from rag_ttc_assets.core.judge_summaries import Instrument
from rag_ttc_assets.judging.statement_judge import StatementVerdict
from rag_ttc_assets.judging.juror_records import kept_jurors
from rag_ttc_assets.core.records import Question
from rag_ttc_assets.judging.panel_stage import aggregation_name, aggregation_row_scores, juror_raters, juror_row_scores
from rag_ttc_assets.stages.retrieval import arm_questions

if TYPE_CHECKING:
    import polars as pl

JUDGED = "judged"

ANS, CON, RJ, JV = Table.ANSWERS.c, Table.CONTRACT_RESULTS.c, Table.REQUEST_JUDGMENTS.c, Table.JUDGE_VERDICTS.c  # the declared column names (core.tables)


@dataclass(frozen=True)
class ArmRows:
    """An arm of the arms file: its questions, the rows it answered, its contract results (None: not written yet)."""
    questions: list[Question]
    answered: set[str]
    contract: pl.DataFrame | None


@dataclass(frozen=True)
class ArmJudgments:
    """What the judges recorded of an arm, and its request judge as its summary recorded it (None: not written yet)."""
    request_judgments: pl.DataFrame | None
    judge_verdicts: pl.DataFrame | None
    request_judge: Instrument | None


@dataclass(frozen=True)
class AgreementInputs:
    """The labels file checked against every arm (its labels, raw records), and the judges' records of its arms."""
    labels_file: Path
    labels: hl.Labels
    records: list[dict[str, Any]]
    rows: dict[str, ArmRows]  # every arm of the arms file
    judgments: dict[str, ArmJudgments]  # the labelled arms


def _table(store: ArtifactStore, arm: str, name: str) -> pl.DataFrame | None:
    return store.read_table(arm, name) if store.table_path(arm, name).is_file() else None  # None: not written yet


def read_arm_rows(store: ArtifactStore, datasets_dir: Path, arms: Arms) -> dict[str, ArmRows]:
    """Every arm of the arms file: its questions (as stages.resolve.ArmInputs reads them) and its answer tables."""
    out = {}
    for arm in arms.names:
        answers, con = _table(store, arm, Table.ANSWERS), _table(store, arm, Table.CONTRACT_RESULTS)
        out[arm] = ArmRows(arm_questions(arms[arm], load_dataset(datasets_dir / arms[arm].dataset, arms[arm].dataset)),
                           set() if answers is None else set(answers[ANS.query_id].to_list()),
                           None if con is None else con.select(CON.query_id, CON.status, CON.answer))
    return out


def read_judgments(store: ArtifactStore, arms: Iterable[str]) -> dict[str, ArmJudgments]:
    """What the judges recorded of each of `arms` (their request judge summaries read through their model)."""
    summary = ArmJson.REQUEST_JUDGE_SUMMARY
    return {arm: ArmJudgments(_table(store, arm, Table.REQUEST_JUDGMENTS), _table(store, arm, Table.JUDGE_VERDICTS),
                              store.read_summary(arm, summary).request_judge
                              if store.arm_path(arm, summary).is_file() else None) for arm in sorted(arms)}


def read_agreement_inputs(store: ArtifactStore, arms_file: Path, datasets_dir: Path, arms: Arms,
                          labels_path: Path) -> AgreementInputs:
    """The labels file read and checked against the arms file's arms, and the judges' records of the arms it labels."""
    if not labels_path.is_file():
        raise hl.LabelsError([hl.LabelProblem(str(labels_path), "(file)", "(file)", "file not found")])
    rows, text = read_arm_rows(store, datasets_dir, arms), labels_path.read_text(encoding="utf-8")
    labels = hl.parse_labels(text, str(labels_path), catalog(rows, arms_file))
    pairs = {side[0] for p in labels.pairs for side in (p.a, p.b)}
    labelled = {x.arm for xs in (labels.requests, labels.claims) for x in xs} | pairs
    return AgreementInputs(labels_path, labels, [json.loads(x) for x in text.splitlines() if x.strip()], rows,
                           read_judgments(store, labelled))


def catalog(rows: dict[str, ArmRows], arms_file: Path) -> hl.Catalog:
    """Every arm of the arms file with its questions' request ids and the answer rows it has written."""
    cat = hl.Catalog(unknown_arm_hint=f" in {arms_file}")
    for arm, got in rows.items():
        cat.questions[arm] = {q.id: {r.id for r in q.requests} for q in got.questions}
        cat.rows[arm] = got.answered
        if got.contract is not None:  # the answers' texts, where a per-claim label's text must occur
            cat.answers[arm] = {r[CON.query_id]: r[CON.answer] or "" for r in got.contract.iter_rows(named=True)}
    return cat


def _request_judge_name(row: dict) -> str:
    return f"request judge {row[RJ.request_judge_model]} ({(row[RJ.prompt_digest] or '')[:19]}…)"


def _split_by_rules(scores: dict[str, dict], rules: dict[str, str | None]) -> dict[str, dict]:
    """A rater whose arms were judged under more than one rules version (a store with arms not rerun since the rules
    changed) is that many raters, each named with its version: one name, one instrument. A rater under one version
    keeps its name."""
    out: dict[str, dict] = {}
    for name, by_key in scores.items():
        versions = {rules.get(key[0]) for key in by_key}
        if len(versions) <= 1:  # one version, or none: a rater that measured nothing keeps its name and its row
            out[name] = by_key
            continue
        for key, value in by_key.items():
            out.setdefault(f"{name} [{rules.get(key[0]) or 'no rules recorded'}]", {})[key] = value
    return out


def judge_scores(judgments: dict[str, ArmJudgments]) -> tuple[dict, dict]:
    """(per-request: judge -> (arm, question, request) -> {addressed, verdict, reason},
        pairwise: judge -> aspect -> (arm, row) -> score or None), over the arms of `judgments`."""
    per_request, pairwise = _judge_scores(judgments)
    rules = {arm: j.request_judge.rules if j.request_judge else None for arm, j in judgments.items()}
    per_request = _split_by_rules(per_request, rules)
    split: dict[str, dict] = {}
    for name, aspects in pairwise.items():
        for aspect, by_key in aspects.items():
            for sub, part in _split_by_rules({name: by_key}, rules if not name.startswith("support judge") else
                                             {}).items():
                split.setdefault(sub, {})[aspect] = part
    return per_request, split


def _judge_scores(judgments: dict[str, ArmJudgments]) -> tuple[dict, dict]:
    per_request: dict[str, dict] = {}
    jurors: dict[tuple[str, str], dict] = {}  # (juror model, prompt digest) -> its scores (panel_raters.juror_raters)
    # (juror model, prompt digest) -> aspect -> (arm, row) -> score: a panel's juror scores pairwise completeness as
    # the request judge does, from its own verdicts on the row's requests.
    juror_pairs: dict[tuple[str, str], dict] = {}
    pairwise: dict[str, dict] = {}
    for arm in sorted(judgments):
        rj = judgments[arm].request_judgments
        if rj is not None and rj.height:
            by_row: dict[str, list[dict]] = {}
            for r in rj.iter_rows(named=True):
                # A judge or juror that measured none of the rows is still a rater of them, every label not measured.
                name = _request_judge_name(r)
                if r[RJ.status] == JUDGED:
                    per_request.setdefault(name, {})[(arm, r[RJ.query_id], r[RJ.request_id])] = {
                        "addressed": r[RJ.addressed], "verdict": r[RJ.verdict], "reason": r[RJ.reason],
                        "coverage": r.get(RJ.coverage)}
                elif r[RJ.status].startswith("judge_"):  # its fault (not a row it was never asked about)
                    per_request.setdefault(name, {})
                kept = json.loads(r.get(RJ.jurors) or "[]")
                votes = kept_jurors(r.get(RJ.jurors) or "[]")
                if kept:  # every aggregation the panel could have used, from its jurors' kept verdicts
                    models = [j.model for j in votes]
                    for agg in panel.AGGREGATIONS:
                        got = panel.recombine(kept, agg)
                        scored = per_request.setdefault(aggregation_name(models, agg, r[RJ.prompt_digest] or ""), {})
                        if got is not None:
                            scored[(arm, r[RJ.query_id], r[RJ.request_id])] = {**got, "reason": None, "coverage": None}
                for j in votes:  # a panel's jurors are judges of those rows too
                    juror = jurors.setdefault((j.model, r[RJ.prompt_digest] or ""), {})
                    if j.status == JUDGED:
                        juror[(arm, r[RJ.query_id], r[RJ.request_id])] = {
                            "addressed": j.addressed, "verdict": j.verdict, "reason": j.reason, "coverage": j.coverage}
                by_row.setdefault(r[RJ.query_id], []).append(r)
            for qid, rows in by_row.items():
                name = _request_judge_name(rows[0])
                measured = all(r[RJ.status] == JUDGED for r in rows)
                score = sum(bool(r[RJ.addressed]) for r in rows) / len(rows) if measured else None
                pairwise.setdefault(name, {}).setdefault("completeness", {})[(arm, qid)] = score
                graded = ja.graded_share([{"coverage": r.get(RJ.coverage)} for r in rows]) if measured else None
                if graded is not None:  # only a judge that reports coverage is read graded
                    pairwise.setdefault(name + ja.GRADED, {}).setdefault("completeness", {})[(arm, qid)] = graded
                for name, share in aggregation_row_scores(rows):
                    pairwise.setdefault(name, {}).setdefault("completeness", {})[(arm, qid)] = share
                for key, share, graded in juror_row_scores(rows):
                    by_aspect = juror_pairs.setdefault(key, {})
                    by_aspect.setdefault("completeness", {})[(arm, qid)] = share
                    if graded is not None:
                        by_aspect.setdefault("completeness" + ja.GRADED, {})[(arm, qid)] = graded
        jv = judgments[arm].judge_verdicts
        if jv is None:
            continue
        for r in jv.iter_rows(named=True):
            name = f"support judge {r[JV.judge_model]}"
            pairwise.setdefault(name, {}).setdefault("faithfulness", {})[(arm, r[JV.query_id])] = r[JV.faithfulness]
    for name, by_aspect in juror_raters(juror_pairs).items():
        pairwise[name] = {"completeness": by_aspect.get("completeness", {})}
        if by_aspect.get("completeness" + ja.GRADED):  # a juror that reports coverage is read graded too
            pairwise[name + ja.GRADED] = {"completeness": by_aspect["completeness" + ja.GRADED]}
    return {**per_request, **juror_raters(jurors)}, pairwise


def abstained_rows(judged: ArmJudgments) -> dict[str, float]:
    """question -> 0.0 for the rows whose answer abstained (every request `abstained` or judged not addressed):
    no request addressed, as `compare`'s completeness counts them and as a person labels them (not answered)."""
    rj = judged.request_judgments
    if rj is None:
        return {}
    by: dict[str, list[dict]] = {}
    for r in rj.iter_rows(named=True):
        by.setdefault(r[RJ.query_id], []).append(r)
    return {q: 0.0 for q, rows in by.items()
            if any(r[RJ.status] == ABSTAINED for r in rows)
            and all(r[RJ.status] == ABSTAINED or (r[RJ.status] == JUDGED and not r[RJ.addressed]) for r in rows)}


def row_completeness(judgments: dict[str, ArmJudgments], pairwise: dict | None = None
                     ) -> dict[str, dict[tuple, float | None]]:
    """Each request judge's completeness of each row, read one way by every command that corrects it with human
    labels (`judge-agreement`, `accept`, `compare --labels`, the diagnosis): request judge name -> (arm, question) ->
    the share of the row's requests judged addressed where every request was judged, 0 where the answer abstained
    (abstained_rows: a person labels it not answered), None where a request's judgment failed (the row is left out
    and counted), over the arms of `judgments`. `pairwise` is judge_scores' second value when the caller has it."""
    if pairwise is None:
        _, pairwise = judge_scores(judgments)
    abstained = {arm: abstained_rows(judged) for arm, judged in judgments.items()}
    return {name: {(a, q): abstained.get(a, {}).get(q) if s is None else s
                   for (a, q), s in aspects["completeness"].items()}
            for name, aspects in pairwise.items()
            if name.startswith("request judge") and not name.endswith(ja.GRADED) and "completeness" in aspects}


def claim_scores(judgments: dict[str, ArmJudgments], labels: list[hl.ClaimLabel]) -> tuple[dict, dict]:
    """(per claim: support judge -> (arm, question, claim) -> {supported, reason} (judging.claim_agreement.
    claim_verdicts), per answer: support judge -> (arm, question) -> its faithfulness), for the labelled answers.
    The support judge is `support judge <model>`, as in the pairwise faithfulness table."""
    claims: dict[tuple, set[tuple[int, str]]] = {}
    for c in labels:
        claims.setdefault((c.arm, c.question), set()).add((c.claim, c.text))
    per_claim: dict[str, dict] = {}
    per_answer: dict[str, dict] = {}
    for arm in sorted({row[0] for row in claims}):
        jv = judgments[arm].judge_verdicts
        if jv is None:
            continue
        for r in jv.iter_rows(named=True):
            row = (arm, r[JV.query_id])
            name = f"support judge {r[JV.judge_model]}"
            per_answer.setdefault(name, {})[row] = r[JV.faithfulness]
            scored = per_claim.setdefault(name, {})
            if row not in claims or not r[JV.judged]:
                continue
            statements = list(r[JV.statements] or [])
            verdicts = [{"text": statements[v.statement - 1] if 0 < v.statement <= len(statements) else "",
                         "supported": v.supported, "reason": v.reason}
                        for v in map(StatementVerdict.model_validate, json.loads(r[JV.verdicts] or "[]"))]
            for k, verdict in claim_verdicts(sorted(claims[row]), verdicts).items():
                scored[(*row, k)] = verdict
    return per_claim, per_answer


def reference_scores(rows: dict[str, ArmRows], arms: set[str]) -> dict[tuple, float | None]:
    """(arm, question) -> the plain content-word recall of the question's gold answer by the answer
    (judging.judge_agreement.gold_answer_recall), for the answers the request judge would judge (contract-valid or free
    text); None for the others and for a question without a gold answer."""
    scores: dict[tuple, float | None] = {}
    for arm in sorted(arms):
        con = rows[arm].contract
        if con is None:
            continue
        gold = {q.id: q.gold_answer for q in rows[arm].questions}
        for r in con.iter_rows(named=True):
            judged = r[CON.status] in (VALID, FREE_TEXT)
            scores[(arm, r[CON.query_id])] = (ja.gold_answer_recall(gold.get(r[CON.query_id]), r[CON.answer] or "")
                                              if judged else None)
    return scores


def agreement(inputs: AgreementInputs, seed: int = 0) -> AgreementReport:
    """Score every judge that measured the labelled rows (read_agreement_inputs) against the labels: the report."""
    labels, labels_path, judgments, arms = inputs.labels, inputs.labels_file, inputs.judgments, set(inputs.judgments)
    per_request, pairwise = judge_scores(judgments)
    reference = reference_scores(inputs.rows, arms)
    request_labels = ja.request_agreement(labels.requests, per_request) if labels.requests else None
    request_completeness = (ja.completeness_agreement(labels.requests, per_request, seed,
                                                      references={ja.REFERENCE: reference})
                            if labels.requests else None)
    pair_labels = (ja.pair_agreement(labels.pairs, pairwise, seed,
                                     references={ja.REFERENCE: {"completeness": reference}}) if labels.pairs else None)
    # Prediction-powered completeness (labelling/ppi.py): each request judge's completeness corrected by the labels.
    from rag_ttc_assets.labelling import ppi  # late: numpy and scipy, which the code location never imports

    estimates = ppi.arm_estimates(labels.requests, row_completeness(judgments, pairwise),
                                  ppi.recorded_sampling(inputs.records)) if labels.requests else []
    rl = validated(RequestLabels, request_labels)
    return AgreementReport(
        labels_file=str(labels_path), arms=sorted(arms), seed=seed,
        bootstrap=Bootstrap(resamples=ja.BOOTSTRAP_RESAMPLES, confidence=ja.CONFIDENCE, method="percentile"),
        # A candidate aggregation's disagreements are counted, not listed: the panel's own (and its jurors') are.
        request_labels=rl.model_copy(update={"rows": counted_aggregations(rl.rows)}) if rl is not None else None,
        request_completeness=validated(RequestCompleteness, request_completeness),
        pair_labels=None if pair_labels is None else {k: PairAspect.model_validate(v) for k, v in pair_labels.items()},
        claim_labels=validated(ClaimLabels, claim_agreement(labels.claims, *claim_scores(judgments, labels.claims),
                                                            seed) if labels.claims else None),
        # Derived requests are labels too: say, per arm, whether the judged requests were derived and by what.
        requests_derived={arm: i.requests_derived.model_dump() if (i := judgments[arm].request_judge) and
                          i.requests_derived else None for arm in sorted(arms)},
        # The annotation page's request annotation: edits and the labels of edited requests, which no judge
        # measured, are counted and left out of every statistic.
        request_edits=RequestEdits(edits=labels.request_edits, labels_not_compared=labels.edited_request_labels),
        panel_aggregations=[PanelAggregation.model_validate(p) for p in ja.aggregation_choice(
            {"request_labels": request_labels, "request_completeness": request_completeness,
             "pair_labels": pair_labels})],
        completeness_estimates=[CompletenessEstimate.model_validate(e) for e in estimates])


def write(store: ArtifactStore, report: AgreementReport) -> Path:
    path = store.root / "judge_agreement" / f"{Path(report.labels_file).stem}.json"
    if hasattr(path.parent, "mkdir"):
        path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, json.dumps(report.to_json(), indent=1, default=str).encode("utf-8"), mode=0o644)
    return path


def _f(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def _by(annotators: list[str]) -> str:
    """Who labelled: their names, or how many when a set has many (one expert per item)."""
    return ", ".join(annotators) if len(annotators) <= 6 else f"{len(annotators)} annotators"


def _ceiling(part: RequestLabels | PairAspect | ClaimLabels, what: str) -> str:
    """The title's ceiling clause: which annotators could be compared, and why there is none when none could."""
    unshared = part.annotator_pairs_sharing_no_item
    measured = sum(1 for r in part.rows if r.kind == "ceiling")
    if not measured:
        return "no ceiling: no two annotators labelled the same item"
    return f"ceiling: {what}" + (f" ({measured} pairs of annotators who labelled items in common; {unshared} pairs "
                                 "shared none)" if unshared else "")


def _correlations(r: CorrelationRow) -> list[object]:
    """A row's n, Pearson and Spearman with their intervals."""
    return [r.n, *(x for c in (r.pearson, r.spearman) for x in (_f(c.r), f"[{_f(c.ci_low)}, {_f(c.ci_high)}]"))]


def _against_majority(m: Majority) -> list[list[object]]:
    return [[r.rater, r.kind, r.against, r.n, _f(r.kappa), _f(r.accuracy), _confusion(r.confusion), r.not_measured,
             r.ties_skipped] for r in m.rows]


Shown = tuple[str, list[str], list[list[object]]]  # a table: title, columns, rows


def tables(report: AgreementReport) -> list[Shown]:
    """The report as (title, columns, rows) tables: the asset's metadata and the command's output."""
    out: list[Shown] = []
    rl = report.request_labels
    # One annotator (a set of aggregated labels, one per item): no ceiling to measure, said in the titles.
    single = rl is not None and len(rl.annotators) == 1
    no_ceiling = f"no ceiling: one annotator ({rl.annotators[0]}), one label per item" if rl and single else ""
    if rl is not None:
        rows = [[r.rater, r.kind, r.n, _f(r.kappa), _f(r.accuracy), _confusion(r.confusion), r.not_measured,
                 r.disagreement_count()] for r in rl.rows]
        out.append((f"per-request labels ({rl.labels} labels by {_by(rl.annotators)}): `addressed`, "
                    "Cohen's kappa and accuracy; " + (no_ceiling or _ceiling(rl, "the annotators with each other")),
                    ["rater", "kind", "n", "kappa", "accuracy", "confusion (human/judge: TT TF FT FF)",
                     "not_measured", "disagreements"], rows))
        m = rl.majority
        if m.rows and m.items_with_two_or_more_labels:
            out.append((f"per-request labels against the majority ({m.items_with_two_or_more_labels} of "
                        f"{m.items} items labelled by two or more annotators; ties skipped): the judges against "
                        "the majority label; then, like for like, each human label against the majority of the "
                        "item's other labels (ceiling) and each judge against that same majority",
                        ["rater", "kind", "against", "n", "kappa", "accuracy",
                         "confusion (majority/rater: TT TF FT FF)", "not_measured", "ties_skipped"],
                        _against_majority(m)))
    rc = report.request_completeness
    if rc and (rc.levels.answer or rc.levels.arm):
        rows = [[level, r.rater, r.kind, r.against, *_correlations(r), r.not_measured]
                for level, rs in rc.levels.items() for r in rs]
        out.append((f"completeness from the per-request labels ({rc.rows} answers of {rc.arms} arms): the share "
                    "of an answer's labelled requests addressed (a rater marked (graded): the mean of their "
                    "coverage), per answer and per arm (the mean over its answers); "
                    + ("Pearson and Spearman against the labels'; " + no_ceiling if single else
                       "Pearson and Spearman against the majority's; ceiling: one annotator against the majority of "
                       "the others, beside each judge against that same majority")
                    + "; reference: the plain content-word recall of the gold answer by the whole answer, no judge",
                    ["level", "rater", "kind", "against", "n", "pearson", "pearson 95% CI", "spearman",
                     "spearman 95% CI", "not_measured"], rows))
    for aspect, a in (report.pair_labels or {}).items():
        rows = [[r.rater, r.kind, *_correlations(r), r.not_measured, r.pearson.why or ""] for r in a.rows]
        note = "" if a.judged else " (no lab judge scores this aspect: the ceiling only)"
        out.append((f"pairwise preferences, {aspect} ({a.labels} labels by {_by(a.annotators)}): the "
                    "judge's score(b) - score(a) against the human label (-2..2; completeness: the share of the "
                    "row's requests addressed, (graded): their mean coverage); "
                    f"{_ceiling(a, 'the annotators with each other')}{note}"
                    + ("; reference: the plain content-word recall of the gold answer, no judge"
                       if any(r.kind == "reference" for r in a.rows) else ""),
                    ["rater", "kind", "n", "pearson", "pearson 95% CI", "spearman", "spearman 95% CI",
                     "not_measured", "undefined because"], rows))
    return out + estimate_tables(report) + _aggregation_tables(report) + claim_tables(report)


def _interval(e: Estimate | None) -> str:
    if e is None or e.low is None:
        return "-" if e is None else f"{_f(e.mean)} (one row: no interval)"
    return f"{_f(e.mean)} [{_f(e.low)}, {_f(e.high)}]"


def estimate_tables(report: AgreementReport) -> list[Shown]:
    """The judge's completeness corrected by the labels, per arm and judge (labelling/ppi.py)."""
    est = report.completeness_estimates
    if not est:
        return []
    rows: list[list[object]] = [[e.arm, e.rater, e.rows, e.labelled, _f(e.judge.mean), _interval(e.human),
                                 _interval(e.ppi), e.weighting or "-"] for e in est]
    return [("completeness corrected by the labels: the judge's over all its rows, the people's over the labelled "
             "rows, and the prediction-powered estimate (Angelopoulos et al., Science 2023) with 95% intervals",
             ["arm", "judge", "rows", "labelled", "judge", "human [95% CI]", "corrected [95% CI]", "weighting"],
             rows)]


def _aggregation_tables(report: AgreementReport) -> list[Shown]:
    out: list[Shown] = []
    for p in report.panel_aggregations:
        rows: list[list[object]] = [[r.aggregation, *(_f(r.measures[m]) for m in p.measures), r.best_on]
                                    for r in p.rows]
        if any(v is not None for v in p.graded.values()):
            rows.append(["(graded: calibrated mean coverage)", *(_f(p.graded[m]) for m in p.measures), "-"])
        out.append((f"panel aggregations of {p.panel}, each from the jurors' kept verdicts (no juror judged "
                    "again), against these labels (the measures of the tables above); best on these labels: "
                    f"{p.best or 'none (no measure defined)'}",
                    ["aggregation", *p.measures, "best on"], rows))
    return out


def claim_tables(report: AgreementReport) -> list[Shown]:
    """The per-claim support labels' tables: per claim (every label, then against the majority), and per answer."""
    cl = report.claim_labels
    if not cl:
        return []
    single = len(cl.annotators) == 1
    ceiling = (f"no ceiling: one annotator ({cl.annotators[0]}), one label per claim" if single
               else _ceiling(cl, "the annotators with each other"))
    out: list[Shown] = [
        (f"per-claim support labels ({cl.labels} labels by {_by(cl.annotators)}; "
         + ", ".join(f"{k} {v:.3f}" for k, v in cl.support_shares.items())
         + "): the support judge's verdict on each claim (all its statements in the claim supported) against "
         "the label read as supported or not (partially supported: not), Cohen's kappa and accuracy; " + ceiling,
         ["rater", "kind", "n", "kappa", "accuracy", "confusion (human/judge: TT TF FT FF)", "not_measured",
          "disagreements"],
         [[r.rater, r.kind, r.n, _f(r.kappa), _f(r.accuracy), _confusion(r.confusion), r.not_measured,
           len(r.disagreements)] for r in cl.rows])]
    m = cl.majority
    if m.rows and m.items_with_two_or_more_labels:
        out.append((f"per-claim support labels against the majority ({m.items_with_two_or_more_labels} of "
                    f"{m.items} claims labelled by two or more annotators; ties skipped): the judges against the "
                    "majority label; then, like for like, each label against the majority of the claim's other "
                    "labels (ceiling) and each judge against that same majority",
                    ["rater", "kind", "against", "n", "kappa", "accuracy", "confusion (majority/rater: TT TF FT FF)",
                     "not_measured", "ties_skipped"], _against_majority(m)))
    a = cl.answers
    if a.rows:
        out.append((f"faithfulness per answer from the per-claim labels ({a.answers} answers): the support judge's "
                    "faithfulness (its supported share of the answer's statements) against the share of the "
                    "answer's claims the majority finds supported, Pearson and Spearman; "
                    + ("no ceiling: one label per claim" if single else
                       "ceiling: one annotator's share against the majority of the others', beside each judge "
                       "against that same majority"),
                    ["rater", "kind", "against", "n", "pearson", "pearson 95% CI", "spearman", "spearman 95% CI",
                     "not_measured"],
                    [[r.rater, r.kind, r.against, *_correlations(r), r.not_measured] for r in a.rows]))
    return out


def _confusion(c: Confusion | None) -> str:
    if not c:
        return "-"
    return " ".join(str(c[h][j]) for h in ("True", "False") for j in ("True", "False"))
