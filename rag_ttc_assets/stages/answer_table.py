"""The answers table's shape and the provider roles, shared by the lab's generation and by imported arms' answers
(stages.imported), which must not import the generation stage."""

import polars as pl

from rag_ttc_assets.core.roles import ANSWERS, JUDGE

GENERATOR_ROLE, JUDGE_ROLE = ANSWERS.name, JUDGE.name

ANSWER_SCHEMA = {"raw_text": pl.String, "input_tokens": pl.Int64, "output_tokens": pl.Int64, "cost_usd": pl.Float64,
                 "error": pl.String, "admitted_chunk_ids": pl.List(pl.String), "messages_digests": pl.List(pl.String)}
