"""`rag-ttc validate`, `arms`, `metrics`, `import-beir`, `import-outputs`, `convert-realsumm`, `convert-pyramid`:
the inputs, checked and converted."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from rag_ttc_assets.adapters.atomic import atomic_write_bytes
import yaml

from rag_ttc_assets.adapters.input_files import load_dataset, read_text
from rag_ttc_assets.adapters.pyramid_reader import PyramidError, read_pyramid
from rag_ttc_assets.adapters.realsumm_reader import RealSummError, read_realsumm
from rag_ttc_assets.cli.common import CliError, lab_from_args, print_result, text_table
from rag_ttc_assets.core import pyramid, realsumm
from rag_ttc_assets.core.arms import ENTAILMENT
from rag_ttc_assets.core.artifacts import fields_not_read
from rag_ttc_assets.core.beir import BEIR_FILES, convert
from rag_ttc_assets.core.convert_records import ConvertedSet, ImportCounts
from rag_ttc_assets.core.dataset import (CORPUS_FILE, EVALUATION_FILE, DatasetError, dataset_counts,
                                         dataset_name_problem, labels_line, parse_dataset, sha256_digest)
from rag_ttc_assets.core.request_derivation import DERIVED_FILE
from rag_ttc_assets.core.metrics import DEFAULT_MEASURES, MeasureError
from rag_ttc_assets.core.trec_files import parse_qrels, parse_run
from rag_ttc_assets.imported.import_mapping import dataset_from_rows
from rag_ttc_assets.imported.import_source import ImportSourceError, read_source


def cmd_validate(args) -> int:
    try:
        ds = load_dataset(Path(args.dir))
    except DatasetError as e:
        if args.json:
            print(json.dumps({"valid": False, "problems": [str(p) for p in e.problems]}, indent=2))
        else:
            print(str(e), file=sys.stderr)
        return 1
    counts = dataset_counts(ds)
    text = (f"valid: {args.dir}: " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in counts.items())
            + f"; corpus {ds.corpus_digest[:19]}…")
    if ds.labels.get("excluded"):  # labels a check marked stale: left out of what the lab measures, and said so
        text += "\n" + labels_line(ds.labels)
    print_result({"valid": True, "corpus_digest": ds.corpus_digest, **counts, "labels": ds.labels}, args.json, text)
    return 0


def cmd_arms(args) -> int:
    lab = lab_from_args(args)
    arms = lab.arms
    names = arms.family(args.family) if args.family else arms.names
    if args.json:
        # fields_not_read: the settings an imported arm carries (defaults) and never reads.
        print(json.dumps({n: {**arms[n].model_dump(mode="json"), "fields_not_read": sorted(fields_not_read(arms[n]))}
                          for n in names}, indent=2))
        return 0
    fields = ["chunk_runes", "overlap_runes", "retrieval", "retrieve_k", "evidence_k", "context_runes",
              "evidence_order", "supply", "prompt", "generator", "judge", "request_judges"]
    rows, unread, imported = [], set(), []
    for n in names:
        c = arms[n]
        skip = fields_not_read(c)
        supply = c.supply if c.supply != "tool" else (
            f"tool top{c.lookup_top_n}" + (" +index" if c.title_index else "") + (" +check" if c.citation_check else ""))
        if c.supply == "imported":
            imported.append(n)
            supply = f"imported: {c.source.label} ({c.source.format})"
        # A juror of kind entailment (one request per call, judging.entailment) is named with its kind.
        named = [j.model + (f" [{j.kind}]" if j.kind == ENTAILMENT else "")
                 for j in c.request_judges or [c.request_judge]]
        panel = ", ".join(named) + f" ({c.request_judge_aggregation})" if c.request_judges else named[0]
        values = [c.chunk_runes, c.overlap_runes, c.retrieval, c.retrieve_k, c.evidence_k, c.context_runes,
                  c.evidence_order, supply, c.prompt, c.generator.model, c.judge.model, panel]
        unread |= {f for f in fields if f in skip}
        rows.append([n, *("n/a" if f in skip else v for f, v in zip(fields, values))])
    print(text_table(["arm", *fields], rows))
    if imported:
        shown = [f for f in fields if f in unread]
        rest = len(set().union(*(fields_not_read(arms[n]) for n in imported)) - set(shown))
        print(f"\nn/a: a setting the imported arms ({', '.join(imported)}) never read, their retrieval, contexts and "
              f"answers being their source's: {', '.join(shown)}"
              + (f", and {rest} more (`rag-ttc arms --json`: fields_not_read)" if rest else ""))
    if not args.family and arms.families:
        print("\nfamilies: " + "; ".join(f"{f}: {', '.join(m)}" for f, m in arms.families.items()))
    return 0


def cmd_metrics(args) -> int:
    from rag_ttc_assets.adapters.trec_eval import evaluate  # late: pytrec_eval loads only when this runs

    qrels = parse_qrels(_read(args.qrels), args.qrels)
    run = parse_run(_read(args.run), args.run)
    try:
        result = evaluate(qrels, run, args.measures or DEFAULT_MEASURES, complete=args.complete)
    except MeasureError as e:
        raise CliError(f"-m: {e}") from None
    out = {"measures": result.measures, "evaluated": result.evaluated,
           "undefined": len(result.undefined_query_ids), "undefined_query_ids": result.undefined_query_ids,
           **({"per_query": result.per_query} if args.per_query else {})}
    print(json.dumps(out, indent=2, sort_keys=True))
    return 0


def _read(path: str) -> str:
    return read_text(path, CliError)


def cmd_import_beir(args) -> int:
    src, dest = Path(args.src), Path(args.dest)
    texts = {name: _read(str(src / name)) for name in (*BEIR_FILES, f"qrels/{args.split}.tsv")}
    corpus, evaluation, report = convert(texts, str(src), args.split, args.drop_missing)
    cbytes = (json.dumps(corpus, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    digest = sha256_digest(cbytes)
    evaluation = {"corpus_digest": digest, **evaluation}
    # The corpus first, the evaluation last: a folder with only a corpus is visibly incomplete.
    atomic_write_bytes(dest / "corpus.json", cbytes)
    atomic_write_bytes(dest / "evaluation.json",
                       (json.dumps(evaluation, ensure_ascii=False, indent=1) + "\n").encode("utf-8"))
    out = {"dest": str(dest), "documents": report.documents, "questions": report.questions,
           "judgments": report.judgments, "dropped_missing": report.dropped_missing,
           "corpus_digest": digest}
    print_result(out, args.json, f"imported {report.documents} documents, {report.questions} questions, "
                           f"{report.judgments} judgments ({report.dropped_missing} dropped: missing document) "
                           f"into {dest}")
    return 0


def cmd_import_outputs(args) -> int:
    """RAGChecker or RAGAS rows as a dataset: the corpus from their retrieved contexts, their questions with gold
    answers (imported.import_mapping.dataset_from_rows); an imported arm over that dataset reads the same file. A question
    with a gold answer has no requests of its own: they are derived from its gold answer (the offline rule when the
    dataset loads; `rag-ttc derive-requests` writes them). Nothing is written unless the dataset it makes validates."""

    src, dest = Path(args.src), Path(args.dest)
    if not src.is_file():
        raise CliError(f"{src}: file not found")
    try:
        rows = read_source(src.read_bytes(), str(src), args.format)
        corpus, evaluation, made = dataset_from_rows(rows, str(src), args.format)
    except ImportSourceError as e:
        raise CliError(str(e)) from None
    counts = ImportCounts.model_validate(made)
    cbytes = (json.dumps(corpus, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    digest = sha256_digest(cbytes)
    evaluation = {"corpus_digest": digest, **evaluation}
    ebytes = (json.dumps(evaluation, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    try:  # the dataset as `validate` will read it (its derived requests by the offline rule), before any write
        parse_dataset(dest.name, dest / CORPUS_FILE, dest / EVALUATION_FILE, cbytes, ebytes)
    except DatasetError as e:
        raise CliError(f"{src}: the dataset it makes would not validate, so nothing was written: {e}") from None
    stale = _stale_derived(dest, sha256_digest(ebytes))
    if stale:  # the new evaluation would make it stale: `validate` would then refuse the dataset
        raise CliError(f"{src}: nothing was written: {stale}")
    # Nothing is written unless the whole file read; the corpus first, the evaluation last.
    atomic_write_bytes(dest / CORPUS_FILE, cbytes)
    atomic_write_bytes(dest / EVALUATION_FILE, ebytes)
    arm = {"dataset": dest.name, "supply": "imported",
           "source": {"file": str(src), "format": args.format, "answer_format": "free_text"}}
    out = {"dest": str(dest), **counts.model_dump(), "corpus_digest": digest, "arm": arm}
    c = counts
    lines = [f"wrote {c.documents} documents (the retrieved contexts) and {c.questions} questions "
             f"({c.gold_answers} with a gold answer) into {dest}.",
             f"requests: {c.questions_with_derived_requests} questions have them derived from their gold "
             f"answer ({c.derived_requests_offline} by the offline rule local/claims-v1 until "
             f"`rag-ttc derive-requests {dest.name}` writes {dest / DERIVED_FILE}; add --model to derive them with a "
             f"model); {c.questions_as_one_request - c.gold_answers_without_claim} without a gold "
             "answer" + (f" and {c.gold_answers_without_claim} whose gold answer holds no claim (too short "
                         "to split)" if c.gold_answers_without_claim else "")
             + " have one request, the whole question.",
             "no gold quotes: requests have no supporting chunk until quotes are added."]
    if c.rows_without_context:
        first = c.rows_without_context_first
        lines.append(f"{c.rows_without_context} of {c.questions} rows have no retrieved context "
                     f"({', '.join(first)}{', ...' if c.rows_without_context > len(first) else ''}): "
                     "those questions retrieved nothing.")
    lines.append(f"an imported arm over it: {json.dumps(arm)}")
    print_result(out, args.json, "\n".join(lines))
    return 0


def _stale_derived(dest: Path, evaluation_digest: str) -> str | None:
    """Why `dest`'s derived-requests file (an earlier import's) would not fit the evaluation of digest
    `evaluation_digest`, or None (no such file, or one derived from this very evaluation)."""
    path = dest / DERIVED_FILE
    try:
        bound = json.loads(path.read_text(encoding="utf-8")).get("evaluation_digest")
    except FileNotFoundError:
        return None
    except (OSError, ValueError, AttributeError):
        bound = "(unreadable)"
    if bound == evaluation_digest:
        return None
    return (f"{path} holds requests derived from another evaluation ({bound}; the one imported now is "
            f"{evaluation_digest}), which would make the dataset fail to load; delete that file (or import into "
            f"another folder), import again, then run `rag-ttc derive-requests {dest.name}`")


def _convert_args(args, read: Callable[[Path, list[str] | None], realsumm.RealSumm], error: type[Exception]
                  ) -> tuple[Path, Path, realsumm.RealSumm, list[str]]:
    """(source, out folder, the set read by `read` for --systems, --request-judges) of a convert-* command; `error`
    from the reader is the command's error."""
    src, out = Path(args.src).expanduser().resolve(), Path(args.out).expanduser().resolve()
    systems = [s.strip() for s in args.systems.split(",") if s.strip()] if args.systems else None
    judges = [s.strip() for s in args.request_judges.split(",") if s.strip()] if args.request_judges else []
    if len(judges) != len(set(judges)):
        raise CliError(f"--request-judges: a juror named twice: {args.request_judges}")
    try:
        return src, out, read(src, systems), judges
    except error as e:
        raise CliError(str(e)) from None


def _write_converted(out: Path, name: str, rs: realsumm.RealSumm, judges: list[str], header: str,
                     readme: Callable[[dict], str], instruction: str, source: str, annotators: str,
                     annotator: str | None = None) -> ConvertedSet:
    """A converted set (core.realsumm's mapping) written as a lab folder: datasets/<name>, systems/<arm>.json,
    arms.yaml, README.md and labels.jsonl; the counts and the written dataset's corpus digest returned, with
    `annotators` (what the labels' annotators are).
    Everything was read and checked before this is called; the arms file and the labels are written last."""
    corpus, evaluation, counts = realsumm.dataset(rs, source, instruction)
    cbytes = (json.dumps(corpus, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    evaluation = {"corpus_digest": sha256_digest(cbytes), **evaluation}
    labels = realsumm.labels(rs, annotator)
    counts |= realsumm.counts(rs, labels)
    dest = out / "datasets" / name
    atomic_write_bytes(dest / "corpus.json", cbytes, mode=0o644)
    atomic_write_bytes(dest / "evaluation.json",
                       (json.dumps(evaluation, ensure_ascii=False, indent=1) + "\n").encode("utf-8"), mode=0o644)
    for s in rs.systems:
        atomic_write_bytes(out / "systems" / f"{s.arm}.json",
                           json.dumps(realsumm.system_rows(rs, s, instruction), ensure_ascii=False).encode("utf-8"),
                           mode=0o644)
    arms = realsumm.arms(rs.systems, "systems", judges, name)
    atomic_write_bytes(out / "arms.yaml", (header + yaml.safe_dump(arms, sort_keys=False, width=120)).encode("utf-8"),
                       mode=0o644)
    atomic_write_bytes(out / "README.md", readme(counts).encode("utf-8"), mode=0o644)
    atomic_write_bytes(out / "labels.jsonl", "".join(json.dumps(r) + "\n" for r in labels).encode("utf-8"),
                       mode=0o644)
    ds = load_dataset(dest)  # what was written is a valid dataset
    return ConvertedSet.model_validate({"out": str(out), **counts, "arms": [s.arm for s in rs.systems],
                                        "corpus_digest": ds.corpus_digest, "annotators": annotators})


def _next_steps(out: Path, rs: realsumm.RealSumm) -> str:
    return (f"next (README.md): cd {out}; export RAG_TTC_ARMS=$PWD/arms.yaml RAG_TTC_DATASETS=$PWD/datasets "
            f"RAG_TTC_HOME=$PWD/.rag_ttc; rag-ttc run {' '.join(s.arm for s in rs.systems[:2])}"
            f"{' ...' if len(rs.systems) > 2 else ''}; rag-ttc judge-agreement labels.jsonl")


def cmd_convert_realsumm(args) -> int:
    """A clone of REALSumm as a ready lab folder (core.realsumm): the dataset, one imported arm per system, the
    crowd's per-SCU labels for `rag-ttc judge-agreement`, and a README saying what was converted."""
    src, out, rs, judges = _convert_args(args, read_realsumm, RealSummError)
    header = (f"# REALSumm converted by `rag-ttc convert-realsumm` from {src}\n# {realsumm.CITATION}\n"
              "# Each system of the set is an imported arm; the labels are in labels.jsonl (README.md).\n")
    r = _write_converted(out, realsumm.DATASET, rs, judges, header, lambda c: realsumm.readme(rs, c, str(src)),
                         realsumm.INSTRUCTION, "REALSumm (CNN/DailyMail)",
                         "positions within a HIT (a1..a4), not persistent people")
    print_result(r.model_dump(), args.json,
                 f"wrote {out}: {r.documents} articles and {r.questions} questions with "
                 f"{r.requests} requests (the reference summaries' SCUs; {r.requests_with_quote} with a "
                 f"verbatim evidence quote) in datasets/{realsumm.DATASET}, {r.systems} systems as imported "
                 f"arms ({r.summaries} summaries) in arms.yaml, {r.labels} crowd labels on "
                 f"{r.labelled_items} items in labels.jsonl (items by label count: "
                 + ", ".join(f"{k} labels: {v}" for k, v in r.items_by_label_count.items()) + ").\n"
                 "The annotators a1..a4 are positions within one HIT (one article and one summary), not persistent "
                 "people: the crowd files have no worker IDs (README.md in the folder).\n" + _next_steps(out, rs))
    return 0


def cmd_convert_pyramid(args) -> int:
    """A Lite2-3Pyramid data folder (data/PyrXSum, data/REALSumm) as a ready lab folder (core.pyramid): the dataset
    named --name, one imported arm per system, the set's aggregated SCU-presence labels for `rag-ttc
    judge-agreement`, and a README saying what was converted."""
    problem = dataset_name_problem(args.name)
    if problem:
        raise CliError(f"--name: {problem}")
    src, out, rs, judges = _convert_args(args, read_pyramid, PyramidError)
    header = (f"# {args.name}: a Lite2-3Pyramid data folder converted by `rag-ttc convert-pyramid` from {src}\n"
              f"# {pyramid.CITATION}\n"
              "# Each system of the set is an imported arm; the labels are in labels.jsonl (README.md).\n")
    r = _write_converted(out, args.name, rs, judges, header,
                         lambda c: pyramid.readme(args.name, rs, c, str(src)), pyramid.INSTRUCTION,
                         f"Lite2-3Pyramid {src.name}",
                         "the set's aggregated labels, one per item (annotator 'majority'): no annotator ceiling",
                         pyramid.ANNOTATOR)
    print_result(r.model_dump(), args.json,
                 f"wrote {out}: {r.documents} documents and {r.questions} questions with "
                 f"{r.requests} requests (the reference summaries' SCUs; {r.requests_with_quote} with "
                 f"a verbatim evidence quote) in datasets/{args.name}, {r.systems} systems as imported arms "
                 f"({r.summaries} summaries) in arms.yaml, {r.labels} labels in labels.jsonl.\n"
                 "The labels are the set's aggregated labels, one per (summary, SCU): there is no annotator ceiling "
                 "(README.md in the folder).\n" + _next_steps(out, rs))
    return 0
