"""`rag-ttc bench --only import`: reading an imported arm's OTLP JSON (imported.import_source: parse; imported.import_mapping:
map traces to questions and documents to the corpus, the ranked / selected / in-the-prompt rows) against the floor of
reading the same file with `json.load` and one pass over its spans' attributes. Target cost <= 3.

The file: TRACES synthetic traces of DOCS documents each (a CHAIN root with `metadata.question_id`, a RETRIEVER span
with DOCS documents, a RERANKER span keeping 5, an LLM span whose prompt holds them), over a corpus of CORPUS_DOCS
documents the document IDs name.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace

from rag_ttc_assets.bench.harness import Target, alternate, item, timed
from rag_ttc_assets.bench.bench_registry import measurement
from rag_ttc_assets.imported import import_mapping as imap
from rag_ttc_assets.imported import import_source as imp

TRACES, DOCS, SELECTED, CORPUS_DOCS = 10_000, 20, 5, 2_000
WORDS = ("assert raise return yield import global pass break continue lambda class def with try except finally "
         "while for if else elif del nonlocal await async").split()


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)) + "."


def _attr(key: str, value) -> dict:
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def synthetic_export(traces: int = TRACES, docs: int = DOCS, seed: int = 0) -> tuple[bytes, dict[str, str], list]:
    """(OTLP JSON bytes, corpus {doc_id: text}, questions) for the measurement."""
    rng = random.Random(seed)
    passages = {f"d{i:05d}": [_text(rng, 30) for _ in range(4)] for i in range(CORPUS_DOCS)}
    corpus = {d: " ".join(ps) for d, ps in passages.items()}
    ids = list(passages)
    questions, spans = [], []
    for t in range(traces):
        tid, qid = f"{t:032x}", f"q{t:05d}"
        questions.append(SimpleNamespace(id=qid, text=f"question {t}: {_text(rng, 8)}"))
        ranked = [(d, rng.randrange(4)) for d in rng.sample(ids, docs)]
        docs_attrs = []
        for i, (d, p) in enumerate(ranked):
            docs_attrs += [_attr(f"retrieval.documents.{i}.document.id", d),
                           _attr(f"retrieval.documents.{i}.document.content", passages[d][p]),
                           _attr(f"retrieval.documents.{i}.document.score", 1.0 / (i + 1))]
        kept = ranked[:SELECTED]
        rerank = [a for i, (d, p) in enumerate(kept) for a in (
            _attr(f"reranker.output_documents.{i}.document.id", d),
            _attr(f"reranker.output_documents.{i}.document.content", passages[d][p]))]
        prompt = "\n\n".join(passages[d][p] for d, p in kept) + f"\n\nQuestion: {questions[-1].text}"
        base = {"traceId": tid, "startTimeUnixNano": str(t * 10), "endTimeUnixNano": str(t * 10 + 5)}
        spans += [
            {**base, "spanId": f"{t:012x}0001", "name": "rag", "attributes": [
                _attr("openinference.span.kind", "CHAIN"), _attr("input.value", questions[-1].text),
                _attr("metadata", json.dumps({"question_id": qid}))]},
            {**base, "spanId": f"{t:012x}0002", "parentSpanId": f"{t:012x}0001", "name": "retrieve",
             "attributes": [_attr("openinference.span.kind", "RETRIEVER"), *docs_attrs]},
            {**base, "spanId": f"{t:012x}0003", "parentSpanId": f"{t:012x}0001", "name": "rerank",
             "attributes": [_attr("openinference.span.kind", "RERANKER"), *rerank]},
            {**base, "spanId": f"{t:012x}0004", "parentSpanId": f"{t:012x}0001", "name": "llm", "attributes": [
                _attr("openinference.span.kind", "LLM"), _attr("llm.model_name", "m"),
                _attr("llm.input_messages.0.message.role", "user"),
                _attr("llm.input_messages.0.message.content", prompt),
                _attr("llm.output_messages.0.message.content", "An answer [1]."),
                _attr("llm.token_count.prompt", 300), _attr("llm.token_count.completion", 5)]}]
    data = json.dumps({"resourceSpans": [{"resource": {"attributes": []},
                                          "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}]}]}).encode()
    return data, corpus, questions


@measurement("import")
def bench_import(spec, base: Path, repeat: int) -> dict:

    data, corpus, questions = synthetic_export(TRACES, DOCS)
    path = Path(base) / "import-bench.json"
    path.write_bytes(data)
    rows: list[imap.ImportedRow] = []  # the product's imported rows, from the last round

    def product():
        nonlocal rows
        traces = imp.read_source(path.read_bytes(), str(path), "otlp_json")
        mapping = imap.map_traces(traces, questions, str(path))
        matches, index = imap.map_documents(mapping.traces.values(), corpus)
        text = {m.chunk.chunk_id: m.chunk.text for m in matches}
        rows = imap.imported_rows(questions, mapping, index, text)

    def reference():
        # The floor: the file read and decoded, and one pass over every span's attributes.
        with open(path, "rb") as f:
            obj = json.load(f)
        n = 0  # counted so the pass is not optimized away; not reported
        for rs in obj["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    for a in s["attributes"]:
                        n += len(a["key"])
        return n

    prod, ref = alternate("import", timed(product), timed(reference), repeat)
    admitted = sum(len(r.admitted_chunk_ids) for r in rows)
    if len(rows) != TRACES or admitted != TRACES * SELECTED:
        raise RuntimeError(f"import: {len(rows)} rows, {admitted} admitted documents; expected {TRACES} and "
                           f"{TRACES * SELECTED}")
    return item("import", prod, ref, "cost", Target("<=", 3.0),
                f"imported.import_source, imported.import_mapping: parse, map {TRACES} traces x {DOCS} documents to questions "
                "and corpus, rows",
                "json.load + one pass over the spans' attributes",
                traces=TRACES, documents_per_trace=DOCS, file_mb=round(len(data) / 2**20, 1),
                detail=f"{TRACES} traces x {DOCS} documents, {len(data) / 2**20:.0f} MB; every row's {SELECTED} "
                       "documents found in its prompt")
