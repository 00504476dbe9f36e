"""The real local LLM for tests: llama.cpp's llama-server with SmolLM2-135M-Instruct on a free port of 127.0.0.1,
started once per test session (the `llama_server` fixture, registered by the root conftest)."""

from __future__ import annotations

import pytest

from rag_ttc_assets_tests.support.required import skip_or_fail

REQUIRE_ENV = "RAG_TTC_REQUIRE_LOCAL_LLM"  # set by `make test-local-llm`: an absent build fails instead of skipping
TEST_KEY = "local-llm-test-key"


def arm_model(base_url: str, **params) -> dict:
    """The ModelConfig of an arm that reaches the served model as a user's arm does."""
    from rag_ttc_assets.adapters import llama_server

    return {"model": f"openai/{llama_server.MODEL}", "api_base": base_url, "api_key_env": llama_server.KEY_ENV,
            "timeout_s": 300, "max_retries": 0, "params": {"max_tokens": 256, "temperature": 0, **params}}


def skip_unless_built() -> None:
    """Skip, naming `make install-local-llm`, when the server is not built; fail instead under `make test-local-llm`."""
    from rag_ttc_assets.adapters import llama_server as ls

    why = ls.available()
    if why is not None:
        skip_or_fail(why, REQUIRE_ENV)


@pytest.fixture(scope="session")
def llama_server():
    """The running server (skip_unless_built); sets the key variable the arms name for the session."""
    from rag_ttc_assets.adapters import llama_server as ls

    skip_unless_built()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ls.KEY_ENV, TEST_KEY)
        with ls.LlamaServer(api_key=TEST_KEY) as server:
            yield server
