"""The written diagnosis of a sweep: gather what the arms recorded and the pairs `arm_comparisons` compared into
diagnosis.diagnosis_inputs' records, hand them to diagnosis.diagnosis, and write diagnosis.md and diagnosis.json into the
store's comparisons/ folder.

Each function takes what it reads (the arms file, the store, an arm's config), never the lab: the asset and the CLI
(through diagnosis.diagnosis_page) load them and hand them in. The paired comparisons are `arm_comparisons`' own (its JSON
files, p-values adjusted over every pair and metric of the arms file). The `diagnosis` asset reads only those: a
pair whose JSON is missing is listed as not compared (materialize `arm_comparisons`). `rag-ttc diagnose` over some
arms recomputes them when one is missing, exactly as that asset computes them (`recompute`:
stages.arm_comparisons.compare_pairs), never by a second statistics path.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from rag_ttc_assets.adapters.store import ArmJson, ArtifactStore, Table, atomic_write_bytes
from rag_ttc_assets.core import compare_guards
from rag_ttc_assets.diagnosis import diagnosis as core
from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.core.arms_file import Arms
from rag_ttc_assets.core.compare_records import PairReport, read_pair_report
from rag_ttc_assets.diagnosis.diagnosis_inputs import ArmRecord, DiagnosisInputs, Family
from rag_ttc_assets.diagnosis.diagnosis_records import Diagnosis
from rag_ttc_assets.diagnosis.flow import FLOW_BRANCHES
from rag_ttc_assets.core.summaries import generator_label, generator_models, is_offline_baseline

FLOW = Table.FAILURE_FLOW.c  # the declared column names (core.tables)


class DiagnosisError(LookupError):
    """Nothing to diagnose: the arms named are unknown or not materialized (names them)."""


def materialized(store: ArtifactStore, arm: str) -> bool:
    """The arm's diagnostics exist (its failure flow and completeness were written)."""
    return all(store.arm_path(arm, name).exists() for name in (ArmJson.FAILURE_FLOW, ArmJson.REQUEST_COMPLETENESS,
                                                               ArmJson.CONTRACT_SUMMARY))


def select_arms(arms_file: Arms, store: ArtifactStore, arms: list[str] | None = None, family: str | None = None,
                all_: bool = False) -> list[str]:
    """The arms a diagnosis reads: those named, a family's members, or every materialized arm (--all)."""
    names: list[str] = []
    for a in arms or []:
        arms_file[a]  # unknown: ArmsError naming the arms file
        names.append(a)
    if family:
        names += [a for a in arms_file.family(family) if a not in names]
    if all_:
        names += [a for a in arms_file.names if a not in names]
    if not names:
        raise DiagnosisError("name arms, a family (--family F) or every materialized arm (--all)")
    done = [a for a in names if materialized(store, a)]
    missing = [a for a in names if a not in done]
    if (arms or family) and not all_ and missing and not done:
        raise DiagnosisError(f"no diagnostics for {', '.join(missing)} in {store.root}: run `rag-ttc run "
                             f"{' '.join(missing)}` first")
    return done


def arm_record(store: ArtifactStore, cfg: ArmConfig, arm: str) -> ArmRecord:
    """What diagnosis.diagnosis reads of one arm (`cfg`, its configuration): its typed summaries' numbers (failure flow,
    contract, retrieval, admission, completeness) and the cases and requests of each flow branch."""
    flow = store.read_summary(arm, ArmJson.FAILURE_FLOW)
    contract = store.read_summary(arm, ArmJson.CONTRACT_SUMMARY)
    completeness = store.read_summary(arm, ArmJson.REQUEST_COMPLETENESS)
    retrieval = store.read_summary(arm, ArmJson.RETRIEVAL_SUMMARY).summary
    admission = store.read_summary(arm, ArmJson.ADMISSION_SUMMARY)
    cases: dict[str, set[str]] = {b: set() for b in FLOW_BRANCHES}
    requests: dict[str, list[str]] = {b: [] for b in FLOW_BRANCHES}
    for r in store.read_table(arm, Table.FAILURE_FLOW).iter_rows(named=True):
        cases[r[FLOW.branch]].add(r[FLOW.query_id])
        requests[r[FLOW.branch]].append(r[FLOW.request_id])
    judge = completeness.request_judge
    # An imported arm's generator is the system's own, as its answer rows name it (core.summaries.generator_models).
    answer_models = store.read_table(arm, Table.ANSWERS)[Table.ANSWERS.c.model].to_list()
    generators = generator_models(cfg, answer_models)
    return ArmRecord(
        label_use=cfg.label_use, question_set=cfg.question_set,
        generator_model=generator_label(cfg, answer_models), request_judge_model=judge.model,
        offline_generator=bool(generators) and all(is_offline_baseline(m) for m in generators),
        offline_judge=judge.offline_baseline or is_offline_baseline(cfg.judge.model),
        same_model=cfg.judge.model in generators or judge.model in generators,
        requests_derived=judge.requests_derived is not None,  # the request judge's derivation (null: annotated)
        flow={b: getattr(flow, b) for b in FLOW_BRANCHES}, flow_total=flow.total,
        flow_cases={b: sorted(v) for b, v in cases.items()}, flow_requests={b: sorted(v) for b, v in requests.items()},
        omitted_by_context=flow.omitted_by_context, valid=contract.valid, recall_10=retrieval.recall_10,
        admission_coverage=admission.admission_coverage,
        requests_measured=completeness.requests_measured, requests_total=completeness.requests_total,
        requests_supported=completeness.requests_supported,
        graded_completeness=completeness.graded_completeness, requests_graded=completeness.requests_graded,
        requests_answered_share=completeness.requests_answered_share)


Compared = tuple[list[PairReport], list[str]]  # the pair reports, and the pairs not compared with why


def comparisons(arms_file: Arms, store: ArtifactStore, arms: list[str],
                recompute: Callable[[], Compared] | None = None) -> Compared:
    """The pairs of `comparisons` among `arms`, as arm_comparisons wrote them (adjusted over its whole family), or
    recomputed as it computes them (`recompute`, every pair of the arms file) when a pair's JSON is missing; and
    the pairs not compared, with why (without `recompute`, a missing JSON is one of them). A stored pair report is
    read through its model: a file with a wrong or missing field fails naming the file and the field
    (core.compare_records.PairReportError)."""
    wanted = [(a, b) for a, b in arms_file.comparisons if a in arms and b in arms]
    out_dir = store.comparisons_dir
    paths = [out_dir / f"{a}--{b}.json" for a, b in wanted]
    if recompute is None or all(p.exists() for p in paths):
        reports = [read_pair_report(p.read_text(), str(p)) for p in paths if p.exists()]
        skipped: list[str] = [f"{a} vs {b}: no pair report in {out_dir}: materialize arm_comparisons"
                              for (a, b), p in zip(wanted, paths) if not p.exists()]
    else:
        reports, skipped = recompute()
        reports = [r for r in reports if (r.a, r.b) in wanted]
        skipped = [s for s in skipped if tuple(s.split(":")[0].split(" vs ")) in wanted]
    missing = [f"{a} vs {b}: not materialized" for a, b in arms_file.comparisons
               if (a in arms) != (b in arms) and (a in arms or b in arms)]
    return reports, skipped + missing


def default_baseline(arms: list[str], reports: list[PairReport]) -> str:
    """The arm whose failure flow the summary reads: `baseline` when diagnosed, else the first compared pair's
    first arm, else the first arm."""
    if "baseline" in arms:
        return "baseline"
    return reports[0].a if reports else arms[0]


def families(arms_file: Arms, arms: list[str]) -> dict[str, Family]:
    """The arms file's families with a diagnosed member, restricted to the diagnosed arms."""
    out = {}
    for name, members in arms_file.families.items():
        chosen = [a for a in members if a in arms]
        if not chosen:
            continue
        spec = arms_file.family_specs[name]
        out[name] = Family(parameter=spec.parameter, members=chosen, missing=[a for a in members if a not in arms],
                           value_of={a: getattr(arms_file[a], spec.parameter) for a in chosen})
    return out


def gather(arms_file: Arms, store: ArtifactStore, arms: list[str], compared: Compared, baseline: str | None = None,
           pages: dict[str, str] | None = None) -> DiagnosisInputs:
    """The sweep diagnosis.diagnosis.diagnose reads: `arms`' records, their families, the pairs `compared` among them
    (`comparisons`), the baseline and the links to the case reports (`pages`)."""
    reports, skipped = compared
    return DiagnosisInputs(
        arms={a: arm_record(store, arms_file[a], a) for a in arms}, families=families(arms_file, arms),
        comparisons=reports, skipped=skipped, baseline=baseline or default_baseline(arms, reports),
        alpha=arms_file.alpha, p_adjust=arms_file.p_adjust, pages=pages or {},
        all_configs={a: compare_guards._flatten(arms_file[a].model_dump(mode="json")) for a in arms_file.names})


def existing_pages(arms_file: Arms, store: ArtifactStore, arms: list[str], out_dir: Path) -> dict[str, str]:
    """Links (relative to `out_dir`, where the diagnosis is written) to the case reports that exist: each compared
    pair's beside its JSON, each arm's under reports/."""
    pages = {}
    for a, b in arms_file.comparisons:
        if (out_dir / f"{a}--{b}.html").exists():
            pages[f"pair:{a}--{b}"] = f"{a}--{b}.html"
    for a in arms:
        if (store.root / "reports" / f"{a}.html").exists():
            pages[f"arm:{a}"] = f"../reports/{a}.html"
    return pages


def write(diagnosis: Diagnosis, out_dir: Path, title: str, stem: str = "diagnosis") -> tuple[Path, Path]:
    """`<stem>.md` and `<stem>.json` (diagnosis.md, diagnosis.json) into `out_dir`; their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    md, js = out_dir / f"{stem}.md", out_dir / f"{stem}.json"
    atomic_write_bytes(js, json.dumps(diagnosis.to_json(), indent=1, ensure_ascii=False).encode("utf-8"), mode=0o644)
    atomic_write_bytes(md, core.to_markdown(diagnosis, title).encode("utf-8"), mode=0o644)
    return md, js
