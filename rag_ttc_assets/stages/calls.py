"""Provider calls with the content-addressed cache and a call budget, shared by every provider role (core.roles).

The cache is an optimization, not the truth: only successful responses are stored, and every
row says whether it came from a provider call or a cache hit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rag_ttc_assets.adapters import llm
from rag_ttc_assets.adapters.message_archive import MessageArchive, digest_of
from rag_ttc_assets.adapters.provider_cache import ProviderCache
from rag_ttc_assets.core.arms import ArmConfig, ModelConfig
from rag_ttc_assets.core.progress import Progress
from rag_ttc_assets.core.roles import ProviderRole
from rag_ttc_assets.judging.judge_inputs import JudgeInput
from rag_ttc_assets.core.summaries import OFFLINE_REQUEST_JUDGES, is_offline_baseline
from rag_ttc_assets.lab import Lab

BUDGET_EXHAUSTED = "budget_exhausted"


class UnpricedModelError(ValueError):
    pass


@dataclass(frozen=True)
class Call:
    status: str
    raw_text: str | None
    input_tokens: int | None
    output_tokens: int | None
    latency_s: float
    cost_usd: float | None
    attempts: int
    error: str | None
    cache_hit: bool
    tool_calls: list[dict] | None = None  # when tools were offered and the model called one
    # What was sent (messages and tools), a key of the Caller's MessageArchive; not part of a cached record.
    messages_digest: str | None = None

    @property
    def counts_as_provider_call(self) -> bool:
        """Whether the call reached the provider: a cache hit did not, nor a call the budget stopped."""
        return not self.cache_hit and self.status != BUDGET_EXHAUSTED

    def as_row(self, prefix: str = "") -> dict:
        """The row columns of a call; tool calls are logged by the caller that executes them."""
        return {prefix + k: v for k, v in asdict(self).items() if k != "tool_calls"}


def pooled(fn: Callable[[Any], Any], items: Sequence[Any], workers: int, progress: Progress, doing: str, done: str,
           unit: str) -> list:
    """`fn` over `items` on `workers` threads, results in item order, each finished item counted on one task."""

    def counted(item):
        out = fn(item)
        task.advance()
        return out

    with progress.task(doing, done, len(items), unit) as task, ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(counted, items))


def role_caller(role: ProviderRole, lab: Lab, cfg: ArmConfig | None = None, *, model: ModelConfig | None = None,
                budget: int | None = None) -> Caller:
    """The one place a `Caller` is built: `role`'s model, budget and cache namespace (core.roles) for the arm `cfg`,
    the lab's provider cache, and the store's message archive. `model` calls one of the role's models (a panel's
    juror); a role outside an arm (the request deriver) passes its `model` and `budget`, and runs unpriced models."""
    model = model if model is not None else role.model(cfg)
    return Caller(model, lab.provider_cache_root, role.cache_namespace(cfg),
                  budget if budget is not None else role.budget(cfg),
                  allow_unpriced=cfg.allow_unpriced_provider if cfg is not None else True,
                  role=role.label(model, cfg), archive=lab.store.messages)


def model_spec(cfg: ModelConfig) -> llm.ModelSpec:
    return llm.ModelSpec(model=cfg.model, params=dict(cfg.params), api_base=cfg.api_base,
                         api_key_env=cfg.api_key_env, timeout_s=cfg.timeout_s, max_retries=cfg.max_retries)


class Caller:
    """Calls one model through litellm, serving repeats from the cache, spending at most `budget` calls.
    With an `archive` (the store's `messages`), every call's messages and tools are kept there; every Call
    carries their digest either way."""

    def __init__(self, cfg: ModelConfig, cache_root: Path, namespace: str, budget: int,
                 allow_unpriced: bool = True, role: str = "generator", archive: MessageArchive | None = None):
        self.rules: str | None = None
        # An offline judge (local/lexical, the offline jurors) is called in process on the records the stage built
        # beside the prompt (judging.judge_inputs); every other model through litellm on the messages.
        self._judge_records: Callable[[str, JudgeInput, list[dict]], llm.CallResult] | None = None
        if cfg.model.startswith(llm.LOCAL_PREFIX):
            from rag_ttc_assets.adapters import local_providers  # late: litellm, numpy load only when this runs

            local_providers.register()
            self.rules = local_providers.rules_of(cfg.model)
            if cfg.model in OFFLINE_REQUEST_JUDGES:
                self._judge_records = local_providers.judge_call
        if not allow_unpriced and not llm.is_priced(cfg.model):
            raise UnpricedModelError(
                f"model {cfg.model!r} ({role}) has no known price in litellm's cost map; set "
                "allow_unpriced_provider: true in the arm to run it anyway (its cost will be reported as unknown)"
            )
        self.cfg = cfg
        self.spec = model_spec(cfg)
        self.cache = ProviderCache(cache_root, namespace)
        self.budget = budget
        self.role = role
        self.archive = archive
        self._lock = threading.Lock()
        self.provider_calls = 0
        self.cache_hits = 0

    @property
    def offline_baseline(self) -> bool:
        """An offline baseline (core.summaries.OFFLINE_BASELINES: the lexical judge, the coverage and BERTScore
        jurors ...) answers in this process: its calls reach no provider, so a juror's never count as provider calls."""
        return is_offline_baseline(self.cfg.model)

    def _key(self, messages: list[dict], sample_index: int, tools: list[dict] | None,
             response_format: dict | None) -> str:
        params = {**self.cfg.params, **({"tools": tools} if tools else {}),
                  **({"response_format": response_format} if response_format else {})}
        return self.cache.key(self.cfg.model, messages, params, sample_index, self.cfg.api_base, self.rules)

    def prefetch(self, planned: Sequence[tuple[list[dict], dict | None, JudgeInput | None]] = (),
                 chains: Sequence[tuple[list[dict], dict | None, Callable[[Callable[[JudgeInput], str]], None]]] = ()
                 ) -> int:
        """For an offline baseline that embeds: encode in one batched pass every text its rules will embed over the
        `planned` calls (messages, response_format, judge records) that the cache will not serve, so each call only
        looks its vectors up (adapters.offline_prefetch). `chains`: a judge's calls for one answer, run in order by
        the function given (each call's records built from the last reply), prefetched when the cache will not serve
        their first call (messages, response_format). The texts any process encoded before are read from the vector
        cache beside the provider cache (adapters.vector_cache). Any other model: nothing. Returns the texts encoded."""
        if not self.offline_baseline:
            return 0
        from rag_ttc_assets.adapters import offline_prefetch  # late: numpy and litellm load only when this runs

        def served(messages: list[dict], rf: dict | None) -> bool:
            return self.cache.get(self._key(messages, 0, None, rf)) is not None

        cases = [(m, j) for m, rf, j in planned if not served(m, rf)]
        runs = [fn for m, rf, fn in chains if not served(m, rf)]
        if not cases and not runs:
            return 0
        return offline_prefetch.prefetch(self.cfg.model, cases, runs, vectors_root=self.cache.root)

    def call(self, messages: list[dict], sample_index: int = 0, tools: list[dict] | None = None,
             response_format: dict | None = None, judge_input: JudgeInput | None = None) -> Call:
        """One call; `response_format` (core.response_formats) asks the server for a reply of that JSON schema.
        `judge_input`: the records a judge stage rendered `messages` from; an offline judge reads them (the cache key
        is the messages' either way)."""
        key = self._key(messages, sample_index, tools, response_format)
        # Archived now: a tool conversation appends to `messages` after the call.
        sent = self.archive.put(messages, tools) if self.archive is not None else digest_of(messages, tools)
        hit = self.cache.get(key)
        if hit is not None:
            with self._lock:
                self.cache_hits += 1
            return Call(**{**hit, "cache_hit": True, "messages_digest": sent})
        with self._lock:
            if self.provider_calls >= self.budget:
                return Call(BUDGET_EXHAUSTED, None, None, None, 0.0, None, 0,
                            f"{self.role} budget of {self.budget} provider calls exhausted", False,
                            messages_digest=sent)
            self.provider_calls += 1
        if self._judge_records is not None and judge_input is not None:
            r = self._judge_records(self.cfg.model, judge_input, messages)
        else:
            r = llm.complete(self.spec, messages, tools=tools, response_format=response_format)
        call = Call(r.status, r.raw_text, r.input_tokens, r.output_tokens, r.latency_s, r.cost_usd, r.attempts,
                    r.error, False, r.tool_calls, sent)
        if r.ok:
            record = asdict(call)
            record.pop("cache_hit")
            record.pop("messages_digest")  # the entry is the response: its key already covers the request
            self.cache.put(key, record)
        return call
