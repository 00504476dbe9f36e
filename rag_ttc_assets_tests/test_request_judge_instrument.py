"""judging.request_judge_stage.instrument: what must be equal for two arms' completeness to be comparable. The call
parameters are part of it when set (an LLM judge's temperature changes its verdicts), absent otherwise, so an
instrument recorded before they were read back is unchanged."""

from types import SimpleNamespace

from rag_ttc_assets.core.arms import ArmConfig
from rag_ttc_assets.judging.request_judge_stage import instrument

PROMPT = SimpleNamespace(name="judge-requests-v1", digest="sha256:abc")


def test_params_are_part_of_the_instrument_only_when_set():
    plain = instrument(ArmConfig(), PROMPT)
    assert "params" not in plain and plain["model"] == "local/lexical" and plain["prompt_digest"] == "sha256:abc"
    hot = instrument(ArmConfig(request_judge={"model": "openai/judge", "params": {"temperature": 0.7}}), PROMPT)
    assert hot["params"] == {"temperature": 0.7} and hot["model"] == "openai/judge"


def test_a_panels_params_are_listed_per_juror_when_any_is_set():
    two = [{"model": "local/lexical"}, {"model": "local/coverage"}]
    assert "params" not in instrument(ArmConfig(request_judges=two), PROMPT)
    hot = [{"model": "local/lexical"}, {"model": "openai/judge", "params": {"temperature": 0}}]
    inst = instrument(ArmConfig(request_judges=hot), PROMPT)
    assert inst["params"] == [{}, {"temperature": 0}] and inst["jurors"] == ["local/lexical", "openai/judge"]


def test_the_offline_judges_rules_version_is_part_of_the_instrument():
    from rag_ttc_assets.judging.request_judge import RULES

    assert instrument(ArmConfig(), PROMPT)["rules"] == RULES == "request-judge-rules/5"
    assert "rules" not in instrument(ArmConfig(request_judge={"model": "openai/judge"}), PROMPT)
    # A panel with an offline juror is judged by the rules too, in part.
    mixed = [{"model": "local/coverage"}, {"model": "openai/judge"}]
    assert instrument(ArmConfig(request_judges=mixed), PROMPT)["rules"] == RULES
