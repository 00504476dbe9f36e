"""The diagnosis as a page of the case report: the same self-contained HTML (report.html), whose numbers link to
the cases behind them in the pair and arm reports beside it."""

from __future__ import annotations

from pathlib import Path

from rag_ttc_assets.adapters.store import atomic_write_bytes
from rag_ttc_assets.report.files import write_arm
from rag_ttc_assets.report.html import render
from rag_ttc_assets.report.model import finite_or_none
from rag_ttc_assets.core.diagnosis import diagnose
from rag_ttc_assets.stages import diagnosis as stage


def arm_pages(lab, arms: list[str]) -> dict[str, Path]:
    """One arm's case report per arm, under the store's reports/ (`rag-ttc report ARM` writes the same file)."""

    folder = lab.store.root / "reports"
    folder.mkdir(parents=True, exist_ok=True)
    return {a: write_arm(lab, a, folder / f"{a}.html") for a in arms}


def write_page(diagnosis: dict, path: Path, title: str) -> Path:
    """The diagnosis page: every sentence, its rule, its numbers linked to their cases, the decision table, the
    limitations and the next experiments' snippets. All text goes on the page as text (page.js)."""

    atomic_write_bytes(path, render(finite_or_none({"kind": "diagnosis", "title": title,
                                                    "diagnosis": diagnosis})).encode("utf-8"), mode=0o644)
    return path


def diagnose_and_write(lab, arms: list[str], stem: str = "diagnosis", baseline: str | None = None,
                       title: str | None = None, with_arm_pages: bool = True) -> dict:
    """Everything a diagnosis writes into the store's comparisons/ folder: `<stem>.md`, `<stem>.json` and the page
    `<stem>.html`, whose numbers link to the pair reports beside it and to the arm reports under reports/ (written
    here for the baseline and the families' members when `with_arm_pages`). Returns the diagnosis and the paths."""

    out_dir = lab.store.comparisons_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    reports, _ = stage.comparisons(lab, arms)
    base = baseline or stage.default_baseline(lab, arms, reports)
    if with_arm_pages:
        linked = {base} | {a for members in lab.arms.families.values() for a in members if a in arms}
        arm_pages(lab, sorted(linked & set(arms)))
    sweep = stage.gather(lab, arms, base, stage.existing_pages(lab, arms, out_dir))
    result = diagnose(sweep)
    title = title or f"Diagnosis: {len(arms)} arms, {len(sweep['comparisons'])} compared pairs"
    paths = stage.write(result, out_dir, title, stem)
    paths["html"] = write_page(result, out_dir / f"{stem}.html", title)
    return {"diagnosis": result, "paths": paths, "title": title}
