"""One batched encode per stage for the offline baselines (issue: the baselines ran well above the embedding's
limit, encoding a dozen texts per question).

Before a stage's per-question calls, `prefetch` runs each offline baseline's own rules once over every case that
will miss the provider cache, with a recorder in place of the embedder: the recorder writes down every text the rules
ask to embed (and every text whose word vectors they ask for) and returns stand-in vectors. The distinct texts are
then encoded in one pass through the baseline's real embedder (adapters.embeddings.encode_memoized: batches of 64,
remembered per text in this process), so each call of the stage only looks its vectors up. The recorded rules never
reply: their output is thrown away, and what the stage records comes from the real calls, as before.

The encodings outlive the process: with the store's vector cache (adapters.vector_cache, beside the provider
cache), a text any earlier process encoded for these baselines is read back instead of encoded, and each pass
writes what it encoded there. So a Dagster UI materialization, a second `rag-ttc run` and a sweep's arms share them.

A text the dry pass could not foresee (a rule whose next text depends on a vector's value) is encoded when the real
call asks for it, as before: the prefetch can only save time, never change a reply's inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rag_ttc_assets.adapters import embeddings
from rag_ttc_assets.adapters import local_providers as lp
from rag_ttc_assets.adapters.vector_cache import VectorCache
from rag_ttc_assets.judging.judge_inputs import JudgeInput
from rag_ttc_assets.core.text import content_word_spans

# The stand-in vectors' dimension: the rules only take cosines between the vectors they are handed.
_DIM = 8


class _Recorder:
    """Writes down the texts it is asked to embed; hands back seeded random unit vectors (never zero rows, which the
    rules would normalise to NaN)."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.word_texts: list[str] = []
        self._rng = np.random.default_rng(0)

    def _unit(self, n: int) -> np.ndarray:
        v = self._rng.standard_normal((n, _DIM)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        return self._unit(len(texts))

    def word_vectors(self, texts: list[str]) -> list[tuple[list[str], np.ndarray]]:
        self.word_texts.extend(texts)
        out = []
        for t in texts:
            spans = content_word_spans(t)
            out.append(([stem for stem, _, _ in spans], self._unit(len(spans))))
        return out


# A case: the messages of one call and the judge records beside them; or a chain, a function that runs a judge's
# calls for one answer in order (each call's records built from the last one's reply) through the `reply` it is given.
Case = tuple[list[dict[str, Any]], JudgeInput | None]
Chain = Callable[[Callable[[JudgeInput], str]], None]


def recorded_texts(model: str, cases: Sequence[Case] = (), chains: Sequence[Chain] = ()
                   ) -> tuple[list[str], list[str]]:
    """(texts to embed, texts whose word vectors are read), distinct, in first-asked order, that the offline baseline
    `model` asks for over `cases` and `chains`. Empty for a baseline that embeds nothing (the contextual builder,
    SmolLM2)."""
    real = lp._handler()._route(model)
    if not isinstance(real, (lp.ExtractiveAnswerer, lp._RecordJudge)):
        return [], []
    rec = _Recorder()
    probe = type(real)(rec.embed)
    if hasattr(probe, "_word_vectors"):
        probe._word_vectors = rec.word_vectors
    for messages, case in cases:
        if isinstance(probe, lp._RecordJudge):
            if case is not None:
                probe.reply_to(case)
        else:
            probe.reply(lp._conversation_prompt(messages))
    if isinstance(probe, lp._RecordJudge):
        for chain in chains:
            chain(probe.reply_to)
    return list(dict.fromkeys(rec.texts)), list(dict.fromkeys(rec.word_texts))


def prefetch(model: str, cases: Sequence[Case] = (), chains: Sequence[Chain] = (),
             vectors_root: Path | str | None = None) -> int:
    """Encode, in one batched pass each, every text the offline baseline `model` will embed over `cases` and `chains`,
    through its real embedder (remembered there, so the calls look them up). With `vectors_root` (the provider
    cache's root, which holds adapters.vector_cache), a text another process encoded is read from there instead, and
    what this pass encodes is written there. Returns how many distinct texts it encoded."""
    texts, word_texts = recorded_texts(model, cases, chains)
    real = lp._handler()._route(model)
    encoded = 0
    vectors = VectorCache(vectors_root, embeddings.DEFAULT_MODEL) if vectors_root is not None else None
    if texts:
        if vectors is not None and real._embed is lp._default_embed:  # type: ignore[attr-defined]
            todo = embeddings.unmemoized(texts)
            found = vectors.get_sentences(todo)
            embeddings.remember(found)
            if new := [t for t in todo if t not in found]:
                vectors.put_sentences(new, real._embed(new))  # type: ignore[attr-defined]
            encoded += len(new)
        else:
            real._embed(texts)  # type: ignore[attr-defined]
            encoded += len(texts)
    if word_texts and hasattr(real, "_word_vectors"):
        if vectors is not None and real._word_vectors is embeddings.content_word_vectors:
            todo = embeddings.words_unmemoized(word_texts)
            found_words = vectors.get_words(todo)
            embeddings.remember_words(found_words)
            if new := [t for t in todo if t not in found_words]:
                vectors.put_words(new, real._word_vectors(new))
            encoded += len(new)
        else:
            real._word_vectors(word_texts)
            encoded += len(word_texts)
    return encoded
