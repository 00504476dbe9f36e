"""The provider roles (core.roles) and the provider resource: every provider asset takes the resource, each role's
Caller is built from its row of the table, and a test swaps the resource the Dagster way: another resource handed to
`materialize`, here one that sends the arm's calls to a real OpenAI-compatible server on 127.0.0.1."""

import json
import re

from dagster import AssetKey, AssetsDefinition, DagsterInstance, materialize

from rag_ttc_assets.core.arms import ArmConfig, ModelConfig
from rag_ttc_assets.core.roles import PROVIDER_POOL, REPRESENTATION_BUILDER, REQUEST_DERIVER, REQUEST_JUDGE, ROLES
from rag_ttc_assets.defs.resources import ProviderResource
from rag_ttc_assets.stages.calls import BUDGET_EXHAUSTED, Call, role_caller
from rag_ttc_assets_tests.conftest import MINI_DEFAULTS, write_mini_lab
from rag_ttc_assets_tests.support.openai_server import FakeOpenAIServer

REMOTE = "openai/gpt-behind-the-resource"
# No api_base: with the default resource these calls would go to the provider's own endpoint.
ARMS = MINI_DEFAULTS + f"""  allow_unpriced_provider: true
  generation_workers: 2
arms:
  remote:
    generator: {{model: {REMOTE}, api_key_env: RAG_TTC_TEST_KEY, timeout_s: 5, max_retries: 0}}
"""


class LoopbackProvider(ProviderResource):
    """The provider resource a test hands in: every `openai/` model's calls go to `base_url`; offline models stay."""

    base_url: str

    def caller(self, role, lab, cfg, model=None):
        model = model if model is not None else role.model(cfg)
        if model.model.startswith("openai/"):
            model = model.model_copy(update={"api_base": self.base_url})
        return super().caller(role, lab, cfg, model)


def answer_from_prompt(messages):
    """Cite the first admitted chunk, answer with a sentence that names this server."""
    first = re.search(r'<chunk id="([^"]+)">', messages[-1]["content"])
    return json.dumps({"answer": "from the loopback server", "citation_chunk_ids": [first.group(1)],
                       "abstained": False})


def test_every_role_names_arm_fields_of_its_kind():
    cfg = ArmConfig()
    for role in ROLES:
        assert role.namespace and role.name
        if role.model_field is None:  # a command's role: its options are its model, budget and workers
            assert role is REQUEST_DERIVER and role.asset is None
            continue
        assert isinstance(role.model(cfg), ModelConfig), role
        assert isinstance(role.budget(cfg), int) and isinstance(role.workers(cfg), int), role
    assert len({r.namespace for r in ROLES}) == len(ROLES), "two roles would share cached replies"


def test_every_provider_asset_takes_the_provider_resource_and_no_other_does(mini_lab):
    from rag_ttc_assets.definitions import build_definitions

    defs = build_definitions(mini_lab)
    assert isinstance(defs.resources["provider"], ProviderResource)  # the UI's resources page lists it
    graph = defs.resolve_asset_graph()
    taking = {k.to_user_string() for k in graph.get_all_asset_keys()
              if "provider" in graph.get(k).assets_def.required_resource_keys}
    assert taking == {r.asset for r in ROLES if r.asset is not None}
    for name in taking:
        assert graph.get(AssetKey(name)).pools == {PROVIDER_POOL}, name


def test_a_roles_caller_is_built_from_its_row(mini_lab):
    cfg = ArmConfig(request_judges=["local/lexical", "local/extractive"], request_judge_budget=7,
                    representation_era="2026-03")
    jurors = ProviderResource().callers(REQUEST_JUDGE, mini_lab, cfg)
    assert [(c.cfg.model, c.budget, c.role, c.cache.namespace) for c in jurors] == [
        ("local/lexical", 7, "request judge local/lexical", "request_judging"),
        ("local/extractive", 7, "request judge local/extractive", "request_judging")]
    builder = role_caller(REPRESENTATION_BUILDER, mini_lab, cfg)
    other_era = role_caller(REPRESENTATION_BUILDER, mini_lab, cfg.model_copy(update={"representation_era": "2026-04"}))
    assert builder.cache.namespace.startswith("representations-") and builder.cache.namespace != other_era.cache.namespace
    deriver = role_caller(REQUEST_DERIVER, mini_lab, model=ModelConfig(model="local/claims-v1"), budget=3)
    assert (deriver.budget, deriver.role, deriver.cache.namespace) == (3, "request deriver", "derive_requests")


def test_what_counts_as_a_provider_call():
    def call(status, hit):
        return Call(status, None, None, None, 0.0, None, 0, None, hit)

    assert call("ok", False).counts_as_provider_call and call("rate_limited", False).counts_as_provider_call
    assert not call("ok", True).counts_as_provider_call
    assert not call(BUDGET_EXHAUSTED, False).counts_as_provider_call


def test_a_swapped_provider_resource_answers_the_arm(tmp_path, monkeypatch):
    lab_dir = write_mini_lab(tmp_path, monkeypatch)
    (lab_dir / "arms.yaml").write_text(ARMS)
    from rag_ttc_assets.definitions import build_definitions
    from rag_ttc_assets.lab import Lab

    defs = build_definitions()
    assets = [a for a in defs.assets if isinstance(a, AssetsDefinition)]
    upto = ["corpus_binding", "imported_source", "chunks", "representations", "bm25_index", "vector_index",
            "retrieval_rows", "admitted_contexts", "answers"]
    with FakeOpenAIServer(answer_from_prompt) as server:
        result = materialize(assets, partition_key="remote", instance=DagsterInstance.ephemeral(),
                             selection=[AssetKey(a) for a in upto],
                             resources={**defs.resources,  # the lab and the sweep's I/O managers
                                        "provider": LoopbackProvider(base_url=server.base_url)})
        sent = [r["body"] for r in server.requests]
    assert result.success
    answers = Lab.from_env().store.read_table("remote", "answers")
    assert answers.height == len(sent) > 0  # one call per question, each to the server the resource named
    assert {b["model"] for b in sent} == {REMOTE.removeprefix("openai/")}
    assert set(answers["status"]) == {"ok"} and set(answers["model"]) == {REMOTE}
    assert all(json.loads(t)["answer"] == "from the loopback server" for t in answers["raw_text"])
    meta = result.asset_materializations_for_node("answers")[0].metadata
    assert meta["provider_calls"].value == len(sent) and meta["cache_hits"].value == 0
