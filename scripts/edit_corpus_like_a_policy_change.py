"""Edit a dataset's corpus the way a policy change does, and measure `rag-ttc labels check` against the edits.

Copies the dataset (default: the bundled datasets/pyref) to OUT/<name>, edits its corpus.json and leaves its
evaluation.json as it was labelled: numbers changed in some labelled passages, labelled passages removed,
paragraphs moved to another document, typos fixed (the labels were made on a misspelt word the new corpus spells
right), document headings (titles) renamed. About `--share` of the distinct labelled passages are edited, each in its
own document. Each edit records the labels it must affect, from its span alone (not from the check):

- a label is affected when every occurrence of its quote in its document overlaps the edited span;
- number changed, passage removed: the label needs a person (changed, gone);
- paragraph moved: a quote inside the paragraph is relocated to the destination document (one only partly inside
  needs a person); typo fixed: relocated in its own document; heading renamed: no label (titles are not quoted).

Then it runs the check (labelling.label_check, as `rag-ttc labels check` does) and prints precision and recall of
"needs a person" and of "relocated", whether every relocation names the right document, and that the rest is fresh.
Exit 0 when all are 1.0, else 1. The edited folder stays in OUT for `rag-ttc labels check`/`update` to read.

    python scripts/edit_corpus_like_a_policy_change.py --out /some/folder [--dataset datasets/pyref] [--seed 0]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_ttc_assets.labelling.label_check import check_labels, iter_labels  # noqa: E402

KINDS = ("number", "removed", "moved", "typo")
NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.])")
WORD = re.compile(r"\b[a-z]{7,}\b")


def occurrences(text: str, quote: str) -> list[tuple[int, int]]:
    out, i = [], text.find(quote)
    while i >= 0:
        out.append((i, i + len(quote)))
        i = text.find(quote, i + 1)
    return out


def paragraph(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The blank-line paragraph holding [start, end), if it holds all of it and is not the whole document."""
    a = text.rfind("\n\n", 0, start)
    a = 0 if a < 0 else a + 2
    b = text.find("\n\n", end)
    b = len(text) if b < 0 else b
    if a <= start and end <= b and (a, b) != (0, len(text)) and "\n\n" not in text[start:end]:
        return a, b
    return None


def plan(corpus: dict, evaluation: dict, share: float, seed: int) -> list[dict]:
    """Edits (one per document) over about `share` of the distinct labelled passages, each kind in turn."""
    docs = {d["id"]: d["text"] for d in corpus["documents"]}
    everywhere: dict[str, int] = {}
    for t in docs.values():
        for q in {e["quote"] for *_, e in iter_labels(evaluation)}:
            if q in t:
                everywhere[q] = everywhere.get(q, 0) + 1
    passages = sorted({(e["doc_id"], e["quote"]) for *_, e in iter_labels(evaluation)})
    rng = random.Random(seed)
    rng.shuffle(passages)
    wanted = round(share * len(passages))
    used: set[str] = set()
    edits: list[dict] = []
    queues = {k: list(passages) for k in KINDS}  # each kind takes its turn, from the passages it can edit
    while len(edits) < wanted and any(queues.values()):
        for kind in KINDS:
            while queues[kind] and len(edits) < wanted:
                doc_id, quote = queues[kind].pop()
                spans = occurrences(docs[doc_id], quote)
                if doc_id in used or len(spans) != 1 or everywhere.get(quote) != 1:
                    continue  # one edit per document; a quote found elsewhere too would still be found
                edit = _edit(kind, docs, doc_id, *spans[0], used, rng)
                if edit:
                    edits.append(edit)
                    used |= {doc_id, edit.get("to", doc_id)}
                    break
    titles = [d for d in sorted(docs) if d not in used]
    for doc_id in rng.sample(titles, max(1, len(edits) // 8)):
        edits.append({"kind": "heading", "doc_id": doc_id, "span": None})
    return edits


def _edit(kind, docs, doc_id, s, e, used, rng) -> dict | None:
    text = docs[doc_id]
    if kind == "number":
        m = next(iter(NUMBER.finditer(text, s, e)), None)
        if not m or m.end() > e:
            return None
        return {"kind": kind, "doc_id": doc_id, "span": [m.start(), m.end()], "old": m.group(),
                "new": str(int(m.group()) + 7)}
    if kind == "removed":
        return {"kind": kind, "doc_id": doc_id, "span": [s, e]}
    if kind == "moved":
        p = paragraph(text, s, e)
        if not p:
            return None
        to = rng.choice([d for d in sorted(docs) if d not in used and d != doc_id])
        return {"kind": kind, "doc_id": doc_id, "span": list(p), "to": to}
    if kind == "typo":
        words = [m for m in WORD.finditer(text, s, e) if m.end() <= e and m.group()[3] != m.group()[4]]
        if not words:
            return None
        m = rng.choice(words)
        w = m.group()
        # The label was made on the misspelt word (two letters swapped); the new corpus spells it right.
        return {"kind": kind, "doc_id": doc_id, "span": [m.start(), m.end()], "old": w[:3] + w[4] + w[3] + w[5:],
                "new": w}
    return None


def apply(corpus: dict, evaluation: dict, edits: list[dict]) -> tuple[dict, dict]:
    """The edited corpus, and the evaluation as it was labelled (typo edits put the misspelling in its quotes)."""
    docs = {d["id"]: dict(d) for d in corpus["documents"]}
    ev = json.loads(json.dumps(evaluation))
    for x in edits:
        d = docs[x["doc_id"]]
        if x["kind"] == "heading":
            d["title"] = d["title"] + " (revised)"
            continue
        s, e = x["span"]
        t = d["text"]
        if x["kind"] == "number":
            d["text"] = t[:s] + x["new"] + t[e:]
        elif x["kind"] == "removed":
            d["text"] = t[:s] + t[e:]
        elif x["kind"] == "moved":
            d["text"] = (t[:s] + t[e:]).replace("\n\n\n\n", "\n\n")
            docs[x["to"]]["text"] = docs[x["to"]]["text"].rstrip("\n") + "\n\n" + t[s:e]
        elif x["kind"] == "typo":
            for *_, ev_ in iter_labels(ev):  # the labels quoted the misspelling that the old corpus held
                if ev_["doc_id"] == x["doc_id"] and any(a <= s and e <= b for a, b in occurrences(t, ev_["quote"])):
                    ev_["quote"] = ev_["quote"].replace(x["new"], x["old"], 1)
    return {"documents": [docs[d["id"]] for d in corpus["documents"]]}, ev


def expected(corpus: dict, evaluation: dict, edits: list[dict]) -> dict[str, dict]:
    """label -> what the edits make of it: {"status": "person" | "relocated", "to": doc} (fresh labels absent)."""
    docs = {d["id"]: d["text"] for d in corpus["documents"]}
    by_doc = {x["doc_id"]: x for x in edits if x["span"]}
    out = {}
    for qi, q, r, k, e in iter_labels(evaluation):
        x = by_doc.get(e["doc_id"])
        if not x:
            continue
        s, t = x["span"]
        spans = occurrences(docs[e["doc_id"]], e["quote"])
        if any(b <= s or a >= t for a, b in spans):
            continue  # an occurrence the edit leaves alone: still where it was
        name = f"questions[{qi}] (id {q['id']!r}) request {r['id']!r} evidence[{k}]"
        if x["kind"] == "moved" and len(spans) == 1 and s <= spans[0][0] and spans[0][1] <= t:
            out[name] = {"status": "relocated", "to": x["to"], "edit": x["kind"]}
        elif x["kind"] == "typo" and len(spans) == 1 and spans[0][0] <= s and t <= spans[0][1]:
            out[name] = {"status": "relocated", "to": x["doc_id"], "edit": x["kind"]}
        else:
            out[name] = {"status": "person", "edit": x["kind"]}
    return out


def _ratio(a: int, b: int) -> float:
    return a / b if b else 1.0


def measure(report, want: dict[str, dict]) -> dict:
    quotes = [r for r in report.results if r.kind == "quote"]
    got_person = {r.label for r in quotes if r.status in ("changed", "gone", "ambiguous")}
    got_moved = {r.label: r.new_doc_id for r in quotes if r.status == "relocated"}
    want_person = {k for k, v in want.items() if v["status"] == "person"}
    want_moved = {k: v["to"] for k, v in want.items() if v["status"] == "relocated"}
    hit_p, hit_m = got_person & want_person, set(got_moved) & set(want_moved)
    return {
        "labels": len(quotes), "affected": len(want),
        "needs_person": {"expected": len(want_person), "found": len(got_person),
                         "precision": _ratio(len(hit_p), len(got_person)),
                         "recall": _ratio(len(hit_p), len(want_person))},
        "relocated": {"expected": len(want_moved), "found": len(got_moved),
                      "precision": _ratio(len(hit_m), len(got_moved)),
                      "recall": _ratio(len(hit_m), len(want_moved)),
                      "right_document": sum(got_moved[k] == want_moved[k] for k in hit_m)},
        "fresh_left_fresh": sum(1 for r in quotes if r.label not in want and r.status == "fresh"),
        "unaffected": len(quotes) - len(want),
        "statuses": report.counts,
        "wrong": sorted([k for k in got_person ^ want_person] + [k for k in set(got_moved) ^ set(want_moved)]
                        + [k for k in hit_m if got_moved[k] != want_moved[k]]),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="the folder to write the edited dataset into (OUT/<name>)")
    p.add_argument("--dataset", default=str(ROOT / "datasets" / "pyref"))
    p.add_argument("--share", type=float, default=0.15, help="share of the distinct labelled passages to edit")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    src = Path(args.dataset)
    corpus = json.loads((src / "corpus.json").read_text(encoding="utf-8"))
    evaluation = json.loads((src / "evaluation.json").read_text(encoding="utf-8"))
    edits = plan(corpus, evaluation, args.share, args.seed)
    new_corpus, labelled = apply(corpus, evaluation, edits)
    want = expected(corpus, evaluation, edits)  # from the spans, on the quotes as the old corpus holds them
    dest = Path(args.out) / src.name
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest)
    cbytes = (json.dumps(new_corpus, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    (dest / "corpus.json").write_bytes(cbytes)
    (dest / "evaluation.json").write_text(json.dumps(labelled, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    (Path(args.out) / f"{src.name}.edits.json").write_text(json.dumps({"edits": edits, "expected": want}, indent=1),
                                                           encoding="utf-8")
    t = time.perf_counter()
    report = check_labels(src.name, labelled, str(dest / "evaluation.json"), new_corpus["documents"],
                          str(dest / "corpus.json"), "sha256:" + hashlib.sha256(cbytes).hexdigest())
    took = time.perf_counter() - t
    m = measure(report, want) | {"edits": {k: sum(x["kind"] == k for x in edits) for k in (*KINDS, "heading")},
                                 "passages": len({(e["doc_id"], e["quote"]) for *_, e in iter_labels(labelled)}),
                                 "check_seconds": round(took, 2)}
    ok = (m["needs_person"]["precision"] == m["needs_person"]["recall"] == 1.0
          and m["relocated"]["precision"] == m["relocated"]["recall"] == 1.0
          and m["relocated"]["right_document"] == m["relocated"]["expected"]
          and m["fresh_left_fresh"] == m["unaffected"])
    if args.json:
        print(json.dumps(m | {"ok": ok}, indent=2))
        return 0 if ok else 1
    e = m["edits"]
    print(f"edited {sum(e[k] for k in KINDS)} of {m['passages']} labelled passages "
          f"({', '.join(f'{k} {e[k]}' for k in KINDS)}) and renamed {e['heading']} headings; seed {args.seed}")
    print(f"labels: {m['labels']}, affected by the edits: {m['affected']}")
    for key in ("needs_person", "relocated"):
        v = m[key]
        print(f"{key.replace('_', ' ')}: expected {v['expected']}, found {v['found']}, precision "
              f"{v['precision']:.3f}, recall {v['recall']:.3f}"
              + (f", to the right document {v['right_document']} of {v['expected']}" if key == "relocated" else ""))
    print(f"unaffected labels left fresh: {m['fresh_left_fresh']} of {m['unaffected']}")
    print(f"statuses: {', '.join(f'{k} {v}' for k, v in m['statuses'].items())}; check took {m['check_seconds']} s")
    for w in m["wrong"]:
        print(f"wrong: {w}")
    print(f"edited dataset: {dest} (edits and expectations: {Path(args.out) / (src.name + '.edits.json')})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
