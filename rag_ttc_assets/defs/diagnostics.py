"""Diagnostics: request-level completeness, the failure flow, and case-by-case arm comparisons; then the written
diagnosis of the sweep, in four assets: the case reports of the arms it links (`arm_reports`), the people's labels'
corrections (`label_corrections`), what it reads (`diagnosis_inputs`: every materialized arm's records and the pairs
`arm_comparisons` compared) and the rules over it (`diagnosis`). The last three hand each other typed records
(defs.io_managers): `diagnosis` takes its `DiagnosisInputs` and nothing else."""


import base64
from pathlib import Path
from typing import TYPE_CHECKING

from dagster import (AssetCheckExecutionContext, AssetCheckResult, AssetExecutionContext, MaterializeResult,
                     MetadataValue, Output, asset)

from rag_ttc_assets.adapters.report_server import report_url
from rag_ttc_assets.core import artifacts
from rag_ttc_assets.adapters.store import ArmJson, ArtifactStore, Table
from rag_ttc_assets.diagnosis.diagnosis import diagnose, md_escape
from rag_ttc_assets.diagnosis.diagnosis_inputs import DiagnosisInputs, LabelCorrections
from rag_ttc_assets.diagnosis.diagnosis_records import Diagnosis
from rag_ttc_assets.diagnosis.flow import FLOW_BRANCHES
from rag_ttc_assets.core.measured import addressed_text, graded_text
from rag_ttc_assets.core.measured import Counts, measured_text, reasons_text
from rag_ttc_assets.core.supply import LOOKUP_BRANCHES
from rag_ttc_assets.defs.meta import md_table, numbers, version_of
from rag_ttc_assets.defs.arm_registry import arm_asset, arm_check
from rag_ttc_assets.defs.resources import LabResource
from rag_ttc_assets.diagnosis import diagnosis_page as page
from rag_ttc_assets.lab import Lab
from rag_ttc_assets.labelling import human_page
from rag_ttc_assets.report.comparison_files import write_comparisons
from rag_ttc_assets.report.comparison_text import p_adjust_text
from rag_ttc_assets.defs.index_assets import unused_result
from rag_ttc_assets.diagnosis import diagnosis_inputs_stage as gather
from rag_ttc_assets.diagnosis import diagnostics_stage as stage
from rag_ttc_assets.stages import arm_supply
from rag_ttc_assets.stages.resolve import ArmInputs, case_sources
from rag_ttc_assets.imported import import_stage
from rag_ttc_assets.diagnosis.flow_plots_stage import flow_bars
from rag_ttc_assets.stages.inspect import InspectedArm, inspect_question, to_markdown
from rag_ttc_assets.judging.request_judge_stage import instrument

if TYPE_CHECKING:
    import polars as pl

    from rag_ttc_assets.report.collect import ArmViews

GROUP = "diagnostics"
FLOW = Table.FAILURE_FLOW.c  # the declared column names (core.tables)


def _views(lab_: Lab) -> "ArmViews":
    """How the case reports read each arm they show: its CaseSources resolved from `lab_` (stages.resolve), its
    tables from the store and its current run from the runs (report.collect.arm_views)."""
    from rag_ttc_assets.report.collect import arm_views  # late: polars, when the asset runs

    return lambda arm, labels: arm_views(case_sources(ArmInputs(lab_, arm)), lab_.store, lab_.runs, labels)


def _labels(lab_: Lab) -> human_page.HumanLabels | None:
    """The store's default labels file, read and checked against the lab's arms (labelling.human_page.read): the
    people's labels the sweep's assets show and correct by; None when there is none."""
    return human_page.read(lab_.store, None, arms=lab_.arms, arms_file=lab_.arms_file, datasets_dir=lab_.datasets_dir)


@arm_asset(group=GROUP, kinds={"python", "parquet"}, deps=("request_judgments", "judge_verdicts", "admitted_contexts"),
           artifact=artifacts.REQUEST_COMPLETENESS,
           writes=(Table.REQUEST_OUTCOMES, Table.QUESTION_COMPLETENESS, Table.ABSTENTION_OUTCOMES,
                   ArmJson.REQUEST_COMPLETENESS))
def request_completeness(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """Per request, by the request judge: answered, supported by cited admitted evidence, the seed's case."""
    arm = lab.inputs(context)
    cfg = arm.cfg
    inputs = stage.read_inputs(arm.store, arm.arm, cfg, arm.questions,
                               arm_supply.arm_coverage(arm.store, arm.arm, cfg, arm.questions, lambda: arm.support))
    entailment = arm.prompt("judge_entailment_prompt") if cfg.entailment_jurors else None
    d = stage.completeness(inputs, instrument(cfg, arm.prompt("judge_requests_prompt"), arm.questions, entailment))
    arm.write_table(Table.REQUEST_OUTCOMES, d.requests)
    arm.write_table(Table.QUESTION_COMPLETENESS, d.questions)
    arm.write_table(Table.ABSTENTION_OUTCOMES, d.abstentions)
    totals = d.completeness
    digest = arm.write_arm_json(ArmJson.REQUEST_COMPLETENESS, totals)
    c = arm.store.read_summary(arm.arm, ArmJson.REQUEST_COMPLETENESS)  # as written, through its model
    inst = c.request_judge
    return MaterializeResult(
        metadata={**numbers({k: v for k, v in totals.items() if v is not None and not isinstance(v, (dict, str))}),
                  "measured": f"{c.requests_measured} measured of {c.requests_total} requests"
                              + (f" (not measured: {reasons_text(c.requests_not_measured)})"
                                 if c.requests_not_measured else ""),
                  "completeness/measured": measured_text(
                      Counts(measured=c.completeness_measured, of=c.completeness_of,
                             not_measured=c.completeness_not_measured)) + " questions",
                  # Completeness read two ways, graded first (docs/judges.md), each with its N of M.
                  "completeness/graded": graded_text(c),
                  "completeness/addressed": addressed_text(c),
                  "request_judge_model": inst.model, "request_judge_prompt_digest": inst.prompt_digest,
                  "offline_baseline_judge": MetadataValue.bool(inst.offline_baseline),
                  "label_use": c.label_use,
                  "summary": md_table([{"requests_total": c.requests_total, "requests_measured": c.requests_measured,
                                        "requests_answered": c.requests_answered,
                                        "requests_supported": c.requests_supported,
                                        "questions_complete": c.questions_complete, "overclaimed": c.overclaimed,
                                        "underclaimed": c.underclaimed,
                                        "correct_abstentions": c.correct_abstentions}])},
        data_version=version_of(digest),
    )


@arm_asset(group=GROUP, kinds={"python", "parquet"}, deps=("request_completeness",),
           artifact=artifacts.FAILURE_FLOW,
           writes=(Table.FAILURE_FLOW, Table.LOOKUP_CASES, ArmJson.FAILURE_FLOW))
def failure_flow(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """Per request, the first boundary at which its support disappeared; branches add up to the total."""
    arm = lab.inputs(context)
    cfg = arm.cfg
    coverage = arm_supply.arm_coverage(arm.store, arm.arm, cfg, arm.questions, lambda: arm.support)
    d = stage.failure_flow(stage.read_inputs(arm.store, arm.arm, cfg, arm.questions, coverage))
    arm.write_table(Table.FAILURE_FLOW, d.flow)
    s = d.flow_summary
    if "lookup_flow" in s:
        arm.write_table(Table.LOOKUP_CASES, d.lookup_cases)
    digest = arm.write_arm_json(ArmJson.FAILURE_FLOW, s)
    fs = arm.store.read_summary(arm.arm, ArmJson.FAILURE_FLOW)  # as written, through its model
    lookup_md = {}
    if fs.lookup_flow is not None:  # a tool arm's lookups: per branch, its cases and their answers' qualities
        lf, by_branch = fs.lookup_flow.model_dump(), fs.lookup_flow.accounting.model_dump()
        lookup_md = {**numbers(lf, prefix="lookup/"),
                     "lookup_flow": md_table([{"branch": b, "cases": lf[b], **by_branch[b]}
                                              for b in LOOKUP_BRANCHES])}
    png = flow_bars(arm.store, {arm.arm: arm.cfg}, arm.store.arm_path(arm.arm, "failure-flow.png"))
    accounting = fs.accounting.model_dump()  # branch -> its answers' qualities, by the branch's name
    rows = [{"branch": b, "requests": s[b], **accounting[b]} for b in FLOW_BRANCHES]
    worst = _worst_cases(arm.store, arm.inspected(), d.flow)
    hit = fs.hit_rate
    return MaterializeResult(
        metadata={**numbers({b: s[b] for b in FLOW_BRANCHES}), "total": fs.total,
                  **numbers(hit.model_dump(), prefix="hit_rate/"),
                  # Every case counts (a case whose evidence never arrived is a miss), so nothing is left unmeasured.
                  "hit_rate/measured": measured_text(hit) + " questions",
                  "flow": md_table(rows), "supply": fs.supply, **lookup_md,
                  "worst_cases": MetadataValue.md(worst or "_(no failing requests)_"),
                  "plot": MetadataValue.md(_image(png)) if png else "no flow",
                  "plot_path": MetadataValue.path(str(png)) if png else ""},
        data_version=version_of(digest),
    )


def _worst_cases(store: ArtifactStore, arm: InspectedArm, flow: "pl.DataFrame", n: int = 3) -> str:
    """The `inspect` view of the questions with the most requests that did not end `ok`."""
    if flow.height == 0:
        return ""
    failing = {}
    for r in flow.iter_rows(named=True):
        failing[r[FLOW.query_id]] = failing.get(r[FLOW.query_id], 0) + (r[FLOW.branch] != "ok")
    ranked = sorted((q for q, k in failing.items() if k), key=lambda q: (-failing[q], q))[:n]
    return "\n\n---\n\n".join(to_markdown(inspect_question(store, arm, q)) for q in ranked)


def _image(path, alt: str = "failure flow") -> str:
    return f"![{alt}](data:image/png;base64,{base64.b64encode(path.read_bytes()).decode()})"


@arm_asset(group=GROUP, kinds={"python", "phoenix"}, deps=("failure_flow",), artifact=artifacts.PHOENIX_ANNOTATIONS,
           writes=(ArmJson.PHOENIX_ANNOTATIONS,))
def phoenix_annotations(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """An arm imported from Phoenix: each request's branch and request verdict, as annotations on its trace."""
    arm = lab.inputs(context)
    if not (arm.imported and arm.cfg.source.server):
        return unused_result(f"supply: {arm.cfg.supply}" + (f", source format: {arm.cfg.source.format}"
                                                            if arm.imported else "")
                             + ": not read from a Phoenix server, so there is no trace there to annotate")
    d = import_stage.annotate_phoenix(arm.store, arm.arm, arm.cfg, arm.source)
    digest = arm.write_arm_json(ArmJson.PHOENIX_ANNOTATIONS, d)
    a = arm.store.read_summary(arm.arm, ArmJson.PHOENIX_ANNOTATIONS)  # as written, through its model
    return MaterializeResult(
        metadata={"used_by_arm": MetadataValue.bool(True), "endpoint": MetadataValue.url(a.endpoint),
                  "project": a.project, "annotation_name": a.name,
                  **numbers({"annotations": a.annotations, "logged": a.logged, "not_annotated": a.not_annotated}),
                  "not_annotated_requests": MetadataValue.json(
                      [n.model_dump(mode="json") for n in a.not_annotated_requests])},
        data_version=version_of(digest),
    )


@arm_check(asset="failure_flow", description="every request lands in exactly one branch; branches add to the total")
def flow_closes(context: AssetCheckExecutionContext, lab: LabResource) -> AssetCheckResult:
    store = lab.lab().store
    s = store.read_summary(context.partition_key, ArmJson.FAILURE_FLOW)
    branches = s.model_dump(include=set(FLOW_BRANCHES))  # the branch counts, by name
    total = sum(branches[b] for b in FLOW_BRANCHES)
    lf = s.lookup_flow
    lookup_ok = lf is None or (lf.closes and lf.accounting_closes)
    return AssetCheckResult(passed=bool(s.closes and s.accounting_closes and total == s.total and lookup_ok),
                            metadata={"branches_sum": total, "total": s.total,
                                      **({"lookup_cases": lf.cases, "lookup_closes": lookup_ok} if lf else {})})


@asset(group_name=GROUP, kinds={"python", "png"}, deps=["failure_flow", "run_record"],
       code_version="comparisons/3")
def arm_comparisons(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """Paired per-case comparisons for every pair in `comparisons`, and sweep curves for every family."""
    lab_ = lab.lab()
    out_dir = lab_.store.comparisons_dir
    # The people's labels shown in the pair reports: the store's default labels file when it exists
    # (labelling.human_page).
    c = write_comparisons(lab_.store, lab_.arms, out_dir, _views(lab_), _labels(lab_))
    reports, summary, sweeps, flow_png = c.reports, c.summary, c.sweeps, c.flow_png
    pages = {f"report/{name}": MetadataValue.path(str(path)) for name, path in c.pages.items()}
    pages.update({f"report_url/{name}": MetadataValue.url(url) for name, path in c.pages.items()
                  if (url := report_url("comparisons", Path(path).name))})  # rag-ttc serve-reports
    return MaterializeResult(metadata={
        "comparisons": md_table(summary), "skipped": MetadataValue.json(c.skipped),
        # The adjustment is over every pair and metric above: significant is read on the adjusted p-value.
        "p_adjust": p_adjust_text(reports[0]) if reports else f"{lab_.arms.p_adjust} (no pair compared)",
        "sweep_plots": MetadataValue.json(sweeps), "folder": MetadataValue.path(str(out_dir)), **pages,
        # The people's labels the pair reports show (the store's default labels file, labelling.human_page): an input.
        "human_labels": MetadataValue.json(c.human_labels or {"path": None, "why": "no annotations/labels.jsonl"}),
        **({"failure_flow_plot": MetadataValue.md(_image(flow_png))} if flow_png else {}),
        **{f"sweep_{f}": MetadataValue.md(_image(Path(p), f"sweep {f}"))
           for f, p in sweeps.items()},
    })


@asset(group_name=GROUP, kinds={"python", "html"}, deps=["arm_comparisons"], code_version="arm_reports/1")
def arm_reports(context: AssetExecutionContext, lab: LabResource) -> MaterializeResult:
    """The case reports of the arms the diagnosis links (its baseline, every family's members), labels beside."""

    lab_ = lab.lab()
    arms = gather.select_arms(lab_.arms, lab_.store, all_=True)
    hl = _labels(lab_)
    pages = page.arm_reports(lab_.store, lab_.arms, arms, _views(lab_), hl)
    return MaterializeResult(metadata={
        "arms": MetadataValue.json(sorted(pages)),
        **{f"report/{a}": MetadataValue.path(str(p)) for a, p in pages.items()},
        **{f"report_url/{a}": MetadataValue.url(url) for a, p in pages.items()
           if (url := report_url("reports", p.name))},  # rag-ttc serve-reports
        # The people's labels the pages show (the store's default annotations/labels.jsonl, labelling.human_page): an input.
        "human_labels": MetadataValue.json(hl.summary() if hl else
                                           {"path": None, "why": "no annotations/labels.jsonl"})})


@asset(group_name=GROUP, kinds={"python", "json"}, deps=["arm_comparisons"], io_manager_key="records",
       code_version="label_corrections/1")
def label_corrections(context: AssetExecutionContext, lab: LabResource) -> Output[LabelCorrections]:
    """The people's labels read (the store's annotations/labels.jsonl) and the judges' differences they correct."""

    lab_ = lab.lab()
    arms = gather.select_arms(lab_.arms, lab_.store, all_=True)
    out = page.label_corrections(lab_.store, lab_.arms, arms, _labels(lab_))
    return Output(out, metadata={
        # The people's labels it read (labelling.human_page): an input, its sha256 recorded.
        "human_labels": MetadataValue.json(out.human_labels or {"path": None, "why": "no annotations/labels.jsonl"}),
        "pairs_corrected": MetadataValue.json(sorted({f"{c.a} vs {c.b}" for c in out.corrections})),
        "corrections": MetadataValue.int(len(out.corrections))})


@asset(group_name=GROUP, kinds={"python", "json"}, deps=["arm_comparisons", "arm_reports"], io_manager_key="records",
       code_version="diagnosis_inputs/1")
def diagnosis_inputs(context: AssetExecutionContext, lab: LabResource,
                     label_corrections: LabelCorrections) -> Output[DiagnosisInputs]:
    """What the diagnosis reads: every materialized arm's records, the compared pairs, the labels' corrections."""

    lab_ = lab.lab()
    arms = gather.select_arms(lab_.arms, lab_.store, all_=True)
    sweep = page.diagnosis_inputs(lab_.store, lab_.arms, arms, gather.comparisons(lab_.arms, lab_.store, arms),
                                  label_corrections)
    return Output(sweep, metadata={
        "arms": MetadataValue.json(sorted(sweep.arms)), "baseline": MetadataValue.text(sweep.baseline),
        "pairs": MetadataValue.json([f"{r.a} vs {r.b}" for r in sweep.comparisons]),
        "skipped": MetadataValue.json(sweep.skipped), "pages": MetadataValue.int(len(sweep.pages))})


@asset(group_name=GROUP, kinds={"python", "html"}, io_manager_key="diagnosis_files", code_version="diagnosis/1")
def diagnosis(context: AssetExecutionContext, diagnosis_inputs: DiagnosisInputs) -> Output[Diagnosis]:
    """The seed's written diagnosis, generated by rules: every sentence linked to its cases."""

    d = diagnose(diagnosis_inputs)
    sentences = d.sentences()
    summary = d.section("summary")
    return Output(d, metadata={
        "arms": MetadataValue.int(len(d.arms)), "pairs": MetadataValue.int(len(d.pairs)),
        "sentences": MetadataValue.int(len(sentences)),
        "claims": MetadataValue.int(sum(1 for s in sentences if s.p_adjusted is not None)),
        "summary": MetadataValue.md("\n".join(f"- {md_escape(s.text)}" for s in summary.sentences) if summary else ""),
        # The people's labels it read (the store's default annotations/labels.jsonl, labelling.human_page): an input.
        "human_labels": MetadataValue.json(d.human_labels.model_dump(exclude_unset=True) if d.human_labels
                                           else {"path": None, "why": "no annotations/labels.jsonl"})})


DIAGNOSIS_ASSETS = [arm_reports, label_corrections, diagnosis_inputs, diagnosis]
