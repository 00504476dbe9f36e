"""Supply modes for one arm (core.supply): preloaded contexts, the `lookup` tool over the arm's own indexes,
the tool conversation, the citation check with its one retry, and the evidence each row actually had."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rag_ttc_assets.adapters import embeddings
from rag_ttc_assets.adapters.bm25 import BM25Index
from rag_ttc_assets.adapters.store import ArtifactStore, Built, Table
from rag_ttc_assets.adapters.table_types import table_frame
from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.artifacts import SOURCE_DEPTH
from rag_ttc_assets.core.chunking import Chunk
from rag_ttc_assets.core.contract import ABSTAINED, VALID, check_contract
from rag_ttc_assets.core.dataset import Dataset
from rag_ttc_assets.core.fusion import rrf
from rag_ttc_assets.core.prompts import Prompt, evidence_block, label_values
from rag_ttc_assets.core.records import Question
from rag_ttc_assets.core.response_formats import answer_reply, response_format
from rag_ttc_assets.core.supply import (LOOKUP_TOOL, LOOKUP_TOOL_NAME, LookupCall, ToolCall, lookup_cases, lookup_flow,
                                        lookup_queries, parse_lookup_arguments, seamless_offsets, title_index)
from rag_ttc_assets.stages.calls import Call, Caller
from rag_ttc_assets.stages.coverage import request_coverage
from rag_ttc_assets.stages.indexes import open_vector_index

if TYPE_CHECKING:
    import polars as pl

# the declared column names (core.tables)
CTX, ANS = Table.ADMITTED_CONTEXTS.c, Table.ANSWERS.c
NO_RESULTS = "No results."
CITATION_OFF, CITATION_PASSED, CITATION_RETRIED, ESCALATED = "off", "passed", "retried_passed", "escalated"


class PreloadError(ValueError):
    """A preloaded document set names documents the corpus does not have."""


def preloaded_chunks(cfg: ArmConfig, ds: Dataset, chunks: list[Chunk], source: str = "arms.yaml") -> list[Chunk]:
    """The chunks of the preloaded documents, in the set's order (corpus order for 'all')."""
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    if cfg.preloaded_documents == "all":
        doc_ids = list(ds.corpus.ids())
    else:
        unknown = [d for d in cfg.preloaded_documents if d not in ds.documents_by_id]
        if unknown:
            raise PreloadError(f"{source}: field 'preloaded_documents': unknown document(s) {unknown} in dataset "
                               f"{cfg.dataset!r}")
        doc_ids = list(dict.fromkeys(cfg.preloaded_documents))
    return [c for d in doc_ids for c in by_doc.get(d, [])]


def preloaded_contexts(cfg: ArmConfig, questions: list[Question], chunks: list[Chunk]) -> pl.DataFrame:
    """Every question gets the same admitted evidence: the whole preloaded set, each document pasted once
    (overlap at chunk seams dropped through evidence_offsets), no evidence_k cut, no context budget."""
    ids = [c.chunk_id for c in chunks]
    offsets = seamless_offsets(chunks)
    runes = [c.runes - o for c, o in zip(chunks, offsets)]
    row = {"evidence_k": cfg.evidence_k, "evidence_order": "preloaded", "selected_chunk_ids": ids,
           "admitted_chunk_ids": ids, "evidence_runes": runes, "evidence_offsets": offsets,
           "omitted_chunk_ids": [], "used_runes": sum(runes), "max_runes": sum(runes),
           "counterfactual": "none", "withheld_chunk_ids": [], "planted": "[]", "supply": "preloaded"}
    return table_frame(Table.ADMITTED_CONTEXTS, [{"query_id": q.id, **row} for q in questions])


def tool_contexts(cfg: ArmConfig, questions: list[Question]) -> pl.DataFrame:
    """A tool arm admits nothing before generation: its evidence is what each case's lookups return,
    recorded in the answers table (`supplied_contexts` reads it back)."""
    row = {"evidence_k": cfg.evidence_k, "evidence_order": "lookup", "selected_chunk_ids": [],
           "admitted_chunk_ids": [], "evidence_runes": [], "evidence_offsets": [], "omitted_chunk_ids": [],
           "used_runes": 0, "max_runes": 0, "counterfactual": "none", "withheld_chunk_ids": [], "planted": "[]",
           "supply": "tool"}
    return table_frame(Table.ADMITTED_CONTEXTS, [{"query_id": q.id, **row} for q in questions])


def supplied_contexts(cfg: ArmConfig, contexts: pl.DataFrame, answers: pl.DataFrame | None) -> pl.DataFrame:
    """The evidence each row had in context: admitted_contexts, except for tool arms, where it is the union of
    the case's lookup results (the answers table's admitted_chunk_ids)."""
    import polars as pl

    if cfg.supply != "tool" or answers is None:
        return contexts
    supplied = dict(zip(answers[ANS.query_id].to_list(), answers[ANS.admitted_chunk_ids].to_list()))
    ids = [supplied.get(q) or [] for q in contexts[CTX.query_id].to_list()]
    return contexts.with_columns(
        pl.Series("admitted_chunk_ids", ids, dtype=pl.List(pl.String)),
        pl.Series("selected_chunk_ids", ids, dtype=pl.List(pl.String)),
        pl.Series("evidence_offsets", [[0] * len(i) for i in ids], dtype=pl.List(pl.Int64)),
    )


@dataclass(frozen=True)
class SupplyTools:
    """What an arm's answers need beyond the admitted contexts: the pre-loaded title index (empty when off), the
    lookup tool (tool arms) and the citation check's retry prompt (when the check is on)."""

    index_text: str = ""
    lookup: Lookup | None = None
    retry_prompt: Prompt | None = None


class Lookup:
    """The `lookup` tool: the arm's own retrieval (bm25, vector or RRF over both) for one query, top n chunks."""

    def __init__(self, cfg: ArmConfig, bm25_built: Built | None, vec_built: Built | None, chunk_docs: dict[str, str],
                 store=None):
        self.cfg = cfg
        self.bm = BM25Index(bm25_built.path / "tantivy") if cfg.retrieval in ("bm25", "rrf") else None
        # The same index and query parameters as the arm's retrieval rows (core.ann).
        self.vi = open_vector_index(cfg, vec_built) if cfg.retrieval in ("vector", "rrf") else None
        self.chunk_docs = chunk_docs
        self.store = store  # where an ONNX embedding model is exported (the arm's lab's store)
        self.depth = max(SOURCE_DEPTH, cfg.lookup_top_n)
        self._lock = threading.Lock()

    def search(self, query: str) -> list[str]:
        # Embedded before taking the lock: encode serializes on the model's own lock, and holding ours meanwhile
        # would also stall the threads that only need the Tantivy searcher.
        vector = embeddings.encode([query], self.cfg.embedding_model, store=self.store)[0] if self.vi is not None else None
        with self._lock:  # one searcher and one LanceDB handle shared by the worker threads
            bm25 = [c for c, _ in self.bm.search(query, self.depth)] if self.bm is not None else []
            dense = [c for c, _ in self.vi.search(vector, self.depth)] if self.vi is not None else []
        if self.cfg.retrieval == "rrf":
            return [h.chunk_id for h in rrf({"bm25": bm25, "vector": dense}, k=self.cfg.rrf_k,
                                            limit=self.cfg.lookup_top_n)]
        return (bm25 if self.cfg.retrieval == "bm25" else dense)[: self.cfg.lookup_top_n]


def tool_calls(call: Call) -> list[ToolCall]:
    """The reply's tool calls as records (none when it called no tool)."""
    return [ToolCall.model_validate(t) for t in call.tool_calls or []]


def _assistant_turn(call: Call) -> dict:
    """The reply as the conversation's assistant message (the OpenAI format litellm forwards)."""
    return {"role": "assistant", "content": call.raw_text,
            "tool_calls": [{"id": t.id, "type": "function", "function": {"name": t.name, "arguments": t.arguments}}
                           for t in tool_calls(call)]}


def tool_conversation(cfg: ArmConfig, q: Question, prompt: Prompt, index_text: str, caller: Caller,
                      lookup: Lookup, chunk_text: dict[str, str]) -> tuple[list[Call], list[LookupCall], list[str]]:
    """Offer `lookup` for up to lookup_rounds turns, executing every call; then the turn must answer.

    Returns the provider calls, the lookup log, and the supplied chunk IDs (union of results, first seen first).
    """
    messages: list[dict] = [{"role": "user", "content": prompt.render(
        question=q.text, title_index=index_text,
        **label_values(cfg.requests_in_prompt, [(r.id, r.text) for r in q.requests]))}]
    calls: list[Call] = []
    log: list[LookupCall] = []
    supplied: list[str] = []
    for turn in range(cfg.lookup_rounds + 1):
        # Only the last turn, which offers no tool, asks for the answer's schema: a schema would rule out a tool call.
        last = turn == cfg.lookup_rounds
        call = caller.call(messages, tools=None if last else [LOOKUP_TOOL],
                           response_format=response_format(cfg.response_format, answer_reply(prompt.text)) if last
                           else None)
        calls.append(call)
        if call.status != "ok" or not call.tool_calls:
            break
        messages.append(_assistant_turn(call))
        for t in tool_calls(call):
            query, error = (parse_lookup_arguments(t.arguments) if t.name == LOOKUP_TOOL_NAME
                            else (None, f"unknown tool {t.name!r}; the only tool is {LOOKUP_TOOL_NAME!r}"))
            hits = lookup.search(query) if query is not None else []
            log.append(LookupCall(call_id=t.id, query=query if query is not None else str(t.arguments)[:200],
                                  result_chunk_ids=hits, result_doc_ids=[lookup.chunk_docs[c] for c in hits],
                                  error=error))
            supplied += [c for c in hits if c not in supplied]
            content = (f"error: {error}" if error else
                       evidence_block([(c, chunk_text[c]) for c in hits]) if hits else NO_RESULTS)
            messages.append({"role": "tool", "tool_call_id": t.id, "content": content})
    return calls, log, supplied


def citation_check(cfg: ArmConfig, q: Question, final: Call, evidence: Sequence[tuple[str, str]],
                   retry_prompt: Prompt | None, caller: Caller) -> tuple[str, list[Call]]:
    """The second seed's post-generation check: the answer must pass the contract's citation rules against what
    was actually supplied. On a failure, retry once with the evidence restated immediately before the question;
    a second failure is `escalated` (to a human). Provider faults are not citation failures: the row keeps them."""
    if not cfg.citation_check or retry_prompt is None or final.status != "ok":
        return CITATION_OFF, []
    supplied = [c for c, _ in evidence]
    if check_contract(final.raw_text, supplied).status in (VALID, ABSTAINED):
        return CITATION_PASSED, []
    retry = caller.call([{"role": "user", "content": retry_prompt.render(
        question=q.text, evidence=evidence_block(list(evidence)),
        title_index="", **label_values(cfg.requests_in_prompt, [(r.id, r.text) for r in q.requests]))}],
        response_format=response_format(cfg.response_format, answer_reply(retry_prompt.text)))
    if retry.status != "ok":
        return CITATION_OFF, [retry]
    passed = check_contract(retry.raw_text, supplied).status in (VALID, ABSTAINED)
    return (CITATION_RETRIED if passed else ESCALATED), [retry]


def merge_calls(calls: list[Call]) -> dict:
    """One row's call columns from all its provider calls: the final text, summed tokens, latency and cost, the
    first fault (a row with a fault is retried on the next run), cache_hit only when every call was a hit, and the
    digest of what each call was sent (`messages_digests`, in call order: the message archive's keys)."""
    fault = next((c for c in calls if c.status != "ok"), None)
    last = calls[-1]

    def total(attr: str):
        values = [getattr(c, attr) for c in calls]
        return None if any(v is None for v in values) else sum(values)

    return {"status": fault.status if fault else "ok", "raw_text": last.raw_text,
            "input_tokens": total("input_tokens"), "output_tokens": total("output_tokens"),
            "latency_s": sum(c.latency_s for c in calls), "cost_usd": total("cost_usd"),
            "attempts": sum(c.attempts for c in calls), "error": fault.error if fault else None,
            "cache_hit": all(c.cache_hit for c in calls), "provider_turns": len(calls),
            "messages_digests": [c.messages_digest for c in calls]}


def lookups_json(log: list[LookupCall]) -> str:
    return json.dumps([c.model_dump() for c in log], ensure_ascii=False)


def read_lookups(answers: pl.DataFrame) -> dict[str, list[LookupCall]]:
    """The lookup log per case (tool arms); cases with no call have an empty list."""
    if ANS.lookups not in answers.columns:
        return {}
    return {r[ANS.query_id]: [LookupCall(**c) for c in json.loads(r[ANS.lookups] or "[]")]
            for r in answers.iter_rows(named=True)}


def supply_tools(cfg: ArmConfig, dataset: Dataset, lookup: Lookup | None, retry_prompt: Prompt | None) -> SupplyTools:
    """What `generate` needs for an arm beyond its admitted contexts: the title index of the dataset's corpus (when
    the arm sets `title_index`), its `lookup` (a tool arm's, over the same representations, Tantivy index and
    LanceDB table as its retrieval rows; None otherwise) and the citation check's retry prompt (None when off)."""
    return SupplyTools(index_text=title_index(dataset.corpus.documents()) if cfg.title_index else "",
                       lookup=lookup, retry_prompt=retry_prompt)


def arm_contexts(store: ArtifactStore, arm: str, cfg: ArmConfig) -> pl.DataFrame:
    """What every row of `arm` had in context, for the judge and the diagnostics (supplied_contexts): its
    admitted_contexts table; a tool arm's answers table is read too, for its lookup results."""
    contexts = store.read_table(arm, Table.ADMITTED_CONTEXTS)
    return supplied_contexts(cfg, contexts, store.read_table(arm, Table.ANSWERS) if cfg.supply == "tool" else None)


def arm_coverage(store: ArtifactStore, arm: str, cfg: ArmConfig, questions: list[Question],
                 support: Callable[[], dict[str, list[str]]]) -> pl.DataFrame:
    """Per-request coverage: the request_coverage table, except for tool arms, whose supply is only known after
    the answers (a supporting chunk counts when a lookup returned it): computed for `questions` (the arm's, or the
    one question `inspect` shows) from `support()`, their requests' supporting chunks, called only then."""
    if cfg.supply != "tool":
        return store.read_table(arm, Table.REQUEST_COVERAGE)
    return request_coverage(questions, support(), store.read_table(arm, Table.RETRIEVAL_ROWS),
                            arm_contexts(store, arm, cfg), cfg.supply)


def question_lookups(questions: list[Question], lookup: Lookup) -> dict:
    """A tool arm's lookup hit rate with no generation, on the queries the product sends: per question, its own
    split (core.supply.lookup_queries of the question text, the offline answerer's `lookup` queries; a model may
    phrase its own), scored against the governing documents. The CI gate of `rag-ttc hitrate` on a tool arm."""
    return _scored_lookups(questions, lookup, lambda q: [(f"{q.id}.lookup_{i}", text)
                                                         for i, text in enumerate(lookup_queries(q.text))])


def oracle_request_lookups(questions: list[Question], lookup: Lookup) -> dict:
    """An oracle figure, not something the product sends: each annotated request looked up with the annotator's
    request text (the evaluation file's labels), scored like question_lookups. Reported beside it, never gated on."""
    return _scored_lookups(questions, lookup, lambda q: [(r.id, r.text) for r in q.requests])


def _scored_lookups(questions: list[Question], lookup: Lookup,
                    queries_of: Callable[[Question], list[tuple[str, str]]]) -> dict:
    """Look up `queries_of(question)` ((call id, query) pairs) for every question with the arm's own `lookup`
    and return the lookup flow's branch counts and hit rate (no answers, so no answer-quality figures)."""
    logs = {}
    for q in questions:
        calls = []
        for call_id, query in queries_of(q):
            hits = lookup.search(query)
            calls.append(LookupCall(call_id=call_id, query=query, result_chunk_ids=hits,
                                    result_doc_ids=[lookup.chunk_docs[c] for c in hits]))
        logs[q.id] = calls
    return lookup_flow(lookup_cases(questions, logs, {})).counts().model_dump()
