"""Whether two stores' arms wrote the same tables and summaries: the check that a refactor kept behaviour.

Run the same arms on the same dataset with the code before and after the change, each into its own store
(RAG_TTC_HOME), then

    python scripts/compare_stores.py BEFORE_STORE AFTER_STORE

It prints one line per table or JSON summary that differs (its first difference), or that every file of every arm is
the same, and exits 1 on a difference. Fields that vary between two identical runs (a call's latency, where the
dataset's files were) are left out; floats compare to a relative 1e-5 (rag_ttc_assets_tests/support/store_snapshot.py).
A store is the folder holding `arms/` (RAG_TTC_HOME/store).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rag_ttc_assets_tests.support.store_snapshot import arm_files, differences  # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not all((Path(a) / "arms").is_dir() for a in argv):
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        print("each argument must be a store folder holding arms/", file=sys.stderr)
        return 2
    before, after = (Path(a) for a in argv)
    changed = differences(before, after)
    for line in changed:
        print(line)
    if not changed:
        files = arm_files(after)
        arms = sorted({k.split("/", 1)[0] for k in files})
        print(f"same: {len(files)} tables and summaries of {len(arms)} arms ({', '.join(arms)})")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
