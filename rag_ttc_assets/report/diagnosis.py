"""The diagnosis as a page of the case report: the same self-contained HTML (report.html), whose numbers link to
the cases behind them in the pair and arm reports beside it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from rag_ttc_assets.adapters.store import atomic_write_bytes
from rag_ttc_assets.report import human
from rag_ttc_assets.report.files import write_arm
from rag_ttc_assets.report.html import render
from rag_ttc_assets.report.model import finite_or_none
from rag_ttc_assets.core.arms_file import Arms
from rag_ttc_assets.core.diagnosis import diagnose
from rag_ttc_assets.core.diagnosis_records import Diagnosis
from rag_ttc_assets.stages import diagnosis as stage


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


def arm_pages(lab, arms: list[str], labels=None) -> dict[str, Path]:
    """One arm's case report per arm, under the store's reports/ (`rag-ttc report ARM` writes the same file); the
    people's labels beside the judges (`labels`, report.human)."""

    folder = lab.store.root / "reports"
    folder.mkdir(parents=True, exist_ok=True)
    return {a: write_arm(lab, a, folder / f"{a}.html", labels) for a in arms}


def linked_arms(arms_file: Arms, arms: list[str], base: str) -> list[str]:
    """The arms whose case reports a diagnosis of `arms` links: its baseline and the families' members."""
    return sorted(({base} | {a for members in arms_file.families.values() for a in members}) & set(arms))


ArmPages = Callable[[list[str], human.HumanLabels | None], object]  # writes the named arms' case reports


def arm_reports(lab, arms: list[str]) -> tuple[dict[str, Path], human.HumanLabels | None]:
    """What the `arm_reports` asset writes: the case reports of the arms the sweep's diagnosis links (linked_arms,
    its baseline read as the diagnosis reads it from arm_comparisons' pair reports), with the store's default
    labels file beside the judges; the pages and the labels read."""
    hl = human.read(lab, None)
    compared = stage.comparisons(lab.arms, lab.store, arms)
    return arm_pages(lab, linked_arms(lab.arms, arms, stage.default_baseline(arms, compared[0])), hl), hl


def write_page(diagnosis: Diagnosis, path: Path, title: str) -> Path:
    """The diagnosis page: every sentence, its rule, its numbers linked to their cases, the decision table, the
    limitations and the next experiments' snippets. All text goes on the page as text (page.js)."""

    atomic_write_bytes(path, render(finite_or_none({"kind": "diagnosis", "title": title,
                                                    "diagnosis": diagnosis.to_json()})).encode("utf-8"), mode=0o644)
    return path


def diagnose_and_write(lab, arms: list[str], stem: str = "diagnosis", baseline: str | None = None,
                       title: str | None = None, labels=None, recompute: Callable[[], stage.Compared] | None = None,
                       pages: ArmPages | None = None) -> WrittenDiagnosis:
    """Everything a diagnosis writes into the store's comparisons/ folder: `<stem>.md`, `<stem>.json` and the page
    `<stem>.html`, whose numbers link to the pair reports beside it and to the arm reports under reports/ that exist
    (`pages`, when given, writes those of the baseline and the families' members first: `rag-ttc diagnose`; the
    `diagnosis` asset links those its upstream `arm_reports` wrote). `labels`: the human labels file (None:
    the store's default annotations/labels.jsonl when it exists, report.human): the arm pages show them beside the
    judges, and each compared pair whose arms both carry labels gets the judge's completeness difference corrected
    by them (limit.human_correction); the file's sha256 is recorded in the diagnosis. Returns the diagnosis and
    the paths. The pair reports are `arm_comparisons`' JSON files; a missing one is recomputed by `recompute`
    when given (`rag-ttc diagnose` over some arms: stages.comparisons.compare_pairs), else listed as not compared
    (the asset, downstream of arm_comparisons)."""

    store, arms_file = lab.store, lab.arms  # loaded here and handed in: the diagnosis' stages take no lab
    out_dir = store.comparisons_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    hl = human.read(lab, labels)
    compared = stage.comparisons(arms_file, store, arms, recompute)
    base = baseline or stage.default_baseline(arms, compared[0])
    if pages is not None:
        pages(linked_arms(arms_file, arms, base), hl)
    sweep = stage.gather(arms_file, store, arms, compared, base, stage.existing_pages(arms_file, store, arms, out_dir))
    if hl is not None:  # labels reach the diagnosis only here, never a generator or a retrieval
        sweep = sweep.model_copy(update={
            "human_labels": hl.summary(),
            "human_corrections": human.pair_corrections(lab, hl, [(r.a, r.b) for r in sweep.comparisons])})
    result = diagnose(sweep)
    title = title or f"Diagnosis: {len(arms)} arms, {len(sweep.comparisons)} compared pairs"
    md, js = stage.write(result, out_dir, title, stem)
    return WrittenDiagnosis(result, md, js, write_page(result, out_dir / f"{stem}.html", title), title)
