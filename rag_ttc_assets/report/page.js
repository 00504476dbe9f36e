"use strict";
// The rag-ttc case report. Every string from the data goes on the page as text (textContent), never as markup.
(function () {
  const D = JSON.parse(document.getElementById("report-data").textContent);
  const PAIR = D.kind === "pair";
  const ARMS = D.arms;
  const PAGE = 50;
  const RANKED = { chunk_id: 0, bm25: 1, vector: 2, state: 3, cited: 4, excerpt_of: 5, supports: 6 };

  // -- small DOM helpers: children are nodes or strings (text nodes) --------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "on") for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
      else if (k === "text") node.textContent = String(v);
      else node.setAttribute(k, String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      node.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
    }
    return node;
  }
  function fmt(x) {
    if (x === null || x === undefined) return "–";
    if (typeof x === "boolean") return x ? "yes" : "no";
    if (typeof x === "number") return Number.isInteger(x) ? String(x) : x.toFixed(4);
    return String(x);
  }
  // Completeness read two ways, graded first (docs/judges.md), each with its N of M; a judge that reports no
  // coverage (an LLM's) grades none: "not measured (no coverage)", never 0.
  function readings(graded, gradedN, measured, addressed, total) {
    return "completeness graded " + (graded === null || graded === undefined ? "not measured (no coverage)" : fmt(graded)) +
      ` (mean coverage, ${fmt(gradedN)} of ${fmt(measured)} measured requests graded); share addressed ${fmt(addressed)}` +
      ` (${fmt(measured)} of ${fmt(total)} requests measured)`;
  }
  function num(x, attrs) { return el("td", Object.assign({ class: "num" }, attrs || {}), fmt(x)); }
  // A real number (mean, delta, p-value, sum): always four decimals, so 1 reads 1.0000 as the terminal prints it.
  function real(x) { return x === null || x === undefined ? "–" : Number(x).toFixed(4); }
  function numr(x, attrs) { return el("td", Object.assign({ class: "num" }, attrs || {}), real(x)); }
  // Gain or loss by the metric's direction (core.case_comparison.DIRECTIONS): a rise in a cost (tokens, latency) is a loss.
  function outcome(metric, delta) {
    if (delta === null || delta === undefined || delta === 0) return "";
    const lower = (D.directions || {})[metric] === "lower_is_better";
    return (delta > 0) !== lower ? "gain" : "loss";
  }
  function short(digest) { return digest && digest.length > 19 ? digest.slice(0, 19) + "…" : digest; }
  function table(cls, head, rows) {
    return el("table", { class: cls }, el("thead", {}, el("tr", {}, head.map((h) => el("th", {}, h)))),
      el("tbody", {}, rows));
  }
  function section(title, id, ...body) { return el("section", { id: id }, el("h2", {}, title), body); }
  const app = document.getElementById("app");

  // -- 1. the arms: configuration differences, instruments, N -----------------------------------------------------
  function header() {
    const out = [el("h1", {}, D.title)];
    if (D.annotate) out.push(el("p", { class: "annotate" }, "Label these answers by hand: ", D.annotate.url
      ? el("a", { href: D.annotate.url + "/", id: "annotate-link" }, D.annotate.url + "/")
      : el("code", {}, D.annotate.command), D.annotate.url ? ` (${D.annotate.command})` : ""));
    if (D.human_labels) out.push(el("p", { class: "human-labels" }, `Human labels shown beside the judges: ` +
      `${D.human_labels.path} (${D.human_labels.sha256}; ${D.human_labels.request_labels} per-request labels by ` +
      `${D.human_labels.annotators.join(", ") || "no annotator"}).` +
      (D.human_labels.not_read ? ` Not read, none shown: ${D.human_labels.not_read}` : "")));
    ARMS.forEach((arm) => {
      if (arm.label_use !== "none") out.push(el("p", { class: "oracle" }, `${arm.name} is ${arm.label_use}: it uses ` +
        "evaluation labels on purpose; its numbers are a diagnostic bound, not a deployable system's."));
    });
    const names = ARMS.map((a) => a.title);
    const body = [];
    if (PAIR) {
      const changed = D.comparison.changed_parameters || {};
      const rows = Object.keys(changed).map((k) => el("tr", {}, el("td", {}, k), el("td", {}, JSON.stringify(changed[k][0])),
        el("td", {}, JSON.stringify(changed[k][1]))));
      body.push(el("h3", {}, "Configuration: the fields that differ"),
        rows.length ? table("config", ["field", names[0], names[1]], rows) : el("p", {}, "The configurations are the same."));
    } else {
      const cfg = ARMS[0].config;
      body.push(el("h3", {}, "Configuration"), table("config", ["field", "value"], Object.keys(cfg).map((k) =>
        el("tr", {}, el("td", {}, k), el("td", {}, JSON.stringify(cfg[k]))))));
    }
    const inst = (a) => {
      const i = a.instruments;
      const rows = [["answer model", i.answer_model], ["judge", i.judge_model], ["request judge", i.request_judge_model],
        ["request judge prompt", short(i.request_judge_prompt_digest)], ["label use", i.label_use],
        ["requests derived from gold answers by", i.requests_derived || "none (hand-written)"]];
      for (const [field, p] of Object.entries(i.prompts)) rows.push([`${field}`, `${p.name} ${short(p.digest)}`]);
      return rows;
    };
    const per = ARMS.map(inst);
    const rows = per[0].map((r, j) => {
      const values = per.map((p) => p[j][1]);
      const differ = values.some((v) => v !== values[0]);
      return el("tr", { class: differ ? "differ" : null }, el("td", {}, r[0]), values.map((v) => el("td", {}, v)));
    });
    body.push(el("h3", {}, "Instruments"), table("instruments", ["", ...names], rows));
    const measured = ARMS.map((a) => {
      const m = a.completeness_measured;
      return el("li", {}, `${a.title}: completeness measured on ${m.requests_measured} of ${m.requests_total} requests, ` +
        `${m.questions_measured} of ${m.questions_total} questions; ${a.flow_total} requests in the failure flow; ` +
        readings(m.graded_completeness, m.requests_graded, m.requests_measured, m.requests_answered_share, m.requests_total));
    });
    body.push(el("ul", { id: "measured" }, measured));
    if (PAIR) body.push(el("p", { id: "paired-n" }, `N = ${D.comparison.n} paired cases of the headline metric ` +
      `(${D.comparison.headline}), of ${D.cases.length} cases.`));
    return el("div", {}, out, section(PAIR ? "The arms" : "The arm", "arms", body));
  }

  // -- 2. metrics, the delta histogram and its buckets (pair) / failure flow and hit rate (one arm) -------------------
  function metrics() {
    const C = D.comparison;
    const rows = Object.entries(C.metrics).map(([m, v]) => el("tr", { "data-metric": m, class: m === C.headline ? "differ" : null },
      el("td", {}, m), numr(v.mean_a, { "data-field": "mean_a" }), numr(v.mean_b, { "data-field": "mean_b" }),
      numr(v.mean_delta, { "data-field": "mean_delta", class: "num " + outcome(m, v.mean_delta) }),
      el("td", { class: "num", "data-field": "ci" }, `[${real(v.ci_low)}, ${real(v.ci_high)}]`),
      numr(v.p_value, { "data-field": "p_value" }), numr(v.p_adjusted, { "data-field": "p_adjusted" }),
      el("td", { "data-field": "significant", class: v.significant ? "sig" : null }, v.significant === null ? "–" : fmt(v.significant)),
      el("td", {}, fmt(v.test)), num(v.gains, { "data-field": "gains" }), num(v.losses, { "data-field": "losses" }),
      num(v.ties, { "data-field": "ties" }), el("td", { "data-field": "paired" }, `${v.n} of ${v.of}`)));
    const p = C.p_adjust;
    const buckets = C.buckets.map((b) => el("tr", { "data-bucket": b.label },
      el("td", {}, el("button", { class: "link", on: { click: () => setFilter({ bucket: b.label }) } }, b.label)),
      num(b.count, { "data-field": "count" }), numr(b.sum, { "data-field": "sum" })));
    const plots = el("div", { class: "plots" },
      D.plots.delta_histogram ? el("img", { class: "plot", alt: "per-case delta histogram", src: D.plots.delta_histogram }) : null,
      D.plots.buckets ? el("img", { class: "plot", alt: "bucket sums", src: D.plots.buckets }) : null,
      D.plots.graded_delta_histogram ? el("img", { class: "plot", alt: "per-case graded completeness delta histogram",
        src: D.plots.graded_delta_histogram }) : null);
    return section("Headline metrics, paired per case", "metrics",
      table("metrics", ["metric", "mean_a", "mean_b", "delta (b − a)", "95% CI", "p", "p adjusted", "significant", "test",
        "gains", "losses", "ties", "paired"], rows),
      el("p", { class: "note" }, `p-values adjusted by ${p.method} (${p.method_name}) over ${p.m} p-values (${p.family}); ` +
        `significant: adjusted p ≤ ${p.alpha}.`),
      el("h3", {}, `How the ${C.headline} mean is made: per-case deltas by size`), plots,
      table("buckets", ["bucket", "cases", "sum"], buckets));
  }
  function flowSection() {
    const a = ARMS[0];
    const rows = D.branches.map((b) => el("tr", { "data-branch": b },
      el("td", {}, el("button", { class: "link", on: { click: () => setFilter({ branch: b }) } }, b)),
      num(a.flow[b], { "data-field": "count" })));
    const h = a.hit_rate;
    return section("Failure flow", "flow", el("div", { class: "plots" },
      D.plots.failure_flow ? el("img", { class: "plot", alt: "failure flow", src: D.plots.failure_flow }) : null),
    table("flow", ["branch (first boundary where support disappeared)", "requests"], rows),
    el("p", { id: "hit-rate" }, `Hit rate over all cases: ${h.hits} of ${h.cases} questions (${fmt(h.hit_rate)}); ` +
      `${h.request_hits} of ${h.request_cases} requests (${fmt(h.request_hit_rate)}). A case whose evidence never arrived is a miss.`));
  }

  // -- 3. the transition matrix ----------------------------------------------------------------------------------
  let matrixCells = [];
  function matrix() {
    const T = D.comparison.transitions;
    const byKey = {};
    T.cells.forEach((c) => { byKey[c.key] = c; });
    const colTotal = {};
    const head = el("tr", {}, el("th", {}, `${ARMS[0].name} ↓ / ${ARMS[1].name} →`),
      T.columns.map((c) => el("th", { class: "rot" }, c)), el("th", {}, "total"));
    const rows = T.rows.map((r) => {
      let total = 0;
      const cells = T.columns.map((c) => {
        const key = `${r} -> ${c}`;
        const cell = byKey[key];
        const n = cell ? cell.count : 0;
        total += n;
        colTotal[c] = (colTotal[c] || 0) + n;
        const td = el("td", { class: "cell " + (n ? (r === c ? "diag" : "off") : "empty"), "data-key": key,
          title: `${key}: ${n} requests in ${cell ? cell.cases.length : 0} cases` }, n ? String(n) : "·");
        if (n) td.addEventListener("click", () => setFilter({ transition: key }));
        matrixCells.push(td);
        return td;
      });
      return el("tr", {}, el("th", {}, r), cells, num(total, { "data-row-total": r }));
    });
    rows.push(el("tr", {}, el("th", {}, "total"), T.columns.map((c) => num(colTotal[c] || 0, { "data-col-total": c })),
      num(T.total)));
    return section("Transition matrix: each request's branch in " + ARMS[0].name + " (rows) and in " + ARMS[1].name +
      " (columns)", "transitions", el("table", { class: "matrix", id: "matrix" }, el("thead", {}, head), el("tbody", {}, rows)),
    el("p", { class: "note" }, `${T.changed} of ${T.total} requests changed branch. Click a cell to list its cases.`));
  }

  // -- 4. the case list: filters, sort, pages ------------------------------------------------------------------------
  const state = { cases: null, transition: "", bucket: "", branch: "", catastrophic: false, changed: false, min: "", max: "", text: "",
    sort: PAIR ? "delta" : "id", dir: 1, page: 0, open: null };
  const controls = {};
  const caseBody = el("tbody", {});
  const countLine = el("span", { id: "case-count" });
  const pageLine = el("span", { id: "page-line" });
  function option(value, label) { return el("option", { value: value }, label); }
  function setFilter(f) {
    Object.assign(state, { transition: "", bucket: "", branch: "" }, f, { page: 0, open: null });
    syncControls();
    renderCases();
    document.getElementById("cases").scrollIntoView();
  }
  function syncControls() {
    for (const k of ["transition", "bucket", "branch"]) if (controls[k]) controls[k].value = state[k];
    for (const k of ["min", "max", "text"]) if (controls[k]) controls[k].value = state[k];
    if (controls.catastrophic) controls.catastrophic.checked = state.catastrophic;
    if (controls.changed) controls.changed.checked = state.changed;
    matrixCells.forEach((td) => td.classList.toggle("selected", td.getAttribute("data-key") === state.transition));
  }
  function matches(c) {
    if (state.cases && !state.cases.has(c.id)) return false;
    if (state.transition && !c.transitions.includes(state.transition)) return false;
    if (state.bucket && c.bucket !== state.bucket) return false;
    if (state.branch && !c.branches.includes(state.branch)) return false;
    if (state.catastrophic && !c.catastrophic) return false;
    if (state.changed && !c.changed.length) return false;
    if (state.min !== "" && !(c.delta !== null && c.delta >= Number(state.min))) return false;
    if (state.max !== "" && !(c.delta !== null && c.delta <= Number(state.max))) return false;
    if (state.text) {
      const t = state.text.toLowerCase();
      if (!c.id.toLowerCase().includes(t) && !c.question.toLowerCase().includes(t)) return false;
    }
    return true;
  }
  function sortValue(c, key) {
    if (key === "transitions") return (PAIR ? c.changed : c.branches).join(" ");
    if (key === "catastrophic") return c.catastrophic ? 1 : 0;
    return c[key];
  }
  function sorted(list) {
    const key = state.sort, dir = state.dir;
    return list.slice().sort((x, y) => {
      const a = sortValue(x, key), b = sortValue(y, key);
      if (a === b) return x.id < y.id ? -1 : x.id > y.id ? 1 : 0;
      if (a === null || a === undefined) return 1;  // undefined values last, whatever the direction
      if (b === null || b === undefined) return -1;
      return (a < b ? -1 : 1) * dir;
    });
  }
  const COLUMNS = PAIR
    ? [["id", "case"], ["question", "question"], ["a", ARMS[0].name], ["b", ARMS[1].name], ["delta", "delta"],
      ["bucket", "bucket"], ["transitions", "changed transitions"], ["catastrophic", "catastrophic"]]
    : [["id", "case"], ["question", "question"], ["transitions", "branches"]];
  function caseRow(c) {
    const open = state.open === c.id;
    const cells = PAIR
      ? [el("td", {}, c.id), el("td", { class: "q", title: c.question }, c.question), numr(c.a), numr(c.b),
        numr(c.delta, { class: "num " + outcome(D.comparison.headline, c.delta) }), el("td", {}, fmt(c.bucket)),
        el("td", {}, c.changed.join(", ")), el("td", { class: "flag" }, c.catastrophic ? "catastrophic" : "")]
      : [el("td", {}, c.id), el("td", { class: "q", title: c.question }, c.question), el("td", {}, c.branches.join(", "))];
    const tr = el("tr", { class: "case" + (open ? " open" : ""), "data-case": c.id }, cells);
    tr.addEventListener("click", () => { state.open = open ? null : c.id; renderCases(); });
    const out = [tr];
    if (open) out.push(el("tr", { class: "detail-row" }, el("td", { class: "detail", colspan: COLUMNS.length, "data-detail": c.id },
      detail(c))));
    return out;
  }
  function renderCases() {
    const list = sorted(D.cases.filter(matches));
    const pages = Math.max(1, Math.ceil(list.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    const shown = list.slice(state.page * PAGE, state.page * PAGE + PAGE);
    caseBody.replaceChildren(...shown.flatMap(caseRow));
    const what = [state.cases && `${state.cases.size} case(s) linked from the diagnosis`, state.transition && `transition ${state.transition}`, state.bucket && `bucket ${state.bucket}`,
      state.branch && `branch ${state.branch}`, state.catastrophic && "catastrophic", state.changed && "changed",
      state.min !== "" && `delta ≥ ${state.min}`, state.max !== "" && `delta ≤ ${state.max}`, state.text && `“${state.text}”`]
      .filter(Boolean).join(", ");
    countLine.textContent = `${list.length} of ${D.cases.length} cases` + (what ? ` (${what})` : "");
    countLine.setAttribute("data-count", String(list.length));
    pageLine.textContent = `page ${state.page + 1} of ${pages}`;
    syncControls();
  }
  function caseList() {
    const bar = el("div", { class: "filters" });
    if (PAIR) {
      controls.transition = el("select", { id: "f-transition" }, option("", "any transition"),
        D.comparison.transitions.cells.map((c) => option(c.key, `${c.key} (${c.count})`)));
      controls.bucket = el("select", { id: "f-bucket" }, option("", "any bucket"),
        D.comparison.buckets.filter((b) => b.count).map((b) => option(b.label, `${b.label} (${b.count})`)));
      controls.catastrophic = el("input", { type: "checkbox", id: "f-catastrophic" });
      controls.changed = el("input", { type: "checkbox", id: "f-changed" });
      controls.min = el("input", { type: "number", step: "any", id: "f-min", placeholder: "min" });
      controls.max = el("input", { type: "number", step: "any", id: "f-max", placeholder: "max" });
      bar.append(el("label", {}, "transition ", controls.transition), el("label", {}, "bucket ", controls.bucket),
        el("label", {}, "delta ", controls.min, " to ", controls.max),
        el("label", {}, controls.catastrophic, " catastrophic only"), el("label", {}, controls.changed, " a request changed branch"));
    } else {
      controls.branch = el("select", { id: "f-branch" }, option("", "any branch"), D.branches.map((b) => option(b, b)));
      bar.append(el("label", {}, "branch ", controls.branch));
    }
    controls.text = el("input", { type: "search", id: "f-text", placeholder: "case id or question" });
    bar.append(el("label", {}, "search ", controls.text),
      el("button", { id: "f-clear", on: { click: () => { Object.assign(state, { min: "", max: "", text: "", catastrophic: false,
        changed: false, cases: null }); setFilter({}); } } }, "clear filters"));
    for (const [k, input] of Object.entries(controls)) {
      input.addEventListener(input.type === "checkbox" ? "change" : "input", () => {
        state[k] = input.type === "checkbox" ? input.checked : input.value;
        state.page = 0;
        renderCases();
      });
    }
    const head = el("tr", {}, COLUMNS.map(([key, label]) => {
      const th = el("th", { "data-sort": key }, label);
      th.addEventListener("click", () => {
        state.dir = state.sort === key ? -state.dir : 1;
        state.sort = key;
        renderCases();
      });
      return th;
    }));
    const pager = el("div", { class: "pager" },
      el("button", { id: "prev", on: { click: () => { state.page = Math.max(0, state.page - 1); renderCases(); } } }, "‹ previous"),
      pageLine,
      el("button", { id: "next", on: { click: () => { state.page += 1; renderCases(); } } }, "next ›"), countLine);
    return section(PAIR ? "Cases" : "Cases by branch", "cases", bar, pager,
      el("table", { class: "cases", id: "case-table" }, el("thead", {}, head), caseBody));
  }

  // -- 5. one case, expanded ---------------------------------------------------------------------------------------
  function chunkText(armIndex, cid) {
    const row = D.chunks[ARMS[armIndex].chunk_set][cid];
    return row ? row[2] : null;
  }
  function chunkInfo(armIndex, cid) { return D.chunks[ARMS[armIndex].chunk_set][cid] || [null, null, null]; }
  function segmentsNode(armIndex, parts) {
    const pre = el("pre", {});
    for (const p of parts) {
      if (typeof p === "string") pre.appendChild(document.createTextNode(p));
      else pre.appendChild(el("span", { class: "chunkref", title: p.chunk }, chunkText(armIndex, p.chunk) || `[chunk ${p.chunk}]`));
    }
    return pre;
  }
  function chunksTable(c, i, view) {
    const differs = new Set(c.differs);
    const rows = [];
    view.ranked.forEach((r, pos) => {
      const cid = r[RANKED.chunk_id];
      const info = chunkInfo(i, cid);
      const textRow = el("tr", { class: "chunk-text", hidden: "hidden" }, el("td", { colspan: 8 }, el("pre", {}, info[2] || "")));
      const tag = (ids) => ids.map((id) => id.startsWith(c.id + ".") ? id.slice(c.id.length + 1) : id).join(", ");
      const tr = el("tr", { "data-chunk": cid, class: differs.has(cid) ? "differs" : null, title: `document ${info[0]}` },
        num(pos + 1), el("td", {}, el("button", { class: "link", title: "show the chunk's text",
          on: { click: () => { textRow.hidden = !textRow.hidden; } } }, cid)),
        num(info[1]), num(r[RANKED.bm25]), num(r[RANKED.vector]),
        el("td", { class: "state-" + r[RANKED.state] }, r[RANKED.state]), el("td", {}, r[RANKED.cited] ? "cited" : ""),
        el("td", {}, [r[RANKED.supports].length ? "supports " + tag(r[RANKED.supports]) : "",
          r[RANKED.excerpt_of].length ? "excerpt of " + tag(r[RANKED.excerpt_of]) : ""].filter(Boolean).join("; ")));
      rows.push(tr, textRow);
    });
    return table("chunks", ["rank", "chunk", "runes", "bm25", "vector", "state", "answer", "requests"], rows);
  }
  function side(c, i) {
    const view = c.arms[i];
    const arm = ARMS[i];
    if (!view) return el("div", { class: "side" }, el("h3", {}, arm.title), el("p", {}, "no row in this arm"));
    const reqRows = c.requests.map((r) => {
      const v = view.requests[r.id] || {};
      return el("tr", { "data-request": r.id }, el("td", {}, r.id), el("td", { class: "branch" }, fmt(v.branch)),
        el("td", {}, fmt(v.addressed)), el("td", { class: "num" }, fmt(v.coverage)), el("td", {}, fmt(v.verdict)), el("td", {}, (v.excerpt_cites || []).join(", ")),
        el("td", {}, fmt(v.contradicts_gold)));
    });
    const excerpts = el("ul", { class: "verdicts" }, c.requests.filter((r) => view.requests[r.id] && view.requests[r.id].excerpt)
      .map((r) => el("li", {}, `${r.id} excerpt: ${view.requests[r.id].excerpt}` +
        (view.requests[r.id].reason ? ` — ${view.requests[r.id].reason}` : ""))));
    const parts = [el("h3", {}, arm.title),
      el("p", { class: "runes" }, `evidence_k ${view.evidence_k}; used_runes ${fmt(view.used_runes)} / max_runes ` +
        `${fmt(view.max_runes)}; admitted ${view.admitted.length}, omitted ${view.omitted.length}` +
        (view.omitted.length ? ` (${view.omitted.join(", ")})` : "")),
      chunksTable(c, i, view),
      el("h3", {}, "Request judge"),
      table("requests", ["request", "branch", "addressed", "coverage", "verdict", "excerpt cites", "contradicts_gold"], reqRows),
      view.completeness ? el("p", { class: "readings" }, "this question's " + readings(view.completeness.graded,
        view.completeness.graded_n, view.completeness.measured, view.completeness.addressed, view.completeness.requests)) : null,
      excerpts];
    const jurors = ((c.requests.map((r) => view.requests[r.id]).find((v) => v && v.jurors && v.jurors.length)) || {}).jurors;
    if (jurors) {  // a panel: every juror's verdict side by side; a juror's fault is its own not-measured
      parts.push(el("h3", {}, "Jurors"), table("jurors", ["request", ...jurors.map((j) => j.model), "jurors disagree"],
        c.requests.filter((r) => view.requests[r.id] && (view.requests[r.id].jurors || []).length).map((r) => {
          const v = view.requests[r.id];
          return el("tr", { class: v.jurors_disagree ? "differ" : null }, el("td", {}, r.id),
            v.jurors.map((j) => el("td", {}, j.status === "judged" ? fmt(j.verdict) : `not measured (${j.status})`)),
            el("td", {}, fmt(v.jurors_disagree)));
        })));
    }
    if (view.human) {  // the people's labels, every annotator, beside the request judge's and each juror's verdict
      const rows = [];
      c.requests.filter((r) => view.human[r.id]).forEach((r) => {
        const v = view.requests[r.id] || {};
        view.human[r.id].forEach((h) => rows.push(el("tr", { class: h.older ? "older" : null, "data-human": r.id },
          el("td", {}, r.id), el("td", {}, fmt(h.annotator)), el("td", { class: "human-case" }, fmt(h.case)),
          el("td", {}, fmt(v.verdict)),
          (jurors || []).map((j) => {
            const jv = (v.jurors || []).find((x) => x.model === j.model);
            return el("td", {}, !jv ? "–" : jv.status === "judged" ? fmt(jv.verdict) : `not measured (${jv.status})`);
          }),
          el("td", { class: "human-note" }, h.note || ""),
          el("td", { class: "human-quote" }, h.quote ? `${h.quote_chunk_id || ""}: ${h.quote}` : "–"),
          el("td", { class: "human-older" }, h.older || ""))));
      });
      parts.push(el("h3", {}, "Human labels"), table("human", ["request", "annotator", "person's case",
        "request judge", ...(jurors || []).map((j) => `juror ${j.model}`), "note", "gold quote", "flag"], rows));
    }
    if (view.contract) {
      parts.push(el("h3", {}, "Answer"), el("p", {}, `contract ${view.contract.status}` +
        (view.contract.reason ? ` (${view.contract.reason})` : "") + (view.contract.abstained ? "; abstained" : "") +
        `; cites ${view.contract.citations.join(", ") || "nothing"}`), el("pre", { class: "answer" }, view.contract.answer || ""));
    }
    if (view.judge) {
      const j = view.judge;
      parts.push(el("h3", {}, `Statement judge ${j.model}`), el("p", {}, `${j.status}; faithfulness ${fmt(j.faithfulness)}; ` +
        `contradicts_gold ${fmt(j.contradicts_gold)}`),
      el("ul", { class: "verdicts" }, j.verdicts.map((v) => el("li", {}, `[${v.statement}] ${v.supported ? "supported" : "UNSUPPORTED"}: ` +
        `${v.text || ""} — ${v.reason || ""}`))),
      j.gold_verdicts.length ? el("details", {}, el("summary", {}, "against the gold evidence"), el("ul", { class: "verdicts" },
        j.gold_verdicts.map((v) => el("li", {}, `[${v.statement}] ${v.supported ? "supported" : "not supported"}` +
          `${v.contradicts_gold ? ", CONTRADICTS GOLD" : ""}: ${v.text || ""} — ${v.reason || ""}`)))) : null);
    }
    if (view.answer) {
      parts.push(el("details", { class: "raw" }, el("summary", {}, `raw response from ${view.answer.model} (` +
        `${view.answer.cache_hit ? "cache hit" : "provider call"}, ${view.answer.status})`),
      el("pre", {}, view.answer.raw_response || view.answer.error || "")));
    }
    parts.push(el("details", { class: "sent" }, el("summary", {}, `messages as sent (${view.messages_sent.length} call(s))`),
      view.messages_sent.map((call) => call.messages.map((m) => [el("div", { class: "muted" }, m.role), segmentsNode(i, m.content)]))));
    return el("div", { class: "side", "data-arm": arm.name }, parts);
  }
  function detail(c) {
    const wrap = el("div", {});
    wrap.append(el("p", {}, el("strong", {}, c.id), " ", c.question));
    wrap.append(table("asks", ["request", "text", ...ARMS.map((a) => `branch in ${a.name}`)], c.requests.map((r) =>
      el("tr", {}, el("td", {}, r.id), el("td", {}, r.text), c.arms.map((v) => el("td", {}, v && v.requests[r.id] ? v.requests[r.id].branch : "–"))))));
    if (PAIR) wrap.append(el("p", { class: "note" }, c.differs.length
      ? `Highlighted: the ${c.differs.length} chunk(s) whose state, citation or excerpt citations differ between the arms.`
      : "No chunk's state or citation differs between the arms."));
    wrap.append(el("div", { class: "sides" + (c.arms.length === 1 ? " one" : "") }, c.arms.map((_, i) => side(c, i))));
    return wrap;
  }

  // -- the diagnosis page (diagnosis.diagnosis): sentences whose numbers link to the cases behind them --------------
  function href(link) {
    const f = link.filter || {};
    const frag = Object.keys(f).map((k) => `${k}=${encodeURIComponent(f[k])}`).join("&");
    return link.url + (frag ? "#" + frag : "");
  }
  function sentenceNode(s, tag) {
    const body = s.parts.map((p) => {
      if (typeof p === "string") return p;
      const text = s.shown[p.n];
      const link = s.links[p.n];
      return link ? el("a", { href: href(link), class: "number", "data-number": p.n }, text)
        : el("span", { class: "number", "data-number": p.n }, text);
    });
    const node = el(tag, { "data-sentence": s.id, "data-rule": s.rule }, body, " ",
      el("span", { class: "muted rule" }, `${s.rule} · ${s.id}`));
    const first = Object.values(s.links)[0];
    if (s.cases.length) {
      node.appendChild(el("details", { class: "cases-of" }, el("summary", {}, `${s.cases.length} case(s)`),
        el("p", {}, s.cases.map((c, i) => [i ? ", " : "", first
          ? el("a", { href: href({ url: first.url, filter: { cases: c } }), "data-case-link": c }, c) : c]))));
    }
    if (s.snippet) node.appendChild(el("pre", { class: "snippet" }, s.snippet));
    return node;
  }
  function diagnosisPage() {
    const G = D.diagnosis;
    const out = [el("h1", {}, D.title), el("p", { class: "note" }, "Generated by named rules from the run records and " +
      "the paired comparisons, not by a language model. An effect is stated only when its adjusted p-value is at most " +
      `${G.alpha}; every number links to the cases behind it.`)];
    for (const sec of G.sections) {
      const body = !sec.sentences.length ? [el("p", { class: "muted" }, "(nothing to state)")]
        : sec.id === "decisions"
          ? [table("decisions", ["decision and evidence"], sec.sentences.map((s) => el("tr", {}, sentenceNode(s, "td"))))]
          : [el("ul", {}, sec.sentences.map((s) => sentenceNode(s, "li")))];
      out.push(section(sec.title, sec.id, body));
    }
    return out;
  }
  if (D.kind === "diagnosis") {
    document.title = D.title + " · rag-ttc diagnosis";
    app.replaceChildren(...diagnosisPage());
    document.body.setAttribute("data-ready", "1");
    return;
  }

  // -- the page ----------------------------------------------------------------------------------------------------
  document.title = D.title + " · rag-ttc report";
  const parts = [header()];
  if (PAIR) parts.push(metrics(), matrix()); else parts.push(flowSection());
  parts.push(caseList());
  app.replaceChildren(...parts);
  // A link from the diagnosis opens the page filtered: #transition=…, #bucket=…, #branch=… or #cases=id,id.
  const wanted = new URLSearchParams(location.hash.slice(1));
  const f = {};
  for (const k of ["transition", "bucket", "branch"]) if (wanted.get(k)) f[k] = wanted.get(k);
  if (wanted.get("cases")) state.cases = new Set(wanted.get("cases").split(","));
  if (Object.keys(f).length) Object.assign(state, f);
  renderCases();
  document.body.setAttribute("data-ready", "1");
})();
