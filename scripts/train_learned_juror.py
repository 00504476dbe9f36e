"""Fit the learned juror (`local/learned`, judging/learned_judge.py) on people's per-request labels, and measure it
cross-set: fitted on one set, read on each of the others.

Data: the SCU-presence labels of REALSumm and PyrXSum as the Lite2-3Pyramid repository ships them (its folders
`data/REALSumm` and `data/PyrXSum`, read by adapters/pyramid_reader.py as `rag-ttc convert-pyramid` reads them). A request is
an SCU (its text its own gold material, as the conversion writes it), the answer a system's summary, the label
whether the annotators found the SCU in it (the set's majority label).

  - REALSumm: Bhandari, Gour, Ashfaq, Liu and Neubig, "Re-evaluating Evaluation in Text Summarization", EMNLP 2020;
    https://github.com/neulab/REALSumm, CC BY 4.0 (100 CNN/DailyMail articles, 25 systems, 26,400 SCU labels).
  - PyrXSum: Zhang and Bansal, "Finding a Balanced Degree of Automation for Summary Evaluation", EMNLP 2021;
    https://github.com/ZhangShiyue/Lite2-3Pyramid (100 XSum articles, 10 systems, 4,780 SCU labels); the repository
    states no licence, so nothing of it is copied: the parameters are fitted on REALSumm (--train), PyrXSum is
    read to measure.

Nothing of either set is in the repository: clone Lite2-3Pyramid and run

    git clone https://github.com/ZhangShiyue/Lite2-3Pyramid
    python scripts/train_learned_juror.py Lite2-3Pyramid --cache features/ --report cross-set.json

which computes every SCU's features with the offline jurors' own functions (cached per set in --cache: the
BERTScore juror embeds every summary; about ten minutes of CPU for REALSumm), fits a logistic regression on the
--train set(s) (the features standardised; its threshold the one that maximises Cohen's kappa on the training set,
never on a set it is read on), writes the parameters (default: the package's rag_ttc_assets/adapters/learned_juror.json)
and prints the cross-set table: each set as the training set, read on every set.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np

from rag_ttc_assets.adapters.learned_juror import PARAMETERS, load_parameters
from rag_ttc_assets.adapters.pyramid_reader import read_pyramid
from rag_ttc_assets.judging import learned_judge as lj
from rag_ttc_assets.judging.judge_agreement import gold_answer_recall
from rag_ttc_assets.judging.request_judge import ADDRESS_RECALL, SOFT_ADDRESS_RECALL, LabelledRequest
from rag_ttc_assets.core.summaries import REQUEST_JUDGE_RULES

SETS = ("REALSumm", "PyrXSum")
VERSION = 2  # of the fitted juror (2: refitted under request-judge-rules/5): the file's name and its `version`
JURORS = (("local/lexical", 0, ADDRESS_RECALL), ("local/coverage", 1, ADDRESS_RECALL),
          ("local/bertscore", 2, SOFT_ADDRESS_RECALL))


def data_commit(root: Path) -> str:
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git clone)"


def set_features(folder: Path, cache: Path | None, max_articles: int | None) -> dict:
    """Every (system, article, SCU) of one set: features, label, the three jurors' verdicts, and per answer the
    reference recall; cached in `cache` (an .npz) when given."""
    if cache is not None and cache.exists():
        with np.load(cache, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}

    from rag_ttc_assets.adapters.embeddings import content_word_vectors, encode_memoized

    rs = read_pyramid(folder)
    articles = list(rs.articles)[:max_articles] if max_articles else list(rs.articles)
    xs, ys, addressed, answer_of, reference, question = [], [], [], [], [], []
    n_answers = 0
    for system in rs.systems:
        for a in articles:
            summary = system.summaries[a]
            requests = [LabelledRequest(f"{a}.scu{s.id}", s.text, (), s.text) for s in rs.scus[a]]
            if not requests:
                continue
            x, judged = lj.features(requests, summary, [], [(summary, [])], encode_memoized, content_word_vectors)
            xs.append(x)
            ys += [lab.present for lab in system.labels[a]]
            addressed.append(np.array([[j.addressed for j in js] for js in judged], dtype=bool).T)
            answer_of += [n_answers] * len(requests)
            reference.append(gold_answer_recall(rs.references[a], summary) or 0.0)
            question.append(articles.index(a))
            n_answers += 1
        print(f"{folder.name}: {system.arm} done ({n_answers} answers)", file=sys.stderr, flush=True)
    out = {"x": np.concatenate(xs), "y": np.array(ys, dtype=bool), "addressed": np.concatenate(addressed),
           "answer": np.array(answer_of), "reference": np.array(reference), "question": np.array(question)}
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(cache, **out)
    return out


def fit(sets: list[dict], model: str = "logistic"):
    """A standardised logistic regression (or gradient boosting, for comparison) on the sets pooled, each set's
    requests weighted so that every set counts the same; its threshold the kappa-best on the same pooled data."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    x = np.concatenate([s["x"] for s in sets])
    y = np.concatenate([s["y"] for s in sets])
    w = np.concatenate([np.full(len(s["y"]), len(y) / (len(sets) * len(s["y"]))) for s in sets])
    scaler = StandardScaler().fit(x)
    scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
    z = (x - scaler.mean_) / scale
    if model == "logistic":
        clf = LogisticRegression(C=1.0, max_iter=1000).fit(z, y, sample_weight=w)
    else:
        clf = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05, random_state=0).fit(z, y,
                                                                                                 sample_weight=w)
    p = clf.predict_proba(z)[:, 1]
    threshold = best_threshold(p, y, w)
    return scaler.mean_, scale, clf, threshold


def best_threshold(p: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """The threshold (0.05 to 0.95 by 0.01) with the highest weighted Cohen's kappa."""
    from sklearn.metrics import cohen_kappa_score

    grid = [round(t, 2) for t in np.arange(0.05, 0.951, 0.01)]
    return max(grid, key=lambda t: (cohen_kappa_score(y, p >= t, sample_weight=w), -abs(t - 0.5)))


def parameters(mean, scale, clf, threshold: float, trained_on: list[str], commit: str, n: dict,
               articles: dict) -> dict:
    return {"format": lj.FORMAT, "version": VERSION, "features": list(lj.FEATURES),
            "scaler": {"mean": [round(float(v), 6) for v in mean], "scale": [round(float(v), 6) for v in scale]},
            "coefficients": [round(float(v), 6) for v in clf.coef_[0]],
            "intercept": round(float(clf.intercept_[0]), 6), "threshold": threshold,
            "model": "sklearn.linear_model.LogisticRegression(C=1.0), features standardised",
            "threshold_rule": "the kappa-best of 0.05..0.95 by 0.01 on the training set",
            "trained_on": {s: {"source": "github.com/ZhangShiyue/Lite2-3Pyramid data/" + s, "commit": commit,
                               "articles": articles[s], "labels": n[s]} for s in trained_on},
            "rules": REQUEST_JUDGE_RULES}


def probabilities(model, x: np.ndarray) -> np.ndarray:
    mean, scale, clf, _ = model
    return clf.predict_proba((x - mean) / scale)[:, 1]


def per_answer(values: np.ndarray, answer: np.ndarray) -> np.ndarray:
    return np.bincount(answer, weights=values.astype(float)) / np.bincount(answer)


def pairs(score: np.ndarray, human: np.ndarray, question: np.ndarray) -> float:
    """Pearson, over every pair of two systems' answers to one question, of the score difference with the labels'
    share difference (the held-out set's procedure, docs/judges.md)."""
    from scipy.stats import pearsonr

    dx, dy = [], []
    for q in np.unique(question):
        idx = np.flatnonzero(question == q)
        for i, a in enumerate(idx):
            for b in idx[i + 1:]:
                dx.append(score[b] - score[a])
                dy.append(human[b] - human[a])
    return pearsonr(dx, dy)[0]


def measure(name: str, addressed: np.ndarray, score: np.ndarray | None, s: dict) -> dict:
    """Per request: kappa of `addressed`, AUC of `score`; per answer: Pearson / Spearman of the share addressed and
    of the mean score with the labels' share, and Pearson over pairs of answers to one question."""
    from scipy.stats import pearsonr, spearmanr
    from sklearn.metrics import cohen_kappa_score, roc_auc_score

    human = per_answer(s["y"], s["answer"])
    share = per_answer(addressed, s["answer"])
    out = {"rater": name, "kappa": cohen_kappa_score(s["y"], addressed),
           "auc": roc_auc_score(s["y"], score) if score is not None else None,
           "share": (pearsonr(share, human)[0], spearmanr(share, human)[0], pairs(share, human, s["question"]))}
    if score is not None:
        graded = per_answer(score, s["answer"])
        out["graded"] = (pearsonr(graded, human)[0], spearmanr(graded, human)[0], pairs(graded, human, s["question"]))
    return out


def reference_row(s: dict) -> dict:
    from scipy.stats import pearsonr, spearmanr

    human = per_answer(s["y"], s["answer"])
    return {"rater": "reference: content-word recall of the reference", "kappa": None, "auc": None,
            "graded": (pearsonr(s["reference"], human)[0], spearmanr(s["reference"], human)[0],
                       pairs(s["reference"], human, s["question"]))}


def cross_set(data: dict[str, dict], model: str) -> list[dict]:
    rows = []
    for train in data:
        fitted = fit([data[train]], model)
        for read, s in data.items():
            p = probabilities(fitted, s["x"])
            rows.append({"trained_on": train, "read_on": read, "threshold": fitted[3],
                         **measure(f"local/learned ({model}, fitted on {train}"
                                   + (", in-sample: not a measurement)" if read == train else ")"),
                                   p >= fitted[3], p, s)})
    for read, s in data.items():
        for name, i, _ in JURORS:
            rows.append({"trained_on": None, "read_on": read, **measure(name, s["addressed"][:, i], s["x"][:, i], s)})
        rows.append({"trained_on": None, "read_on": read, **reference_row(s)})
    return rows


def _f(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def table(rows: list[dict]) -> str:
    lines = ["| read on | rater | threshold | kappa | AUC | share addressed: answer Pearson / Spearman; pairs | "
             "graded: answer Pearson / Spearman; pairs |", "|---|---|---|---|---|---|---|"]

    def cell(c):
        return f"{_f(c[0])} / {_f(c[1])}; {_f(c[2])}" if c else "-"

    for r in sorted(rows, key=lambda r: r["read_on"]):
        lines.append(f"| {r['read_on']} | {r['rater']} | {_f(r.get('threshold'))} | {_f(r['kappa'])} | "
                     f"{_f(r['auc'])} | {cell(r.get('share'))} | {cell(r.get('graded'))} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path, help="a clone of Lite2-3Pyramid (holding data/REALSumm, data/PyrXSum)")
    ap.add_argument("--train", default="REALSumm", help="the set(s) the written parameters are fitted on, "
                                                        "comma-separated (default REALSumm)")
    ap.add_argument("--out", type=Path, default=PARAMETERS, help="the parameters file to write")
    ap.add_argument("--cache", type=Path, help="a folder for the features (one .npz per set)")
    ap.add_argument("--data-commit", help="the data's commit, when the root is not a git clone (an archive of one)")
    ap.add_argument("--report", type=Path, help="write the cross-set measurements here (JSON)")
    ap.add_argument("--model", choices=("logistic", "boosting"), default="logistic",
                    help="the cross-set table's model (the written parameters are always the logistic regression)")
    ap.add_argument("--max-articles", default="", help="a subsample: the first N articles of every set (N), or of "
                                                       "the sets named (REALSumm=40,PyrXSum=50)")
    args = ap.parse_args(argv)
    folders = {s: args.root / "data" / s for s in SETS if (args.root / "data" / s).is_dir()}
    if not folders:
        ap.error(f"{args.root}: no data/REALSumm or data/PyrXSum folder (is it a clone of Lite2-3Pyramid?)")
    train = [t.strip() for t in args.train.split(",") if t.strip()]
    unknown = [t for t in train if t not in folders]
    if unknown:
        ap.error(f"--train: {unknown[0]!r} is not a set of {args.root} (found: {', '.join(folders)})")
    commit = args.data_commit or data_commit(args.root)
    limits = {}
    for part in filter(None, (p.strip() for p in args.max_articles.split(","))):
        name, _, n = part.rpartition("=")
        if not n.isdigit() or (name and name not in folders):
            ap.error(f"--max-articles: {part!r} is not N or SET=N with SET one of {', '.join(folders)}")
        limits.update({name: int(n)} if name else {s: int(n) for s in folders})
    data = {s: set_features(f, args.cache / f"{s}.npz" if args.cache else None, limits.get(s))
            for s, f in folders.items()}
    fitted = fit([data[t] for t in train])
    params = parameters(*fitted, train, commit, {s: int(len(d["y"])) for s, d in data.items()},
                        {s: int(len(np.unique(d["question"]))) for s, d in data.items()})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(params, indent=1) + "\n", encoding="utf-8")
    juror = load_parameters(args.out)
    print(f"wrote {args.out} (fitted on {', '.join(train)}: {sum(len(data[t]['y']) for t in train)} labels; "
          f"threshold {juror.threshold:.2f}; {juror.digest[:19]}…)")
    rows = cross_set(data, args.model) if len(data) > 1 or args.report else []
    if rows:
        print(table(rows))
    if args.report:
        args.report.write_text(json.dumps({"data_commit": commit, "parameters": params, "rows": rows}, indent=1,
                                          default=float) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
