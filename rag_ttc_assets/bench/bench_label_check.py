"""`label_check`: `rag-ttc labels check`'s work (read the labels and the corpus, classify every label) on a seeded
synthetic 50,000-document corpus with 100,000 labels, about 15% of the labelled passages edited the way a policy change
does (a number changed, a passage removed, a passage moved to another document), against reading and parsing the same
two files."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from rag_ttc_assets.bench.harness import Target, alternate, item, timed
from rag_ttc_assets.bench.labs import LabSpec
from rag_ttc_assets.bench.bench_registry import measurement
from rag_ttc_assets.core.dataset import sha256_digest
from rag_ttc_assets.labelling.label_check import CheckReport, check_labels

DOCS, LABELS, SEED, EDITED = 50_000, 100_000, 45, 0.15
# A smaller case (`LABELS,DOCS`), for a test of the measurement's shape: the bench's own figure is the default size.
SIZE_ENV = "RAG_TTC_BENCH_LABEL_CHECK_SIZE"
WORDS = ("policy customer order refund fee shipping invoice account period notice contract service payment "
         "delivery return warranty tax record privacy request claim").split()


def _sentence(rng: random.Random, i: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 14))).capitalize() + f" within {i % 97 + 1} days."


def synthetic_labels(folder: Path, n_docs: int = DOCS, n_labels: int = LABELS, seed: int = SEED) -> dict:
    """corpus.json and evaluation.json in `folder`: `n_docs` documents of five sentences, `n_labels` gold quotes (one
    sentence each), then a share EDITED of the labelled passages edited (a third each: number changed, removed, moved
    to the next document). What was edited, by kind."""
    rng = random.Random(seed)
    texts = {f"doc-{d:05d}": [_sentence(rng, d * 5 + s) for s in range(5)] for d in range(n_docs)}
    ids = list(texts)
    labels = []
    for n in range(n_labels):
        doc = ids[n % n_docs]
        labels.append((doc, texts[doc][(n // n_docs) % 5]))
    questions = [{"id": f"q{n:06d}", "text": f"question {n}?",
                  "requests": [{"id": f"q{n:06d}.r1", "text": f"question {n}?",
                                "evidence": [{"doc_id": doc, "quote": quote}]}]}
                 for n, (doc, quote) in enumerate(labels)]
    before = json.dumps({"documents": [{"id": k, "title": k, "text": " ".join(v)} for k, v in texts.items()]})
    edits = {"number": 0, "removed": 0, "moved": 0}
    for n in rng.sample(range(n_labels), int(n_labels * EDITED)):
        doc, quote = labels[n]
        if quote not in texts[doc]:
            continue  # already edited (two labels on one passage)
        kind = ("number", "removed", "moved")[n % 3]
        k = texts[doc].index(quote)
        if kind == "number":
            texts[doc][k] = quote.replace(" days.", "0 days.")
        else:
            texts[doc].pop(k)
            if kind == "moved":
                texts[ids[(ids.index(doc) + 1) % n_docs]].append(quote)
        edits[kind] += 1
    (folder / "corpus.json").write_text(
        json.dumps({"documents": [{"id": k, "title": k, "text": " ".join(v)} for k, v in texts.items()]}),
        encoding="utf-8")
    (folder / "evaluation.json").write_text(json.dumps({"corpus_digest": sha256_digest(before.encode()),
                                                        "questions": questions}), encoding="utf-8")
    return edits


@measurement("label_check")
def bench_label_check(spec: LabSpec, base: Path, repeat: int) -> dict:
    n_labels, n_docs = (int(x) for x in os.environ[SIZE_ENV].split(",")) if os.environ.get(SIZE_ENV) else (LABELS, DOCS)
    folder = base / "label_check"
    folder.mkdir(parents=True, exist_ok=True)
    edits = synthetic_labels(folder, n_docs, n_labels)
    cpath, epath = folder / "corpus.json", folder / "evaluation.json"
    report: CheckReport | None = None  # the product's, from the last round

    def read():
        cbytes = cpath.read_bytes()
        return cbytes, json.loads(cbytes), json.loads(epath.read_bytes())

    def product():
        nonlocal report
        cbytes, corpus, evaluation = read()
        report = check_labels("bench", evaluation, str(epath), corpus["documents"], str(cpath),
                                     sha256_digest(cbytes))

    prod, ref = alternate("label_check", timed(product), timed(read), repeat)
    assert report is not None  # alternate() ran the product
    counts = report.counts
    return item("label_check", prod, ref, "cost", Target("<=", 100.0),
                f"labelling.label_check.check_labels after reading both files ({n_labels} labels, {n_docs} documents, "
                f"{sum(edits.values())} labelled passages edited)",
                "reading and parsing corpus.json and evaluation.json", labels=n_labels, documents=n_docs,
                edits=edits, counts=counts,
                detail=f"{n_labels} labels, {n_docs} docs; " + ", ".join(f"{k} {v}" for k, v in counts.items()))
