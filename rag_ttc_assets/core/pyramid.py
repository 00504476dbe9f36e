"""A data folder of Lite2-3Pyramid (Zhang & Bansal, EMNLP 2021, "Finding a Balanced Degree of Automation for Summary
Evaluation"; https://github.com/ZhangShiyue/Lite2-3Pyramid: `data/PyrXSum`, `data/REALSumm`) as a lab folder, mapped
as core.realsumm maps REALSumm and with its dataclasses and functions: the source documents as documents, one
question per example (a fixed summarisation instruction) whose gold answer is the reference summary and whose
requests are the reference's SCUs (`<id>.scu<k>`, k the 1-based position on the line of SCUs.txt), each system an
imported arm, and the set's SCU-presence labels as per-request labels.

The labels are the set's aggregated (majority) labels, one per (summary, SCU): every label's annotator is
`majority`, and there is no second annotator to measure a ceiling with.

Pure: the adapter (adapters/pyramid_reader.py) reads and checks the files and hands in `core.realsumm.RealSumm`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rag_ttc_assets.core.realsumm import RealSumm, run_instructions

INSTRUCTION = "Summarize the key facts of this document."
ANNOTATOR = "majority"
CITATION = ('Zhang, Bansal: "Finding a Balanced Degree of Automation for Summary Evaluation", EMNLP 2021; '
            "data: https://github.com/ZhangShiyue/Lite2-3Pyramid (no licence file in the repository)")


def arm_name(stem: str) -> str:
    """A system file's stem spelled as an arm name (a partition key): lower case, `_` and `.` as `-`
    (`facebook-bart-large` stays, `abs_t5_out_11B` is `abs-t5-out-11b`). The caller checks the result."""
    return stem.lower().replace("_", "-").replace(".", "-")


def fields(line: str) -> list[str]:
    """A tab-separated line's non-empty fields, whitespace collapsed (a trailing tab or an empty field dropped)."""
    return [" ".join(f.split()) for f in line.split("\t") if f.strip()]


def readme(name: str, rs: RealSumm, c: Mapping[str, Any], source: str) -> str:
    arms_list = ", ".join(s.arm for s in rs.systems)
    return f"""# {name}: a Lite2-3Pyramid data folder as a lab folder

Converted by `rag-ttc convert-pyramid` from {source}.

Source: {CITATION}. Nothing of the repository is bundled with the lab: clone it and convert.

- `datasets/{name}/`: {c['documents']} source documents and one question per example, "{INSTRUCTION}", whose
  `gold_answer` is the reference summary and whose {c['requests']} requests are the reference's SCUs (Summary
  Content Units, `SCUs.txt`; request id `<id>.scu<k>`, k the SCU's 1-based position on its line; each request's
  gold material is its SCU; an evidence quote only where the SCU occurs verbatim in the document:
  {c['requests_with_quote']}).
- `systems/<arm>.json`: each system's summaries (`summaries/<system>.summary`) as RAGChecker rows (the document as
  the retrieved context, the summary as the answer).
- `arms.yaml`: {c['systems']} imported arms ({arms_list}), judged by the offline baseline judges.
- `labels.jsonl`: {c['labels']} SCU-presence labels (`labels/<system>.label`, 1 = present) on {c['labelled_items']}
  (system, example, SCU) items, in the per-request label format of `rag-ttc judge-agreement`.

**The labels are the set's aggregated labels, one per item** (annotator `{ANNOTATOR}`): the individual workers'
labels are not in the set, so there is no annotator ceiling; `rag-ttc judge-agreement` reports the judges against
these labels only.

{run_instructions(rs)}"""
