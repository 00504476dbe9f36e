"""LFQA-Verification (Chen, Xu, Arora, Choi: "Understanding Retrieval Augmentation for Long-Form Question
Answering", 2023; https://github.com/timchen0618/LFQA-Verification, `data/`; no licence file in the repository:
measure with it, never copy its records) as a lab folder (core.claim_sets): ELI5 questions with the documents the
answers were given as the corpus, each annotated system's answers (GPT-3, Alpaca, WebGPT; with and without
documents) as an imported arm, and every answer sentence a claim labelled by three people `supported` /
`partially` / `not_supported` against those documents: per-claim labels for the lab's support judge.

Which documents each annotation file was labelled against: `docs-human.json` for `gpt3_whudoc` (GPT-3 given the
human-found documents), `docs-webgpt.json` for the others (WebGPT's own, GPT-3 and Alpaca given WebGPT's documents,
and GPT-3 and Alpaca without documents: their sentences were still labelled against WebGPT's documents, so those
arms' retrieved context is evidence the system never saw). The repository's own evaluation list
(`src/Automatic/input_file.json`) names docs-webgpt for every file, gpt3_whudoc included; the answers of
gpt3_whudoc share far more words with the human documents than with WebGPT's, so the human documents are used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rag_ttc_assets.core.claim_sets import ClaimSet, run_instructions

DATASET = "lfqa"
CITATION = ('Chen, Xu, Arora, Choi: "Understanding Retrieval Augmentation for Long-Form Question Answering", '
            "arXiv:2310.12150, 2023; data: https://github.com/timchen0618/LFQA-Verification (data/; no licence file "
            "in the repository: measure with it, do not redistribute its records)")
# annotation file stem -> the docs file its sentences were labelled against
SYSTEMS = {"alpaca": "webgpt", "alpaca_wdoc": "webgpt", "gpt3": "webgpt", "gpt3_wdoc": "webgpt",
           "gpt3_whudoc": "human", "webgpt": "webgpt"}
# the set's label -> the lab's (labelling.human_labels.SUPPORT)
LABELS = {"supported": "supported", "partially": "partially_supported", "not_supported": "not_supported"}


def arm_name(stem: str) -> str:
    """`gpt3_wdoc` is arm `gpt3-wdoc`."""
    return stem.replace("_", "-")


def question_id(qid: int) -> str:
    return f"eli5-{qid}"


def doc_id(qid: int, source: str, k: int) -> str:
    """The k-th (1-based) document of a question in docs-<source>.json (the set's own doc_id repeats across
    questions, so it is kept as the document's title prefix, not its id)."""
    return f"eli5-{qid}.{source}{k}"


def readme(cs: ClaimSet, c: Mapping[str, Any], source: str) -> str:
    arms_list = ", ".join(s.arm for s in cs.systems)
    shares = ", ".join(f"{k} {v:.3f}" for k, v in c["support_shares"].items() if v is not None)
    return f"""# LFQA-Verification as a lab folder

Converted by `rag-ttc convert-lfqa` from {source}.

Source: {CITATION}. **The set has no licence**: this folder is for measuring on your machine; do not publish or
commit its records.

- `datasets/{DATASET}/`: {c['documents']} documents (`docs/docs-webgpt.json`, and `docs/docs-human.json` for the
  answers of gpt3_whudoc) and {c['questions']} ELI5 questions, each with one request, the question itself (no gold
  answer: the labels are about support, not completeness).
- `systems/<arm>.json`: each annotated system's answers as RAGChecker rows: the answer as the annotators' sentences,
  one a paragraph; the retrieved context, the documents the sentences were labelled against (for gpt3 and alpaca,
  answers written without documents, WebGPT's documents, which the system never saw).
- `arms.yaml`: {c['systems']} imported arms ({arms_list}), judged by the offline baseline judges; the support judge
  (`judge`) is the one the labels measure.
- `labels.jsonl`: {c['labels']} labels on {c['claims']} claims (the answers' sentences) in the per-claim label format
  of `rag-ttc judge-agreement` (`support`: {shares}; `partially` is `partially_supported`).

**The annotators `a1`..`a3` are positions** (the order of a sentence's three labels in the set), not persistent
people. The row `an annotator vs the others` (each label against the majority of the sentence's other two) does
not depend on the positions: it is the ceiling to read.

{run_instructions(cs)}"""
