"""The answers table's shape and the provider roles, shared by the lab's generation and by imported arms' answers
(stages.imported), which must not import the generation stage."""

from rag_ttc_assets.adapters.table_types import schema_of
from rag_ttc_assets.core.roles import ANSWERS, JUDGE
from rag_ttc_assets.core.tables import Table

GENERATOR_ROLE, JUDGE_ROLE = ANSWERS.name, JUDGE.name


def answer_schema() -> dict:
    """The answers columns a row may leave empty, with their declared dtypes (polars cannot infer them then)."""
    return schema_of(Table.ANSWERS, "raw_text", "input_tokens", "output_tokens", "cost_usd", "error",
                     "admitted_chunk_ids", "messages_digests")
