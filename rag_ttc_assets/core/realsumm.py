"""REALSumm (Bhandari et al., EMNLP 2020, "Re-evaluating Evaluation in Text Summarization", CC BY 4.0) as a lab
folder: its 100 CNN/DailyMail articles as documents, one question per article (a fixed summarisation instruction)
whose gold answer is the reference summary and whose requests are the reference's Summary Content Units (SCUs),
each of its summarisation systems as an imported arm (RAGChecker rows: the article as the retrieved context, the
system summary as a free-text answer), and the crowd's per-SCU present / absent labels in the lab's per-request
label format (docs/judges.md).

Pure: the adapter (adapters/realsumm_reader.py) reads and checks the repository's files and hands in `RealSumm`.

The crowd files have no worker IDs: a label's annotator `a1`..`a4` is its row's position among the assignments of
one HIT (one article and one system summary), not a person who labelled across HITs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

DATASET = "realsumm"
INSTRUCTION = "Summarize the key facts of this news article."
CITATION = ('Bhandari, Gour, Ashfaq, Liu, Neubig: "Re-evaluating Evaluation in Text Summarization", EMNLP 2020; '
            "data: https://github.com/neulab/REALSumm (CC BY 4.0)")
# Extractive systems whose crowd files sit in the abstractive folder (named ext_ as in the paper's tables).
EXTRACTIVE_FILED_AS_ABSTRACTIVE = frozenset({"banditsumm_out", "neusumm_out"})


@dataclass(frozen=True)
class Scu:
    id: str  # SCUs_list.csv questionId
    text: str


@dataclass(frozen=True)
class Label:
    request: str  # SCU id
    present: bool
    position: int  # 1-based position of the assignment among those of its HIT


@dataclass
class SystemSummaries:
    """One system's crowd file: per article, the summary the workers saw and their labels."""

    arm: str
    file: str  # the crowd file, for messages and provenance
    summaries: dict[str, str] = field(default_factory=dict)  # article id -> summary text
    labels: dict[str, list[Label]] = field(default_factory=dict)  # article id -> labels


@dataclass
class RealSumm:
    articles: dict[str, str]  # article id (cnndm<line>) -> article text, in the set's order
    references: dict[str, str]  # article id -> reference summary
    scus: dict[str, list[Scu]]  # article id -> its SCUs (BLANK padding dropped)
    systems: list[SystemSummaries]


def arm_name(folder: str, summary_id: str) -> str:
    """`abs-<id>` / `ext-<id>` from the crowd file's folder (the extractive systems filed under abs renamed), spelled
    as an arm name (a partition key: lower case, `_` as `-`): `ext_bart_out` is arm `ext-bart-out`."""
    kind = "ext" if folder == "ext" or summary_id in EXTRACTIVE_FILED_AS_ABSTRACTIVE else "abs"
    return f"{kind}-{summary_id}".lower().replace("_", "-")


def request_id(article: str, scu: str) -> str:
    return f"{article}.scu{scu}"


def clean(text: str) -> str:
    """REALSumm's `<t> ... </t>` sentence tags dropped, whitespace collapsed."""
    return " ".join(text.replace("<t>", " ").replace("</t>", " ").split())


def dataset(rs: RealSumm, source: str = "REALSumm (CNN/DailyMail)", instruction: str = INSTRUCTION
            ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(corpus, evaluation without its corpus digest, counts). A request's gold material is its SCU (the fact of the
    reference it stands for); an evidence quote only where the SCU occurs verbatim in the article. `source` is each
    document's metadata source, `instruction` every question's text (core.pyramid passes its own)."""
    corpus = {"documents": [{"id": a, "title": "", "text": text, "metadata": {"source": source}}
                            for a, text in rs.articles.items()]}
    questions: list[dict[str, Any]]
    questions, quoted = [], 0
    for a in rs.articles:
        requests: list[dict[str, Any]] = []
        for s in rs.scus.get(a, []):
            r: dict[str, Any] = {"id": request_id(a, s.id), "text": s.text, "gold_answer": s.text, "evidence": []}
            if s.text in rs.articles[a]:
                r["evidence"] = [{"doc_id": a, "quote": s.text}]
                quoted += 1
            requests.append(r)
        questions.append({"id": a, "text": instruction, "answerable": True,
                          "targets": [{"doc_id": a, "relevance": 1}], "requests": requests,
                          "gold_answer": rs.references[a]})
    counts = {"documents": len(corpus["documents"]), "questions": len(questions),
              "requests": sum(len(q["requests"]) for q in questions), "requests_with_quote": quoted}
    return corpus, {"pilot": [], "questions": questions}, counts


def system_rows(rs: RealSumm, system: SystemSummaries, instruction: str = INSTRUCTION) -> dict[str, Any]:
    """One system's summaries as RAGChecker input rows: the article is what the system read (its retrieved context),
    the summary its answer."""
    return {"results": [{"query_id": a, "query": instruction, "gt_answer": rs.references[a], "response": text,
                         "retrieved_context": [{"doc_id": a, "text": rs.articles[a]}]}
                        for a, text in system.summaries.items()]}


def labels(rs: RealSumm, annotator: str | None = None) -> list[dict[str, Any]]:
    """Every crowd label as a per-request label; annotator = the assignment's position within its HIT, or
    `annotator` for every label (a set of aggregated labels: core.pyramid)."""
    return [{"kind": "request", "question": a, "request": request_id(a, lab.request), "arm": s.arm,
             "addressed": lab.present, "annotator": annotator or f"a{lab.position}"}
            for s in rs.systems for a, labs in s.labels.items() for lab in labs]


def arms(systems: Sequence[SystemSummaries], source_dir: str, request_judges: Sequence[str] = (),
         dataset_name: str = DATASET) -> dict[str, Any]:
    """The arms file: every system an imported arm over the dataset, the offline baseline judges."""
    defaults: dict[str, Any] = {"dataset": dataset_name, "judge": {"model": "local/lexical"}}
    if len(request_judges) > 1:
        defaults["request_judges"] = list(request_judges)
        defaults["request_judge_aggregation"] = "all"  # core.arms' default, written out (docs/judges.md)
    elif request_judges:
        defaults["request_judge"] = {"model": request_judges[0]}
    else:
        defaults["request_judge"] = {"model": "local/lexical"}
    return {"defaults": defaults,
            "arms": {s.arm: {"supply": "imported",
                             "source": {"file": f"{source_dir}/{s.arm}.json", "format": "ragchecker",
                                        "answer_format": "free_text", "citation_style": "none"}}
                     for s in systems}}


def counts(rs: RealSumm, label_rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    per_item: dict[tuple[str, str, str], int] = {}  # (arm, question, request) -> its labels
    for r in label_rows:
        key = (r["arm"], r["question"], r["request"])
        per_item[key] = per_item.get(key, 0) + 1
    by_n: dict[int, int] = {}
    for n in per_item.values():
        by_n[n] = by_n.get(n, 0) + 1
    return {"systems": len(rs.systems), "summaries": sum(len(s.summaries) for s in rs.systems),
            "labels": len(label_rows), "labelled_items": len(per_item),
            "items_by_label_count": {str(k): v for k, v in sorted(by_n.items())},
            "present_share": (sum(1 for r in label_rows if r["addressed"]) / len(label_rows)) if label_rows else None}


def readme(rs: RealSumm, c: Mapping[str, Any], source: str) -> str:
    arms_list = ", ".join(s.arm for s in rs.systems)
    return f"""# REALSumm as a lab folder

Converted by `rag-ttc convert-realsumm` from {source}.

Source: {CITATION}. The articles are CNN/DailyMail news.

- `datasets/{DATASET}/`: {c['documents']} articles (documents) and one question per article, "{INSTRUCTION}", whose
  `gold_answer` is the reference summary and whose {c['requests']} requests are the reference's SCUs (Summary
  Content Units, `SCUs_list.csv`; request id `<article>.scu<questionId>`; each request's gold material is its SCU;
  an evidence quote only where the SCU occurs verbatim in the article: {c['requests_with_quote']}).
- `systems/<arm>.json`: each system's summaries as RAGChecker rows (the article as the retrieved context, the summary
  the crowd saw, `Input.summary_text`, as the answer).
- `arms.yaml`: {c['systems']} imported arms ({arms_list}), judged by the offline baseline judges.
- `labels.jsonl`: {c['labels']} crowd labels ("is this SCU's meaning present in the summary?") on
  {c['labelled_items']} (system, article, SCU) items, in the per-request label format of `rag-ttc judge-agreement`.

**The annotators `a1`..`a4` are positions within one HIT** (one article and one system summary), not persistent
people: the crowd files have no worker IDs. A ceiling row `a1 vs a2` is the agreement of two workers on the same
item, pooled over many different workers; per-annotator reliability across HITs cannot be computed from this set.
The row `an annotator vs the others` (each label against the majority of the item's other labels) does not depend
on the positions: it is the ceiling to read.

{run_instructions(rs)}"""


def run_instructions(rs: RealSumm) -> str:
    """The converted folder's README's last paragraph: how to run its arms and measure the judges."""
    return f"""Run it (the lab reads the arms file, datasets and store named by these variables, or by `--arms-file`,
`--datasets-dir`, `--home`):

    cd <this folder>
    export RAG_TTC_ARMS=$PWD/arms.yaml RAG_TTC_DATASETS=$PWD/datasets RAG_TTC_HOME=$PWD/.rag_ttc
    rag-ttc run {' '.join(s.arm for s in rs.systems)}
    rag-ttc judge-agreement labels.jsonl
"""
