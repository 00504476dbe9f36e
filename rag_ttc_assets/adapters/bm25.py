"""BM25 over chunk representations with Tantivy: English stemming, queries from analyzed terms.

Questions are never fed to `parse_query`: `:`, quotes, brackets and `AND`/`NOT` in real
questions make it fail, so the query is a disjunction of the analyzer's own terms.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

ANALYZER = "rag_en_stem"
FIELD_ID = "chunk_id"
FIELD_BODY = "body"


def _analyzer():
    import tantivy

    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stopword("english"))
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def _schema():
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_text_field(FIELD_ID, stored=True, tokenizer_name="raw")
    sb.add_text_field(FIELD_BODY, stored=False, tokenizer_name=ANALYZER)
    return sb.build()


def build_index(path: Path, docs: Iterable[tuple[str, str]]) -> None:
    """Write a fresh index of (chunk_id, text) into an empty folder `path` (one writer, one commit). `docs` is
    consumed as it is iterated: a generator streams the corpus into Tantivy's writer without a list of it."""
    import tantivy

    path.mkdir(parents=True, exist_ok=True)
    index = tantivy.Index(_schema(), path=str(path))
    index.register_tokenizer(ANALYZER, _analyzer())
    writer = index.writer(heap_size=64_000_000, num_threads=1)
    for chunk_id, text in docs:
        writer.add_document(tantivy.Document(**{FIELD_ID: chunk_id, FIELD_BODY: text}))
    writer.commit()
    writer.wait_merging_threads()


class BM25Index:
    """A read-only handle on a built index."""

    def __init__(self, path: Path):
        import tantivy

        self._tantivy = tantivy
        self.index = tantivy.Index.open(str(path))
        self.index.register_tokenizer(ANALYZER, _analyzer())
        self.index.reload()
        self.searcher = self.index.searcher()
        self.analyzer = _analyzer()
        self.schema = self.index.schema

    def terms(self, text: str) -> list[str]:
        return self.analyzer.analyze(text)

    def search(self, text: str, limit: int) -> list[tuple[str, float]]:
        """Top `limit` (chunk_id, score), ties broken by chunk_id so the order is total."""
        t = self._tantivy
        terms = sorted(set(self.terms(text)))
        if not terms:
            return []
        query = t.Query.boolean_query(
            [(t.Occur.Should, t.Query.term_query(self.schema, FIELD_BODY, term)) for term in terms]
        )
        # Over-fetch a little so ties at the cut are resolved by chunk_id, not by segment order.
        hits = self.searcher.search(query, limit + 10).hits
        out = [(self.searcher.doc(addr)[FIELD_ID][0], float(score)) for score, addr in hits]
        out.sort(key=lambda x: (-x[1], x[0]))
        return out[:limit]

    @property
    def num_docs(self) -> int:
        return self.searcher.num_docs
