"""`offline_answers` and `offline_judging`: the offline baselines against the embedding's limit. In one process, on
the bundled dataset's baseline arm in a fresh store (its earlier stages built untimed, the embedding model loaded,
every in-process vector memo empty): the answers stage (the extractive answerer), and the judging stage (the lexical
judge's statements and verdicts and its request judgments), each as `rag-ttc run --stage` materializes it, against
one batched `encode` of exactly the texts the stage sent to the model (recorded while it ran), in the same process.
A ratio near 1 says the stage costs what its encodings cost; the target is 1.3."""

from __future__ import annotations

from pathlib import Path

from rag_ttc_assets.adapters import embeddings, torch_embeddings
from rag_ttc_assets.bench.harness import Stopwatch, Target, fresh_home, item
from rag_ttc_assets.bench.labs import ARM, LabSpec, materialize
from rag_ttc_assets.bench.bench_registry import measurement
from rag_ttc_assets.defs.graph import STAGES

TARGET = Target("<=", 1.3)


def _stage(spec: LabSpec, base: Path, stage: str, before: str, repeat: int) -> dict:
    name = f"offline_{'answers' if stage == 'answers' else 'judging'}"
    increment = tuple(a for a in STAGES[stage] if a not in STAGES[before])
    product, reference, counts = [], [], []
    for i in range(max(1, repeat)):
        lab = spec.lab(fresh_home(base / name, f"store-{i}"))
        model = lab.arms[ARM].embedding_model
        materialize(lab, [ARM], STAGES[before])  # untimed: what the stage reads
        torch_embeddings.encode(["warm-up: the model loads outside the timed runs"], model)
        sent: list[str] = []
        real = torch_embeddings.encode

        def recording(texts, *args, **kwargs):
            sent.extend(texts)
            return real(texts, *args, **kwargs)

        embeddings._memo.clear()
        embeddings._word_memo.clear()
        torch_embeddings.encode = recording
        try:
            with Stopwatch() as sw:
                materialize(lab, [ARM], increment)
        finally:
            torch_embeddings.encode = real
        product.append(sw.timing)
        distinct = list(dict.fromkeys(sent))
        with Stopwatch() as ref:
            real(distinct, model)
        reference.append(ref.timing)
        counts.append((len(sent), len(distinct)))
    sent_n, distinct_n = counts[-1]
    return item(name, product, reference, "cost", TARGET,
                f"the {stage} stage of {ARM} ({', '.join(increment)}), fresh store and memo",
                f"one batched encode of the {distinct_n} distinct texts the stage sent the model",
                texts_sent=sent_n, texts_distinct=distinct_n,
                detail=f"{sent_n} texts sent to the model, {distinct_n} distinct"
                       + ("" if sent_n == distinct_n else f": {sent_n - distinct_n} encoded twice"))


@measurement("offline_answers")
def bench_offline_answers(spec: LabSpec, base: Path, repeat: int) -> dict:
    return _stage(spec, base, "answers", "retrieval", repeat)


@measurement("offline_judging")
def bench_offline_judging(spec: LabSpec, base: Path, repeat: int) -> dict:
    return _stage(spec, base, "judge", "answers", repeat)
