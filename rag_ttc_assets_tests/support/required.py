"""Skips a user may see, failures where they must not happen.

A test that needs something a user's machine may lack (Chromium, Playwright, a PostgreSQL server, the local LLM's
server build) skips on that machine, saying what is missing. Where the thing must be there, a variable turns the
same skip into a failure with the same message:
  - RAG_TTC_REQUIRE_ALL (.ci/run sets it): the browser and cluster tests, and whatever else uses the default;
  - RAG_TTC_REQUIRE_LOCAL_LLM (`make test-local-llm` sets it): the local-LLM tests, which CI does not build for
    and which therefore keep their own variable.

Use skip_or_fail(why) in a test or fixture, or the `needs(missing)` mark on a test or module (checked before the
test's fixtures are set up, by the hooks below, which the root conftest imports).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NoReturn

import pytest

REQUIRE_ALL_ENV = "RAG_TTC_REQUIRE_ALL"
MARK = "needs"


def required(require_env: str = REQUIRE_ALL_ENV) -> bool:
    return os.environ.get(require_env, "") not in ("", "0")


def skip_or_fail(why: str, require_env: str = REQUIRE_ALL_ENV) -> NoReturn:
    """Skip naming `why`; fail with the same message when `require_env` is set (to anything but "" or 0)."""
    __tracebackhide__ = True  # the skip's location is the caller's
    if required(require_env):
        pytest.fail(f"{why} [{require_env} is set: this must not be skipped]", pytrace=False)
    pytest.skip(why)


def needs(missing: str | None, require_env: str = REQUIRE_ALL_ENV) -> pytest.MarkDecorator:
    """A mark: the test needs something; `missing` says what is missing and what to install (None: nothing is
    missing, the test runs)."""
    return getattr(pytest.mark, MARK)(missing, require_env=require_env)


def optional_import(name: str, why: str) -> tuple[ModuleType | None, str | None]:
    """(module, None), or (None, why and the import error) when it cannot be imported; for a `needs` mark,
    instead of pytest.importorskip, whose skip at import time no variable could turn into a failure."""
    try:
        return importlib.import_module(name), None
    except ImportError as e:  # missing, or importable but broken (playwright's greenlet)
        return None, f"{why} ({type(e).__name__}: {e})"


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", f"{MARK}(missing, require_env='{REQUIRE_ALL_ENV}'): the test needs "
                                       "something a machine may lack; skipped naming it, failed under require_env")


def _missing(item) -> list[tuple[str, str]]:
    return [(m.args[0], m.kwargs.get("require_env", REQUIRE_ALL_ENV)) for m in item.iter_markers(MARK)
            if m.args and m.args[0]]


def pytest_collection_modifyitems(items) -> None:
    """A test whose need is missing is skipped as pytest's own skip mark skips (reported at the test), unless a
    variable requires it: then pytest_runtest_setup fails it."""
    for item in items:
        for why, env in _missing(item):
            if not required(env):
                item.add_marker(pytest.mark.skip(reason=why))
                break


def pytest_runtest_setup(item) -> None:
    for why, env in _missing(item):
        if required(env):
            pytest.fail(f"{why} [{env} is set: this must not be skipped]", pytrace=False)
