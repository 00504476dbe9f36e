"""The diagnosis as a page of the case report: the same self-contained HTML (report.html), whose numbers link to
the cases behind them in the pair and arm reports beside it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rag_ttc_assets.adapters.store import ArtifactStore, atomic_write_bytes
from rag_ttc_assets.labelling import human_page
from rag_ttc_assets.report.files import write_arm
from rag_ttc_assets.report.html import render
from rag_ttc_assets.report.model import finite_or_none
from rag_ttc_assets.core.arms_file import Arms
from rag_ttc_assets.diagnosis.diagnosis import diagnose
from rag_ttc_assets.diagnosis.diagnosis_inputs import DiagnosisInputs, LabelCorrections
from rag_ttc_assets.diagnosis.diagnosis_records import Diagnosis
from rag_ttc_assets.diagnosis import diagnosis_inputs_stage as stage

if TYPE_CHECKING:
    from rag_ttc_assets.report.collect import ArmViews


@dataclass(frozen=True)
class WrittenDiagnosis:
    """A diagnosis and the files it was written to (`<stem>.md`, `<stem>.json`, the page `<stem>.html`)."""

    diagnosis: Diagnosis
    md: Path
    json: Path
    html: Path
    title: str

    def paths(self) -> Iterator[tuple[str, Path]]:
        yield from (("md", self.md), ("json", self.json), ("html", self.html))


def arm_pages(store: ArtifactStore, arms_file: Arms, arms: list[str], views: ArmViews,
              labels: human_page.HumanLabels | None = None) -> dict[str, Path]:
    """One arm's case report per arm of `arms` (declared in `arms_file`, read by `views`, report.collect.ArmViews),
    under the store's reports/ (`rag-ttc report ARM` writes the same file); the people's labels beside the judges
    (`labels`, labelling.human_page.read)."""

    folder = store.root / "reports"
    folder.mkdir(parents=True, exist_ok=True)
    return {a: write_arm(store, a, arms_file[a], folder / f"{a}.html", views, labels) for a in arms}


def linked_arms(arms_file: Arms, arms: list[str], base: str) -> list[str]:
    """The arms whose case reports a diagnosis of `arms` links: its baseline and the families' members."""
    return sorted(({base} | {a for members in arms_file.families.values() for a in members}) & set(arms))


ArmPages = Callable[[list[str], human_page.HumanLabels | None], object]  # writes the named arms' case reports


def arm_reports(store: ArtifactStore, arms_file: Arms, arms: list[str], views: ArmViews,
                labels: human_page.HumanLabels | None) -> dict[str, Path]:
    """What the `arm_reports` asset writes: the case reports of the arms the sweep's diagnosis links (linked_arms,
    its baseline read as the diagnosis reads it from arm_comparisons' pair reports in `store`), read by `views`, with
    the people's `labels` (the store's default labels file, labelling.human_page.read) beside the judges; the pages."""
    compared = stage.comparisons(arms_file, store, arms)
    return arm_pages(store, arms_file, linked_arms(arms_file, arms, stage.default_baseline(arms, compared[0])), views,
                     labels)


def write_page(diagnosis: Diagnosis, path: Path, title: str) -> Path:
    """The diagnosis page: every sentence, its rule, its numbers linked to their cases, the decision table, the
    limitations and the next experiments' snippets. All text goes on the page as text (page.js)."""

    atomic_write_bytes(path, render(finite_or_none({"kind": "diagnosis", "title": title,
                                                    "diagnosis": diagnosis.to_json()})).encode("utf-8"), mode=0o644)
    return path


def label_corrections(store: ArtifactStore, arms_file: Arms, arms: list[str],
                      labels: human_page.HumanLabels | None) -> LabelCorrections:
    """What the `label_corrections` asset writes: the people's `labels` (the store's default labels file,
    labelling.human_page.read) and the judges' completeness differences they correct, over the pairs
    `arm_comparisons` compared among `arms` (declared in `arms_file`, their pair reports read from `store`)."""
    reports, _ = stage.comparisons(arms_file, store, arms)
    return human_page.corrections(store, labels, [(r.a, r.b) for r in reports])


def diagnosis_inputs(store: ArtifactStore, arms_file: Arms, arms: list[str], compared: stage.Compared,
                     corrections: LabelCorrections, baseline: str | None = None, pages: ArmPages | None = None,
                     labels: human_page.HumanLabels | None = None) -> DiagnosisInputs:
    """The sweep a diagnosis reads (the `diagnosis_inputs` asset, `rag-ttc diagnose`): `arms`' records from `store`
    (declared in `arms_file`), the pairs `compared` (stage.comparisons), the baseline, the links to the case reports
    that exist (`pages`, when given, writes those of the baseline and the families' members first, with `labels`
    beside the judges) and the people's `corrections` (label_corrections): labels reach the diagnosis only here, never
    a generator or a retrieval."""
    out_dir = store.comparisons_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    base = baseline or stage.default_baseline(arms, compared[0])
    if pages is not None:
        pages(linked_arms(arms_file, arms, base), labels)
    sweep = stage.gather(arms_file, store, arms, compared, base, stage.existing_pages(arms_file, store, arms, out_dir))
    if corrections.human_labels is None:
        return sweep
    return sweep.model_copy(update={"human_labels": corrections.human_labels,
                                    "human_corrections": corrections.corrections})


def default_title(diagnosis: Diagnosis) -> str:
    return f"Diagnosis: {len(diagnosis.arms)} arms, {len(diagnosis.pairs)} compared pairs"


def write_diagnosis(diagnosis: Diagnosis, out_dir: Path, stem: str = "diagnosis",
                    title: str | None = None) -> WrittenDiagnosis:
    """`<stem>.md`, `<stem>.json` and the page `<stem>.html` into `out_dir` (the store's comparisons/ folder), whose
    numbers link to the pair reports beside it and to the arm reports under reports/."""
    title = title or default_title(diagnosis)
    md, js = stage.write(diagnosis, out_dir, title, stem)
    return WrittenDiagnosis(diagnosis, md, js, write_page(diagnosis, out_dir / f"{stem}.html", title), title)


def diagnose_and_write(store: ArtifactStore, arms_file: Arms, arms: list[str], stem: str = "diagnosis",
                       baseline: str | None = None, title: str | None = None,
                       labels: human_page.HumanLabels | None = None,
                       recompute: Callable[[], stage.Compared] | None = None,
                       pages: ArmPages | None = None) -> WrittenDiagnosis:
    """`rag-ttc diagnose` over some arms (declared in `arms_file`, their records in `store`): what the assets
    label_corrections, diagnosis_inputs and diagnosis do, in one call. `labels`: the human labels read
    (labelling.human_page.read: the file named, else the store's default annotations/labels.jsonl when it exists;
    None: none): the arm pages show them beside the judges, and each compared pair whose arms both carry labels gets
    the judge's completeness difference corrected by them (limit.human_correction); the file's sha256 is recorded in
    the diagnosis. The pair reports are `arm_comparisons`' JSON files; a missing one is recomputed by `recompute` when
    given (stages.arm_comparisons.compare_pairs), else listed as not compared."""

    compared = stage.comparisons(arms_file, store, arms, recompute)
    corrections = human_page.corrections(store, labels, [(r.a, r.b) for r in compared[0]])
    sweep = diagnosis_inputs(store, arms_file, arms, compared, corrections, baseline, pages, labels)
    return write_diagnosis(diagnose(sweep), store.comparisons_dir, stem, title)
