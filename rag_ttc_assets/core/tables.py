"""The per-arm tables (`arms/<arm>/<name>.parquet`): each one's name, columns and column types, declared once.

A `Table` constant is the table's name (a `str`, so it is used as a name everywhere) carrying its columns:
`Table.ANSWERS.columns`, and `Table.ANSWERS.c.status` for a column's name (an undeclared one is an
`AttributeError` naming the table). The store checks every write against the declaration (`check_columns`:
a missing, undeclared or mistyped column is an error naming the arm, table and column); each table asset
shows the declaration as its Dagster column schema. Pure: the types are this module's names (`TYPES`),
which `adapters/table_types.py` maps to polars dtypes.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

# A column's type: scalar types, and lists of them. "str" also holds JSON documents (the column says so).
SCALARS = ("str", "int", "float", "bool")
TYPES = SCALARS + tuple(f"list[{t}]" for t in SCALARS)
NULL = "null"  # the type of a column whose every value is missing (polars infers no type for it)


class TableSchemaError(ValueError):
    """A table written with a column missing, undeclared or of another type than its declaration."""


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    description: str
    # When the column is written only for some arms: which (absent otherwise). None: always written.
    only: str | None = None

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"column {self.name!r}: type {self.type!r} is not one of {list(TYPES)}")


class TableName(str):
    """A table's name (the string) with its declared columns."""

    columns: tuple[Column, ...]
    description: str
    c: SimpleNamespace

    def __new__(cls, name: str, description: str, *columns: Column) -> "TableName":
        self = super().__new__(cls, name)
        names = [c.name for c in columns]
        if len(set(names)) != len(names):
            raise ValueError(f"table {name!r} declares a column twice: {names}")
        self.columns, self.description = tuple(columns), description
        self.c = _Names(name, names)
        return self

    def __reduce__(self) -> tuple[type[str], tuple[str]]:  # pickled (a step process, dask) as the plain name
        return str, (str(self),)

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"table {str(self)!r} declares no column {name!r} (core/tables.py)")


class _Names(SimpleNamespace):
    """`Table.X.c`: each declared column's name as an attribute."""

    def __init__(self, table: str, names: list[str]):
        super().__init__(**{n: n for n in names})
        object.__setattr__(self, "_table", table)

    def __getattr__(self, name: str) -> str:
        raise AttributeError(f"table {self._table!r} declares no column {name!r} (core/tables.py)")


def check_columns(table: TableName, arm: str, actual: dict[str, str]) -> list[str]:
    """The columns of `actual` (`{name: type}`, types in `TYPES` or `NULL`, else the frame's own dtype name)
    against the declaration; raises TableSchemaError listing every problem, naming the arm, table and column.
    Returns the columns whose values are all missing (type `null`, or a list of them) for the writer to cast
    to their declared type."""
    where = f"table {str(table)!r} of arm {arm!r}"
    problems, untyped = [], []
    declared = {c.name: c for c in table.columns}
    for c in table.columns:
        if c.name not in actual and c.only is None:
            problems.append(f"column {c.name!r} ({c.type}) is missing")
    for name, typ in actual.items():
        found = declared.get(name)
        if found is None:
            problems.append(f"column {name!r} ({typ}) is not declared")
        elif typ == NULL or (typ == f"list[{NULL}]" and found.type.startswith("list[")):
            untyped.append(name)
        elif typ != found.type:
            problems.append(f"column {name!r} is {typ}, declared {found.type}")
    if problems:
        raise TableSchemaError(f"{where}: " + "; ".join(problems) + f" (its columns are declared in core/tables.py, "
                               f"Table.{constant_of(table)})")
    return untyped


def constant_of(table: str) -> str:
    return next((k for k, v in declared_tables().items() if v == table), str(table).upper())


def declared_tables() -> dict[str, TableName]:
    """`{CONSTANT: table}` of every declared table."""
    return {k: v for k, v in vars(Table).items() if k.isupper()}


def by_name(name: str) -> TableName:
    """The declared table called `name`; a KeyError naming the declared ones otherwise."""
    for t in declared_tables().values():
        if t == name:
            return t
    raise KeyError(f"no table {name!r} is declared in core/tables.py ({sorted(declared_tables().values())})")


_ = Column
QUERY_ID = _("query_id", "str", "the question's id (evaluation.json)")
REQUEST_ID = _("request_id", "str", "the request's id (one of the question's requests)")
ONLY_IMPORTED = "imported arms (supply: imported)"
ONLY_LAB_RETRIEVAL = "arms the lab retrieves for (not imported); null for an exact vector index"
ONLY_JURY = "arms with a request judge panel (request_judges)"


class Table:
    """The per-arm Parquet tables, one name each, with their columns.

    Each is declared by the one asset that writes it (`arm_asset(writes=...)`); a test checks that every
    name here has exactly one writer and that no store read or write names a table by a bare string.
    """

    IMPORTED_CHUNKS = TableName(
        "imported_chunks", "an imported arm's documents, as its chunks (imported.import_source)",
        _("chunk_id", "str", "the chunk's id"), _("doc_id", "str", "the corpus document it was matched to"),
        _("ordinal", "int", "its position in the document's chunks"), _("text", "str", "the chunk's text"),
        _("runes", "int", "its length in runes"), _("start", "int", "its first rune in the document"),
        _("end", "int", "the rune after its last"), _("matched_by", "str", "how it was matched to the corpus"))
    IMPORTED_ROWS = TableName(
        "imported_rows", "per question: its trace, ranked / selected / admitted chunks, answer",
        QUERY_ID, _("trace_id", "str", "the system's trace answering it"),
        _("status", "str", "ok / no_trace / no_answer_span"),
        _("retrieval_status", "str", "ok / no_retrieval_span"),
        _("ranked_chunk_ids", "list[str]", "the RETRIEVER span's documents, in rank order"),
        _("scores", "list[float]", "their scores, as the trace reported them"),
        _("selected_chunk_ids", "list[str]", "the RERANKER's output (else the ranked list)"),
        _("admitted_chunk_ids", "list[str]", "what the prompt held, in prompt order"),
        _("answer", "str", "the LLM span's output"), _("model", "str", "the model it names (self-reported)"),
        _("input_tokens", "int", "input tokens (self-reported)"),
        _("output_tokens", "int", "output tokens (self-reported)"), _("latency_s", "float", "the span's latency"))
    RETRIEVAL_ROWS = TableName(
        "retrieval_rows", "per question: the ranked list (retrieve_k) fused by RRF, with each source's rank and score",
        QUERY_ID, _("retrieval", "str", "bm25 / vector / rrf / imported"),
        _("retrieve_k", "int", "how many were ranked"),
        _("ranked_chunk_ids", "list[str]", "the ranked chunks, best first"),
        _("ranked_doc_ids", "list[str]", "their documents"), _("scores", "list[float]", "their fused scores"),
        _("bm25_ranks", "list[int]", "each chunk's BM25 rank (null: not in its list)"),
        _("bm25_scores", "list[float]", "each chunk's BM25 score"),
        _("vector_ranks", "list[int]", "each chunk's vector rank (null: not in its list)"),
        _("vector_scores", "list[float]", "each chunk's vector score"),
        _("vector_chunk_ids", "list[str]", "the approximate vector list's top retrieve_k", ONLY_LAB_RETRIEVAL),
        _("exact_vector_chunk_ids", "list[str]", "the exact vector list's top retrieve_k", ONLY_LAB_RETRIEVAL),
        _("exact_ranked_chunk_ids", "list[str]", "the ranked list with the exact vector list", ONLY_LAB_RETRIEVAL),
        _("ann_recall_k", "float", "share of the exact list the approximate one found", ONLY_LAB_RETRIEVAL),
        _("trace_id", "str", "the system's trace", ONLY_IMPORTED),
        _("retrieval_status", "str", "ok / no_retrieval_span", ONLY_IMPORTED))
    ADMITTED_CONTEXTS = TableName(
        "admitted_contexts", "per question: the evidence_k prefix, the chunks admitted under context_runes, omissions",
        QUERY_ID, _("evidence_k", "int", "how many ranked chunks were selected"),
        _("evidence_order", "str", "the order they are put in the prompt"),
        _("selected_chunk_ids", "list[str]", "the selected chunks"),
        _("admitted_chunk_ids", "list[str]", "the chunks the prompt holds, in prompt order"),
        _("evidence_runes", "list[int]", "each admitted chunk's runes"),
        _("evidence_offsets", "list[int]", "each admitted chunk's offset in the evidence"),
        _("omitted_chunk_ids", "list[str]", "selected but not admitted (over the budget)"),
        _("used_runes", "int", "runes admitted"), _("max_runes", "int", "the budget (context_runes)"),
        _("counterfactual", "str", "the counterfactual edit (none: the arm's own evidence)"),
        _("withheld_chunk_ids", "list[str]", "chunks a counterfactual withheld"),
        _("planted", "str", "JSON: what a counterfactual planted"), _("supply", "str", "the arm's supply mode"))
    REQUEST_COVERAGE = TableName(
        "request_coverage", "per request: whether a supporting chunk was ranked, selected, admitted",
        QUERY_ID, REQUEST_ID, _("has_evidence", "bool", "the request has gold evidence"),
        _("supporting_chunk_ids", "list[str]", "the chunks (this arm's chunking) that support it"),
        _("ranked", "bool", "a supporting chunk is ranked"), _("selected", "bool", "one is selected"),
        _("admitted", "bool", "one is admitted"),
        _("exact_ranked", "bool", "one is ranked with the exact vector list (an approximate index)"))
    ANSWERS = TableName(
        "answers", "per question: the generator's response, tokens, cost and status",
        QUERY_ID, _("prompt", "str", "the prompt file"), _("prompt_digest", "str", "its digest"),
        _("model", "str", "the generator model"), _("provider_role", "str", "the provider role (generator)"),
        _("offline_baseline", "bool", "answered by the offline baseline"), _("supply", "str", "the supply mode"),
        _("admitted_chunk_ids", "list[str]", "the evidence it saw"),
        _("lookups", "str", "JSON: a tool arm's lookups"), _("lookup_calls", "int", "how many lookups"),
        _("citation_check", "str", "the citation check's outcome"),
        _("status", "str", "ok / provider fault / budget stop"), _("raw_text", "str", "the response text"),
        _("input_tokens", "int", "input tokens"), _("output_tokens", "int", "output tokens"),
        _("latency_s", "float", "seconds"), _("cost_usd", "float", "cost"), _("attempts", "int", "provider attempts"),
        _("error", "str", "the fault, if any"), _("cache_hit", "bool", "answered from the provider cache"),
        _("provider_turns", "int", "provider calls for this question"),
        _("messages_digests", "list[str]", "the archived messages of each call"),
        _("trace_id", "str", "the system's trace", ONLY_IMPORTED))
    CONTRACT_RESULTS = TableName(
        "contract_results", "per answer: exactly one contract status, the parsed answer and its citations",
        QUERY_ID, _("status", "str", "valid / parse_failure / contract_failure / abstained / provider fault"),
        _("reason", "str", "why not valid"), _("parsed_from", "str", "how the answer was parsed"),
        _("answer", "str", "the answer text"), _("citation_chunk_ids", "list[str]", "the chunks it cites"),
        _("abstained", "bool", "the answer abstains"), _("request_items", "str", "JSON: per-request items"),
        _("answer_chars", "int", "the answer's length"))
    JUDGE_VERDICTS = TableName(
        "judge_verdicts", "per answer: statements, per-statement verdicts, the gold judge's verdicts",
        QUERY_ID, _("status", "str", "the contract status, or the judge's fault"),
        _("judged", "bool", "the judge ran on it"), _("statements", "list[str]", "the answer's statements"),
        _("verdicts", "str", "JSON: per-statement verdicts"), _("faithfulness", "float", "supported share"),
        _("answer_relevance", "float", "relevance to the question"),
        _("gold_verdicts", "str", "JSON: the gold judge's verdicts"),
        _("gold_supported", "float", "share supported by the gold material"),
        _("contradicts_gold", "bool", "contradicts the gold material"), _("judge_error", "str", "the fault, if any"),
        _("judge_model", "str", "the judge model"), _("judge_parsed_from", "list[str]", "how each reply was parsed"),
        _("judge_provider_calls", "int", "provider calls"), _("judge_cache_hits", "int", "cache hits"),
        _("judge_input_tokens", "int", "input tokens"), _("judge_output_tokens", "int", "output tokens"),
        _("judge_messages_digests", "list[str]", "the archived messages of each call"))
    REQUEST_JUDGMENTS = TableName(
        "request_judgments", "per request: addressed, its excerpt and citations, a verdict against the gold material",
        QUERY_ID, REQUEST_ID, _("status", "str", "judged / not judged and why / the judge's fault"),
        _("addressed", "bool", "the answer addresses the request"), _("excerpt", "str", "the part that does"),
        _("cited_chunk_ids", "list[str]", "the chunks that part cites"),
        _("verdict", "str", "supported / unsupported / ..."),
        _("coverage", "float", "share of the request's gold material the answer carries (offline judges; a "
                               "panel: its jurors' mean)"),
        _("reason", "str", "the judge's reason"),
        _("judge_error", "str", "the fault, if any"), _("request_judge_model", "str", "the judge (or panel)"),
        _("prompt_digest", "str", "the judge prompt's digest"), _("judge_provider_calls", "int", "provider calls"),
        _("judge_cache_hits", "int", "cache hits"), _("judge_input_tokens", "int", "input tokens"),
        _("judge_output_tokens", "int", "output tokens"),
        _("judge_cost_usd", "float", "cost of the call (None: unpriced or no call)"),
        _("judge_messages_digest", "str", "the archived messages"),
        _("judge_parsed_from", "str", "how the reply was parsed"),
        _("jurors_measured", "int", "jurors that returned a verdict", ONLY_JURY),
        _("jurors_disagree", "bool", "the jurors disagree", ONLY_JURY),
        _("jurors", "str", "JSON: each juror's verdict", ONLY_JURY))
    REQUEST_OUTCOMES = TableName(
        "request_outcomes", "per request: measured, answered, supported, evidence admitted, self-reports",
        QUERY_ID, REQUEST_ID, _("measured", "bool", "the judge measured it"),
        _("judge_status", "str", "the request judge's status"), _("answered", "bool", "addressed by the answer"),
        _("supported", "bool", "judged supported"), _("evidence_admitted", "bool", "a supporting chunk was admitted"),
        _("cited_supporting", "bool", "the answer cites a supporting chunk"), _("verdict", "str", "the verdict"),
        _("contradicts_gold", "bool", "the answer contradicts the gold material"),
        _("self_reported_answered", "bool", "the generator says it answered (self-reported)"),
        _("self_reported_supported", "bool", "the generator says it is supported (self-reported)"),
        _("overclaimed", "bool", "self-reported answered, judged not"),
        _("underclaimed", "bool", "self-reported not answered, judged answered"),
        _("case", "str", "the outcome's case"),
        _("coverage", "float", "the judge's coverage of the request (graded; a panel's: calibrated), 0 when nothing "
                               "was delivered, null when none"))
    QUESTION_COMPLETENESS = TableName(
        "question_completeness", "per question: its requests measured, answered, supported; complete",
        QUERY_ID, _("requests", "int", "its requests"), _("measured", "int", "measured"),
        _("answered", "int", "answered"), _("supported", "int", "supported"),
        _("complete", "bool", "every request answered and supported"))
    ABSTENTION_OUTCOMES = TableName(
        "abstention_outcomes", "per question: abstained, and whether that was right",
        QUERY_ID, _("abstained", "bool", "the answer abstains"),
        _("correct_abstention", "bool", "abstained on an unanswerable question"),
        _("answered_anyway", "bool", "answered an unanswerable question"))
    FAILURE_FLOW = TableName(
        "failure_flow", "per request: the first boundary at which its support disappeared (its branch)",
        QUERY_ID, REQUEST_ID, _("branch", "str", "the flow branch (diagnosis.flow.FLOW_BRANCHES)"),
        _("admitted", "bool", "a supporting chunk was admitted"), _("answered", "bool", "answered"),
        _("supported", "bool", "supported"), _("contradicts_gold", "bool", "contradicts the gold material"),
        _("quality", "str", "the case's quality"))
    LOOKUP_CASES = TableName(
        "lookup_cases", "a tool arm's questions: what its lookups found (core.supply.LOOKUP_BRANCHES)",
        QUERY_ID, _("branch", "str", "no_call / empty_results / wrong_document / correct_document"),
        _("calls", "int", "lookups made"), _("results", "int", "results returned"),
        _("missing_requests", "list[str]", "requests whose evidence no lookup found"),
        _("quality", "str", "the case's quality"))


del _
