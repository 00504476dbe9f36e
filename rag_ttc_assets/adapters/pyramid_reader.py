"""Read a Lite2-3Pyramid data folder (https://github.com/ZhangShiyue/Lite2-3Pyramid: `data/PyrXSum`, `data/REALSumm`)
into core.realsumm.RealSumm, checking every file.

What is read (paths relative to the folder), one example a line, line i of every file being example i:

  ids.txt                   the example ids
  documents.txt             the source documents
  references.txt            the reference summaries
  SCUs.txt                  the reference's SCUs, tab-separated (empty fields, a trailing tab, dropped)
  summaries/<system>.summary  the system's summaries
  labels/<system>.label     0/1 SCU-presence labels, tab-separated, in SCUs.txt order (1: present)

Bad input is a ValueError (PyramidError) naming the file, the line (1-based) and the field.
"""

from __future__ import annotations

from pathlib import Path

from rag_ttc_assets.adapters.input_files import read_text
from rag_ttc_assets.core.arms_file import ARM_NAME
from rag_ttc_assets.core.pyramid import arm_name, fields
from rag_ttc_assets.core.realsumm import Label, RealSumm, Scu, SystemSummaries, clean

IDS, DOCUMENTS, REFERENCES, SCUS = "ids.txt", "documents.txt", "references.txt", "SCUs.txt"
SUMMARIES, LABELS = ("summaries", ".summary"), ("labels", ".label")
VALUES = {"0": False, "1": True}


class PyramidError(ValueError):
    """A data folder that cannot be converted: the message names the file, the line and the field."""


def _lines(path: Path, n: int | None = None, what: str = "") -> list[str]:
    """The file's lines (split on newlines only; a final newline or none), `n` of them when given (one `what` a
    line)."""
    text = read_text(path, PyramidError, " (is this a data folder of Lite2-3Pyramid, data/PyrXSum?)")
    lines = [x.rstrip("\r") for x in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    if n is not None and len(lines) != n:
        problem = "missing" if len(lines) < n else "one line too many"
        raise PyramidError(f"{path}: line {min(len(lines), n) + 1}: field '{what}': {problem} ({len(lines)} lines, "
                           f"{n} expected: one per line of {IDS}, in its order)")
    return lines


def _texts(path: Path, n: int, what: str) -> list[str]:
    out = [clean(x) for x in _lines(path, n, what)]
    for i, x in enumerate(out, 1):
        if not x:
            raise PyramidError(f"{path}: line {i}: field '{what}': empty")
    return out


def read_ids(root: Path) -> list[str]:
    path = root / IDS
    ids, seen = [], {}
    for i, line in enumerate(_lines(path), 1):
        x = line.strip()
        if not x:
            raise PyramidError(f"{path}: line {i}: field 'id': empty")
        if x in seen:
            raise PyramidError(f"{path}: line {i}: field 'id': {x!r} already on line {seen[x]}")
        seen[x] = i
        ids.append(x)
    if not ids:
        raise PyramidError(f"{path}: no ids")
    return ids


def system_files(root: Path) -> dict[str, tuple[Path, Path]]:
    """Arm name -> (summary file, label file); every summary file with its label file and back."""
    found = {}
    for folder, ext in (SUMMARIES, LABELS):
        d = root / folder
        if not d.is_dir():
            raise PyramidError(f"{d}: folder not found (is this a data folder of Lite2-3Pyramid, data/PyrXSum?)")
        found[folder] = {p.name[:-len(ext)]: p for p in sorted(d.iterdir()) if p.name.endswith(ext) and p.is_file()}
    summaries, labels = found[SUMMARIES[0]], found[LABELS[0]]
    for stem, p in summaries.items():
        if stem not in labels:
            raise PyramidError(f"{p}: no label file {LABELS[0]}/{stem}{LABELS[1]} for this system's summaries")
    for stem, p in labels.items():
        if stem not in summaries:
            raise PyramidError(f"{p}: no summary file {SUMMARIES[0]}/{stem}{SUMMARIES[1]} for this system's labels")
    out: dict[str, tuple[Path, Path]] = {}
    for stem, p in summaries.items():
        arm = arm_name(stem)
        if not ARM_NAME.fullmatch(arm):
            raise PyramidError(f"{p}: the system name {stem!r} spelled as an arm name, {arm!r}, is not a valid "
                               "partition key ([a-z0-9-]+): rename the summary and label files")
        if arm in out:
            raise PyramidError(f"{p}: system {stem!r} is arm {arm!r}, as is {out[arm][0]}")
        out[arm] = (p, labels[stem])
    if not out:
        raise PyramidError(f"{root / SUMMARIES[0]}: no *{SUMMARIES[1]} files")
    return out


def read_system(arm: str, summary_file: Path, label_file: Path, ids: list[str], scus: dict[str, list[Scu]]
                ) -> SystemSummaries:
    system = SystemSummaries(arm, str(summary_file))
    texts = _texts(summary_file, len(ids), "summary")
    for i, (a, text, line) in enumerate(zip(ids, texts, _lines(label_file, len(ids), "labels"), strict=True), 1):
        system.summaries[a] = text
        values = line.rstrip("\t\r ").split("\t") if line.strip() else []
        for k, v in enumerate(values, 1):
            if v.strip() not in VALUES:
                raise PyramidError(f"{label_file}: line {i}: field 'label {k}': {v!r}, 0 (absent) or 1 (present)")
        if len(values) != len(scus[a]):
            what = f"{len(scus[a])} SCUs" if scus[a] else "no SCU"
            raise PyramidError(f"{label_file}: line {i}: field 'labels': {len(values)} labels, but line {i} of "
                               f"{SCUS} (example {a}) has {what}")
        system.labels[a] = [Label(s.id, VALUES[v.strip()], 1) for s, v in zip(scus[a], values, strict=True)]
    return system


def read_pyramid(root: Path, systems: list[str] | None = None) -> RealSumm:
    """The whole folder, or only the named systems (arm names, or the files' stems): an unknown name is an error
    listing the known ones."""
    ids = read_ids(root)
    documents = dict(zip(ids, _texts(root / DOCUMENTS, len(ids), "document"), strict=True))
    references = dict(zip(ids, _texts(root / REFERENCES, len(ids), "reference"), strict=True))
    scus = {a: [Scu(str(k), t) for k, t in enumerate(fields(line), 1)]
            for a, line in zip(ids, _lines(root / SCUS, len(ids), "SCUs"), strict=True)}
    files = system_files(root)
    if systems:
        unknown = [s for s in systems if s not in files and arm_name(s) not in files]
        if unknown:
            raise PyramidError(f"--systems: unknown system {unknown[0]!r}; the systems are {', '.join(files)}")
        wanted = {arm_name(s) for s in systems}
        files = {arm: f for arm, f in files.items() if arm in wanted}
    out = [read_system(arm, s, lab, ids, scus) for arm, (s, lab) in sorted(files.items())]
    return RealSumm(documents, references, scus, out)
