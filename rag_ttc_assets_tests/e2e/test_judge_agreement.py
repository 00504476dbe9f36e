"""`rag-ttc judge-agreement LABELS` (the judge_agreement asset) on two materialized arms: a constructed labelled set
whose kappa and correlation the test computes by hand from the judge's own rows, and bad labels refused."""

import json
import math
import os

import polars as pl

from rag_ttc_assets.core.text import content_words, stem
from rag_ttc_assets_tests.conftest import MINI_DEFAULTS, mini_corpus, mini_questions, write_dataset
from rag_ttc_assets_tests.e2e.test_cli import rag_ttc


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
