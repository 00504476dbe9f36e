"""`rag-ttc labels check` and `rag-ttc labels update`: a dataset's labels against its current corpus (labelling.label_check).

Labels versions live in the dataset folder: `evaluation.json` is the version the lab reads; `labels update` keeps the
version it read, byte for byte, as `labels/evaluation.v<N>.json` (never rewritten), writes the new one as
`labels/evaluation.v<N+1>.json` with `labels/evaluation.v<N+1>.log.json` (what moved, what a person must see), and
only then makes it `evaluation.json`, if that file is still the one it read.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_ttc_assets.adapters.atomic import atomic_write_bytes
from rag_ttc_assets.cli.common import CliError, lab_from_args, text_table
from rag_ttc_assets.core.dataset import (CORPUS_FILE, EVALUATION_FILE, Problem, _decode_json, _parse,
                                         sha256_digest)
from rag_ttc_assets.labelling.label_check import (NEEDS_PERSON, PLACE_MIN, RELOCATE_MIN, CheckReport, LabelCheckError,
                                                  check_human_labels, check_labels, updated_evaluation)
from rag_ttc_assets.labelling.label_log import places, relocated
from rag_ttc_assets.core.records import Corpus, Evaluation

VERSIONS_DIR = "labels"
NEEDS_PERSON_EXIT = 3  # a label needs a person (1: the command could not run)
_VERSION = re.compile(r"evaluation\.v(\d+)\.json")


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


@dataclass(frozen=True)
class Loaded:
    """A dataset folder's labels checked (`_load`): the report, and what it was made from."""

    report: CheckReport
    evaluation_bytes: bytes
    corpus_bytes: bytes
    evaluation: dict[str, Any]  # evaluation.json as read (updated_evaluation makes the next version from it)
    documents: list[dict[str, Any]]  # corpus.json's documents as read


def _load(folder: Path, name: str) -> Loaded:
    """Check the dataset folder's labels; the report, the bytes read (evaluation, corpus), the raw evaluation and the
    corpus's documents."""
    cpath, epath = folder / CORPUS_FILE, folder / EVALUATION_FILE
    problems: list[Problem] = []
    cbytes, craw = _decode_json(cpath, _read(cpath), problems)
    ebytes, eraw = _decode_json(epath, _read(epath), problems)
    if craw is not None:
        _parse(Corpus, craw, cpath, "documents", problems)
    if eraw is not None:
        _parse(Evaluation, eraw, epath, "questions", problems)
    if problems:
        raise LabelCheckError(problems)
    documents = craw["documents"]
    report = check_labels(name, eraw, str(epath), documents, str(cpath), sha256_digest(cbytes))
    # A file edited while the check ran: the report would describe neither version; nothing is trusted or written.
    for path, data in ((epath, ebytes), (cpath, cbytes)):
        if _read(path) != data:
            raise CliError(f"{path}: changed while the labels were checked (read {sha256_digest(data)[:19]}…, now "
                           f"{sha256_digest(_read(path) or b'')[:19]}…); nothing was written: rerun the command")
    return Loaded(report, ebytes, cbytes, eraw, documents)


def check_dataset(folder: Path, name: str) -> CheckReport:
    """The dataset folder's labels checked against its corpus (`labels check`'s report; the annotation page's
    /labels-check lists its changed and gone ones)."""
    return _load(folder, name).report


DERIVED_FILE = "derived_requests.json"
NOT_CHECKED = ("human labels (judge-agreement's JSON Lines file, the annotation page's) are not checked: they are a "
               "file outside the dataset folder that `labels check` is not given")


def derived_report(folder: Path, name: str, eraw: dict, documents: list[dict], cbytes: bytes
                   ) -> CheckReport | str | None:
    """The gold quotes of the dataset's derived requests (derived_requests.json) classified like the evaluation's;
    None without such a file; a sentence when it cannot be read (`rag-ttc validate` names the problem)."""
    path = folder / DERIVED_FILE
    data = _read(path)
    if data is None:
        return None
    try:
        file = json.loads(data.decode("utf-8"))
        rows = [{"id": row["id"], "requests": row.get("requests") or [], "targets": []}
                for row in file["questions"] if row.get("status") == "derived"]
        return check_labels(f"{name} {DERIVED_FILE}", {"corpus_digest": eraw.get("corpus_digest"), "questions": rows},
                            str(path), documents, str(folder / CORPUS_FILE), sha256_digest(cbytes))
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        return (f"{path}: not checked, it cannot be read ({type(e).__name__}: {e}); `rag-ttc validate {name}` names "
                "the problem")


def _folder(args) -> tuple[Path, str]:
    lab = lab_from_args(args)
    folder = lab.dataset_dir(args.dataset)
    if not folder.is_dir():
        raise CliError(f"unknown dataset {args.dataset!r} (no folder {folder})")
    return folder, args.dataset


def _short(text: str | None, n: int = 70) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _score(score: float | None) -> str:
    return "-" if score is None else f"{score:.1f}"


def print_report(report: CheckReport, folder: Path) -> None:
    changed = report.corpus_digest != report.evaluation_corpus_digest
    print(f"dataset {report.dataset}: corpus {report.corpus_digest[:19]}…, labels made on "
          f"{report.evaluation_corpus_digest[:19]}…" + (" (the corpus changed)" if changed else " (the same corpus)"))
    print(f"thresholds: relocated by a fuzzy match >= {RELOCATE_MIN:g} (spelling fixes only); below {PLACE_MIN:g} "
          "the passage is gone")
    moved = [r for r in report.results if r.status == "relocated"]
    if moved:
        print(f"\nrelocated ({len(moved)}; `rag-ttc labels update` writes them):")
        print(text_table(["label", "how", "score", "from", "to"],
                         [[r.label, r.how, _score(r.score), r.doc_id, r.new_doc_id] for r in moved]))
    person = report.needs_person
    if person:
        print(f"\nneed a person ({len(person)}):")
        print(text_table(["label", "status", "how", "score", "document"],
                         [[r.label, r.status, r.how, _score(r.score), r.doc_id] for r in person]))
        for r in person:
            if r.status == "changed":
                print(f"\n{r.label} ({r.doc_id}), changed: [-was-] {{+now+}}\n  {r.diff}")
            elif r.status == "ambiguous":
                print(f"\n{r.label}: {_short(r.quote)!r} is in {len(r.places)} places:")
                for p in places(r.places):
                    print(f"  {p.doc_id} at {p.start}")
    for p in report.problems:
        print(f"problem: {p}")
    print(f"\n{report.dataset}: {report.summary()}")


def human_report(path: str, name: str, documents: list[dict], cbytes: bytes, folder: Path) -> CheckReport:
    """The gold quotes of a human labels file (`--human`, the annotation page's labels) against the corpus."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise CliError(f"--human {path}: cannot be read ({getattr(e, 'strerror', None) or e})") from None
    return check_human_labels(f"{name} human labels {Path(path).name}", text, path, documents,
                              str(folder / CORPUS_FILE), sha256_digest(cbytes))


def cmd_labels_check(args) -> int:
    folder, name = _folder(args)
    loaded = _load(folder, name)
    report, cbytes, eraw = loaded.report, loaded.corpus_bytes, loaded.evaluation
    derived = derived_report(folder, name, eraw, loaded.documents, cbytes)
    human = human_report(args.human, name, loaded.documents, cbytes, folder) if args.human else None
    if args.json:
        print(json.dumps({**report.to_json(),
                          "derived_requests": derived.to_json() if isinstance(derived, CheckReport) else derived,
                          **({"human_labels": human.to_json()} if human else {"not_checked": NOT_CHECKED})},
                         indent=2, ensure_ascii=False))
    else:
        print_report(report, folder)
        if isinstance(derived, CheckReport):
            print(f"\n{DERIVED_FILE} (requests derived from gold answers; `labels update` does not write them: "
                  f"`rag-ttc derive-requests {name}` derives them again from the current corpus):")
            print_report(derived, folder)
        elif derived is not None:
            print(f"\n{derived}")
        if human:
            print(f"\nhuman labels {args.human} (the gold quotes people highlighted; not written by `labels update`):")
            print_report(human, folder)
        else:
            print(f"\n{NOT_CHECKED}")
    person = report.needs_person or report.problems or (
        isinstance(derived, CheckReport) and (derived.needs_person or derived.problems)) or (
        human and (human.needs_person or human.problems))
    return NEEDS_PERSON_EXIT if person else 0


def _versions(vdir: Path) -> dict[int, Path]:
    out = {}
    for p in vdir.glob("evaluation.v*.json"):
        m = _VERSION.fullmatch(p.name)
        if m:
            out[int(m.group(1))] = p
    return out


def _create(path: Path, data: bytes) -> None:
    """Write a new file, never over an existing one (a version is written once)."""
    with open(path, "xb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def cmd_labels_update(args) -> int:
    folder, name = _folder(args)
    loaded = _load(folder, name)
    report, ebytes, eraw = loaded.report, loaded.evaluation_bytes, loaded.evaluation
    if report.problems:
        raise CliError("labels not updated:\n" + "\n".join(f"  - {p}" for p in report.problems))
    new, log = updated_evaluation(eraw, report)
    if new == eraw:
        print(f"{name}: nothing to update: {report.summary()}")
        return NEEDS_PERSON_EXIT if report.needs_person else 0
    vdir = folder / VERSIONS_DIR
    vdir.mkdir(exist_ok=True)
    versions = _versions(vdir)
    kept = next((p for p in versions.values() if p.read_bytes() == ebytes), None)
    n = max(versions, default=0) + 1
    if kept is None:  # the version read, kept byte for byte before anything replaces it
        kept = vdir / f"evaluation.v{n}.json"
        _create(kept, ebytes)
        n += 1
    path, log_path = vdir / f"evaluation.v{n}.json", vdir / f"evaluation.v{n}.log.json"
    data = (json.dumps(new, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    person = [{"label": r.label, "status": r.status, "how": r.how, "doc_id": r.doc_id, "quote": r.quote,
               "now": r.new_quote, "diff": r.diff, "places": r.places} for r in report.needs_person]
    _create(path, data)
    _create(log_path, (json.dumps({"dataset": name, "from": {"file": kept.name, "digest": sha256_digest(ebytes)},
                                   "to": {"file": path.name, "digest": sha256_digest(data)},
                                   "corpus_digest": report.corpus_digest, "summary": report.summary(),
                                   "relocated": log, "stale": person}, ensure_ascii=False, indent=1)
                       + "\n").encode("utf-8"))
    epath = folder / EVALUATION_FILE
    if _read(epath) != ebytes:
        raise CliError(f"{epath}: changed while the labels were updated; it was left as it is. The new version is "
                       f"{path} (made from {kept}); check the edit and rerun `rag-ttc labels update {name}`")
    atomic_write_bytes(epath, data)
    print(f"{name}: {report.summary()}")
    if log:
        print(text_table(["label", "how", "from", "to"], [[x.label, x.how, x.was.doc_id, x.now.doc_id]
                                                          for x in relocated(log)]))

    def rel(p: Path) -> Path:  # the dataset's own paths, as its folder names them
        return p.relative_to(folder.parent)

    print(f"written: {rel(path)} ({len(log)} relocated, {len(person)} marked stale: kept for a person, left out of "
          f"every measurement); log {rel(log_path)}; the version read is kept as {rel(kept)}; {rel(epath)} is now "
          "the new version")
    return NEEDS_PERSON_EXIT if report.needs_person else 0


def add_parser(sub, common) -> None:
    s = sub.add_parser("labels", help="check labels against the current corpus; write relocated ones to a new version",
                       description="A dataset's gold quotes and retrieval targets against its current corpus: "
                                   "fresh, relocated, changed, gone or ambiguous (docs/labels.md).")
    ls = s.add_subparsers(dest="labels_command", required=True)
    c = ls.add_parser("check", parents=[common], help="classify every label; exit 3 when one needs a person",
                      description="Classify every label of the dataset against its current corpus. Exit 0 when "
                                  f"every label is current, {NEEDS_PERSON_EXIT} when one needs a person "
                                  f"({', '.join(NEEDS_PERSON)}), 1 when the check cannot run.")
    c.add_argument("dataset", help="a dataset name in the datasets folder")
    c.add_argument("--human", metavar="LABELS",
                   help="also check the gold quotes of a human labels file (JSON Lines; `rag-ttc annotate` writes it)")
    c.add_argument("--json", action="store_true")
    c.set_defaults(fn=cmd_labels_check)
    u = ls.add_parser("update", parents=[common], help="write relocated labels to a new labels version",
                      description="Write a new labels version bound to the current corpus: relocated labels moved, "
                                  "changed, gone and ambiguous ones kept and marked stale (left out of every "
                                  "measurement), with a log of what moved. The version read is kept under "
                                  "<dataset>/labels/; nothing is overwritten.")
    u.add_argument("dataset", help="a dataset name in the datasets folder")
    u.set_defaults(fn=cmd_labels_update)
