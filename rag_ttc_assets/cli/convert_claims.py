"""`rag-ttc convert-lfqa` and `rag-ttc convert-wice`: a set of claims labelled supported / partially / not supported
against documents (core.claim_sets) written as a ready lab folder."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import yaml

from rag_ttc_assets.adapters.atomic import atomic_write_bytes
from rag_ttc_assets.adapters.input_files import load_dataset
from rag_ttc_assets.adapters.lfqa_reader import LfqaError, read_lfqa
from rag_ttc_assets.adapters.wice_reader import WiceError, read_wice
from rag_ttc_assets.cli.common import CliError, print_result
from rag_ttc_assets.core import claim_sets, lfqa, wice
from rag_ttc_assets.core.dataset import sha256_digest


def _read(args, read: Callable[..., claim_sets.ClaimSet], error: type[Exception]
          ) -> tuple[Path, Path, claim_sets.ClaimSet, list[str]]:
    src, out = Path(args.src).expanduser().resolve(), Path(args.out).expanduser().resolve()
    systems = [s.strip() for s in args.systems.split(",") if s.strip()] if args.systems else None
    judges = [s.strip() for s in args.request_judges.split(",") if s.strip()] if args.request_judges else []
    if len(judges) != len(set(judges)):
        raise CliError(f"--request-judges: a juror named twice: {args.request_judges}")
    if args.limit is not None and args.limit < 1:
        raise CliError(f"--limit: at least 1, not {args.limit}")
    try:
        return src, out, read(src, systems, args.limit), judges
    except error as e:
        raise CliError(str(e)) from None


def write_claim_set(out: Path, cs: claim_sets.ClaimSet, judges: list[str], header: str,
                    readme: Callable[[dict], str]) -> dict:
    """datasets/<name>, systems/<arm>.json, arms.yaml, README.md and labels.jsonl; the counts returned. Everything
    was read and checked before this is called; the arms file and the labels are written last."""
    corpus, evaluation, counts = claim_sets.dataset(cs)
    cbytes = (json.dumps(corpus, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    evaluation = {"corpus_digest": sha256_digest(cbytes), **evaluation}
    labels = claim_sets.labels(cs)
    counts |= claim_sets.counts(cs, labels)
    dest = out / "datasets" / cs.name
    atomic_write_bytes(dest / "corpus.json", cbytes, mode=0o644)
    atomic_write_bytes(dest / "evaluation.json",
                       (json.dumps(evaluation, ensure_ascii=False, indent=1) + "\n").encode("utf-8"), mode=0o644)
    for s in cs.systems:
        atomic_write_bytes(out / "systems" / f"{s.arm}.json",
                           json.dumps(claim_sets.system_rows(cs, s), ensure_ascii=False).encode("utf-8"), mode=0o644)
    arms = claim_sets.arms(cs, "systems", judges)
    atomic_write_bytes(out / "arms.yaml", (header + yaml.safe_dump(arms, sort_keys=False, width=120)).encode("utf-8"),
                       mode=0o644)
    atomic_write_bytes(out / "README.md", readme(counts).encode("utf-8"), mode=0o644)
    atomic_write_bytes(out / "labels.jsonl",
                       "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in labels).encode("utf-8"), mode=0o644)
    ds = load_dataset(dest)  # what was written is a valid dataset
    return {"out": str(out), **counts, "arms": [s.arm for s in cs.systems], "corpus_digest": ds.corpus_digest}


def _summary(out: Path, cs: claim_sets.ClaimSet, r: dict, what: str) -> str:
    shares = ", ".join(f"{k} {v:.3f}" for k, v in r["support_shares"].items() if v is not None)
    arms = " ".join(s.arm for s in cs.systems[:2]) + (" ..." if len(cs.systems) > 2 else "")
    return (f"wrote {out}: {r['documents']} documents and {r['questions']} questions in datasets/{cs.name}, "
            f"{r['systems']} systems as imported arms ({r['answers']} answers, {r['claims']} claims) in arms.yaml, "
            f"{r['labels']} per-claim labels in labels.jsonl ({shares}; claims by label count: "
            + ", ".join(f"{k} labels: {v}" for k, v in r["claims_by_label_count"].items()) + ").\n"
            f"{what}\n"
            f"next (README.md): cd {out}; export RAG_TTC_ARMS=$PWD/arms.yaml RAG_TTC_DATASETS=$PWD/datasets "
            f"RAG_TTC_HOME=$PWD/.rag_ttc; rag-ttc run {arms}; rag-ttc judge-agreement labels.jsonl")


def cmd_convert_lfqa(args) -> int:
    src, out, cs, judges = _read(args, read_lfqa, LfqaError)
    header = (f"# LFQA-Verification converted by `rag-ttc convert-lfqa` from {src}\n# {lfqa.CITATION}\n"
              "# Each annotated system is an imported arm; the per-claim labels are in labels.jsonl (README.md).\n")
    result = write_claim_set(out, cs, judges, header, lambda c: lfqa.readme(cs, c, str(src)))
    result["annotators"] = "positions (a1..a3), the order of a sentence's three labels, not persistent people"
    print_result(result, args.json, _summary(
        out, cs, result, "The annotators a1..a3 are positions, not persistent people; the set has no licence: "
                         "measure with it, do not publish its records (README.md in the folder)."))
    return 0


def cmd_convert_wice(args) -> int:
    src, out, cs, judges = _read(args, read_wice, WiceError)
    header = (f"# WiCE converted by `rag-ttc convert-wice` from {src}\n# {wice.CITATION}\n"
              "# One imported arm whose answers are the claims; the per-claim labels are in labels.jsonl "
              "(README.md).\n")
    result = write_claim_set(out, cs, judges, header, lambda c: wice.readme(cs, c, str(src)))
    result["annotators"] = "the set's label, one per claim: no annotator ceiling"
    print_result(result, args.json, _summary(
        out, cs, result, "One label per claim (the set's): there is no annotator ceiling (README.md in the folder)."))
    return 0


def add_parsers(sub, convert_arguments: Callable) -> None:
    s = sub.add_parser("convert-lfqa", help="LFQA-Verification (per-sentence support labels, three people) as a "
                                            "lab folder",
                       description="Convert the data/ folder of https://github.com/timchen0618/LFQA-Verification "
                                   "(Chen et al. 2023; no licence: measure, do not redistribute) into a lab folder: "
                                   "ELI5 questions and the documents the answers were given, each annotated system "
                                   "an imported arm, and every answer sentence's three supported / partially / "
                                   "not_supported labels as per-claim labels for `rag-ttc judge-agreement` "
                                   "(docs/judges.md).")
    s.add_argument("src", help="the data/ folder (annotations/, docs/)")
    convert_arguments(s, "comma-separated arm names or file stems (gpt3-wdoc,webgpt)")
    s.add_argument("--limit", type=int, help="only the first N questions (by question_id)")
    s.set_defaults(fn=cmd_convert_lfqa)

    s = sub.add_parser("convert-wice", help="WiCE (claims against their cited article) as a lab folder",
                       description="Convert the data/ folder of https://github.com/ryokamoi/wice (Kamoi et al., "
                                   "EMNLP 2023; annotations ODC-BY) into a lab folder: each claim of "
                                   "entailment_retrieval/claim/{dev,test}.jsonl a question whose answer is the claim "
                                   "and whose document is the cited article, the located supporting sentences its "
                                   "gold evidence quotes, and the set's label as a per-claim label for `rag-ttc "
                                   "judge-agreement` (docs/judges.md). One label per claim: no annotator ceiling.")
    s.add_argument("src", help="the data/ folder (entailment_retrieval/claim/)")
    convert_arguments(s, f"'{wice.ARM}', its one system")
    s.add_argument("--limit", type=int, help="only the first N claims (dev, then test)")
    s.set_defaults(fn=cmd_convert_wice)
