"""WiCE (Kamoi, Goyal, Rodriguez, Durrett: "WiCE: Real-World Entailment for Claims in Wikipedia", EMNLP 2023;
https://github.com/ryokamoi/wice, `data/entailment_retrieval/claim/`; annotations ODC-BY, text CC-BY-SA
(Wikipedia) and Common Crawl's terms) as a lab folder (core.claim_sets): each claim (a Wikipedia sentence) is one
question whose answer, in one imported arm `wikipedia`, is the claim itself, with the cited article (its
sentences, one a line) as the one document and the retrieved context; the set's label (`supported` /
`partially_supported` / `not_supported`) is one per-claim label; the located supporting sentences are the
question's request's gold evidence quotes.

The support judge is what the labels measure: is the claim supported by the article it was written from (the lab's
question of every statement of an answer against the evidence the answer was given). The request judge is not
measured: with the claim as a request and the claim as the answer it would only find the request in itself.

The set gives one label per claim (no per-annotator labels): there is no annotator ceiling to compute from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rag_ttc_assets.core.claim_sets import ClaimSet, run_instructions

DATASET = "wice"
ARM = "wikipedia"
ANNOTATOR = "wice"
SPLITS = ("dev", "test")  # the files read, in this order (train is not used: it is for fitting)
CITATION = ('Kamoi, Goyal, Rodriguez, Durrett: "WiCE: Real-World Entailment for Claims in Wikipedia", EMNLP 2023; '
            "data: https://github.com/ryokamoi/wice (data/entailment_retrieval/claim; annotations ODC-BY 1.0, text "
            "CC-BY-SA (Wikipedia) and the Common Crawl terms of use)")


def question_text(title: str, section: str) -> str:
    """The question a claim answers: what the cited source says about the Wikipedia page's subject."""
    where = f" ({section.rstrip('.')})" if section.strip() else ""
    return f"What does the cited source say about {title}{where}?"


def readme(cs: ClaimSet, c: Mapping[str, Any], source: str) -> str:
    shares = ", ".join(f"{k} {v:.3f}" for k, v in c["support_shares"].items() if v is not None)
    return f"""# WiCE as a lab folder

Converted by `rag-ttc convert-wice` from {source}.

Source: {CITATION}.

- `datasets/{DATASET}/`: {c['documents']} cited articles (each the `evidence` sentences of one claim, one a line)
  and {c['questions']} questions, one per claim, whose one request is the claim, its gold evidence quotes the
  sentences the annotators located as supporting it ({c['requests_with_quote']} requests with a quote; every set of
  supporting sentences the set lists, merged).
- `systems/{ARM}.json`: one imported arm whose answer to each question is the claim, the article its retrieved
  context.
- `labels.jsonl`: {c['labels']} per-claim labels, the set's label of each claim (`support`: {shares}), annotator
  `{ANNOTATOR}`.

The support judge's verdict on the claim against its article is what the labels measure. **One label per claim**:
there is no annotator ceiling in this set.

{run_instructions(cs)}"""
