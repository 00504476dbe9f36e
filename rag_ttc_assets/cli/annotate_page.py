"""The labelling page of `rag-ttc annotate` (cli/annotate.py serves it; cli/annotate_session.py holds what it shows): one answer row (render_item), a pair of
arms' answers (render_pair) and the labels that need a person after a corpus change (render_labels_check), each a
whole HTML page with its own small script. Every text shown is escaped (answers and chunks are untrusted); the
server's Content-Security-Policy runs only the script whose nonce it gave."""

from __future__ import annotations

import html
import re
from rag_ttc_assets.cli.annotate_session import Annotator
from rag_ttc_assets.cli.annotate_view import RowView, ShownLabel, ShownPair
from rag_ttc_assets.labelling.annotation import CASES, PAIR_SCALE, answer_sha256, replay
from rag_ttc_assets.core.inspect_view import RequestView

E = html.escape

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


def _judge(req: RequestView) -> str:
    j = req.request_judge
    if j is None:
        return "the judge did not judge this request"
    return (f"{E(str(j.request_judge_model))}: addressed {E(str(j.addressed))}, verdict "
            f"{E(str(j.verdict))}; {E(str(j.reason or ''))}")


def render_item(ann: Annotator, i: int, nonce: str) -> str:
    state = replay(ann.files.read())
    item, raw = ann.source.items[i], ann.source.view(i)
    v = RowView.of(raw)
    prog = ann.progress(state)
    answer = v.answer_text
    judged = {r.id: r for r in v.requests}
    cited = set(v.cited_chunk_ids)
    reqs_html = []
    for r in ann.requests(i, state):
        lab = ShownLabel.of(state.labels.get((ann.annotator, item.arm, item.question, r.id)))
        older = ""
        if lab and lab.run_id != ann.source.run_ids[item.arm]:
            older = (f'<div class="older">labelled on an older run ({E(str(lab.run_id))}); the row now comes '
                     f'from run {E(str(ann.source.run_ids[item.arm]))}'
                     f'{" with another answer" if lab.answer_sha256 != answer_sha256(raw) else ""}: '
                     'the label is kept</div>')
        quote = (f'<div>gold quote ({E(lab.quote_chunk_id)}): <span class="quote">{E(lab.quote)}</span></div>'
                 if lab and lab.quote else "")
        judge = ""
        if lab:
            judge = ('<button type="button" class="reveal">show the judge\'s verdict</button>'
                     f'<div class="judge hidden">{_judge(judged[r.id]) if r.id in judged else "no judge verdict: a request you edited"}</div>')
        else:
            judge = '<div class="judge-hidden">the judge\'s verdict is hidden until you label this request</div>'
        origin = "" if r.origin == "dataset" else f' <small>({E(r.origin)} from {E(", ".join(r.sources))})</small>'
        reqs_html.append(
            f'<div class="req" data-request="{E(r.id)}" data-labelled="{1 if lab else 0}">'
            f'<div><b>{E(r.id)}</b>{origin}: <span class="rtext">{E(r.text)}</span></div>'
            f'<div class="cases">{_case_buttons(lab.case if lab else None)}</div>{quote}{older}'
            f'<div><input class="note" placeholder="note" value="{E((lab.note if lab else None) or "")}" size="60">'
            ' <button type="button" class="save-note">save note</button>'
            ' <button type="button" class="use-quote">use selection as gold quote</button>'
            ' <button type="button" class="split">split</button> <button type="button" class="reword">reword</button>'
            ' <label><input type="checkbox" class="pick"> merge</label></div>'
            f'{judge}</div>')
    admitted = [c for c in v.admitted_chunk_ids if c in v.chunks]
    omitted = [c for c in v.chunks if c not in admitted]
    citations = ", ".join(E(c) for c in v.cited_chunk_ids) or "none"
    sample = (f' &middot; stratum {E(str(item.stratum))}, probability {E(str(item.probability))}'
              if item.probability is not None else "")
    n = len(ann.source.items)
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>annotate {E(item.arm)} {E(item.question)}</title>
<style>{STYLE}</style></head><body data-item="{i}" data-items="{n}">
<nav><a href="/item/{max(i - 1, 0)}" id="prev">&larr; previous (k)</a><a href="/item/{min(i + 1, n - 1)}" id="next">next (j) &rarr;</a>
<a href="/">resume</a><a href="/labels-check">labels check</a>{'<a href="/pairwise" id="pairwise">pairwise view</a>' if ann.pairs else ''}
<span class="progress" id="progress">{E(ann.annotator)}: {prog.requests_labelled} of {prog.requests} requests labelled, {prog.rows_done} of {prog.rows} rows done</span></nav>
<p>row {i + 1} of {n}: arm <b>{E(item.arm)}</b>, question <b>{E(item.question)}</b>{sample}</p>
<div class="q" id="question">{E(v.question.text)}</div>
<h3>Answer, as the user saw it</h3><div class="answer" id="answer">{E(answer)}</div>
<p>citations: {citations}</p>
<h3>Requests</h3><p><small>keys: 1-4 the four cases of the focused request, j/k next/previous row, u undo, up/down arrows move between requests</small></p>
<div class="msg" id="msg" role="alert"></div>
<div id="requests">{''.join(reqs_html)}</div>
<p><button type="button" id="add">add a request</button> <button type="button" id="merge">merge the ticked requests</button> <button type="button" id="undo">undo (u)</button></p>
<h3>Admitted chunks</h3><div id="admitted">{''.join(_chunk(c, v.chunks[c], answer, c in cited) for c in admitted)}</div>
<details id="omitted"><summary>retrieved but not admitted ({len(omitted)})</summary>{''.join(_chunk(c, v.chunks[c], answer, False) for c in omitted)}</details>
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
    lab = ShownPair.of(state.pairs.get(ann.pair_key(p)))
    views = [RowView.of(ann.source.view(r)) for r in p.rows]
    cols = []
    for side, arm, v in zip(("A", "B"), (p.a, p.b), views):
        name = f' &middot; arm <b class="arm">{E(arm)}</b>' if lab else ""
        cols.append(f'<div class="side" id="side-{side.lower()}"><h3>Answer {side}{name}</h3>'
                    f'<div class="answer">{E(v.answer_text)}</div>'
                    f'<p>citations: {", ".join(E(c) for c in v.cited_chunk_ids) or "none"}</p></div>')
    chosen = lab.completeness if lab else None
    buttons = "".join(f'<button type="button" class="pv{" on" if v == chosen else ""}" data-value="{v}" '
                      f'title="key {key}">{key} {E(t)}</button> ' for key, (v, t) in PAIR_SCALE.items())
    shown = ("the arms' names are shown now that you have labelled this pair" if lab else
             "the arms' names are hidden until you label this pair")
    reqs = "".join(f"<li>{E(r.text)}</li>" for r in views[0].requests)
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>pairwise {E(p.question)}</title>
<style>{STYLE}.pair{{display:flex;gap:12px}}.side{{flex:1;min-width:0}}button.pv.on{{background:#2a6df4;color:#fff}}</style>
</head><body data-pair="{k}" data-pairs="{n}" data-labelled="{1 if lab else 0}">
<nav><a href="/pair/{max(k - 1, 0)}" id="prev">&larr; previous (k)</a><a href="/pair/{min(k + 1, n - 1)}" id="next">next (j) &rarr;</a>
<a href="/pairwise">resume</a><a href="/item/{p.rows[0]}">per-request view</a>
<span class="progress" id="progress">{E(ann.annotator)}: {prog.pairs_labelled} of {prog.pairs} pairs labelled</span></nav>
<p>pair {k + 1} of {n}: question <b>{E(p.question)}</b> &middot; {shown}</p>
<div class="q" id="question">{E(views[0].question.text)}</div>
<details><summary>the question's requests ({len(views[0].requests)})</summary><ul>{reqs}</ul></details>
<h3>Which answer is more complete?</h3><p><small>keys: 1-5 the scale, j/k next/previous pair, u undo</small></p>
<div class="msg" id="msg" role="alert"></div>
<div id="scale">{buttons}</div>
<p><input id="note" placeholder="note" value="{E((lab.note if lab else None) or "")}" size="60"> <button type="button" id="save-note">save note</button>
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
        where = [i for i, it in enumerate(ann.source.items) if it.question == r.question]
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
