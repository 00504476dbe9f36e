"""support/required.py, run through pytest on a small test file: a skip a user may see (no Chromium, no PostgreSQL,
no llama-server build) is a skip naming what is missing, and the same message as a failure under the variable that
says it must not be skipped (RAG_TTC_REQUIRE_ALL in .ci/run; RAG_TTC_REQUIRE_LOCAL_LLM in `make test-local-llm`)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from rag_ttc_assets_tests.conftest import REPO

TESTS = '''
import pytest
from rag_ttc_assets_tests.support.required import needs, optional_import, skip_or_fail

frob, NO_FROB = optional_import("frobnicate_not_installed", "frobnicate is not importable (pip install frobnicate)")


@needs("no widget: /opt/widget is missing (apt-get install widget)")
def test_marked():
    raise AssertionError("a test whose need is missing ran")


@needs(NO_FROB)
def test_import():
    raise AssertionError("ran without frobnicate")


@needs(None)
def test_nothing_missing():
    assert True


def test_called():
    skip_or_fail("no gadget server (make install-gadget)")


def test_called_own_variable():
    skip_or_fail("no llama-server build (make install-local-llm)", "RAG_TTC_REQUIRE_LOCAL_LLM")


class TestModuleMark:
    pytestmark = [needs(None), needs("no sprocket (pip install sprocket)")]

    def test_in_class(self):
        raise AssertionError("ran without sprocket")
'''
SKIPS = {"test_marked": "no widget: /opt/widget is missing (apt-get install widget)",
         "test_import": "frobnicate is not importable (pip install frobnicate) (ModuleNotFoundError: "
                        "No module named 'frobnicate_not_installed')",
         "test_called": "no gadget server (make install-gadget)",
         "test_called_own_variable": "no llama-server build (make install-local-llm)",
         "TestModuleMark::test_in_class": "no sprocket (pip install sprocket)"}


@pytest.fixture
def suite(pytester, monkeypatch):
    pytester.makeconftest("from rag_ttc_assets_tests.support.required import pytest_collection_modifyitems, "
                          "pytest_configure, pytest_runtest_setup  # noqa: F401\n")
    pytester.makepyfile(test_needs=TESTS)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    for var in ("RAG_TTC_REQUIRE_ALL", "RAG_TTC_REQUIRE_LOCAL_LLM"):
        monkeypatch.delenv(var, raising=False)

    def run(**env):
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        # -p no:phoenix: as the project's addopts (pyproject.toml), which this pytester folder does not read
        result = pytester.runpytest_subprocess("-rA", "-p", "no:cacheprovider", "-p", "no:phoenix")
        return result, "\n".join(result.outlines)
    return run


def test_without_the_variable_each_missing_need_is_a_skip_naming_it(suite):
    result, out = suite()
    result.assert_outcomes(passed=1, skipped=5)
    for why in SKIPS.values():
        assert f"{why}" in out, (why, out)
    assert "AssertionError" not in out  # no body of a test whose need is missing ran


def test_under_require_all_the_same_skips_fail_with_the_same_message(suite):
    result, out = suite(RAG_TTC_REQUIRE_ALL="1")
    # Four fail (in setup for a mark, in the test body for a call); the local LLM's keeps its own variable.
    result.assert_outcomes(passed=1, skipped=1, errors=3, failed=1)
    assert result.ret != 0
    for name, why in SKIPS.items():
        if name == "test_called_own_variable":
            assert re.search(rf"^SKIPPED \[1\] .*: {re.escape(why)}$", out, re.M), out
            continue
        assert f"{why} [RAG_TTC_REQUIRE_ALL is set: this must not be skipped]" in out, (name, out)


def test_the_local_llm_variable_fails_only_its_own_skips(suite):
    result, out = suite(RAG_TTC_REQUIRE_LOCAL_LLM="1")
    result.assert_outcomes(passed=1, skipped=4, failed=1)
    assert ("no llama-server build (make install-local-llm) [RAG_TTC_REQUIRE_LOCAL_LLM is set: this must not be "
            "skipped]") in out


@pytest.mark.parametrize("value", ["", "0"])
def test_an_empty_or_zero_variable_requires_nothing(suite, value):
    result, _ = suite(RAG_TTC_REQUIRE_ALL=value)
    result.assert_outcomes(passed=1, skipped=5)


def test_ci_sets_the_variable_and_the_local_llm_tests_stay_outside_it():
    ci = (REPO / ".ci" / "run").read_text()
    assert re.search(r"^export RAG_TTC_REQUIRE_ALL=1$", ci, re.M), "`.ci/run` must set RAG_TTC_REQUIRE_ALL=1"
    assert not re.search(r"RAG_TTC_REQUIRE_LOCAL_LLM=", ci)  # CI builds no llama-server
    makefile = (REPO / "Makefile").read_text()
    assert "RAG_TTC_REQUIRE_LOCAL_LLM=1 $(BIN)/python -m pytest -q $(LOCAL_LLM_TESTS)" in makefile


def test_every_browser_test_carries_the_browser_marks():
    """A browser test with a bare skipif or importorskip would skip in CI unseen."""
    for path in sorted(Path(REPO / "rag_ttc_assets_tests").rglob("test_*.py")):
        text = path.read_text()
        if "chromium" not in text.lower() or path.name == Path(__file__).name:
            continue
        assert "pytest.mark.skipif" not in text or "CHROMIUM" not in text.split("pytest.mark.skipif", 1)[1][:200], path
        assert 'importorskip("playwright' not in text, path
        assert "BROWSER" in text or "NO_CHROMIUM" in text, path


def test_every_phoenix_server_test_carries_the_needs_mark():
    """A Phoenix test with a bare importorskip would skip in CI unseen; the fixture itself skips through skip_or_fail."""
    users = [p for p in sorted(Path(REPO / "rag_ttc_assets_tests").rglob("test_*.py"))
             if "phoenix_server" in p.read_text() and p.name != Path(__file__).name]
    assert users, "no test uses the Phoenix server fixture"
    for path in users:
        text = path.read_text()
        assert "needs(phoenix_missing()" in text and 'importorskip("phoenix' not in text, path
    fixture = (REPO / "rag_ttc_assets_tests" / "support" / "phoenix_server.py").read_text()
    assert "skip_or_fail(missing)" in fixture
