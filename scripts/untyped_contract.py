"""How much of the contract between modules is carried by string keys (issue: typed records between the steps).

Counts, with an AST walk over the package: subscripts by a string constant (`row["verdict"]`), `.get("key")` calls,
and functions annotated to return `dict` or `list[dict]`; the modules over 500 lines. Files that parse user input
(their names listed in EDGES) are counted apart: string keys belong there.

    python scripts/untyped_contract.py [PACKAGE_DIR]
"""
from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

# Where the lab reads files people write: string keys are the parsing itself.
EDGES = ("adapters/", "core/dataset.py", "imported/import_source.py", "imported/import_mapping.py",
         "imported/phoenix_source.py", "labelling/human_labels.py", "judging/judge_agreement.py",
         "judging/claim_agreement.py", "labelling/annotation.py", "labelling/label_check.py", "core/beir.py", "core/arms.py",
         "core/arms_file.py", "core/lfqa.py", "core/wice.py", "core/realsumm.py", "core/pyramid.py",
         "core/trec_files.py", "core/jsonl.py")


def counts(path: Path) -> Counter:
    c: Counter = Counter()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            c["subscripts"] += 1
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            c["gets"] += 1
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            ret = ast.unparse(node.returns).replace(" ", "")
            if ret in ("dict", "list[dict]") or ret.startswith(("dict[str,", "list[dict[")):
                c["dict_returns"] += 1
    return c


def main(root: Path) -> None:
    total, edge = Counter(), Counter()
    long = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        c = counts(path)
        total += c
        if rel.startswith(EDGES):
            edge += c
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > 500:
            long.append((lines, rel))
    keys = total["subscripts"] + total["gets"]
    edge_keys = edge["subscripts"] + edge["gets"]
    print(f"string-key subscripts {total['subscripts']}, .get('key') calls {total['gets']}: {keys} in all, "
          f"{edge_keys} in the files that parse user input, {keys - edge_keys} elsewhere")
    print(f"functions returning dict or list[dict]: {total['dict_returns']}")
    print(f"modules over 500 lines: {len(long)}" + "".join(f"\n  {n:5d} {rel}" for n, rel in sorted(long, reverse=True)))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "rag_ttc_assets")
