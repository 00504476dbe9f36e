"""The bench's measurements by name: each module of this package registers its own with `@measurement(name)`, so a
new measurement is one new module. `ORDER` is the order they run and print in; one it does not name runs after
these, in module order."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

import rag_ttc_assets.bench as package

ORDER = ("retrieval", "embedding", "offline_answers", "offline_judging", "k_sweep", "unused_index", "metrics", "dagster_overhead", "memory",
         "onnx_embedding", "code_location_import", "report", "import")
NOT_MEASUREMENTS = ("__main__", "ann_realistic", "bench_records", "bench_registry", "command", "growth", "harness",
                    "labs", "scale", "targets")  # modules that register none

Measurement = Callable[..., dict]  # (spec: labs.LabSpec, base: Path, repeat: int) -> harness.item(...)
_registered: dict[str, Measurement] = {}


def measurement(name: str) -> Callable[[Measurement], Measurement]:
    """Register the decorated function as the measurement `name` (`rag-ttc bench --only name`)."""

    def register(fn: Measurement) -> Measurement:
        if name in _registered and _registered[name] is not fn:
            raise ValueError(f"bench measurement {name!r} is registered twice: {_registered[name].__module__} and "
                             f"{fn.__module__}")
        _registered[name] = fn
        return fn

    return register


def measurements() -> dict[str, Measurement]:
    """Every measurement, in `ORDER` then module order: each module of the package imported (its decorators
    register it), every module, not a list, so a measurement in a new module cannot be left out."""
    for m in pkgutil.iter_modules(package.__path__):
        if m.name not in NOT_MEASUREMENTS:
            importlib.import_module(f"{package.__name__}.{m.name}")
    named = [n for n in ORDER if n in _registered]
    return {n: _registered[n] for n in [*named, *(n for n in _registered if n not in named)]}


def names() -> list[str]:
    return list(measurements())
