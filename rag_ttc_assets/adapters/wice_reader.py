"""Read WiCE's claim-level entailment files (https://github.com/ryokamoi/wice,
`data/entailment_retrieval/claim/{dev,test}.jsonl`) into core.claim_sets.ClaimSet, checking every line.

Each line: {"label": supported | partially_supported | not_supported, "supporting_sentences": [[i, ...], ...]
(indices into evidence; every listed set is a valid one), "claim": a Wikipedia sentence, "evidence": [the cited
article's sentences], "meta": {"id", "claim_title", "claim_section", ...}}.

Bad input is a ValueError (WiceError) naming the file, the line (1-based) and the field.
"""

from __future__ import annotations

import json
from pathlib import Path

from rag_ttc_assets.adapters.input_files import read_text
from rag_ttc_assets.core import wice
from rag_ttc_assets.core.claim_sets import Claim, ClaimSet, Document, Question, System
from rag_ttc_assets.labelling.human_labels import SUPPORT

FOLDER = "entailment_retrieval/claim"
HINT = " (is this the data/ folder of https://github.com/ryokamoi/wice?)"


class WiceError(ValueError):
    """A WiCE folder that cannot be converted: the message names the file, the line and the field."""


def _text(value) -> bool:
    return isinstance(value, str) and bool(value.strip())


def read_line(path: Path, n: int, raw: str) -> tuple[str, Question, Document, Claim]:
    where = f"{path}: line {n}"
    try:
        rec = json.loads(raw)
    except json.JSONDecodeError as e:
        raise WiceError(f"{where}: not JSON: {e.msg} (column {e.colno})") from None
    if not isinstance(rec, dict):
        raise WiceError(f"{where}: a JSON object")
    meta = rec.get("meta")
    if not isinstance(meta, dict) or not _text(meta.get("id")):
        raise WiceError(f"{where}: field 'meta.id': the claim's id, a non-empty string")
    cid = meta["id"].strip()
    where = f"{path}: line {n} (id {cid})"
    if not _text(rec.get("claim")):
        raise WiceError(f"{where}: field 'claim': a non-empty string")
    if rec.get("label") not in SUPPORT:
        raise WiceError(f"{where}: field 'label': {rec.get('label')!r}, one of {list(SUPPORT)}")
    evidence = rec.get("evidence")
    if not isinstance(evidence, list) or not evidence or not all(isinstance(s, str) for s in evidence):
        raise WiceError(f"{where}: field 'evidence': a non-empty list of the article's sentences (strings)")
    sentences = [" ".join(s.split()) for s in evidence]
    if not any(sentences):
        raise WiceError(f"{where}: field 'evidence': every sentence is empty")
    sets = rec.get("supporting_sentences")
    if not isinstance(sets, list):
        raise WiceError(f"{where}: field 'supporting_sentences': a list of lists of sentence indices")
    located: set[int] = set()
    for k, group in enumerate(sets):
        if not isinstance(group, list):
            raise WiceError(f"{where}: field 'supporting_sentences[{k}]': a list of sentence indices")
        for m, i in enumerate(group):
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(evidence):
                raise WiceError(f"{where}: field 'supporting_sentences[{k}][{m}]': {i!r} is not an index into "
                                f"'evidence' (0..{len(evidence) - 1})")
            located.add(i)
    title = meta.get("claim_title") if _text(meta.get("claim_title")) else cid
    section = meta.get("claim_section") if isinstance(meta.get("claim_section"), str) else ""
    text = "\n".join(s for s in sentences if s)
    doc = Document(cid, "", text, "WiCE cited article")
    quotes = [{"doc_id": cid, "quote": sentences[i]} for i in sorted(located) if sentences[i]]
    claim = " ".join(rec["claim"].split())
    question = Question(cid, wice.question_text(" ".join(title.split()), " ".join(section.split())), (cid,),
                        ({"id": f"{cid}.claim", "text": claim, "evidence": quotes},))
    return cid, question, doc, Claim(claim, (rec["label"],))


def read_wice(root: Path, systems: list[str] | None = None, limit: int | None = None) -> ClaimSet:
    """The claims of `root/entailment_retrieval/claim/{dev,test}.jsonl` (those present; at least one), in that
    order, or the first `limit` of them."""
    if systems and systems != [wice.ARM]:
        raise WiceError(f"--systems: WiCE has one system, {wice.ARM!r}")
    files = [root / FOLDER / f"{s}.jsonl" for s in wice.SPLITS]
    present = [p for p in files if p.is_file()]
    if not present:
        raise WiceError(f"{root / FOLDER}: no {', '.join(p.name for p in files)}{HINT}")
    documents: dict[str, Document] = {}
    questions: list[Question] = []
    system = System(wice.ARM, ", ".join(str(p) for p in present))
    seen: dict[str, str] = {}
    for path in present:
        for n, raw in enumerate(read_text(path, WiceError, HINT).splitlines(), 1):
            if limit is not None and len(questions) >= limit:
                break
            if not raw.strip():
                continue
            cid, q, doc, claim = read_line(path, n, raw)
            if cid in seen:
                raise WiceError(f"{path}: line {n} (id {cid}): field 'meta.id': already on {seen[cid]}")
            seen[cid] = f"{path.name} line {n}"
            documents[cid] = doc
            questions.append(q)
            system.answers[cid] = [claim]
            system.evidence[cid] = [cid]
    if not questions:
        raise WiceError(f"{present[0]}: no claims")
    return ClaimSet(wice.DATASET, documents, questions, [system], annotators=[wice.ANNOTATOR])
