"""`rag-ttc judge-agreement LABELS` (the judge_agreement asset) on two materialized arms: a constructed labelled set
whose kappa and correlation the test computes by hand from the judge's own rows, and bad labels refused."""

import json
import math
import os

import polars as pl

from rag_ttc_assets.core.text import content_words, stem
from rag_ttc_assets_tests.conftest import MINI_DEFAULTS, mini_corpus, mini_questions, write_dataset
from rag_ttc_assets_tests.e2e.test_cli import rag_ttc
from rag_ttc_assets_tests.support.reliability import cli_in_process


def _pearson(x, y):
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    return sxy / math.sqrt(sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))


def _kappa(pairs):
    n = len(pairs)
    p_o = sum(h == j for h, j in pairs) / n
    h_t, j_t = sum(h for h, _ in pairs) / n, sum(j for _, j in pairs) / n
    p_e = h_t * j_t + (1 - h_t) * (1 - j_t)
    return (p_o - p_e) / (1 - p_e)


def test_judge_agreement_through_the_command(tmp_path):
    corpus = mini_corpus()
    questions_written = mini_questions(corpus)
    for q in questions_written:  # a gold answer for the reference scorer, but none for mini-07
        if q["answerable"] and q["id"] != "mini-07":
            q["gold_answer"] = " ".join(e["quote"] for r in q["requests"] for e in r["evidence"])
    write_dataset(tmp_path / "datasets" / "mini", corpus, questions_written)
    (tmp_path / "arms.yaml").write_text(MINI_DEFAULTS + "arms:\n  baseline: {}\n  tight: {context_runes: 700}\n",
                                        encoding="utf-8")
    env = {"RAG_TTC_DATASETS": str(tmp_path / "datasets"), "RAG_TTC_ARMS": str(tmp_path / "arms.yaml"),
           "RAG_TTC_HOME": str(tmp_path / "home"), "DAGSTER_HOME": str(tmp_path / "dagster_home")}
    os.makedirs(env["DAGSTER_HOME"])
    code, _, err = rag_ttc("run", "baseline", "tight", env=env)
    assert code == 0, err
    store = tmp_path / "home" / "store" / "arms"
    judged = {a: pl.read_parquet(store / a / "request_judgments.parquet").filter(pl.col("status") == "judged")
              for a in ("baseline", "tight")}
    rows = judged["baseline"].select("query_id", "request_id", "addressed").rows()
    assert len(rows) >= 8
    # Two annotators: ann1 disagrees with the judge on the first two requests, ann2 on the third.
    records, pairs_judge = [], []
    for ann, flips in (("ann1", {0, 1}), ("ann2", {2})):
        for i, (q, r, addressed) in enumerate(rows):
            human = (not addressed) if i in flips else addressed
            records.append({"kind": "request", "question": q, "request": r, "arm": "baseline", "addressed": human,
                            "annotator": ann})
            pairs_judge.append((human, addressed))
    # Pairwise: completeness of tight (b) over baseline (a), per question, by the judge: share of requests addressed.
    share = {a: {q: sum(g["addressed"]) / g.height for (q,), g in judged[a].group_by("query_id")}
             for a in judged}
    questions = sorted(set(share["baseline"]) & set(share["tight"]))
    diffs = [share["tight"][q] - share["baseline"][q] for q in questions]
    labels = [(-1 if i % 2 else 1) * (1 + i % 2) for i in range(len(questions))]  # 1, -2, 1, -2, ...
    for q, y in zip(questions, labels):
        records.append({"kind": "pair", "question": q, "a": {"arm": "baseline"}, "b": {"arm": "tight"},
                        "labels": {"completeness": y, "fluency": y}, "annotator": "ann1"})
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")

    code, out, err = rag_ttc("judge-agreement", str(path), "--json", env=env)
    assert code == 0, err
    rep = json.loads(out)
    judge, ceiling = rep["request_labels"]["rows"]
    assert judge["rater"].startswith("request judge local/lexical")
    assert judge["n"] == 2 * len(rows) and judge["kappa"] == __import__("pytest").approx(_kappa(pairs_judge))
    assert judge["accuracy"] == (2 * len(rows) - 3) / (2 * len(rows))
    assert {(d["request"], d["annotator"]) for d in judge["disagreements"]} == {
        (rows[0][1], "ann1"), (rows[1][1], "ann1"), (rows[2][1], "ann2")}
    # ann1 and ann2 disagree on exactly the three flipped requests.
    ann = [(h1, h2) for (h1, _), (h2, _) in zip(pairs_judge[:len(rows)], pairs_judge[len(rows):])]
    assert ceiling["rater"] == "ann1 vs ann2" and ceiling["kappa"] == __import__("pytest").approx(_kappa(ann))
    # Prediction-powered completeness (labelling/ppi.py): the judge's over the arm's rows (an answer that abstained counts
    # 0, as every labelled correction reads it: judging.judge_agreement_stage.row_completeness), the people's over the
    # labelled rows (per request the share of its two labels addressed, per row their mean), corrected; the rows
    # labelled without a sampling probability: uniform, said so.
    all_rows = pl.read_parquet(store / "baseline" / "request_judgments.parquet").rows(named=True)
    by_q = {}
    for r in all_rows:
        by_q.setdefault(r["query_id"], []).append(r)
    abstained = {q for q, rs in by_q.items() if any(r["status"] == "abstained" for r in rs)
                 and all(r["status"] == "abstained" or (r["status"] == "judged" and not r["addressed"]) for r in rs)}
    f = {**share["baseline"], **{q: 0.0 for q in abstained}}
    (est,) = [e for e in rep["completeness_estimates"] if e["arm"] == "baseline"]
    assert est["rater"] == judge["rater"] and est["labelled"] == len({q for q, _, _ in rows})
    assert est["rows"] == len(f) == est["labelled"] + len(abstained)
    assert est["judge"]["mean"] == __import__("pytest").approx(sum(f.values()) / len(f))
    by_req = {}
    for (h, _), (q, r, _) in zip(pairs_judge, rows + rows):
        by_req.setdefault(q, {}).setdefault(r, []).append(h)
    y = {q: sum(sum(v) / len(v) for v in reqs.values()) / len(reqs) for q, reqs in by_req.items()}
    want = sum(y.values()) / len(y)
    assert est["human"]["mean"] == __import__("pytest").approx(want)
    theta = sum(f.values()) / len(f) - sum(f[q] - y[q] for q in y) / len(y)  # the paper's mean estimator
    assert est["ppi"]["mean"] == __import__("pytest").approx(theta) and est["ppi"]["low"] <= theta <= est["ppi"]["high"]
    assert est["weighting"] == "uniform (labels carry no sampling probability)"
    comp = rep["pair_labels"]["completeness"]
    (cj, graded) = [r for r in comp["rows"] if r["rater"].startswith("request judge")]
    assert cj["n"] == len(questions)
    if len(set(diffs)) > 1:
        assert cj["pearson"]["r"] == __import__("pytest").approx(_pearson(diffs, labels))
    else:
        assert cj["pearson"]["r"] is None and cj["pearson"]["why"] == "one side is constant"
    # The offline judge reports each request's coverage: read graded too, by the mean coverage of the row's requests
    # (the `coverage` column of request_judgments, every value within 0..1).
    assert graded["rater"] == cj["rater"] + " (graded)" and graded["kind"] == "judge"
    assert all(0 <= c <= 1 for a in judged for c in judged[a]["coverage"].to_list())
    mean_cov = {a: {q: g["coverage"].mean() for (q,), g in judged[a].group_by("query_id")} for a in judged}
    gdiffs = [mean_cov["tight"][q] - mean_cov["baseline"][q] for q in questions]
    assert graded["n"] == len(questions) and len(set(gdiffs)) > 1
    assert graded["pearson"]["r"] == __import__("pytest").approx(_pearson(gdiffs, labels))
    (answer_graded,) = [r for r in rep["request_completeness"]["levels"]["answer"] if r["rater"] == graded["rater"]]
    assert answer_graded["n"] >= 1 and answer_graded["not_measured"] == 0
    assert rep["pair_labels"]["fluency"]["judged"] is False  # no lab judge scores fluency
    # Beside the judge, the reference scorer (no judge): the share of the gold answer's content-word stems anywhere
    # in the answer, computed here from the contract rows and the gold answers written above.
    gold = {q["id"]: q.get("gold_answer") for q in questions_written}
    recall = {}
    for a in ("baseline", "tight"):
        for r in pl.read_parquet(store / a / "contract_results.parquet").iter_rows(named=True):
            g = gold.get(r["query_id"])
            if g and r["status"] in ("valid", "free_text"):
                want = {stem(w) for w in content_words(g)}
                recall[(a, r["query_id"])] = len(want & {stem(w) for w in content_words(r["answer"] or "")}) / len(want)
    scored = [q for q in questions if ("baseline", q) in recall and ("tight", q) in recall]
    (ref,) = [r for r in comp["rows"] if r["kind"] == "reference"]
    assert ref["rater"] == "reference: content-word recall of the gold answer"
    assert ref["n"] == len(scored) and ref["not_measured"] == len(questions) - len(scored) >= 1  # mini-07 at least
    rdiffs = [recall[("tight", q)] - recall[("baseline", q)] for q in scored]
    if len(set(rdiffs)) > 1:
        assert ref["pearson"]["r"] == __import__("pytest").approx(_pearson(rdiffs, [y for q, y in zip(questions, labels)
                                                                                  if q in scored]))
    assert all(r["kind"] != "reference" for r in rep["pair_labels"]["fluency"]["rows"])  # completeness only
    # Per answer, against the majority of the two annotators (the items they agree on), the same reference.
    (ref_answer,) = [r for r in rep["request_completeness"]["levels"]["answer"] if r["kind"] == "reference"]
    assert ref_answer["rater"] == ref["rater"] and ref_answer["not_measured"] >= 1

    code, out, err = rag_ttc("judge-agreement", str(path), env=env)
    assert code == 0, err
    assert "per-request labels" in out and "ann1 vs ann2" in out and "ceiling" in out
    assert "requests the judge and a person disagree on (3)" in out
    assert "completeness corrected by the labels" in out and "prediction-powered estimate" in out

    # Which rows to label: a stratified sample with each row's inclusion probability; labels carrying it are
    # weighted by it. A budget above the rows takes every row with probability 1, and says so.
    sample = tmp_path / "sample.jsonl"
    code, out, err = rag_ttc("sample-labels", "baseline", "--budget", "4", "--seed", "1", "--out", str(sample), env=env)
    assert code == 0, err
    picks = [json.loads(x) for x in sample.read_text(encoding="utf-8").splitlines()]
    assert len(picks) == 4 and {p["arm"] for p in picks} == {"baseline"} and all(p["run_id"] for p in picks)
    assert all(0 < p["probability"] <= 1 for p in picks)
    assert any(p["probability"] < 1 for p in picks) and "rows of arm baseline to label (seed 1)" in out
    code, out, err = rag_ttc("sample-labels", "baseline", "--budget", "999", "--out", str(sample), env=env)
    assert code == 0, err
    assert "every row taken, probability 1" in out
    assert all(json.loads(x)["probability"] == 1 for x in sample.read_text(encoding="utf-8").splitlines())
    code, out, err = rag_ttc("sample-labels", "nosuch", "--budget", "4", "--out", str(sample), env=env)
    assert code == 1 and "arm 'nosuch' has no request judgments" in err and "Traceback" not in err
    prob = {p["question"]: p["probability"] for p in picks}
    weighted = tmp_path / "weighted.jsonl"
    weighted.write_text("".join(json.dumps({**r, "probability": prob[r["question"]]}) + "\n"
                                for r in records if r["kind"] == "request" and r["question"] in prob), encoding="utf-8")
    code, out, err = rag_ttc("judge-agreement", str(weighted), "--json", env=env)
    assert code == 0, err
    (west,) = [e for e in json.loads(out)["completeness_estimates"] if e["arm"] == "baseline"]
    assert west["labelled"] == 4 and west["weighting"].startswith("inverse-probability weighted")

    # An arm judged under older offline rules (a store not rerun since they changed; here its recorded version is
    # rewritten as such a store would hold it) is another instrument: the judge is split into one rater per version,
    # never pooled.
    summary_path = store / "tight" / "request_judge_summary.json"
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    current = summary["request_judge"]["rules"]
    assert current.startswith("request-judge-rules/")
    summary["request_judge"]["rules"] = "request-judge-rules/2"
    summary_path.write_text(json.dumps(summary), encoding="utf-8")
    code, out, err = rag_ttc("judge-agreement", str(path), "--json", env=env)
    assert code == 0, err
    split = json.loads(out)
    raters = {r["rater"]: r for r in split["pair_labels"]["completeness"]["rows"] if r["kind"] == "judge"}
    assert set(raters) == {f"{cj['rater']} [{current}]", f"{cj['rater']} [request-judge-rules/2]",
                           f"{graded['rater']} [{current}]", f"{graded['rater']} [request-judge-rules/2]"}
    # Each side of every pair is one arm, so neither rater has a pair to score; the per-request labels are all on
    # baseline, so the current version's rater has them all, with the kappa of before.
    assert all(r["n"] == 0 for r in raters.values())
    per = {r["rater"]: r for r in split["request_labels"]["rows"] if r["kind"] == "judge"}
    assert set(per) == {f"{judge['rater']} [{current}]", f"{judge['rater']} [request-judge-rules/2]"}
    assert (per[f"{judge['rater']} [{current}]"]["n"], per[f"{judge['rater']} [{current}]"]["kappa"]) == (
        judge["n"], judge["kappa"])
    assert per[f"{judge['rater']} [request-judge-rules/2]"]["n"] == 0
    summary["request_judge"]["rules"] = current
    summary_path.write_text(json.dumps(summary), encoding="utf-8")

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**records[0], "request": "mini-01.r9"}) + "\n"
                   + json.dumps({**records[-1], "labels": {"completeness": 5}}) + "\n"
                   + json.dumps(records[-1]) + "\n" + json.dumps(records[-1]) + "\n", encoding="utf-8")
    code, out, err = rag_ttc("judge-agreement", str(bad), env=env)
    assert code == 1
    assert f"{bad}: line 1: request: question 'mini-01' has no request 'mini-01.r9'" in err
    assert f"{bad}: line 2: labels.completeness: 5 is not an integer from -2 to 2" in err
    assert f"{bad}: line 4: annotator: 'ann1' already labelled this pair on line 3" in err


def _panel_lab(tmp_path):
    """The mini lab with a panel of the three offline jurors and four arms: `base` and `rebase` are one
    configuration under two names (the same answers, so `rebase` is `base` renamed: `base` sorts before `k5` and
    `tight`, `rebase` between them), `k5` and `tight` others."""
    corpus = mini_corpus()
    write_dataset(tmp_path / "datasets" / "mini", corpus, mini_questions(corpus))
    (tmp_path / "arms.yaml").write_text(
        MINI_DEFAULTS + "  request_judges: [local/lexical, local/coverage, local/bertscore]\n"
        "arms:\n  base: {}\n  rebase: {}\n  k5: {evidence_k: 5, context_runes: 1000}\n  tight: {context_runes: 700}\n",
        encoding="utf-8")
    env = {"RAG_TTC_DATASETS": str(tmp_path / "datasets"), "RAG_TTC_ARMS": str(tmp_path / "arms.yaml"),
           "RAG_TTC_HOME": str(tmp_path / "home"), "DAGSTER_HOME": str(tmp_path / "dagster_home")}
    os.makedirs(env["DAGSTER_HOME"])
    code, _, err = rag_ttc("run", "base", "rebase", "k5", "tight", env=env)
    assert code == 0, err
    return env, tmp_path / "home" / "store" / "arms"


def _juror_shares(store, arm):
    """(juror model -> question -> share of the row's requests it found addressed, or None unless it judged them all;
    and the same graded: the mean of the jurors' coverage), read from the arm's request_judgments rows."""
    rows = pl.read_parquet(store / arm / "request_judgments.parquet").iter_rows(named=True)
    got: dict[str, dict[str, list]] = {}
    for r in rows:
        for j in json.loads(r["jurors"] or "[]"):
            got.setdefault(j["model"], {}).setdefault(r["query_id"], []).append(j)
    share = {m: {q: (sum(j["addressed"] for j in js) / len(js) if all(j["status"] == "judged" for j in js) else None)
                 for q, js in qs.items()} for m, qs in got.items()}
    graded = {m: {q: (sum(j["coverage"] for j in js) / len(js) if all(j["status"] == "judged" for j in js) else None)
                  for q, js in qs.items()} for m, qs in got.items()}
    return share, graded


def _recombined(store, arm):
    """(question, request) -> aggregation -> addressed, by hand from the jurors' kept rows in request_judgments:
    majority more than half, all, any, mean the calibrated coverages' mean >= 0.5."""
    out = {}
    for r in pl.read_parquet(store / arm / "request_judgments.parquet").iter_rows(named=True):
        js = [j for j in json.loads(r["jurors"] or "[]") if j["status"] == "judged"]
        if not js:
            continue
        votes = [bool(j["addressed"]) for j in js]
        out[(r["query_id"], r["request_id"])] = {
            "majority": 2 * sum(votes) > len(votes), "all": all(votes), "any": any(votes),
            "mean": sum(j["calibrated_coverage"] for j in js) / len(js) >= 0.5}
    return out


def test_pairwise_labels_get_a_row_per_juror_and_their_figures_follow_each_labels_own_a_and_b(tmp_path, capsys):
    env, store = _panel_lab(tmp_path)
    # Completeness read graded beside the share addressed, each with its N of M, in what the arm writes: each
    # request's coverage (the panel's: its jurors' calibrated mean) in request_outcomes, their mean in the summary.
    judged = [r for r in pl.read_parquet(store / "base" / "request_judgments.parquet").iter_rows(named=True)
              if r["status"] == "judged"]
    outcomes = {(r["query_id"], r["request_id"]): r
                for r in pl.read_parquet(store / "base" / "request_outcomes.parquet").iter_rows(named=True)}
    for r in judged:
        cal = [j["calibrated_coverage"] for j in json.loads(r["jurors"])]
        assert r["coverage"] == __import__("pytest").approx(round(sum(cal) / len(cal), 4), abs=1e-4)
        assert outcomes[(r["query_id"], r["request_id"])]["coverage"] == r["coverage"]
    # A request of an answer that is not contract-valid is measured, not answered, at coverage 0 (nothing delivered).
    undelivered = [o for o in outcomes.values() if o["measured"] and o["judge_status"] != "judged"]
    assert all(o["coverage"] == 0.0 and o["answered"] is False for o in undelivered)
    totals = json.loads((store / "base" / "request_completeness.json").read_text())
    assert totals["requests_graded"] == len(judged) + len(undelivered) == totals["requests_measured"]
    assert totals["graded_completeness"] == __import__("pytest").approx(
        sum(r["coverage"] for r in judged) / (len(judged) + len(undelivered)))
    assert totals["requests_answered_share"] == __import__("pytest").approx(
        sum(bool(r["addressed"]) for r in judged) / (len(judged) + len(undelivered)))
    shares = {a: _juror_shares(store, a) for a in ("base", "k5", "tight")}
    questions = sorted(q for q in shares["base"][0]["local/lexical"]
                       if all(shares[a][0]["local/lexical"].get(q) is not None for a in shares))
    assert len(questions) >= 5
    # Two annotators label completeness on pairs among three arms, each pair written with its arms in the order an
    # annotator saw them (ann2 sees every other pair the other way round, its label negated).
    pairs = [("base", "k5"), ("tight", "base"), ("k5", "tight")]
    records, labelled = [], []
    for i, q in enumerate(questions):
        a, b = pairs[i % 3]
        y1 = (i * 7) % 5 - 2
        y2 = max(-2, min(2, y1 + (1 if i % 4 == 0 else 0)))
        records.append({"kind": "pair", "question": q, "a": {"arm": a}, "b": {"arm": b},
                        "labels": {"completeness": y1}, "annotator": "ann1"})
        labelled.append((q, a, b, y1))
        if i % 2:
            records.append({"kind": "pair", "question": q, "a": {"arm": b}, "b": {"arm": a},
                            "labels": {"completeness": -y2}, "annotator": "ann2"})
        else:
            records.append({"kind": "pair", "question": q, "a": {"arm": a}, "b": {"arm": b},
                            "labels": {"completeness": y2}, "annotator": "ann2"})
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    code, out, err = rag_ttc("judge-agreement", str(path), "--json", env=env)
    assert code == 0, err
    rows = {r["rater"]: r for r in json.loads(out)["pair_labels"]["completeness"]["rows"]}
    # A row per juror of the panel, share and graded, beside the panel's own; each recomputed by hand from the
    # jurors' verdicts in request_judgments: score(b) - score(a) against each human label, in each label's own a/b.
    for model in ("local/lexical", "local/coverage"):
        for name, which in ((f"juror {model}", 0), (f"juror {model} (graded)", 1)):
            x, y = [], []
            for r in records:
                sa = shares[r["a"]["arm"]][which][model][r["question"]]
                sb = shares[r["b"]["arm"]][which][model][r["question"]]
                x.append(sb - sa)
                y.append(r["labels"]["completeness"])
            assert rows[name]["kind"] == "judge" and rows[name]["n"] == len(records)
            if len(set(x)) > 1:
                assert rows[name]["pearson"]["r"] == __import__("pytest").approx(_pearson(x, y))
    assert any(r.startswith("request judge panel") for r in rows)
    # A row per aggregation the panel could have used, recombined from the jurors' kept verdicts (no re-judging):
    # the share of the row's requests each finds addressed, by hand; the arms' own (majority) equals the panel's.
    recombined = {a: _recombined(store, a) for a in ("base", "k5", "tight")}
    jurors = "local/lexical, local/coverage, local/bertscore"
    for agg in ("majority", "all", "any", "mean"):
        (name,) = [n for n in rows if n.startswith(f"aggregation panel[{agg}]: {jurors} (")]
        share = {a: {q: [v[agg] for (qq, _), v in recombined[a].items() if qq == q] for q in questions}
                 for a in recombined}
        x = [sum(share[r["b"]["arm"]][r["question"]]) / len(share[r["b"]["arm"]][r["question"]])
             - sum(share[r["a"]["arm"]][r["question"]]) / len(share[r["a"]["arm"]][r["question"]]) for r in records]
        y = [r["labels"]["completeness"] for r in records]
        assert rows[name]["n"] == len(records)
        if len(set(x)) > 1:
            assert rows[name]["pearson"]["r"] == __import__("pytest").approx(_pearson(x, y))
    # The arm's own panel (the default aggregation, `all`) is its candidate of the same name, recomputed.
    (own,) = [n for n in rows if n.startswith(f"request judge panel[all]: {jurors} (") and "(graded)" not in n]
    assert rows[own]["pearson"] == rows[next(n for n in rows if n.startswith("aggregation panel[all]"))]["pearson"]
    # The ceiling: ann2's label read with ann1's a and b (ann1's line comes first in the file).
    a1 = [y1 for _, _, _, y1 in labelled]
    a2 = [r["labels"]["completeness"] * (1 if (r["a"]["arm"], r["b"]["arm"]) == (a, b) else -1)
          for r, (_, a, b, _) in zip(records[1::2], labelled)]
    assert rows["ann1 vs ann2"]["pearson"]["r"] == __import__("pytest").approx(_pearson(a1, a2))
    code, printed, err = rag_ttc("judge-agreement", str(path), env=env)
    assert code == 0, err
    assert f"panel aggregations of {jurors} (" in printed and "best on these labels: " in printed
    table = printed.split("pairwise preferences, completeness")[1]
    for rater in ("juror local/lexical ", "juror local/coverage ", "juror local/lexical (graded)", "ann1 vs ann2"):
        assert rater in table

    def figures(records_):  # the command's entry point in this process: `rag-ttc judge-agreement` ran as one above
        p = tmp_path / "other.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in records_), encoding="utf-8")
        code, out, err = cli_in_process("judge-agreement", str(p), "--json", env=env, capsys=capsys)
        assert code == 0, err
        return {r["rater"]: {k: r[k] for k in ("n", "pearson", "spearman")}
                for r in json.loads(out)["pair_labels"]["completeness"]["rows"]}

    before = {name: {k: r[k] for k in ("n", "pearson", "spearman")} for name, r in rows.items()}
    # The same labels with every pair's arms swapped in the file (each label negated): identical figures.
    swapped = [{**r, "a": r["b"], "b": r["a"], "labels": {"completeness": -r["labels"]["completeness"]}}
               for r in records]
    assert figures(swapped) == before
    # The same labels with `base` renamed (`rebase`: the same answers under a name that sorts after `k5`, where `base`
    # sorts before it): identical figures. By a sort of the arms' names the ceiling read half its pairs the other way.
    renamed = [{**r, **{s: {"arm": "rebase"} for s in ("a", "b") if r[s]["arm"] == "base"}} for r in records]
    assert figures(renamed) == before

    # Per-request labels on `base`: each candidate aggregation's kappa against every human label, by hand from the
    # jurors' kept verdicts, and the one that agrees best on these labels named (per measure, and overall).
    base = recombined["base"]
    assert any(len({v[a] for a in v}) > 1 for v in base.values())  # the jurors disagree somewhere
    items = sorted(base)
    req = [{"kind": "request", "question": q, "request": rid, "arm": "base", "addressed": base[(q, rid)]["any"] != (
        i % 5 == 0), "annotator": "ann1"} for i, (q, rid) in enumerate(items)]
    req += [{"kind": "request", "question": q, "request": rid, "arm": "base", "addressed": base[(q, rid)]["all"],
             "annotator": "ann2"} for q, rid in items]
    rpath = tmp_path / "requests.jsonl"
    rpath.write_text("".join(json.dumps(r) + "\n" for r in req), encoding="utf-8")
    code, out, err = cli_in_process("judge-agreement", str(rpath), "--json", env=env, capsys=capsys)
    assert code == 0, err
    report = json.loads(out)
    kappas = {r["rater"]: r["kappa"] for r in report["request_labels"]["rows"]}
    (choice,) = report["panel_aggregations"]
    assert choice["panel"].startswith(jurors)
    by_hand = {}
    for agg in ("majority", "all", "any", "mean"):
        (name,) = [n for n in kappas if n.startswith(f"aggregation panel[{agg}]: {jurors} (")]
        pairs = [(r["addressed"], base[(r["question"], r["request"])][agg]) for r in req]
        by_hand[agg] = _kappa(pairs) if len({j for _, j in pairs}) > 1 else None
        assert kappas[name] == __import__("pytest").approx(by_hand[agg])
        assert next(r for r in choice["rows"] if r["aggregation"] == agg)["kappa"] == kappas[name]
    order = ["majority", "all", "any", "mean"]
    assert choice["best_by_measure"]["kappa"] == max(order, key=lambda a: (by_hand[a] if by_hand[a] is not None
                                                                          else -1, -order.index(a)))
    wins = {a: sum(choice["best_by_measure"][m] == a for m in choice["measures"]) for a in order}
    assert choice["best"] == max(order, key=lambda a: (wins[a], -order.index(a)))
    assert "pearson per answer" in choice["measures"] and choice["graded"]["pearson per answer"] is not None
    code, printed, err = rag_ttc("judge-agreement", str(rpath), env=env)
    assert code == 0, err
    assert f"best on these labels: {choice['best']}" in printed and "(graded: calibrated mean coverage)" in printed

    # A pairwise label whose answers belong to other questions is refused, naming the file, the line and the field.
    q1, q2, q3 = questions[:3]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(records[0]) + "\n" + json.dumps(
        {"kind": "pair", "question": q1, "a": {"arm": "base", "row": q2}, "b": {"arm": "tight", "row": q3},
         "labels": {"completeness": 1}, "annotator": "ann3"}) + "\n" + json.dumps(
        {"kind": "pair", "question": q1, "a": {"arm": "base"}, "b": {"arm": "tight", "row": q3},
         "labels": {"completeness": 1}, "annotator": "ann4"}) + "\n" + json.dumps(
        {"kind": "pair", "question": q1, "a": {"arm": "base"}, "b": {"arm": "nope"},
         "labels": {"completeness": 1}, "annotator": "ann5"}) + "\n" + json.dumps(
        {"kind": "pair", "question": q1, "a": {"arm": "base"}, "b": {"arm": "tight", "row": "no-such-row"},
         "labels": {"completeness": 1}, "annotator": "ann6"}) + "\n", encoding="utf-8")
    code, out, err = rag_ttc("judge-agreement", str(bad), env=env)
    assert code == 1 and "Traceback" not in err
    assert f"{bad}: line 2: a.row: row '{q2}' is the answer of arm 'base' to question '{q2}', not to this " \
           f"label's question '{q1}'" in err
    assert f"{bad}: line 3: b.row: row '{q3}' is the answer of arm 'tight' to question '{q3}'" in err
    assert f"{bad}: line 4: b.arm: no arm or imported system 'nope'" in err
    assert f"{bad}: line 5: b.row: arm 'tight' has no answer row 'no-such-row'" in err
    assert f"{bad}: line 1" not in err
