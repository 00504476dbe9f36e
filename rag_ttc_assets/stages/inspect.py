"""`rag-ttc inspect`: one question of one arm in the seed's reading order (section 9).

The question and its requests first, then ranked, selected, admitted, omitted and cited chunk IDs
with ranks, sources and rune lengths, the context accounting, the first failing boundary per
request, the raw response, the contract status and reason, and the judge's statements and verdicts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rag_ttc_assets.adapters.message_archive import MessageArchiveError
from rag_ttc_assets.adapters.store import ArtifactStore, Table
from rag_ttc_assets.core.counterfactual import Planted
from rag_ttc_assets.core.inspect_view import (AnnLists, AnswerView, ContractView, InspectView, JudgeView, QuestionView,
                                              RankedChunk, RequestJudgeRow, RequestJudgeView, RequestView, Sent)
from rag_ttc_assets.judging.statement_judge import StatementVerdict
from rag_ttc_assets.judging.juror_records import KeptJuror
from rag_ttc_assets.judging.panel import panel_name
from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.chunking import Chunk
from rag_ttc_assets.core.dataset import Dataset
from rag_ttc_assets.core.records import Question, Target
from rag_ttc_assets.core.summaries import NO_JUDGE
from rag_ttc_assets.core.supply import LookupCall
from rag_ttc_assets.stages import arm_supply
from rag_ttc_assets.stages.coverage import request_support

if TYPE_CHECKING:
    import polars as pl

    from rag_ttc_assets.core.tables import TableName

# the declared column names (core.tables)
ROWS, CTX, COV = Table.RETRIEVAL_ROWS.c, Table.ADMITTED_CONTEXTS.c, Table.REQUEST_COVERAGE.c
FLOW, RJ, OUT = Table.FAILURE_FLOW.c, Table.REQUEST_JUDGMENTS.c, Table.REQUEST_OUTCOMES.c
ANS, CON, JV = Table.ANSWERS.c, Table.CONTRACT_RESULTS.c, Table.JUDGE_VERDICTS.c


class InspectError(LookupError):
    pass


def _row(df: pl.DataFrame, table: TableName, qid: str) -> dict | None:
    import polars as pl

    rows = df.filter(pl.col(table.c.query_id) == qid).to_dicts()
    return rows[0] if rows else None


def _messages_sent(store: ArtifactStore, arm: str, qid: str, table: str, digests: list[str] | None, field: str) -> Sent:
    """The digests and the `{"messages", "tools"}` each call was sent (None: the table predates them)."""
    if digests is None:
        return Sent(messages_digests=None, messages_sent=None)
    sent = []
    for i, d in enumerate(digests):
        try:
            sent.append(store.messages.get(d))
        except (MessageArchiveError, ValueError) as e:
            raise InspectError(f"arm {arm!r}, table {table!r}, row {qid!r}, field {field!r}[{i}]: {e}") from None
    return Sent(messages_digests=list(digests), messages_sent=sent)


def _request_judge_row(r: dict) -> RequestJudgeRow:
    return RequestJudgeRow(status=r.get(RJ.status), addressed=r.get(RJ.addressed), excerpt=r.get(RJ.excerpt),
                           cited_chunk_ids=r.get(RJ.cited_chunk_ids), verdict=r.get(RJ.verdict),
                           coverage=r.get(RJ.coverage), reason=r.get(RJ.reason), judge_error=r.get(RJ.judge_error),
                           request_judge_model=r.get(RJ.request_judge_model), prompt_digest=r.get(RJ.prompt_digest),
                           jurors_disagree=r.get(RJ.jurors_disagree), jurors=json.loads(r.get(RJ.jurors) or "[]"))


@dataclass(frozen=True)
class InspectedArm:
    """What `inspect` reads of one arm besides its tables in the store, loaded by its caller
    (stages.resolve.ArmInputs.inspected): its name and config, its dataset and question set, and its chunks, read
    only once the question and its rows are found (`chunk_list()`)."""

    name: str
    cfg: ArmConfig
    dataset: Dataset
    questions: list[Question]
    chunk_list: Callable[[], list[Chunk]]


def inspect_question(store: ArtifactStore, inspected: InspectedArm, qid: str) -> InspectView:
    import polars as pl

    arm, cfg, ds = inspected.name, inspected.cfg, inspected.dataset
    q = next((q for q in ds.evaluation.questions if q.id == qid), None)
    if q is None:
        raise InspectError(f"{ds.evaluation_path}: no question with id {qid!r}")
    retrieval = _row(store.read_table(arm, Table.RETRIEVAL_ROWS), Table.RETRIEVAL_ROWS, qid)
    if retrieval is None:
        raise InspectError(f"arm {arm!r} has no retrieval row for {qid!r} (question_set {cfg.question_set!r})")
    ctx = _row(arm_supply.arm_contexts(store, arm, cfg), Table.ADMITTED_CONTEXTS, qid)
    chunk_list = inspected.chunk_list()
    chunks = {c.chunk_id: c for c in chunk_list}
    # A tool arm's coverage is computed for this question alone (from its lookups): its requests' support only.
    questions = [x for x in inspected.questions if x.id == qid]
    optional = {}
    for name in (Table.ANSWERS, Table.CONTRACT_RESULTS, Table.JUDGE_VERDICTS, Table.REQUEST_JUDGMENTS,
                 Table.REQUEST_OUTCOMES, Table.FAILURE_FLOW, Table.REQUEST_COVERAGE):
        try:
            df = (arm_supply.arm_coverage(store, arm, cfg, questions,
                                          lambda: request_support(ds, questions, chunk_list))
                  if name == Table.REQUEST_COVERAGE else store.read_table(arm, name))
        except FileNotFoundError:
            continue
        optional[name] = df.filter(pl.col(name.c.query_id) == qid).to_dicts()
    contract = (optional.get(Table.CONTRACT_RESULTS) or [None])[0]
    cited = set(contract[CON.citation_chunk_ids]) if contract else set()
    ranked = []
    for i, cid in enumerate(retrieval[ROWS.ranked_chunk_ids], 1):
        state = ("admitted" if cid in ctx[CTX.admitted_chunk_ids] else "omitted" if cid in ctx[CTX.omitted_chunk_ids]
                 else "selected" if cid in ctx[CTX.selected_chunk_ids] else "ranked only")
        ranked.append(RankedChunk(rank=i, chunk_id=cid, doc_id=retrieval[ROWS.ranked_doc_ids][i - 1],
                                  runes=chunks[cid].runes, bm25_rank=retrieval[ROWS.bm25_ranks][i - 1],
                                  vector_rank=retrieval[ROWS.vector_ranks][i - 1], state=state, cited=cid in cited))
    coverage = {r[COV.request_id]: r for r in optional.get(Table.REQUEST_COVERAGE, [])}
    flow = {r[FLOW.request_id]: r for r in optional.get(Table.FAILURE_FLOW, [])}
    judged = {r[RJ.request_id]: r for r in optional.get(Table.REQUEST_JUDGMENTS, [])}
    outcomes = {r[OUT.request_id]: r for r in optional.get(Table.REQUEST_OUTCOMES, [])}
    requests = [RequestView(id=r.id, text=r.text,
                            supporting_chunk_ids=coverage.get(r.id, {}).get(COV.supporting_chunk_ids),
                            branch=flow.get(r.id, {}).get(FLOW.branch), answered=flow.get(r.id, {}).get(FLOW.answered),
                            supported=flow.get(r.id, {}).get(FLOW.supported),
                            request_judge=_request_judge_row(judged[r.id]) if r.id in judged else None,
                            self_reported_answered=outcomes.get(r.id, {}).get(OUT.self_reported_answered),
                            overclaimed=outcomes.get(r.id, {}).get(OUT.overclaimed),
                            underclaimed=outcomes.get(r.id, {}).get(OUT.underclaimed)) for r in q.requests]
    # The request judge makes one call per question (an entailment judge one per request): its messages as sent,
    # each once.
    sent_digests = list(dict.fromkeys(r[RJ.judge_messages_digest] for r in judged.values()
                                      if r.get(RJ.judge_messages_digest)))
    request_judge_sent = (_messages_sent(store, arm, qid, Table.REQUEST_JUDGMENTS, sent_digests,
                                         RJ.judge_messages_digest)
                          if sent_digests else Sent(messages_digests=[], messages_sent=[]))
    answer = (optional.get(Table.ANSWERS) or [None])[0]
    judge = (optional.get(Table.JUDGE_VERDICTS) or [None])[0]
    answer_sent = (_messages_sent(store, arm, qid, Table.ANSWERS, answer.get(ANS.messages_digests), ANS.messages_digests)
                   if answer else None)
    judge_sent = (_messages_sent(store, arm, qid, Table.JUDGE_VERDICTS, judge.get(JV.judge_messages_digests),
                                 JV.judge_messages_digests) if judge else None)
    return InspectView(
        arm=arm, label_use=cfg.label_use,
        question=QuestionView(id=q.id, text=q.text, answerable=q.answerable,
                              targets=[t.model_dump() for t in q.targets]),
        requests=requests,
        ranked=ranked,
        selected_chunk_ids=ctx[CTX.selected_chunk_ids], admitted_chunk_ids=ctx[CTX.admitted_chunk_ids],
        omitted_chunk_ids=ctx[CTX.omitted_chunk_ids], cited_chunk_ids=sorted(cited),
        used_runes=ctx[CTX.used_runes], max_runes=ctx[CTX.max_runes], evidence_k=cfg.evidence_k,
        counterfactual=cfg.counterfactual, withheld_chunk_ids=ctx.get(CTX.withheld_chunk_ids) or [],
        planted=json.loads(ctx.get(CTX.planted) or "[]"),
        supply=cfg.supply,
        ann=_ann_lists(cfg, retrieval, coverage),
        lookups=json.loads(answer.get(ANS.lookups) or "[]") if answer else [],
        # An imported arm's answer came from the system's trace, not from a call of the lab's.
        answer=AnswerView(model=answer[ANS.model], status=answer[ANS.status], cache_hit=answer[ANS.cache_hit],
                          trace_id=answer.get(ANS.trace_id), raw_response=answer[ANS.raw_text],
                          error=answer[ANS.error], citation_check=answer.get(ANS.citation_check),
                          messages_digests=answer_sent.messages_digests, messages_sent=answer_sent.messages_sent)
        if answer and answer_sent else None,
        contract=ContractView(status=contract[CON.status], reason=contract[CON.reason], answer=contract[CON.answer],
                              abstained=contract[CON.abstained], parsed_from=contract.get(CON.parsed_from))
        if contract else None,
        judge=JudgeView(status=judge[JV.status], model=judge[JV.judge_model], statements=judge[JV.statements],
                        verdicts=json.loads(judge[JV.verdicts]), faithfulness=judge[JV.faithfulness],
                        gold_verdicts=json.loads(judge[JV.gold_verdicts]),
                        contradicts_gold=judge[JV.contradicts_gold],
                        messages_digests=judge_sent.messages_digests, messages_sent=judge_sent.messages_sent)
        if judge and judge_sent else None,
        request_judge=RequestJudgeView(
            model=panel_name([j.model for j in cfg.request_judges], cfg.request_judge_aggregation)
            if cfg.request_judges else cfg.request_judge.model,
            messages_digests=request_judge_sent.messages_digests, messages_sent=request_judge_sent.messages_sent),
    )


def _ann_lists(cfg, retrieval: dict, coverage: dict[str, dict]) -> AnnLists | None:
    """An approximate index's two lists side by side (core.ann): its own top retrieve_k, the exact search's over
    the same vectors, the ranked list the exact one would have given, and which requests' support only the exact
    list held. None for an exact (flat) arm."""
    if retrieval.get(ROWS.exact_vector_chunk_ids) is None:
        return None
    return AnnLists(index=cfg.vector_index.model_dump(exclude_none=True), ann_recall_k=retrieval[ROWS.ann_recall_k],
                    vector_chunk_ids=retrieval[ROWS.vector_chunk_ids],
                    exact_vector_chunk_ids=retrieval[ROWS.exact_vector_chunk_ids],
                    exact_ranked_chunk_ids=retrieval[ROWS.exact_ranked_chunk_ids],
                    exact_only_requests=sorted(r for r, c in coverage.items()
                                               if c.get(COV.exact_ranked) and not c[COV.ranked]))


def _sent_line(part: AnswerView | JudgeView) -> str:
    """How many requests (and messages) of a row were kept, by short digest; `inspect --json` shows them."""
    if part.messages_sent is None:
        return "Sent: not kept (the table predates the message archive)"
    short = ", ".join(f"`{d.split(':', 1)[-1][:12]}`" for d in part.messages_digests or []) or "(none)"
    messages = sum(len(r["messages"]) for r in part.messages_sent)
    return (f"Sent: {len(part.messages_sent)} request(s), {messages} message(s) kept: {short} "
            "(`inspect --json` shows them)")


# An imported arm's answer rows without an answer (core.contract.NO_ANSWER), in words.
UNANSWERED = {"no_trace": "the system never answered this question (no trace or row of its source matched it)",
              "no_answer_span": "the system's trace of this question has no LLM span, so no answer is known"}


def completeness_line(requests: list[RequestView]) -> str:
    """This answer's completeness read two ways, each with its N of M: graded (the mean coverage of the judged
    requests that have one) and the share of the judged requests addressed."""
    judged = [r.request_judge for r in requests if r.request_judge and r.request_judge.status == "judged"]
    if not judged:
        return f"completeness of this answer: not measured (0 of {len(requests)} requests judged)"
    covered = [j.coverage for j in judged if j.coverage is not None]
    graded = (f"{sum(covered) / len(covered):.2f} (mean coverage, {len(covered)} of {len(judged)} requests judged)"
              if covered else f"- (no coverage reported, 0 of {len(judged)} requests judged)")
    share = (f"{sum(bool(j.addressed) for j in judged) / len(judged):.2f} ({len(judged)} of {len(requests)} "
             "requests judged)")
    return f"completeness of this answer: graded {graded}; share addressed {share}"


def _coverage(value: float | None) -> str:
    """A request judge's coverage (the share of the request's gold material the answer carries), or `-` (an LLM
    judge reports none; a request not judged has none)."""
    return "-" if value is None else f"{value:.2f}"


def _jurors(jurors: list[dict[str, Any]]) -> list[KeptJuror]:
    """A request's jurors, as the view holds the request_judgments row's `jurors` column (judging.panel.combine)."""
    return [KeptJuror.model_validate(j) for j in jurors]


def _juror_coverage(value: float | None) -> str:
    """A juror's coverage as _coverage, to more decimals where two would put it on the other side of an offline
    juror's threshold (0.6499 is not shown "0.65" beside a not_addressed at 0.65)."""
    if value is None:
        return "-"
    from rag_ttc_assets.judging.lexical_judge import shown_beside  # late: numpy
    from rag_ttc_assets.judging.request_judge import ADDRESS_RECALL, REQUEST_TERM_RECALL, SOFT_ADDRESS_RECALL
    return shown_beside(value, (ADDRESS_RECALL, REQUEST_TERM_RECALL, SOFT_ADDRESS_RECALL))


# Every line break str.splitlines knows (an imported row's text may hold any of them).
_LINE_BREAKS = re.compile(r"[\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]+")
_VERBATIM = ("raw_response", "error")  # shown in a fence, as the system gave them


def _md_safe(x, key: str | None = None):
    """`x` with every text made safe for one markdown table cell or line: `|` escaped, line breaks as one space.
    Text from a dataset or an imported system is untrusted: a `|` or a line break in a request must not break the
    table it sits in. The answer itself (a fenced block) is kept verbatim."""
    if isinstance(x, dict):
        return {k: (v if k in _VERBATIM else _md_safe(v, k)) for k, v in x.items()}
    if isinstance(x, list):
        return [_md_safe(v, key) for v in x]
    if isinstance(x, str):
        return _LINE_BREAKS.sub(" ", x.replace("|", "\\|"))
    return x


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks in `text`."""
    runs = [len(m) for m in re.findall(r"`+", text)]
    return "`" * max(3, max(runs, default=0) + 1)


def to_markdown(view: InspectView) -> str:
    v = InspectView.model_validate(_md_safe(view.model_dump()))
    q = v.question
    out = [f"### {q.id} in arm `{v.arm}`" + ("" if v.label_use == "none" else f" ({v.label_use})"), "",
           f"> {q.text}", "",
           f"answerable: {q.answerable}; targets: " + ", ".join(f"{t.doc_id} ({t.relevance})"
                                                                for t in map(Target.model_validate, q.targets)), "",
           "**Requests** (first failing boundary)", "", "| request | text | branch | answered | supported |",
           "|---|---|---|---|---|"]
    out += [f"| {r.id} | {r.text} | {r.branch} | {r.answered} | {r.supported} |" for r in v.requests]
    out += ["", f"**Evidence**: evidence_k {v.evidence_k}, used_runes {v.used_runes} / max_runes "
                f"{v.max_runes}, omitted {len(v.omitted_chunk_ids)}", "",
            "| rank | chunk | doc | runes | bm25 | vector | state | cited |", "|---|---|---|---|---|---|---|---|"]
    if v.withheld_chunk_ids:
        out.insert(-3, f"withheld (counterfactual): {', '.join(v.withheld_chunk_ids)}")
    for p in map(Planted.model_validate, v.planted):  # core.counterfactual's, as the admitted_contexts row holds them
        out.insert(-3, f"planted {p.chunk_id} ({p.kind}): {p.planted!r} instead of {p.original!r}")
    out += [f"| {r.rank} | {r.chunk_id} | {r.doc_id} | {r.runes} | {r.bm25_rank} | "
            f"{r.vector_rank} | {r.state} | {'yes' if r.cited else ''} |" for r in v.ranked]
    if v.ann:
        a = v.ann
        ann_ids, exact_ids = set(a.vector_chunk_ids), set(a.exact_vector_chunk_ids)
        out += ["", f"**Approximate vector index** {a.index}: ann_recall_k {a.ann_recall_k} (the share of the "
                    "exact list the approximate list kept)", "",
                "| rank | approximate (ANN) | exact (flat scan) |", "|---|---|---|"]
        for i in range(max(len(a.vector_chunk_ids), len(a.exact_vector_chunk_ids))):
            ann_id = a.vector_chunk_ids[i] if i < len(a.vector_chunk_ids) else ""
            exact_id = a.exact_vector_chunk_ids[i] if i < len(a.exact_vector_chunk_ids) else ""
            out.append(f"| {i + 1} | {ann_id}{'' if not ann_id or ann_id in exact_ids else ' (not exact)'} | "
                       f"{exact_id}{'' if not exact_id or exact_id in ann_ids else ' (missed by ANN)'} |")
        if a.exact_only_requests:
            out += ["", "Support the exact list would have ranked and the approximate one lost (missed_by_ann): "
                        + ", ".join(a.exact_only_requests)]
    if v.supply != "retrieval":
        out += ["", f"**Supply**: {v.supply}" + (f", {len(v.admitted_chunk_ids)} chunks in context"
                                                 if v.supply == "preloaded" else "")]
    if v.supply == "tool":
        out += ["", f"**Lookups** ({len(v.lookups)} calls)" if v.lookups else "**Lookups**: no call", ""]
        if v.lookups:  # the answers row's lookups, as the tool loop recorded them (stages.arm_supply)
            out += ["| call | query | results | documents |", "|---|---|---|---|"]
            out += [f"| {c.call_id} | {c.query} | {', '.join(c.result_chunk_ids) or '(empty)'} | "
                    f"{', '.join(c.result_doc_ids)} |" for c in map(LookupCall.model_validate, v.lookups)]
    unanswered = v.answer is not None and v.supply == "imported" and v.answer.status in UNANSWERED
    if unanswered and v.answer is not None:
        # The system never answered: no answer, no call, nothing sent; not a provider status.
        out += ["", f"**Answer**: none: {UNANSWERED[v.answer.status]} ({v.answer.status})"]
    elif v.answer:
        ans = v.answer
        imported = v.supply == "imported"
        origin = ((f"imported from trace {ans.trace_id}" if ans.trace_id else "imported") if imported else
                  "cache hit" if ans.cache_hit else "provider call")
        who = f"from `{ans.model}`" if ans.model else "from the system (its model not recorded)"
        # An imported answer was sent nothing by the lab: no Sent line.
        shown = (ans.raw_response or ans.error or "")[:4000]
        out += ["", f"**Answer** {who} ({origin}), " + ("status" if imported else "provider status")
                + f" {ans.status}", *([] if imported else ["", _sent_line(ans)]), "", _fence(shown), shown,
                _fence(shown)]
    if v.contract and not unanswered:  # an unanswered question has no reply to check, nor to judge
        c = v.contract
        out += ["", f"**Contract**: {c.status}" + (f" ({c.reason})" if c.reason else "")
                + (f"; JSON object parsed from: {c.parsed_from}" if c.parsed_from else "")
                + (f"; citation check: {v.answer.citation_check}"
                   if v.answer and v.answer.citation_check not in (None, "off") else "")]
    if unanswered:
        pass
    elif v.judge and v.judge.model == NO_JUDGE:
        out += ["", "**Judge**: none (the arm sets `judge: none`): faithfulness not measured: no support judge"]
    elif v.judge:
        j = v.judge
        out += ["", f"**Judge** `{j.model}`: {j.status}, faithfulness {j.faithfulness}, "
                    f"contradicts_gold {j.contradicts_gold}", "", _sent_line(j), ""]
        # The judge_verdicts row's verdicts (judging.statement_judge), as parsed.
        out += [f"- [{x.statement}] {'supported' if x.supported else 'UNSUPPORTED'}: {x.text} — {x.reason}"
                for x in map(StatementVerdict.model_validate, j.verdicts)]
    judged = [(r, r.request_judge) for r in v.requests if r.request_judge]
    if judged:
        out += ["", f"**Request judge** `{v.request_judge.model}` (the instrument: the answer text and its "
                    "citations, never the generator's own request labels)", "",
                "| request | status | addressed | verdict | coverage | excerpt cites | self-reported | reason |",
                "|---|---|---|---|---|---|---|---|"]
        out += [f"| {r.id} | {rj.status} | {rj.addressed} | "
                f"{rj.verdict} | {_coverage(rj.coverage)} | "
                f"{', '.join(rj.cited_chunk_ids or [])} | "
                f"{r.self_reported_answered}{' (overclaimed)' if r.overclaimed else ''}"
                f"{' (underclaimed)' if r.underclaimed else ''} | "
                # Not measured: the judge's fault or why its reply was refused (with the reply), in its place.
                f"{rj.reason or rj.judge_error} |" for r, rj in judged]
        out += ["", completeness_line(v.requests)]
        # A panel's jurors' kept verdicts, as the request_judgments row's `jurors` column holds them (judging.panel).
        jurors = [j.model for j in _jurors(judged[0][1].jurors)]
        if jurors:  # a panel: every juror's verdict side by side, and where they disagree
            out += ["", "**Jurors** side by side (a juror's fault is its own not-measured, never a vote)", "",
                    "| request | " + " | ".join(jurors) + " | jurors disagree |", "|---|" + "---|" * (len(jurors) + 1)]
            out += [f"| {r.id} | " + " | ".join(
                (f"{j.verdict}" + (f" (coverage {_juror_coverage(j.coverage)}"
                                   + (f", calibrated {_coverage(j.calibrated_coverage)}"
                                      if j.calibrated_coverage is not None else "") + ")"
                                   if j.coverage is not None else "")
                 if j.status == "judged" else f"not measured ({j.status})")
                for j in _jurors(rj.jurors)) + f" | {rj.jurors_disagree} |"
                for r, rj in judged]
    return "\n".join(out)
