"""`rag-ttc`: the lab from a terminal. It runs the same Dagster definitions the UI runs."""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from rag_ttc_assets.cli.common import CliError  # noqa: E402
# The stages `run --stage` selects, derived from the asset registry (the stage names alone import no dagster).
from rag_ttc_assets.bench import command as bench  # noqa: E402
from rag_ttc_assets.cli import (accept, annotate, convert_claims, diagnose, label_versions, labels,  # noqa: E402
                               local_llm, report, sample_labels, serve_reports, sweep)
from rag_ttc_assets.cli.compare import cmd_compare  # noqa: E402
from rag_ttc_assets.cli.data import (cmd_arms, cmd_convert_pyramid, cmd_convert_realsumm, cmd_import_beir,  # noqa: E402
                                     cmd_import_outputs, cmd_metrics, cmd_validate)
from rag_ttc_assets.cli.hitrate import cmd_hitrate  # noqa: E402
from rag_ttc_assets.cli.inspection import cmd_inspect, cmd_runs  # noqa: E402
from rag_ttc_assets.cli.run import cmd_run  # noqa: E402
from rag_ttc_assets.core.arm_summaries import SummaryError  # noqa: E402
from rag_ttc_assets.core.arms_file import ArmsError  # noqa: E402
from rag_ttc_assets.core.beir import BeirError  # noqa: E402
from rag_ttc_assets.core.dataset import DatasetError, ProblemsError  # noqa: E402
from rag_ttc_assets.core.trec_files import TrecFormatError  # noqa: E402
from rag_ttc_assets.defs.executors import ExecutorError  # noqa: E402
from rag_ttc_assets.defs.graph import STAGES  # noqa: E402
from rag_ttc_assets.lab import LabPathError  # noqa: E402


def _convert_arguments(s: argparse.ArgumentParser, systems_help: str) -> None:
    """The arguments every convert-* command shares (cli.data._convert_args reads them)."""
    s.add_argument("--out", required=True, help="the lab folder to write (arms.yaml, datasets/, systems/, labels.jsonl)")
    s.add_argument("--systems", help=f"only these systems, {systems_help}")
    s.add_argument("--request-judges", help="the arms' request judge, or a panel (comma-separated, `all` "
                                            "aggregation); default local/lexical")
    s.add_argument("--json", action="store_true")


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--arms-file", help="arms file (default: $RAG_TTC_ARMS or ./arms.yaml)")
    common.add_argument("--datasets-dir", help="datasets folder (default: $RAG_TTC_DATASETS or ./datasets)")
    common.add_argument("--home", help="artifact store folder (default: $RAG_TTC_HOME or ./.rag_ttc)")
    p = argparse.ArgumentParser(prog="rag-ttc", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("validate", help="check a dataset folder", description="Check a dataset folder: digest "
                       "binding, unique IDs, targets and evidence documents exist, quotes are verbatim.")
    s.add_argument("dir")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_validate)

    s = sub.add_parser("arms", parents=[common], help="list arms with their effective parameters")
    s.add_argument("--family")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_arms)

    s = sub.add_parser("run", parents=[common], help="materialize arms through the Dagster definitions",
                       description="Materialize the named arms (partitions) up to and including a stage, "
                                   "recorded in DAGSTER_HOME so the runs appear in the UI.")
    s.add_argument("arms", nargs="*")
    s.add_argument("--family")
    s.add_argument("--stage", choices=list(STAGES), default="all")
    s.add_argument("--force", action="store_true", help="re-run every asset of the stage, not only stale ones")
    s.add_argument("--verbose", action="store_true",
                   help="also print Dagster's full event log to stderr (by default: one line per step, and "
                        "progress with rate and ETA on long steps)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_run)

    s = sub.add_parser("inspect", parents=[common], help="one question of one arm, in the seed's reading order")
    s.add_argument("arm")
    s.add_argument("question_id")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_inspect)

    s = sub.add_parser("compare", parents=[common], help="paired per-case comparison of two arms")
    s.add_argument("a", nargs="?")
    s.add_argument("b", nargs="?")
    s.add_argument("--all", action="store_true",
                   help="materialize arm_comparisons: every pair in `comparisons` and every family's sweep plot")
    s.add_argument("--headline", default="completeness",
                   choices=["completeness", "valid", "faithfulness", "recip_rank", "recall_10", "ndcg_cut_10"])
    s.add_argument("--allow-instrument-drift", action="store_true",
                   help="compare arms whose request judge or its prompt differ (the report says so)")
    s.add_argument("--allow-label-drift", action="store_true",
                   help="compare arms whose evaluation digests differ (labels revised between runs)")
    s.add_argument("--allow-era-change", action="store_true",
                   help="compare arms whose representations come from another builder or era while their chunking "
                        "or prompt changed too (the report says the difference is not attributable to either)")
    s.add_argument("--p-adjust", choices=["holm", "bh"],
                   help="adjust the p-values over the report's metrics by Holm's step-down or Benjamini-Hochberg "
                        "(default: the arms file's p_adjust, holm); --all reads the arms file")
    s.add_argument("--alpha", type=float, help="significance level of the adjusted p-values (default: the arms "
                                               "file's alpha, 0.05)")
    s.add_argument("--labels", nargs="?", const="", metavar="FILE",
                   help="correct the completeness difference with these per-request human labels (prediction-"
                        "powered, docs/judges.md); `--labels` alone: the store's annotations/labels.jsonl. Never "
                        "read unless asked")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_compare)

    s = sub.add_parser("hitrate", parents=[common], help="retrieval hit rate and admission coverage, no generation",
                       description="Hit rate over all cases against the gold labels at each boundary (ranked, "
                                   "selected by evidence_k, admitted under the context budget), without generating "
                                   "an answer: cheap enough for CI whenever the corpus or chunking changes.")
    s.add_argument("arm")
    s.add_argument("--min-hit-rate", type=float, help="exit 1 when the admitted question hit rate is below this")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_hitrate)

    s = sub.add_parser("runs", parents=[common], help="list run records (one per materialization) with status")
    s.add_argument("arm", nargs="?")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_runs)

    s = sub.add_parser("metrics", help="trec_eval measures of a TREC run against TREC qrels",
                       description="trec_eval's own measures (through pytrec_eval) of a TREC run against TREC "
                                   "qrels, the same code as the retrieval_summary asset. Queries without a "
                                   "relevant judgment, and run queries absent from the qrels, are undefined: "
                                   "listed in undefined_query_ids, never scored 0.")
    s.add_argument("--qrels", required=True)
    s.add_argument("--run", required=True)
    s.add_argument("-m", "--measure", action="append", dest="measures", metavar="MEASURE",
                   help="a trec_eval measure, repeatable, as trec_eval -m spells it: map, P.5,10, ndcg_cut.10, "
                        "recall.1000, or a set (official, all_trec); default: "
                        "num_q, recip_rank, recall, ndcg_cut and success at 5,10,20,100")
    s.add_argument("-q", "--per-query", action="store_true", help="also print each evaluated query (trec_eval -q)")
    s.add_argument("-c", "--complete", action="store_true",
                   help="average over every qrels query, one missing from the run scoring 0 (trec_eval -c)")
    s.set_defaults(fn=cmd_metrics)

    s = sub.add_parser("import-beir", help="convert a BEIR folder into corpus.json + evaluation.json")
    s.add_argument("src")
    s.add_argument("dest")
    s.add_argument("--split", default="test")
    s.add_argument("--drop-missing", action="store_true", help="drop qrels naming missing documents (counted)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_import_beir)

    s = sub.add_parser("import-outputs", help="write a dataset (corpus from retrieved contexts, questions with gold "
                                               "answers) from RAGChecker or RAGAS rows, for an imported arm",
                       description="The corpus is the rows' retrieved contexts. A question with a gold answer gets "
                                   "no requests of its own: they are derived from its gold answer (the offline rule "
                                   "when the dataset loads; `rag-ttc derive-requests DATASET` writes them, --model "
                                   "to use a model). Nothing is written unless the dataset validates: a file whose "
                                   "rows carry no retrieved context at all is refused. docs/import.md: scoring "
                                   "imported answers against gold answers.")
    s.add_argument("src", help="the rows file (RAGChecker input JSON, or RAGAS samples as a JSON list or JSONL)")
    s.add_argument("dest", help="the dataset folder to write (corpus.json, evaluation.json)")
    s.add_argument("--format", required=True, choices=["ragchecker", "ragas"])
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_import_outputs)

    s = sub.add_parser("convert-realsumm", help="a clone of REALSumm (human SCU labels) as a lab folder",
                       description="Convert a clone of https://github.com/neulab/REALSumm (Bhandari et al., EMNLP "
                                   "2020; CC BY 4.0) into a lab folder: its articles as a dataset whose requests are "
                                   "the reference summaries' SCUs, each summarisation system as an imported arm, and "
                                   "the crowd's per-SCU present/absent labels for `rag-ttc judge-agreement` "
                                   "(docs/judges.md). The labels' annotators are positions within a HIT, not people.")
    s.add_argument("src", help="the REALSumm clone")
    _convert_arguments(s, "comma-separated arm names (abs-bart-out,ext-refresh-out)")
    s.set_defaults(fn=cmd_convert_realsumm)

    s = sub.add_parser("convert-pyramid", help="a Lite2-3Pyramid data folder (PyrXSum, REALSumm; SCU labels) as a "
                                               "lab folder",
                       description="Convert a data folder of https://github.com/ZhangShiyue/Lite2-3Pyramid (Zhang & "
                                   "Bansal, EMNLP 2021; data/PyrXSum or data/REALSumm: ids.txt, documents.txt, "
                                   "references.txt, SCUs.txt, summaries/, labels/) into a lab folder: its documents "
                                   "as a dataset whose requests are the reference summaries' SCUs, each system as an "
                                   "imported arm, and the set's SCU-presence labels for `rag-ttc judge-agreement` "
                                   "(docs/judges.md). The labels are aggregated, one per item: no annotator ceiling.")
    s.add_argument("src", help="the data folder (data/PyrXSum of a clone)")
    s.add_argument("--name", required=True, help="the dataset's name (its folder under datasets/), e.g. pyrxsum")
    _convert_arguments(s, "comma-separated arm names or file stems (t5-large,ptgen)")
    s.set_defaults(fn=cmd_convert_pyramid)

    convert_claims.add_parsers(sub, _convert_arguments)

    sweep.add_parser(sub)
    local_llm.add_parser(sub)
    bench.add_parser(sub)
    report.add_parser(sub, common)
    diagnose.add_parser(sub, common)
    serve_reports.add_parser(sub, common)
    annotate.add_parser(sub, common)
    labels.add_parser(sub, common)
    sample_labels.add_parser(sub, common)
    accept.add_parser(sub, common)
    label_versions.add_parser(sub, common)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    try:
        return args.fn(args)
    except BrokenPipeError:
        # The reader closed the pipe (`rag-ttc ... | head`): what it read is all it wanted. Python's documented
        # recipe: point stdout at devnull so the interpreter's final flush raises nothing either.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a command a closed pipe ended
    except (CliError, ArmsError, DatasetError, ProblemsError, BeirError, TrecFormatError, LabPathError, ExecutorError,
            SummaryError, FileNotFoundError) as e:
        print(f"rag-ttc: error: {e}", file=sys.stderr)
        return getattr(e, "exit_code", 1)
