"""The per-arm asset graph, derived from the registry: its order, upstream closures, the stages `rag-ttc run
--stage` and `rag-ttc sweep --stage` select, and its Markdown for docs/architecture.md.

Nothing here is written out by hand but `STAGE_GROUPS`: the assets, their upstream and the tables they
write come from each `arm_asset(...)` declaration. Importing this module does not import dagster (the CLI
builds its parser from the stage names alone); the first look at the assets imports the defs modules, whose
decorators fill the registry.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

import rag_ttc_assets.defs as package

if TYPE_CHECKING:
    from rag_ttc_assets.defs.arm_registry import ArmAssetSpec, ArmCheckSpec

# Each stage adds the assets of its groups to the stage before it. `all` adds nothing: today it is `judge`
# under the CLI's default name. A group no stage names fails `stage_assets` (and test_graph), not silently.
STAGE_GROUPS: dict[str, tuple[str, ...]] = {
    "retrieval": ("ingest", "indexes", "retrieval"),
    "answers": ("generation",),
    "judge": ("evaluation", "diagnostics"),
    "all": (),
}


class GraphError(Exception):
    pass


def load() -> list[ArmAssetSpec]:
    """Every per-arm asset spec: each defs module imported (its `arm_asset` decorators register its assets).

    Every module, not a list of them, so an asset in a new defs module cannot be left out of the graph."""
    for m in pkgutil.iter_modules(package.__path__):
        if m.name != __name__.rsplit(".", 1)[-1]:
            importlib.import_module(f"{package.__name__}.{m.name}")
    from rag_ttc_assets.defs.arm_registry import SPECS  # late: dagster loads only when this runs

    return SPECS


def checks() -> list[ArmCheckSpec]:
    load()
    from rag_ttc_assets.defs.arm_registry import CHECK_SPECS  # late: dagster loads only when this runs

    return CHECK_SPECS


def specs() -> dict[str, ArmAssetSpec]:
    return {s.name: s for s in load()}


def deps() -> dict[str, tuple[str, ...]]:
    """Each per-arm asset's direct upstream assets."""
    return {n: s.deps for n, s in specs().items()}


def order(names=None) -> tuple[str, ...]:
    """The per-arm assets (only `names` when given) in a topological order: by depth (the longest path from an
    asset with no upstream), then fewer downstream assets first, then name.

    Deterministic whatever order the modules were imported in. Within a level the tie-break puts a summary
    (few downstream) before what the next stage builds on: the order `rag-ttc run` has always reported
    (retrieval_summary before admitted_contexts, contract_summary before judge_verdicts)."""
    up = deps()
    for n, ds in up.items():
        if missing := [d for d in ds if d not in up]:
            raise GraphError(f"asset {n!r} depends on {missing}, which no arm_asset declares")
    depth: dict[str, int] = {}

    def depth_of(n: str, path: tuple[str, ...] = ()) -> int:
        if n in path:
            raise GraphError(f"dependency cycle: {' -> '.join((*path, n))}")
        if n not in depth:
            depth[n] = 1 + max((depth_of(d, (*path, n)) for d in up[n]), default=-1)
        return depth[n]

    down = {n: set() for n in up}
    for n in sorted(up, key=depth_of, reverse=True):  # downstream first: a node's set is complete before use
        for d in up[n]:
            down[d] |= {n} | down[n]
    keep = set(up) if names is None else set(names)
    if unknown := keep - set(up):
        raise GraphError(f"not per-arm assets: {sorted(unknown)}")
    return tuple(sorted(keep, key=lambda n: (depth_of(n), len(down[n]), n)))


def upstream(*names: str) -> tuple[str, ...]:
    """`names` and every asset they depend on, transitively, in `order()`."""
    up = deps()
    seen: set[str] = set()
    todo = list(names)
    while todo:
        n = todo.pop()
        if n not in seen:
            if n not in up:
                raise GraphError(f"{n!r} is not a per-arm asset")
            seen.add(n)
            todo.extend(up[n])
    return order(seen)


def downstream(*names: str) -> tuple[str, ...]:
    """Every asset that depends on one of `names`, transitively (`names` themselves excluded), in `order()`."""
    up = deps()
    found: set[str] = set()
    grew = True
    while grew:
        new = {n for n, ds in up.items() if n not in found and any(d in found or d in names for d in ds)}
        found |= new
        grew = bool(new)
    return order(found - set(names))


def stage_increments() -> dict[str, tuple[str, ...]]:
    """Per stage, the assets it adds to the stage before it (each asset in exactly one: its group's stage)."""
    groups = {g: stage for stage, gs in STAGE_GROUPS.items() for g in gs}
    by_stage: dict[str, list[str]] = {stage: [] for stage in STAGE_GROUPS}
    for n, s in specs().items():
        if s.group not in groups:
            raise GraphError(f"asset {n!r}: group {s.group!r} is in no stage; add it to STAGE_GROUPS "
                             f"(rag_ttc_assets/defs/graph.py)")
        by_stage[groups[s.group]].append(n)
    return {stage: order(ns) for stage, ns in by_stage.items()}


def stage_assets(stage: str) -> tuple[str, ...]:
    """What `rag-ttc run --stage <stage>` materializes (when stale), in `order()`: its increment and every
    earlier stage's. A stage must hold the upstream of its assets, or the CLI would run an asset before its
    inputs exist."""
    if stage not in STAGE_GROUPS:
        raise KeyError(stage)
    increments = stage_increments()
    stages = list(STAGE_GROUPS)
    names = [n for s in stages[:stages.index(stage) + 1] for n in increments[s]]
    up = deps()
    for n in names:
        if outside := [d for d in up[n] if d not in names]:
            raise GraphError(f"stage {stage!r}: asset {n!r} needs {outside}, which a later stage builds; "
                             f"move its group in STAGE_GROUPS")
    return order(names)


class _Stages(Mapping):
    """`STAGES[stage]`: `stage_assets(stage)`. The names need no registry; the assets are derived on access."""

    def __getitem__(self, stage: str) -> tuple[str, ...]:
        return stage_assets(stage)

    def __iter__(self) -> Iterator[str]:
        return iter(STAGE_GROUPS)

    def __len__(self) -> int:
        return len(STAGE_GROUPS)

    def __repr__(self) -> str:
        return f"STAGES({', '.join(STAGE_GROUPS)})"


STAGES = _Stages()


# --- the graph as documentation ------------------------------------------------------------------------------

DOC_BEGIN = "<!-- graph:begin (generated: python -m rag_ttc_assets.defs.graph --write) -->"
DOC_END = "<!-- graph:end -->"


def markdown() -> str:
    """The per-arm graph as a mermaid flowchart (one box per stage increment) and a table of what each asset
    needs and writes: the generated part of docs/architecture.md."""
    sp = specs()
    increments = stage_increments()
    checks_of: dict[str, list[str]] = {}
    for c in checks():
        checks_of.setdefault(c.asset, []).append(c.fn.__name__)
    lines = ["```mermaid", "flowchart LR"]
    for stage, names in increments.items():
        if names:
            lines.append(f"  subgraph stage_{stage} [\"--stage {stage}\"]")
            lines += [f"    {n}" for n in names]
            lines.append("  end")
    lines += [f"  {d} --> {n}" for n in order() for d in sp[n].deps]
    lines += ["```", "",
              "| stage | asset | group | upstream | writes (arms/&lt;arm&gt;/) | checks |",
              "|---|---|---|---|---|---|"]
    for stage, names in increments.items():
        for n in names:
            s = sp[n]
            writes = ", ".join(w if w.endswith(".json") else f"{w}.parquet" for w in s.writes)
            lines.append(f"| {stage} | `{n}` | {s.group} | {', '.join(s.deps) or '-'} | {writes or '-'} | "
                         f"{', '.join(checks_of.get(n, [])) or '-'} |")
    stages = [f"`{stage}`: {len(stage_assets(stage))} assets" for stage in STAGE_GROUPS]
    lines += ["", "`rag-ttc run --stage`: " + ", ".join(stages) + " (each stage includes the ones before it)."]
    return "\n".join(lines) + "\n"


def with_generated(doc: str) -> str:
    """`doc` with its generated block replaced by `markdown()`."""
    try:
        head, rest = doc.split(DOC_BEGIN, 1)
        _, tail = rest.split(DOC_END, 1)
    except ValueError:
        raise GraphError(f"the document has no {DOC_BEGIN} ... {DOC_END} block") from None
    return f"{head}{DOC_BEGIN}\n{markdown()}{DOC_END}{tail}"


def main(argv: list[str] | None = None) -> int:
    import argparse

    from rag_ttc_assets.lab import PROJECT_ROOT  # late: numpy loads only when this runs

    p = argparse.ArgumentParser(prog="python -m rag_ttc_assets.defs.graph",
                                description="Print the per-arm asset graph as Markdown.")
    p.add_argument("--write", action="store_true", help="rewrite the generated block of docs/architecture.md")
    args = p.parse_args(argv)
    if args.write:
        path = PROJECT_ROOT / "docs" / "architecture.md"
        path.write_text(with_generated(path.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"wrote {path}")
    else:
        print(markdown(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
