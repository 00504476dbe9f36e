"""The provider roles of the answers table, shared by the lab's generation and by imported arms' answers
(imported.import_stage), which must not import the generation stage. The table's columns and types are declared once
(core.tables, Table.ANSWERS) and every builder types its rows by them (adapters.table_types.table_frame)."""

from rag_ttc_assets.core.roles import ANSWERS, JUDGE

GENERATOR_ROLE, JUDGE_ROLE = ANSWERS.name, JUDGE.name
