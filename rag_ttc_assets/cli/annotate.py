"""`rag-ttc annotate ARM [ARM...]`: a labelling page on 127.0.0.1 (docs/annotate.md).

Plain server-rendered HTML with a small script, served by the standard library's http.server like `serve-reports`:
every text shown is escaped (answers and chunks are untrusted) and the page's Content-Security-Policy runs only its own
script. Each change is one record appended to the change log (one write, fsynced, under a file lock, so two tabs or two
servers on the same file lose nothing: the later label wins, both stay in the log); the current labels file is the log
replayed (core.annotation), rewritten atomically after every change. `/labels-check` lists the dataset's gold quotes
`rag-ttc labels check` finds changed or gone, each linked to its question for repair.
"""

from __future__ import annotations

import fcntl
import html
import json
import os
import re
import secrets
import sys
import threading
from datetime import datetime, timezone
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from rag_ttc_assets.adapters.atomic import atomic_write_bytes
from rag_ttc_assets.cli.common import CliError, lab_from_args, serve_until_stopped
from rag_ttc_assets.cli.label_versions import check_dataset
from rag_ttc_assets.cli.sample_labels import write_sample
from rag_ttc_assets.core.annotation import (CASES, EDIT, LABEL, PAIR, PAIR_SCALE, UNDO, AnnotationError, answer_sha256,
                                            current_labels, edit_requests, locate_quote, pair_order, pair_value,
                                            parse_log, replay, requests_now)

DEFAULT_PORT = 3002
E = html.escape


def log_path(labels: Path) -> Path:
    return labels.with_name((labels.name[:-6] if labels.name.endswith(".jsonl") else labels.name) + ".log.jsonl")


class LabelFiles:
    """The change log and the current labels file beside it; every write under one lock (threads and processes)."""

    def __init__(self, labels: Path):
        self.labels, self.log = labels, log_path(labels)
        self.lock_path = labels.with_name("." + labels.name + ".lock")
        self._thread_lock = threading.Lock()
        labels.parent.mkdir(parents=True, exist_ok=True)

    def read(self) -> list[dict]:
        try:
            text = self.log.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return parse_log(text, str(self.log))[0]

    def append(self, change: dict) -> dict:
        with self._thread_lock, open(self.lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                log = self.read()
                change = {"seq": max((c["seq"] for c in log), default=0) + 1,
                          "at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"), **change}
                line = (json.dumps(change, ensure_ascii=False) + "\n").encode("utf-8")
                fd = os.open(self.log, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    size = os.fstat(fd).st_size
                    if size and os.pread(fd, 1, size - 1) != b"\n":  # a line cut by a crash stays its own line
                        line = b"\n" + line
                    os.write(fd, line)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                log.append(change)
                atomic_write_bytes(self.labels, current_labels(log).encode("utf-8"), mode=0o644)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        return change


class Annotator:
    """The page's state for one annotator over one Source and one pair of label files."""

    def __init__(self, source, files: LabelFiles, annotator: str, labels_check=None, pairwise: bool = False,
                 seed: int = 0):
        self.source, self.files, self.annotator = source, files, annotator
        self.labels_check = labels_check  # () -> list of label-check results needing a person, or None
        self.pairwise, self.seed = pairwise, seed  # `/` opens the pairwise view; the seed of its A/B order
        # The pairwise view (two arms): per question both arms answered, the rows of its answers as shown, (a, b).
        self.pairs: list[dict] = []
        if len(source.arms) == 2:
            where = {(it["arm"], it["question"]): i for i, it in enumerate(source.items)}
            for it in source.items:
                q = it["question"]
                if it["arm"] == source.arms[0] and (source.arms[1], q) in where:
                    a, b = pair_order(seed, q, tuple(source.arms))
                    self.pairs.append({"question": q, "a": a, "b": b, "rows": (where[(a, q)], where[(b, q)])})

    def requests(self, i: int, state) -> list[dict]:
        item = self.source.items[i]
        v = self.source.view(i)
        return requests_now(item["question"], v["requests"], state.edits.get((self.annotator, item["question"]), []))

    def progress(self, state) -> dict:
        done_q, labelled, total = 0, 0, 0
        for i, item in enumerate(self.source.items):
            reqs = self.requests(i, state)
            n = sum((self.annotator, item["arm"], item["question"], r["id"]) in state.labels for r in reqs)
            labelled, total, done_q = labelled + n, total + len(reqs), done_q + (n == len(reqs))
        return {"requests_labelled": labelled, "requests": total, "rows_done": done_q,
                "rows": len(self.source.items)}

    def resume_at(self, state) -> int:
        for i, item in enumerate(self.source.items):
            if any((self.annotator, item["arm"], item["question"], r["id"]) not in state.labels
                   for r in self.requests(i, state)):
                return i
        return 0

    def pair_key(self, p: dict) -> tuple:
        return (self.annotator, p["question"], frozenset((p["a"], p["b"])))

    def pair_progress(self, state) -> dict:
        return {"pairs_labelled": sum(self.pair_key(p) in state.pairs for p in self.pairs), "pairs": len(self.pairs)}

    def pair_resume_at(self, state) -> int:
        return next((k for k, p in enumerate(self.pairs) if self.pair_key(p) not in state.pairs), 0)

    # --- changes -----------------------------------------------------------------------------------------
    def _item(self, body: dict) -> int:
        i = body.get("item")
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self.source.items):
            raise AnnotationError(f"item: {i!r} is not a row of this page (0 to {len(self.source.items) - 1})")
        return i

    def label(self, body: dict) -> dict:
        i = self._item(body)
        item, v = self.source.items[i], self.source.view(i)
        state = replay(self.files.read())
        reqs = {r["id"]: r for r in self.requests(i, state)}
        rid = body.get("request")
        if rid not in reqs:
            raise AnnotationError(f"request: question {item['question']!r} has no request {rid!r}")
        key = (self.annotator, item["arm"], item["question"], rid)
        before = state.labels.get(key, {})
        case = body.get("case", before.get("case"))
        if case not in CASES:
            raise AnnotationError(f"case: {case!r}: pick one of the four cases first (keys 1-4: "
                                  f"{', '.join(CASES)})")
        change = {"op": LABEL, "annotator": self.annotator, "arm": item["arm"], "question": item["question"],
                  "request": rid, "case": case, "note": body.get("note", before.get("note", "")),
                  "origin": reqs[rid]["origin"], "request_text": reqs[rid]["text"], "from": reqs[rid]["from"],
                  "run_id": self.source.run_ids[item["arm"]], "row": item["question"],
                  "answer_sha256": answer_sha256(v), "corpus_digest": self.source.corpus[item["arm"]],
                  "chunk_ids": list(v["admitted_chunk_ids"]),
                  "probability": item["probability"], "stratum": item["stratum"]}
        if not isinstance(change["note"], str):
            raise AnnotationError("note: a text")
        if "quote" in body:
            if body["quote"] is None:
                change.update(quote=None, quote_chunk_id=None, quote_doc_id=None)
            else:
                cid = locate_quote(body["quote"], body.get("quote_chunk_id"), v["chunks"])
                change.update(quote=body["quote"], quote_chunk_id=cid, quote_doc_id=v["chunk_doc"][cid])
        else:
            change.update({k: before.get(k) for k in ("quote", "quote_chunk_id", "quote_doc_id")})
        return self.files.append(change)

    def edit(self, body: dict) -> dict:
        i = self._item(body)
        item = self.source.items[i]
        state = replay(self.files.read())
        known = {r["id"]: r["text"] for r in self.requests(i, state)}
        taken = set(known) | {r["id"] for e in state.edits.get((self.annotator, item["question"]), [])
                              for r in e["into"]} | {r["id"] for r in self.source.view(i)["requests"]}
        sources = body.get("from") or []
        texts = body.get("texts") or []
        if not isinstance(sources, list) or not isinstance(texts, list):
            raise AnnotationError("from, texts: lists")
        into = edit_requests(item["question"], body.get("edit"), sources, texts, known, taken)
        return self.files.append({"op": EDIT, "annotator": self.annotator, "question": item["question"],
                                  "edit": body["edit"], "from": sources, "into": into,
                                  "corpus_digest": self.source.corpus[item["arm"]]})

    def pair(self, body: dict) -> dict:
        """A pairwise label: which of the two answers shown (a left, b right) is more complete, -2..2."""
        k = body.get("pair")
        if not self.pairs:
            raise AnnotationError("pair: the pairwise view needs two arms that answered the same questions")
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < len(self.pairs):
            raise AnnotationError(f"pair: {k!r} is not a pair of this page (0 to {len(self.pairs) - 1})")
        p = self.pairs[k]
        state = replay(self.files.read())
        before = state.pairs.get(self.pair_key(p), {})
        if "completeness" in body:
            value = pair_value(body["completeness"])
        elif before:
            value = before["completeness"]
        else:
            raise AnnotationError("completeness: pick which answer is more complete first (keys 1-5)")
        note = body.get("note", before.get("note", ""))
        if not isinstance(note, str):
            raise AnnotationError("note: a text")
        sides = {}
        for side, row in zip(("a", "b"), p["rows"]):
            arm = p[side]
            sides[side] = {"arm": arm, "row": p["question"], "run_id": self.source.run_ids[arm],
                           "answer_sha256": answer_sha256(self.source.view(row)),
                           "corpus_digest": self.source.corpus[arm]}
        return self.files.append({"op": PAIR, "annotator": self.annotator, "question": p["question"], **sides,
                                  "completeness": value, "note": note, "order_seed": self.seed})

    def undo(self, body: dict) -> dict:
        state = replay(self.files.read())
        if not any(c["annotator"] == self.annotator for c in state.active):
            raise AnnotationError(f"undo: nothing of {self.annotator!r} to undo")
        return self.files.append({"op": UNDO, "annotator": self.annotator})


# --- the page ------------------------------------------------------------------------------------------------
STYLE = """body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:12px}
.q{font-size:1.2em;font-weight:600}.answer,.chunk-text{white-space:pre-wrap;border:1px solid #ccc;padding:8px;
border-radius:4px;background:#fafafa}.chunk{margin:8px 0}.chunk h4{margin:4px 0;font-size:.9em;color:#444}
mark.cited{background:#ffe58a}.req{border:1px solid #ddd;border-radius:4px;padding:6px;margin:6px 0}
.req.focus{outline:2px solid #2a6df4}.req .cases button{margin-right:4px}.req .cases button.on{background:#2a6df4;
color:#fff}.msg{color:#b00020;min-height:1.2em}.older{color:#b35c00}.progress{float:right}.quote{background:#d6f5d6}
nav a{margin-right:12px}del{background:#fdd}ins{background:#dfd}.hidden{display:none}"""


def _case_buttons(chosen: str | None) -> str:
    return "".join(f'<button type="button" class="case{" on" if c == chosen else ""}" data-case="{c}" '
                   f'title="key {d["key"]}">{d["key"]} {E(d["title"])}</button>' for c, d in CASES.items())


def _marked(text: str, answer: str) -> str:
    """A chunk's text escaped, its sentences that the answer repeats verbatim marked as cited spans."""
    flat = " ".join(answer.split())
    out, pos = [], 0
    for m in re.finditer(r"[^.!?\n]+[.!?]?", text):
        s = m.group().strip()
        if len(s) >= 12 and " ".join(s.split()) in flat:
            start = m.start() + m.group().index(s)
            out += [E(text[pos:start]), f'<mark class="cited">{E(s)}</mark>']
            pos = start + len(s)
    return "".join(out) + E(text[pos:])


def _chunk(cid: str, text: str, answer: str, cited: bool) -> str:
    body = _marked(text, answer) if cited else E(text)
    return (f'<div class="chunk" data-chunk="{E(cid)}"><h4>{E(cid)}{" (cited)" if cited else ""}</h4>'
            f'<div class="chunk-text" data-chunk="{E(cid)}">{body}</div></div>')


def _judge(req: dict) -> str:
    j = req.get("request_judge")
    if not j:
        return "the judge did not judge this request"
    return (f"{E(str(j.get('request_judge_model')))}: addressed {E(str(j.get('addressed')))}, verdict "
            f"{E(str(j.get('verdict')))}; {E(str(j.get('reason') or ''))}")


def render_item(ann: Annotator, i: int, nonce: str) -> str:
    state = replay(ann.files.read())
    item, v = ann.source.items[i], ann.source.view(i)
    prog = ann.progress(state)
    answer = (v.get("contract") or {}).get("answer") or ""
    judged = {r["id"]: r for r in v["requests"]}
    cited = set(v["cited_chunk_ids"])
    reqs_html = []
    for r in ann.requests(i, state):
        lab = state.labels.get((ann.annotator, item["arm"], item["question"], r["id"]))
        older = ""
        if lab and lab.get("run_id") != ann.source.run_ids[item["arm"]]:
            older = (f'<div class="older">labelled on an older run ({E(str(lab.get("run_id")))}); the row now comes '
                     f'from run {E(str(ann.source.run_ids[item["arm"]]))}'
                     f'{" with another answer" if lab.get("answer_sha256") != answer_sha256(v) else ""}: '
                     'the label is kept</div>')
        quote = (f'<div>gold quote ({E(lab["quote_chunk_id"])}): <span class="quote">{E(lab["quote"])}</span></div>'
                 if lab and lab.get("quote") else "")
        judge = ""
        if lab:
            judge = ('<button type="button" class="reveal">show the judge\'s verdict</button>'
                     f'<div class="judge hidden">{_judge(judged[r["id"]]) if r["id"] in judged else "no judge verdict: a request you edited"}</div>')
        else:
            judge = '<div class="judge-hidden">the judge\'s verdict is hidden until you label this request</div>'
        origin = "" if r["origin"] == "dataset" else f' <small>({E(r["origin"])} from {E(", ".join(r["from"]))})</small>'
        reqs_html.append(
            f'<div class="req" data-request="{E(r["id"])}" data-labelled="{1 if lab else 0}">'
            f'<div><b>{E(r["id"])}</b>{origin}: <span class="rtext">{E(r["text"])}</span></div>'
            f'<div class="cases">{_case_buttons(lab and lab["case"])}</div>{quote}{older}'
            f'<div><input class="note" placeholder="note" value="{E((lab or {}).get("note") or "")}" size="60">'
            ' <button type="button" class="save-note">save note</button>'
            ' <button type="button" class="use-quote">use selection as gold quote</button>'
            ' <button type="button" class="split">split</button> <button type="button" class="reword">reword</button>'
            ' <label><input type="checkbox" class="pick"> merge</label></div>'
            f'{judge}</div>')
    admitted = [c for c in v["admitted_chunk_ids"] if c in v["chunks"]]
    omitted = [c for c in v["chunks"] if c not in admitted]
    citations = ", ".join(E(c) for c in v["cited_chunk_ids"]) or "none"
    label_src = ann.source.items[i]
    sample = (f' &middot; stratum {E(str(label_src["stratum"]))}, probability {E(str(label_src["probability"]))}'
              if label_src["probability"] is not None else "")
    n = len(ann.source.items)
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>annotate {E(item['arm'])} {E(item['question'])}</title>
<style>{STYLE}</style></head><body data-item="{i}" data-items="{n}">
<nav><a href="/item/{max(i - 1, 0)}" id="prev">&larr; previous (k)</a><a href="/item/{min(i + 1, n - 1)}" id="next">next (j) &rarr;</a>
<a href="/">resume</a><a href="/labels-check">labels check</a>{'<a href="/pairwise" id="pairwise">pairwise view</a>' if ann.pairs else ''}
<span class="progress" id="progress">{E(ann.annotator)}: {prog['requests_labelled']} of {prog['requests']} requests labelled, {prog['rows_done']} of {prog['rows']} rows done</span></nav>
<p>row {i + 1} of {n}: arm <b>{E(item['arm'])}</b>, question <b>{E(item['question'])}</b>{sample}</p>
<div class="q" id="question">{E(v['question']['text'])}</div>
<h3>Answer, as the user saw it</h3><div class="answer" id="answer">{E(answer)}</div>
<p>citations: {citations}</p>
<h3>Requests</h3><p><small>keys: 1-4 the four cases of the focused request, j/k next/previous row, u undo, up/down arrows move between requests</small></p>
<div class="msg" id="msg" role="alert"></div>
<div id="requests">{''.join(reqs_html)}</div>
<p><button type="button" id="add">add a request</button> <button type="button" id="merge">merge the ticked requests</button> <button type="button" id="undo">undo (u)</button></p>
<h3>Admitted chunks</h3><div id="admitted">{''.join(_chunk(c, v['chunks'][c], answer, c in cited) for c in admitted)}</div>
<details id="omitted"><summary>retrieved but not admitted ({len(omitted)})</summary>{''.join(_chunk(c, v['chunks'][c], answer, False) for c in omitted)}</details>
<script nonce="{nonce}">{SCRIPT}</script></body></html>"""


SCRIPT = r"""
(function(){
const item = +document.body.dataset.item, msg = document.getElementById('msg');
const reqs = () => Array.from(document.querySelectorAll('.req'));
let focus = Math.max(0, reqs().findIndex(r => r.dataset.labelled === '0'));
function setFocus(k){ const rs = reqs(); if(!rs.length) return; focus = (k + rs.length) % rs.length;
  rs.forEach((r, j) => r.classList.toggle('focus', j === focus)); }
setFocus(focus);
async function post(path, body){
  const r = await fetch(path, {method: 'POST', headers: {'Content-Type': 'application/json'},
                               body: JSON.stringify(Object.assign({item: item}, body))});
  const j = await r.json();
  if(!r.ok){ msg.textContent = j.error; return false; }
  location.reload(); return true;
}
// The last text the person highlighted (a click on a button may clear the selection before it is read).
let last = null;
document.addEventListener('selectionchange', () => {
  const s = window.getSelection(); if(!s || s.isCollapsed || !s.toString().trim()) return;
  const box = n => { n = n && (n.nodeType === 1 ? n : n.parentElement); return n && n.closest('.chunk-text'); };
  const a = box(s.anchorNode), b = box(s.focusNode);
  last = {quote: s.toString(), quote_chunk_id: (a && a === b) ? a.dataset.chunk : null};
});
function selection(){ return last; }
const CASE_KEYS = {'1': 'answered_supported', '2': 'answered_unsupported', '3': 'not_answered', '4': 'contradicts_gold'};
document.addEventListener('click', e => {
  const t = e.target, r = t.closest && t.closest('.req');
  if(r) setFocus(reqs().indexOf(r));
  const id = r && r.dataset.request;
  if(t.matches('button.case')) post('/api/label', {request: id, case: t.dataset.case});
  else if(t.matches('button.save-note')) post('/api/label', {request: id, note: r.querySelector('.note').value});
  else if(t.matches('button.use-quote')){ const s = selection();
    if(!s){ msg.textContent = 'select text inside one chunk first'; return; }
    post('/api/label', Object.assign({request: id}, s)); }
  else if(t.matches('button.split')){ const a = prompt('first part'); if(a === null) return;
    const b = prompt('second part'); if(b === null) return; post('/api/edit', {edit: 'split', from: [id], texts: [a, b]}); }
  else if(t.matches('button.reword')){ const a = prompt('reworded request', r.querySelector('.rtext').textContent);
    if(a !== null) post('/api/edit', {edit: 'reword', from: [id], texts: [a]}); }
  else if(t.matches('button.reveal')){ r.querySelector('.judge').classList.toggle('hidden'); }
  else if(t.id === 'add'){ const a = prompt('new request'); if(a !== null) post('/api/edit', {edit: 'add', from: [], texts: [a]}); }
  else if(t.id === 'merge'){ const ids = reqs().filter(x => x.querySelector('.pick').checked).map(x => x.dataset.request);
    const a = prompt('merged request'); if(a !== null) post('/api/edit', {edit: 'merge', from: ids, texts: [a]}); }
  else if(t.id === 'undo') post('/api/undo', {});
});
document.addEventListener('keydown', e => {
  if(e.target.matches('input, textarea') || e.ctrlKey || e.metaKey || e.altKey) return;
  const r = reqs()[focus];
  if(CASE_KEYS[e.key] && r){ e.preventDefault(); post('/api/label', {request: r.dataset.request, case: CASE_KEYS[e.key]}); }
  else if(e.key === 'j') location.href = document.getElementById('next').href;
  else if(e.key === 'k') location.href = document.getElementById('prev').href;
  else if(e.key === 'u') post('/api/undo', {});
  else if(e.key === 'ArrowDown') { e.preventDefault(); setFocus(focus + 1); }
  else if(e.key === 'ArrowUp') { e.preventDefault(); setFocus(focus - 1); }
});
})();
"""


def render_pair(ann: Annotator, k: int, nonce: str) -> str:
    """The pairwise view of pair k: the question, answer A (left) and B (right) side by side, the arms' names hidden
    until the person has labelled the pair (so they never anchor the person), the -2..2 scale on keys 1-5."""
    state = replay(ann.files.read())
    p, n = ann.pairs[k], len(ann.pairs)
    prog = ann.pair_progress(state)
    lab = state.pairs.get(ann.pair_key(p))
    views = [ann.source.view(r) for r in p["rows"]]
    cols = []
    for side, v in zip(("A", "B"), views):
        answer = (v.get("contract") or {}).get("answer") or ""
        name = f' &middot; arm <b class="arm">{E(p[side.lower()])}</b>' if lab else ""
        cols.append(f'<div class="side" id="side-{side.lower()}"><h3>Answer {side}{name}</h3>'
                    f'<div class="answer">{E(answer)}</div>'
                    f'<p>citations: {", ".join(E(c) for c in v["cited_chunk_ids"]) or "none"}</p></div>')
    chosen = lab["completeness"] if lab else None
    buttons = "".join(f'<button type="button" class="pv{" on" if v == chosen else ""}" data-value="{v}" '
                      f'title="key {key}">{key} {E(t)}</button> ' for key, (v, t) in PAIR_SCALE.items())
    shown = ("the arms' names are shown now that you have labelled this pair" if lab else
             "the arms' names are hidden until you label this pair")
    reqs = "".join(f"<li>{E(r['text'])}</li>" for r in views[0]["requests"])
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>pairwise {E(p['question'])}</title>
<style>{STYLE}.pair{{display:flex;gap:12px}}.side{{flex:1;min-width:0}}button.pv.on{{background:#2a6df4;color:#fff}}</style>
</head><body data-pair="{k}" data-pairs="{n}" data-labelled="{1 if lab else 0}">
<nav><a href="/pair/{max(k - 1, 0)}" id="prev">&larr; previous (k)</a><a href="/pair/{min(k + 1, n - 1)}" id="next">next (j) &rarr;</a>
<a href="/pairwise">resume</a><a href="/item/{p['rows'][0]}">per-request view</a>
<span class="progress" id="progress">{E(ann.annotator)}: {prog['pairs_labelled']} of {prog['pairs']} pairs labelled</span></nav>
<p>pair {k + 1} of {n}: question <b>{E(p['question'])}</b> &middot; {shown}</p>
<div class="q" id="question">{E(views[0]['question']['text'])}</div>
<details><summary>the question's requests ({len(views[0]['requests'])})</summary><ul>{reqs}</ul></details>
<h3>Which answer is more complete?</h3><p><small>keys: 1-5 the scale, j/k next/previous pair, u undo</small></p>
<div class="msg" id="msg" role="alert"></div>
<div id="scale">{buttons}</div>
<p><input id="note" placeholder="note" value="{E((lab or {}).get("note") or "")}" size="60"> <button type="button" id="save-note">save note</button>
<button type="button" id="undo">undo (u)</button></p>
<div class="pair">{''.join(cols)}</div>
<script nonce="{nonce}">{PAIR_SCRIPT}</script></body></html>"""


PAIR_SCRIPT = r"""
(function(){
const pair = +document.body.dataset.pair, msg = document.getElementById('msg');
async function post(path, body){
  const r = await fetch(path, {method: 'POST', headers: {'Content-Type': 'application/json'},
                               body: JSON.stringify(Object.assign({pair: pair}, body))});
  const j = await r.json();
  if(!r.ok){ msg.textContent = j.error; return false; }
  location.reload(); return true;
}
const KEYS = {'1': -2, '2': -1, '3': 0, '4': 1, '5': 2};
document.addEventListener('click', e => {
  const t = e.target;
  if(t.matches('button.pv')) post('/api/pair', {completeness: +t.dataset.value});
  else if(t.id === 'save-note') post('/api/pair', {note: document.getElementById('note').value});
  else if(t.id === 'undo') post('/api/undo', {});
});
document.addEventListener('keydown', e => {
  if(e.target.matches('input, textarea') || e.ctrlKey || e.metaKey || e.altKey) return;
  if(e.key in KEYS){ e.preventDefault(); post('/api/pair', {completeness: KEYS[e.key]}); }
  else if(e.key === 'j') location.href = document.getElementById('next').href;
  else if(e.key === 'k') location.href = document.getElementById('prev').href;
  else if(e.key === 'u') post('/api/undo', {});
});
})();
"""


def render_labels_check(ann: Annotator) -> str:
    rows = []
    results = ann.labels_check() if ann.labels_check else []
    for dataset, r in results:
        where = [i for i, it in enumerate(ann.source.items) if it["question"] == r.question]
        link = (f'<a href="/item/{where[0]}">open {E(r.question)} for repair</a>' if where
                else f"question {E(r.question)} is not among the rows served")
        diff = E(r.diff or "")
        diff = re.sub(r"\[-(.*?)-\]", r"<del>\1</del>", diff, flags=re.S)
        diff = re.sub(r"\{\+(.*?)\+\}", r"<ins>\1</ins>", diff, flags=re.S)
        rows.append(f'<tr class="stale" data-status="{E(r.status)}"><td>{E(dataset)}</td><td>{E(r.label)}</td>'
                    f'<td>{E(r.status)}</td><td>{E(r.how)}</td><td>{E(r.doc_id)}</td><td>{E(r.quote)}</td>'
                    f'<td>{E(r.new_quote or "")}</td><td>{diff}</td><td>{link}</td></tr>')
    body = ("<table><tr><th>dataset</th><th>label</th><th>status</th><th>how</th><th>document</th><th>was</th>"
            "<th>now</th><th>difference</th><th></th></tr>" + "".join(rows) + "</table>") if rows else \
        "<p>no gold quote is changed or gone: every label is current</p>"
    return (f'<!doctype html><html><head><meta charset="utf-8"><title>labels check</title><style>{STYLE}</style>'
            f'</head><body><nav><a href="/">back to labelling</a></nav><h2>Labels that need a person '
            f'({len(rows)}: changed or gone, `rag-ttc labels check`)</h2>{body}</body></html>')


class _Handler(BaseHTTPRequestHandler):
    ann: Annotator
    port: int

    def _send(self, code: int, body: str, ctype: str, nonce: str | None = None, headers: dict | None = None):
        data = body.encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; "
                                                    f"connect-src 'self'; script-src 'nonce-{nonce or 'none'}'")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _json(self, code: int, obj) -> None:
        self._send(code, json.dumps(obj, ensure_ascii=False), "application/json; charset=utf-8")

    def _local(self) -> bool:
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
        if host not in ("127.0.0.1", "localhost", "[::1]"):
            self._send(HTTPStatus.FORBIDDEN, "the labelling page answers on 127.0.0.1 only", "text/plain")
            return False
        return True

    def do_GET(self):  # noqa: N802
        if not self._local():
            return
        path = urlsplit(self.path).path
        ann = self.ann
        try:
            if path == "/pairwise" or (path == "/" and ann.pairwise):
                if not ann.pairs:
                    self._send(HTTPStatus.NOT_FOUND, "the pairwise view needs two arms that answered the same "
                                                     "questions", "text/plain")
                    return
                k = ann.pair_resume_at(replay(ann.files.read()))
                self._send(HTTPStatus.FOUND, "", "text/plain", headers={"Location": f"/pair/{k}"})
            elif m := re.fullmatch(r"/pair/(\d+)", path):
                k = int(m.group(1))
                if k >= len(ann.pairs):
                    self._send(HTTPStatus.NOT_FOUND, f"no pair {k}: {len(ann.pairs)} pairs", "text/plain")
                    return
                nonce = secrets.token_urlsafe(12)
                self._send(HTTPStatus.OK, render_pair(ann, k, nonce), "text/html; charset=utf-8", nonce)
            elif path == "/":
                i = ann.resume_at(replay(ann.files.read()))
                self._send(HTTPStatus.FOUND, "", "text/plain", headers={"Location": f"/item/{i}"})
            elif m := re.fullmatch(r"/item/(\d+)", path):
                i = int(m.group(1))
                if i >= len(ann.source.items):
                    self._send(HTTPStatus.NOT_FOUND, f"no row {i}: rows 0 to {len(ann.source.items) - 1}",
                               "text/plain")
                    return
                nonce = secrets.token_urlsafe(12)
                self._send(HTTPStatus.OK, render_item(ann, i, nonce), "text/html; charset=utf-8", nonce)
            elif path == "/labels-check":
                self._send(HTTPStatus.OK, render_labels_check(ann), "text/html; charset=utf-8")
            elif path == "/api/state":
                state = replay(ann.files.read())
                self._json(HTTPStatus.OK, {"annotator": ann.annotator, "items": ann.source.items,
                                           "progress": ann.progress(state), "resume": ann.resume_at(state),
                                           "pairs": ann.pairs and [{**p, "rows": list(p["rows"])} for p in ann.pairs],
                                           "pair_progress": ann.pair_progress(state), "order_seed": ann.seed,
                                           "labels": str(ann.files.labels), "log": str(ann.files.log)})
            else:
                self._send(HTTPStatus.NOT_FOUND, "not found", "text/plain")
        except (AnnotationError, CliError) as e:
            self._send(HTTPStatus.BAD_REQUEST, str(e), "text/plain")

    do_HEAD = do_GET  # noqa: N815

    def do_POST(self):  # noqa: N802
        if not self._local():
            return
        path = urlsplit(self.path).path
        action = {"/api/label": self.ann.label, "/api/edit": self.ann.edit, "/api/undo": self.ann.undo,
                  "/api/pair": self.ann.pair}.get(path)
        if action is None:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no action {path}"})
            return
        if not (self.headers.get("Content-Type") or "").startswith("application/json"):
            self._json(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, {"error": "send JSON (Content-Type: application/json)"})
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if not isinstance(body, dict):
                raise AnnotationError("the body is a JSON object")
            change = action(body)
        except json.JSONDecodeError as e:
            self._json(HTTPStatus.BAD_REQUEST, {"error": f"malformed JSON: {e.msg}"})
            return
        except AnnotationError as e:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(e)})
            return
        self._json(HTTPStatus.OK, {"ok": True, "seq": change["seq"]})

    def log_message(self, format, *args):  # noqa: A002
        pass


def make_server(ann: Annotator, port: int = 0, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError(f"annotate binds the loopback interface only, not {host!r}")
    handler = type("Handler", (_Handler,), {"ann": ann})
    return ThreadingHTTPServer((host, port), handler)


def _labels_check(lab, arms: list[str]):
    """() -> [(dataset, result)] of the arms' datasets' gold quotes `labels check` finds changed or gone."""
    def run():
        out = []
        for name in dict.fromkeys(lab.arms[a].dataset for a in arms):
            report = check_dataset(lab.dataset_dir(name), name)
            out += [(name, r) for r in report.results if r.status in ("changed", "gone")]
        return out
    return run


def cmd_annotate(args) -> int:
    lab = lab_from_args(args)
    for a in args.arms:
        lab.arms[a]
    if not args.annotator.strip():
        raise CliError("--annotator: a non-empty name")
    labels = Path(args.labels).expanduser().resolve() if args.labels else lab.store.root / "annotations" / "labels.jsonl"
    if not isinstance(labels, Path):
        raise CliError("--labels: a local file (the store is remote)")
    from rag_ttc_assets.stages.annotate import Source, SourceError  # late: polars loads only when this runs

    sample = Path(args.sample) if args.sample else None
    if args.budget is not None:
        if args.sample:
            raise CliError("--budget and --sample: give one (--budget draws a sample; --sample reads one)")
        sample = labels.with_name(labels.stem + ".sample.jsonl")
        for i, arm in enumerate(args.arms):
            rows, picks = write_sample(lab, arm, args.budget, args.sample_seed, sample, append=i > 0)
            print(f"{len(picks)} of {len(rows)} rows of arm {arm} to label, stratified by failure-flow branch and "
                  f"juror disagreement (seed {args.sample_seed}); sample: "
                  f"{(Path(args.labels) if args.labels else labels).with_name(sample.name)}", flush=True)
    try:
        source = Source(lab, args.arms, sample)
    except SourceError as e:
        raise CliError(str(e)) from None
    if args.pairwise and len(args.arms) != 2:
        raise CliError(f"--pairwise: two arms, one answer of each side by side (got {len(args.arms)}: "
                       f"{', '.join(args.arms)})")
    files = LabelFiles(labels)
    shown = Path(args.labels) if args.labels else labels  # as the person typed it
    skipped = parse_log(files.log.read_text(encoding="utf-8"), str(files.log))[1] if files.log.exists() else []
    for s in skipped:
        print(s, file=sys.stderr)
    ann = Annotator(source, files, args.annotator.strip(), _labels_check(lab, args.arms), args.pairwise, args.seed)
    if args.pairwise and not ann.pairs:
        raise CliError(f"--pairwise: arms {args.arms[0]!r} and {args.arms[1]!r} answered no question in common")
    server = make_server(ann, args.port)
    return serve_until_stopped(
        server, f"labelling page at http://127.0.0.1:{server.server_port}/ (annotator {ann.annotator}; "
        + (f"{len(ann.pairs)} pairs of {args.arms[0]} and {args.arms[1]}, pairwise, A/B order seed {ann.seed}"
           if args.pairwise else f"{len(source.items)} rows of {', '.join(args.arms)}")
        + f"); labels {shown}, change log {log_path(shown)}; Ctrl-C stops")

def add_parser(subparsers, common) -> None:
    s = subparsers.add_parser(
        "annotate", parents=[common], help="a labelling page for people on 127.0.0.1",
        description="Serve a labelling page on 127.0.0.1 for materialized arms: per row the question, the answer as "
                    "the user saw it, its citations, the admitted chunks (cited spans marked) and the omitted ones; "
                    "per request the seed's four cases on keys 1-4, a gold quote highlighted in a chunk, a note; "
                    "requests added, split, merged, reworded. Every change is appended to a change log; the current "
                    "labels (judge-agreement's format) are rewritten beside it. docs/annotate.md.")
    s.add_argument("arms", nargs="+", metavar="ARM")
    s.add_argument("--annotator", required=True, help="who labels (each label carries it)")
    s.add_argument("--labels", help="the labels file to write (default: <store>/annotations/labels.jsonl; its "
                                    "change log beside it, <name>.log.jsonl)")
    s.add_argument("--sample", help="label only the rows listed in this JSON Lines file, in its order "
                                    '({"arm", "question", "run_id", "stratum", "probability"} per line)')
    s.add_argument("--budget", type=int, help="label only N rows of each arm, the ones whose labels most narrow its "
                                              "corrected completeness (as `rag-ttc sample-labels`: stratified by "
                                              "failure-flow branch and juror disagreement, each row's inclusion "
                                              "probability carried into its labels); the sample is written beside "
                                              "the labels, <name>.sample.jsonl")
    s.add_argument("--sample-seed", type=int, default=0, help="the seed of --budget's sample (default 0)")
    s.add_argument("--pairwise", action="store_true",
                   help="two arms: open the pairwise view, their answers to one question side by side (A and B in "
                        "an order drawn per question from --seed, the arms' names hidden until labelled), which is "
                        "more complete on -2..2 (keys 1-5); written as `kind: pair` labels")
    s.add_argument("--seed", type=int, default=0, help="the seed of the pairwise view's A/B order (default 0; each "
                                                       "pairwise label records it)")
    s.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0: any free port)")
    s.set_defaults(fn=cmd_annotate)
