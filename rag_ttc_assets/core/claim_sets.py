"""A set of claims labelled supported / partially supported / not supported against documents, as a lab folder:
the documents as a dataset's corpus, one question per item, each system's answers (its claims, one a paragraph, as
the people labelled them) as an imported arm whose retrieved context is the documents the labels were made against,
and the labels in the lab's per-claim label format (labelling.human_labels, `kind: claim`), the setting of the lab's
support judge: is each statement of the answer supported by the evidence the answer was given?

Used by core.lfqa (LFQA-Verification: real LLM answers to ELI5 questions, every sentence labelled by three people)
and core.wice (WiCE: Wikipedia sentences against the article they cite). Pure: the adapters read and check the
files and hand in a ClaimSet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from dataclasses import dataclass, field

from rag_ttc_assets.labelling.human_labels import SUPPORT
from rag_ttc_assets.core.realsumm import arms as summary_arms


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str
    source: str  # the set's name for it (metadata)


@dataclass(frozen=True)
class Claim:
    text: str
    labels: tuple[str, ...]  # one of SUPPORT per annotator, in the set's order (annotator a1, a2, ...)


@dataclass
class System:
    arm: str
    file: str  # where its answers were read, for messages
    answers: dict[str, list[Claim]] = field(default_factory=dict)  # question id -> the answer's claims, in order
    evidence: dict[str, list[str]] = field(default_factory=dict)  # question id -> the document ids labelled against


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    targets: tuple[str, ...]  # document ids
    requests: tuple[dict[str, Any], ...]  # the evaluation's requests of the question
    gold_answer: str | None = None


@dataclass
class ClaimSet:
    name: str  # the dataset's name
    documents: dict[str, Document]
    questions: list[Question]
    systems: list[System]
    annotators: Sequence[str] | None = None  # names per label position; None: a1, a2, ...


def answer_text(claims: Sequence[Claim]) -> str:
    """An answer as its claims, one a paragraph: a blank line is a hard sentence break for the lab's statement
    splitter (core.text.split_sentences), so no statement of the judge straddles two labelled claims."""
    return "\n\n".join(c.text for c in claims)


def dataset(cs: ClaimSet) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(corpus, evaluation without its corpus digest, counts)."""
    corpus = {"documents": [{"id": d.id, "title": d.title, "text": d.text, "metadata": {"source": d.source}}
                            for d in cs.documents.values()]}
    questions = []
    for q in cs.questions:
        rec = {"id": q.id, "text": q.text, "answerable": True,
               "targets": [{"doc_id": t, "relevance": 1} for t in q.targets], "requests": list(q.requests)}
        if q.gold_answer:
            rec["gold_answer"] = q.gold_answer
        questions.append(rec)
    counts = {"documents": len(corpus["documents"]), "questions": len(questions),
              "requests": sum(len(q.requests) for q in cs.questions),
              "requests_with_quote": sum(1 for q in cs.questions for r in q.requests if r.get("evidence"))}
    return corpus, {"pilot": [], "questions": questions}, counts


def system_rows(cs: ClaimSet, system: System) -> dict[str, Any]:
    """One system's answers as RAGChecker input rows: the documents the labels were made against as the retrieved
    context, the claims (one a paragraph) as the answer."""
    text = {q.id: q.text for q in cs.questions}
    return {"results": [{"query_id": qid, "query": text[qid], "response": answer_text(claims),
                         "retrieved_context": [{"doc_id": d, "text": cs.documents[d].text}
                                               for d in system.evidence[qid]]}
                        for qid, claims in system.answers.items()]}


def annotator(cs: ClaimSet, position: int) -> str:
    return cs.annotators[position] if cs.annotators else f"a{position + 1}"


def labels(cs: ClaimSet) -> list[dict[str, Any]]:
    """Every label as a per-claim label (claim: 1-based position in the answer)."""
    return [{"kind": "claim", "question": qid, "arm": s.arm, "claim": k, "text": c.text, "support": lab,
             "annotator": annotator(cs, i)}
            for s in cs.systems for qid, claims in s.answers.items() for k, c in enumerate(claims, 1)
            for i, lab in enumerate(c.labels)]


def counts(cs: ClaimSet, label_rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    by_n: dict[int, int] = {}
    for s in cs.systems:
        for claims in s.answers.values():
            for c in claims:
                by_n[len(c.labels)] = by_n.get(len(c.labels), 0) + 1
    n = len(label_rows)
    return {"systems": len(cs.systems), "answers": sum(len(s.answers) for s in cs.systems),
            "claims": sum(by_n.values()), "labels": n,
            "claims_by_label_count": {str(k): v for k, v in sorted(by_n.items())},
            "support_shares": {x: (sum(1 for r in label_rows if r["support"] == x) / n if n else None)
                               for x in SUPPORT}}


def arms(cs: ClaimSet, source_dir: str, request_judges: Sequence[str] = ()) -> dict[str, Any]:
    """The arms file: every system an imported arm over the dataset, the offline baseline judges (the support
    judge local/lexical is the one the labels measure)."""
    return summary_arms(cs.systems, source_dir, request_judges, cs.name)  # type: ignore[arg-type]


def run_instructions(cs: ClaimSet) -> str:
    return f"""Run it (the lab reads the arms file, datasets and store named by these variables, or by `--arms-file`,
`--datasets-dir`, `--home`):

    cd <this folder>
    export RAG_TTC_ARMS=$PWD/arms.yaml RAG_TTC_DATASETS=$PWD/datasets RAG_TTC_HOME=$PWD/.rag_ttc
    rag-ttc run {' '.join(s.arm for s in cs.systems)}
    rag-ttc judge-agreement labels.jsonl
"""
