"""adapters.llama_server: llama.cpp's own server with SmolLM2-135M-Instruct, reached through litellm as `openai/...`.

The tests that need the server skip (naming `make install-local-llm`) when it is not built; `make test-local-llm`
runs them and fails instead of skipping.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from rag_ttc_assets.adapters import llama_server as ls  # noqa: E402
from rag_ttc_assets.adapters.llm import ModelSpec, complete  # noqa: E402
from rag_ttc_assets.adapters.smollm2 import LocalLLMUnavailable  # noqa: E402
from rag_ttc_assets.core.contract import CONTRACT_STATUSES, check_contract  # noqa: E402
from rag_ttc_assets.core.prompts import evidence_block, parse_prompt  # noqa: E402
from rag_ttc_assets.core.response_formats import SCHEMAS, response_format  # noqa: E402
from rag_ttc_assets_tests.adapters.test_local_providers import CHUNK_IDS, CHUNKS, PROMPTS  # noqa: E402
from rag_ttc_assets_tests.support.local_llm import TEST_KEY, skip_unless_built  # noqa: E402

# At temperature 0 the model answers this with a numbered list, in a few tokens.
COLORS = [{"role": "user", "content": "Name three colors."}]


def spec(server, key_env: str = ls.KEY_ENV, max_tokens: int = 128) -> ModelSpec:
    return ModelSpec(model=f"openai/{ls.MODEL}", params={"max_tokens": max_tokens, "temperature": 0},
                     api_base=server.base_url, api_key_env=key_env, timeout_s=600, max_retries=0)


def test_an_absent_build_names_the_install_command(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv(ls.DIR_ENV, str(tmp_path / "no-build"))
    with pytest.raises(LocalLLMUnavailable, match="make install-local-llm"):
        ls.binary()
    assert "make install-local-llm" in ls.available()


def test_the_command_pins_what_would_make_replies_vary(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(ls, "binary", lambda: tmp_path / "llama-server")
    monkeypatch.setattr(ls, "gguf_path", lambda: tmp_path / "model.gguf")
    cmd = ls.command(8091, "k")

    def value(flag: str) -> str:
        assert cmd.count(flag) == 1, flag
        return cmd[cmd.index(flag) + 1]

    assert "--no-cache-prompt" in cmd and "--cache-prompt" not in cmd and value("--cache-ram") == "0"
    assert "--no-repack" in cmd
    assert value("--threads") == value("--threads-batch") == str(ls.THREADS)
    assert int(value("--seed")) >= 0  # -1 would be a new random seed per start
    assert (value("--batch-size"), value("--ubatch-size"), value("--parallel")) == ("2048", "512", "1")
    env = ls.server_env({"LLAMA_ARG_CACHE_PROMPT": "1", "LLAMA_ARG_N_PARALLEL": "4", "PATH": "/bin"})
    assert env == {"PATH": "/bin"}


def test_the_server_listens_on_loopback_only_with_one_slot_and_a_key(llama_server) -> None:
    cmd = ls.command(llama_server.port, llama_server.api_key)
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--parallel") + 1] == "1"
    assert cmd[cmd.index("--model") + 1].endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    with urllib.request.urlopen(f"http://127.0.0.1:{llama_server.port}/health", timeout=5) as r:
        assert r.status == 200


def test_a_wrong_key_is_an_auth_error_not_a_retry(llama_server, monkeypatch) -> None:
    monkeypatch.setenv("RAG_TTC_WRONG_KEY", "not-" + TEST_KEY)
    result = complete(spec(llama_server, "RAG_TTC_WRONG_KEY"), COLORS)
    assert (result.status, result.attempts) == ("auth_error", 1)


def test_the_schema_constrains_decoding_and_free_decoding_writes_prose(llama_server) -> None:
    free = complete(spec(llama_server), COLORS)
    assert free.status in ("ok", "truncated") and free.output_tokens > 0
    with pytest.raises(json.JSONDecodeError):
        json.loads(free.raw_text)
    constrained = complete(spec(llama_server), COLORS,
                           response_format=response_format("json_schema", "statements"))
    assert constrained.status == "ok", constrained.error
    obj = json.loads(constrained.raw_text)  # the whole reply is one object: the grammar allowed nothing else
    assert set(obj) == {"statements"} and all(isinstance(s, str) for s in obj["statements"])


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_the_server_accepts_every_reply_schema(llama_server, name: str) -> None:
    # A schema llama.cpp cannot turn into a grammar is a 400 (bad_request); each must be accepted.
    result = complete(spec(llama_server, max_tokens=48), COLORS, response_format=response_format("json_schema", name))
    assert result.status in ("ok", "truncated"), result.error
    assert result.raw_text.lstrip().startswith("{")


def test_a_grounded_answer_gets_exactly_one_contract_status(llama_server) -> None:
    prompt = parse_prompt("grounded-answer-v1", (PROMPTS / "grounded-answer-v1.txt").read_text(encoding="utf-8"),
                          "answer")
    text = prompt.render(question="What does a lambda expression create?", evidence=evidence_block(CHUNKS))
    result = complete(spec(llama_server, max_tokens=256), [{"role": "user", "content": text}],
                      response_format=response_format("json_schema", "answer"))
    assert result.status in ("ok", "truncated") and result.input_tokens > 100
    verdict = check_contract(result.raw_text, CHUNK_IDS, result.status)
    assert verdict.status in CONTRACT_STATUSES | {"truncated"}
    if result.status == "ok":
        assert verdict.parsed_from == "json"


def test_stopping_ends_the_process_and_frees_the_port() -> None:
    skip_unless_built()
    with ls.LlamaServer(api_key=TEST_KEY) as server:
        assert server.running
    assert not server.running
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://127.0.0.1:{server.port}/health", timeout=2)


def test_serve_local_llm_needs_the_key_variable_and_the_build(tmp_path) -> None:
    from rag_ttc_assets_tests.support.reliability import cli

    code, _, err = cli("serve-local-llm", env={})
    assert code == 1 and ls.KEY_ENV in err
    code, _, err = cli("serve-local-llm", env={ls.KEY_ENV: TEST_KEY, ls.DIR_ENV: str(tmp_path / "none")})
    assert code == 1 and "make install-local-llm" in err


def test_serve_local_llm_runs_a_command_while_serving_then_stops(tmp_path) -> None:
    """The user's path: `rag-ttc serve-local-llm -- COMMAND` serves on the port, runs the command, stops, and exits
    with the command's status."""
    import sys

    from rag_ttc_assets_tests.support.reliability import cli

    skip_unless_built()
    port = ls.free_port()
    probe = ("import json, os, sys, urllib.request as u; r = u.Request('http://127.0.0.1:%d/v1/models', "
             "headers={'Authorization': 'Bearer ' + os.environ['%s']}); "
             "ids = [m['id'] for m in json.load(u.urlopen(r))['data']]; print(ids); sys.exit(7)") % (port, ls.KEY_ENV)
    code, out, err = cli("serve-local-llm", "--port", str(port), "--log", str(tmp_path / "server.log"), "--",
                         sys.executable, "-c", probe, env={ls.KEY_ENV: TEST_KEY})
    assert code == 7, err
    assert f"'{ls.MODEL}'" in out and f"http://127.0.0.1:{port}/v1" in err
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
    assert (tmp_path / "server.log").stat().st_size > 0
