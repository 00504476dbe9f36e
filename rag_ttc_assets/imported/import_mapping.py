"""Imported records (imported.import_source's ImportedTrace) mapped onto the evaluation's questions and the corpus, then
made the lab's rows: per question its ranked, selected and admitted chunks and its answer (ImportedRow), the
citations of a free-text answer, and for row formats without a corpus, the dataset built from the rows.

Mapping, stated and counted (`ImportMapping`): a trace matches a question by an explicit attribute (default
`metadata.question_id`: the flat attribute, or the key `question_id` of the span's `metadata` JSON) or by the
question's text after whitespace normalisation (the root span's, else the RETRIEVER span's `input.value`);
a document matches the corpus by `document.id`, else by locating its content in the corpus; a document that
matches nothing is kept as external evidence with its text (doc ID `external:<chunk id>`), so judges still read it.
The imported documents are the arm's chunks: gold quotes are projected onto them as onto a lab chunk
(core.evidence_map), using the offsets where their content was located.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_ttc_assets.core.chunking import Chunk
from rag_ttc_assets.core.contract import NO_TRACE
from rag_ttc_assets.core.request_derivation import split_claims
from rag_ttc_assets.imported.import_source import ImportedTrace, ImportSourceError, SourceDocument

# Row statuses of an imported question (beside the contract's own): no LLM span, no RETRIEVER span, no trace at all.
NO_RETRIEVAL_SPAN = "no_retrieval_span"
EXTERNAL = "external:"  # a document that matches nothing in the corpus: doc ID `external:<chunk id>`


# --- mapping -------------------------------------------------------------------------------------------------
def normalise(text: str) -> str:
    return " ".join(text.split())


@dataclass
class ImportMapping:
    """What matched what, with the counts every output states."""

    traces: dict[str, ImportedTrace]                      # question ID -> its trace
    matched_by: dict[str, str]                            # question ID -> "attribute" | "text"
    unmatched_traces: list[str] = field(default_factory=list)
    unanswered_questions: list[str] = field(default_factory=list)
    superseded_traces: list[str] = field(default_factory=list)  # older traces dropped by pick: latest

    def counts(self) -> dict[str, int]:
        return {"traces": len(self.traces) + len(self.unmatched_traces) + len(self.superseded_traces),
                "matched_traces": len(self.traces), "unmatched_traces": len(self.unmatched_traces),
                "superseded_traces": len(self.superseded_traces),
                "unanswered_questions": len(self.unanswered_questions),
                "matched_by_attribute": sum(v == "attribute" for v in self.matched_by.values()),
                "matched_by_text": sum(v == "text" for v in self.matched_by.values())}


def map_traces(traces: Sequence[ImportedTrace], questions: Sequence[Any], source: str,
               pick: str | None = None) -> ImportMapping:
    """Each trace to a question (`questions`: records with `id` and `text`): by the explicit ID when the trace has
    one and it names a question, else by whitespace-normalised text. Two traces for one question are an error
    naming both, unless `pick == "latest"` (the later start time wins; the other is counted as superseded)."""
    ids = {q.id for q in questions}
    by_text: dict[str, str] = {}
    for q in questions:
        by_text.setdefault(normalise(q.text), q.id)
    chosen: dict[str, ImportedTrace] = {}
    how: dict[str, str] = {}
    unmatched: list[str] = []
    superseded: list[str] = []
    for t in traces:
        if t.question_id is not None and t.question_id in ids:
            qid, by = t.question_id, "attribute"
        elif t.question_text is not None and normalise(t.question_text) in by_text:
            qid, by = by_text[normalise(t.question_text)], "text"
        else:
            unmatched.append(t.trace_id)
            continue
        if qid in chosen:
            other = chosen[qid]
            if pick != "latest":
                raise ImportSourceError(f"{source}: traces {other.trace_id} and {t.trace_id} both answer question "
                                        f"{qid!r}; "
                                   f"keep one, or set `pick: latest` on the arm's source")
            if (t.start_ns, t.trace_id) < (other.start_ns, other.trace_id):
                superseded.append(t.trace_id)
                continue
            superseded.append(other.trace_id)
        chosen[qid] = t
        how[qid] = by
    unanswered = [q.id for q in questions if q.id not in chosen]
    return ImportMapping(chosen, how, unmatched, unanswered, superseded)


@dataclass(frozen=True)
class DocumentMatch:
    chunk: Chunk
    matched_by: str  # "id" | "content" | "external"


class CorpusLocator:
    """Finds a source document in the corpus: by `document.id`, else by its content (exact, then with whitespace
    normalised). Offsets are into the corpus document's text, so gold quotes project onto it as onto a lab chunk."""

    def __init__(self, documents: Mapping[str, str]):
        self.documents = dict(documents)
        self._joined: str | None = None
        self._starts: list[tuple[int, str]] = []

    def _find_in(self, doc_id: str, text: str) -> tuple[int, int] | None:
        body = self.documents[doc_id]
        i = body.find(text)
        if i >= 0:
            return i, i + len(text)
        words = text.split()
        if not words:
            return None
        m = re.search(r"\s+".join(re.escape(w) for w in words), body)
        return (m.start(), m.end()) if m else None

    def locate(self, doc: SourceDocument) -> tuple[str, int, int, str] | None:
        """(doc_id, start, end, matched_by) or None."""
        if doc.source_id is not None and doc.source_id in self.documents:
            span = self._find_in(doc.source_id, doc.text)
            start, end = span if span else (0, 0)
            return doc.source_id, start, end, "id"
        if doc.source_id is not None and "#" in doc.source_id:
            # A chunk ID of the form <doc_id>#...: the document is named, the content says where.
            parent = doc.source_id.split("#", 1)[0]
            if parent in self.documents and (span := self._find_in(parent, doc.text)):
                return parent, span[0], span[1], "id"
        for doc_id in self.documents:
            if (span := self._find_in(doc_id, doc.text)) is not None:
                return doc_id, span[0], span[1], "content"
        return None


def chunk_id_of(doc: SourceDocument, taken: Mapping[str, str]) -> str:
    """A stable chunk ID: the source's own document ID when it names one text only, else the ID with a digest of
    the text (`<id>@<sha8>`), or `text-<sha12>` for a document without an ID."""
    digest = hashlib.sha256(doc.text.encode()).hexdigest()
    if doc.source_id is None:
        return f"text-{digest[:12]}"
    if taken.get(doc.source_id, doc.text) == doc.text:
        return doc.source_id
    return f"{doc.source_id}@{digest[:8]}"


DocumentIndex = dict[tuple[str | None, str], str]  # (source document ID, text) -> chunk ID


def map_documents(traces: Iterable[ImportedTrace], documents: Mapping[str, str]
                  ) -> tuple[list[DocumentMatch], DocumentIndex]:
    """Every distinct document of `traces` as a chunk of the arm (first appearance order), and the index from
    (source id, text) to its chunk ID."""
    locator = CorpusLocator(documents)
    text_by_id: dict[str, str] = {}
    index: dict[tuple[str | None, str], str] = {}
    matches: list[DocumentMatch] = []
    ordinal: dict[str, int] = {}
    for t in traces:
        for d in (*(t.ranked or ()), *(t.selected or ())):
            key = (d.source_id, d.text)
            if key in index:
                continue
            cid = chunk_id_of(d, text_by_id)
            if d.source_id is not None:
                text_by_id.setdefault(d.source_id, d.text)
            index[key] = cid
            found = locator.locate(d)
            if found is None:
                doc_id, start, end, by = EXTERNAL + cid, 0, len(d.text), "external"
            else:
                doc_id, start, end, by = found
            n = ordinal.get(doc_id, 0)
            ordinal[doc_id] = n + 1
            matches.append(DocumentMatch(Chunk(chunk_id=cid, doc_id=doc_id, ordinal=n, text=d.text, runes=len(d.text),
                                               start=start, end=end), by))
    return matches, index


# --- what each question had ---------------------------------------------------------------------------------------
def in_prompt(chunk_ids: Sequence[str], texts: Mapping[str, str], prompt_texts: Sequence[str]) -> list[str]:
    """The chunks whose text is in the prompt, in the order they appear there (ties: the given order)."""
    prompt = "\n".join(prompt_texts)
    flat = normalise(prompt)
    found = []
    for n, c in enumerate(dict.fromkeys(chunk_ids)):
        t = texts[c]
        i = prompt.find(t)
        if i < 0:
            j = flat.find(normalise(t)) if t.strip() else -1
            if j < 0:
                continue
            i = j
        found.append((i, n, c))
    return [c for _, _, c in sorted(found)]


_NUMBERED = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
_BRACKETS = re.compile(r"\[([^\[\]\n]+)\]")


def citations(answer: str, style: str, admitted: Sequence[str], known: Iterable[str]) -> list[str]:
    """The chunk IDs a free-text answer cites: `numbered` reads `[2]` as the second admitted document (in prompt
    order); `ids` reads document IDs in brackets (any known chunk ID, or a source ID mapped to one); `none`, none.
    A number past the admitted list is kept as `[n]` so the contract's citation rule can name it."""
    out: list[str] = []
    if style == "numbered":
        for m in _NUMBERED.finditer(answer):
            for n in m.group(1).split(","):
                k = int(n)
                cid = admitted[k - 1] if 1 <= k <= len(admitted) else f"[{k}]"
                if cid not in out:
                    out.append(cid)
    elif style == "ids":
        known = set(known)
        for m in _BRACKETS.finditer(answer):
            for part in m.group(1).split(","):
                part = part.strip()
                if part in known and part not in out:
                    out.append(part)
    return out


def without_citations(answer: str, style: str, known: Iterable[str]) -> str:
    """The answer's text with the citation markers `citations` reads taken out (`[2]`, `[1, 3]` for `numbered`; a
    bracket of known IDs for `ids`), as the lab's own answer format keeps its citations beside the text: the judges
    read the claims, and a marker is never read as a number the claim states. The answer as the user saw it stays
    the row's raw text."""
    if style == "numbered":
        spans = [m.span() for m in _NUMBERED.finditer(answer)]
    elif style == "ids":
        known = set(known)
        spans = [m.span() for m in _BRACKETS.finditer(answer)
                 if all(part.strip() in known for part in m.group(1).split(","))]
    else:
        return answer
    return _cut(answer, spans)


def _cut(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` without the spans, each with the blanks before it (`claim [2].` -> `claim.`)."""
    out, last = [], 0
    for start, end in spans:
        out.append(text[last:start].rstrip(" \t"))
        last = end
    out.append(text[last:])
    return "".join(out)


@dataclass(frozen=True)
class ImportedRow:
    """One question's imported retrieval, admission and answer, in the lab's terms."""

    query_id: str
    trace_id: str | None
    status: str                       # ok | no_answer_span | no_trace
    retrieval_status: str             # ok | no_retrieval_span | no_trace
    ranked_chunk_ids: list[str]
    scores: list[float | None]
    selected_chunk_ids: list[str]
    admitted_chunk_ids: list[str]
    answer: str | None
    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    latency_s: float | None = None


def imported_rows(questions: Sequence[Any], mapping: ImportMapping, index: Mapping[tuple[str | None, str], str],
                  chunk_text: Mapping[str, str]) -> list[ImportedRow]:
    """One row per question, in question order: a question with no trace has status `no_trace` (unanswered)."""
    out = []
    for q in questions:
        t = mapping.traces.get(q.id)
        if t is None:
            out.append(ImportedRow(q.id, None, NO_TRACE, NO_TRACE, [], [], [], [], None, None, None, None))
            continue
        ranked_scores: dict[str, float | None] = {}
        for d in t.ranked or ():
            ranked_scores.setdefault(index[(d.source_id, d.text)], d.score)
        selected = [index[(d.source_id, d.text)] for d in t.selected or ()]
        admitted = in_prompt(selected, chunk_text, t.prompt_texts) if t.answer is not None else []
        out.append(ImportedRow(q.id, t.trace_id, t.status, "ok" if t.ranked is not None else NO_RETRIEVAL_SPAN,
                               list(ranked_scores), list(ranked_scores.values()),
                               list(dict.fromkeys(selected)), admitted, t.answer, t.model, t.input_tokens,
                               t.output_tokens, t.latency_s))
    return out


# --- a dataset from rows ----------------------------------------------------------------------------------------
# The source fields a row format's messages name: the question, the gold answer, the retrieved contexts (and the
# field of one context holding its text, None when the context is the text itself).
ROW_FIELDS = {"ragchecker": ("query", "gt_answer", "retrieved_context", "text"),
              "ragas": ("user_input", "reference", "retrieved_contexts", None)}
SHOWN_ROWS = 10


def row_name(t: ImportedTrace) -> str:
    """A row as messages name it: `results[3] (query_id q7)`, `row 3`."""
    return t.trace_id + (f" (query_id {t.question_id})" if t.question_id is not None else "")


def dataset_from_rows(traces: Sequence[ImportedTrace], source: str, fmt: str = "ragchecker"
                      ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """For row formats without a corpus (RAGChecker, RAGAS): the corpus from the retrieved contexts (one document
    per distinct text, its ID the row's doc_id when it names one text, else `text-<sha12>`), and the questions.
    A question with a gold answer gets it and no requests, so its requests are derived from the gold answer
    (core.request_derivation: the offline rule when the dataset loads, or `rag-ttc derive-requests`); a question
    without one gets one request, the whole question. No gold quotes: the rows have none, so requests have no
    supporting chunk until quotes are added. Returns (corpus, evaluation without its digest, counts). A question's
    ID is its RAGChecker query_id, else `q-<n>` in row order.

    Refused (ImportSourceError naming the file, the row and the field): a blank question, a blank retrieved
    context, a question ID twice, and a file whose rows carry no retrieved context at all (the corpus would be
    empty). Rows without a context beside rows with one are counted (`rows_without_context`)."""
    query_field, gold_field, context_field, text_field = ROW_FIELDS.get(fmt, ROW_FIELDS["ragchecker"])
    if not traces:
        raise ImportSourceError(f"{source}: the file holds no rows")
    text_by_id: dict[str, str] = {}
    documents: dict[str, dict[str, Any]] = {}
    without_context: list[str] = []
    for t in traces:
        if not (t.question_text or "").strip():
            raise ImportSourceError(f"{source}: {row_name(t)}: field {query_field!r} is empty; a question needs "
                                    "its text")
        if not t.ranked:
            without_context.append(row_name(t))
        for j, d in enumerate(t.ranked or ()):
            if not d.text.strip():
                field = f"{context_field}[{j}]" + (f": field {text_field!r}" if text_field else "")
                raise ImportSourceError(f"{source}: {row_name(t)}: {field} is empty; the dataset's corpus is made "
                                        "of the retrieved contexts, and a document needs text")
            cid = chunk_id_of(d, text_by_id)
            if d.source_id is not None:
                text_by_id.setdefault(d.source_id, d.text)
            documents.setdefault(cid, {"id": cid, "title": "", "text": d.text, "metadata": {"imported_from": source}})
    if not documents:
        raise ImportSourceError(
            f"{source}: no row carries a retrieved context (field {context_field!r} is empty in all {len(traces)} "
            f"rows, the first {row_name(traces[0])}); the dataset's corpus is made of the retrieved contexts, so "
            "there would be nothing to measure retrieval or support against. Export the rows with the contexts "
            "the system retrieved.")
    questions, seen = [], set()
    requests_from_gold = 0
    for n, t in enumerate(traces, 1):
        qid = t.question_id or f"q-{n:04d}"
        if qid in seen:
            raise ImportSourceError(f"{source}: {t.trace_id}: question ID {qid!r} appears twice")
        seen.add(qid)
        question = {"id": qid, "text": t.question_text or "", "answerable": True, "targets": [], "requests": []}
        gold = t.gold_answer if t.gold_answer and t.gold_answer.strip() else None
        claims = split_claims(gold) if gold else []
        if gold:
            question["gold_answer"] = gold
        if claims:
            requests_from_gold += len(claims)  # derived when the dataset loads (or by derive-requests)
        else:  # no gold answer (or one without a claim): the whole question is the one request
            question["requests"] = [{"id": f"{qid}.r1", "text": t.question_text or "", "evidence": [],
                                     **({"gold_answer": gold} if gold else {})}]
        questions.append(question)
    counts = {"documents": len(documents), "questions": len(questions),
              "gold_answers": sum(1 for q in questions if q.get("gold_answer")),
              "questions_with_derived_requests": sum(1 for q in questions if not q["requests"]),
              "derived_requests_offline": requests_from_gold,
              "questions_as_one_request": sum(1 for q in questions if q["requests"]),
              # of those, the ones whose gold answer yields no claim (too short: "X is y.")
              "gold_answers_without_claim": sum(1 for q in questions if q["requests"] and q.get("gold_answer")),
              "rows_without_context": len(without_context),
              "rows_without_context_first": without_context[:SHOWN_ROWS]}
    return {"documents": list(documents.values())}, {"pilot": [], "questions": questions}, counts
