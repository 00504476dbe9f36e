"""Chat completions through litellm with bounded, counted retries; provider faults become statuses, never raises.
The API key comes from the env var a ModelSpec names and is scrubbed from errors and from every log record."""

from __future__ import annotations

import email.utils
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

# litellm fetches its cost map over the network at import unless told to use the bundled copy.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")



class _Litellm:
    """litellm, imported on first use. Importing it costs about 2.5 s here, which every Dagster step process and
    every `dagster dev` reload of the code location would otherwise pay whether or not it calls a model."""

    _module = None
    _lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        if _Litellm._module is None:
            with _Litellm._lock:
                if _Litellm._module is None:
                    import litellm as module

                    # Otherwise litellm prints a "Give Feedback / Get Help" banner to stdout on every exception,
                    # which with our retries means one banner per failed attempt.
                    module.suppress_debug_info = True
                    _Litellm._module = module
        return getattr(_Litellm._module, name)


litellm = _Litellm()

log = logging.getLogger(__name__)

STATUSES = (
    "ok",
    "timeout",
    "rate_limited",
    "server_error",
    "connection_error",
    "empty_response",
    "truncated",
    "bad_request",
    "auth_error",
    "provider_error",
)
RETRYABLE = frozenset({"timeout", "rate_limited", "server_error", "connection_error", "empty_response"})
BACKOFF_CAP_S = 8.0
RETRY_AFTER_CAP_S = 30.0
LOCAL_PREFIX = "local/"  # our own local providers: priced, at zero
# Arguments complete() sets itself; in params they would collide or bypass the retry accounting.
RESERVED_PARAMS = frozenset(
    {"model", "messages", "api_base", "base_url", "api_key", "timeout", "num_retries", "max_retries", "stream",
     "response_format"}
)
_ERROR_CHARS = 400


@dataclass(frozen=True)
class ModelSpec:
    model: str  # litellm model string, e.g. "openai/gpt-4o-mini" or "local/<name>"
    params: dict[str, Any] = field(default_factory=dict, hash=False)  # temperature, max_tokens, ...
    api_base: str | None = None
    api_key_env: str | None = None  # NAME of the env var holding the key; never the key itself
    timeout_s: float = 60.0  # per attempt
    max_retries: int = 3  # attempts = 1 + retries
    backoff_s: float = 0.5  # base of the exponential backoff, capped at BACKOFF_CAP_S

    def __post_init__(self) -> None:
        clash = sorted(RESERVED_PARAMS & set(self.params))
        if clash:
            raise ValueError(f"ModelSpec({self.model!r}).params: {clash} are set by complete(); use the spec fields")
        if self.timeout_s <= 0 or self.max_retries < 0 or self.backoff_s < 0:
            raise ValueError(
                f"ModelSpec({self.model!r}): need timeout_s > 0, max_retries >= 0, backoff_s >= 0; got "
                f"{self.timeout_s}, {self.max_retries}, {self.backoff_s}"
            )


@dataclass(frozen=True)
class CallResult:
    status: str  # one of STATUSES
    raw_text: str | None  # verbatim content of the last response, None if none arrived
    input_tokens: int | None
    output_tokens: int | None
    latency_s: float  # wall time of the whole call: every attempt plus the backoff sleeps
    cost_usd: float | None  # of the last response; None when the model is unpriced or no usage came back
    attempts: int
    error: str | None  # short, key-scrubbed description of the last failure
    # Tool calls of the last response ({"id", "name", "arguments"}), when `tools` were offered and the model called.
    tool_calls: list[dict] | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


# -- key scrubbing -------------------------------------------------------------------------------

_secrets: set[str] = set()
_secrets_lock = threading.Lock()
_factory_installed = False


def _scrub(text: str, secrets: tuple[str, ...] | None = None) -> str:
    # Longest first, so a key that contains another registered key is not left half-replaced.
    for secret in sorted(secrets if secrets is not None else tuple(_secrets), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def _register_secret(secret: str) -> None:
    """Scrub `secret` from every log record created from now on, whichever logger or handler.

    A record factory rather than a logger filter: litellm, openai and httpx log from many loggers
    (children included), and litellm's success/failure logging runs on background threads after the
    call returns, so the scrubbing must stay in place for the life of the process.
    """
    global _factory_installed
    with _secrets_lock:
        _secrets.add(secret)
        if _factory_installed:
            return
        previous = logging.getLogRecordFactory()

        def scrubbing_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            secrets = tuple(_secrets)
            if not secrets:
                return record
            try:
                message = record.getMessage()
            except Exception:  # a malformed record is the logger's bug; leave it alone
                return record
            clean = _scrub(message, secrets)
            if clean != message:  # rewrite only when needed, so structured args survive otherwise
                record.msg, record.args = clean, None
            if record.exc_info:
                text = logging.Formatter().formatException(record.exc_info)
                clean = _scrub(text, secrets)
                if clean != text:
                    # Formatters print exc_text; dropping exc_info drops the key-bearing exception too.
                    record.exc_text, record.exc_info = clean, None
            if record.stack_info:
                record.stack_info = _scrub(record.stack_info, secrets)
            return record

        logging.setLogRecordFactory(scrubbing_factory)
        _factory_installed = True


# -- pricing -------------------------------------------------------------------------------------


def is_priced(model: str) -> bool:
    """True when litellm's cost map has input and output token rates for `model`; `local/...` always."""
    if model.startswith(LOCAL_PREFIX):
        return True
    try:
        info = litellm.get_model_info(model)
    except Exception:  # litellm raises (ModelNotMappedError, BadRequestError) for unmapped names
        return False
    return info.get("input_cost_per_token") is not None and info.get("output_cost_per_token") is not None


def _cost(model: str, input_tokens: int | None, output_tokens: int | None) -> float | None:
    if input_tokens is None or output_tokens is None:
        return None
    if model.startswith(LOCAL_PREFIX):
        return 0.0
    if not is_priced(model):
        return None
    # Priced by the model we asked for: litellm.completion_cost would price by the model name the
    # server echoes back, which an OpenAI-compatible endpoint can set to anything.
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model, prompt_tokens=input_tokens, completion_tokens=output_tokens
        )
    except Exception as exc:
        log.warning("llm: cost of %s not computable (%s); reporting None", model, _scrub(str(exc))[:200])
        return None
    return float(prompt_cost) + float(completion_cost)


# -- fault classification ------------------------------------------------------------------------


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 16:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _named(exc: BaseException, *names: str) -> bool:
    return any(cls.__name__ in names for cls in type(exc).__mro__)


def _classify(exc: Exception) -> str:
    """Map a litellm exception to a status.

    litellm wraps transport failures of the openai provider as InternalServerError("Connection
    error."), so timeouts and connection faults are read from the exception chain, not the class.
    """
    if isinstance(exc, litellm.RateLimitError):
        return "rate_limited"
    if isinstance(exc, (litellm.AuthenticationError, litellm.PermissionDeniedError)):
        return "auth_error"
    if isinstance(exc, (litellm.BadRequestError, litellm.NotFoundError, litellm.UnprocessableEntityError)):
        return "bad_request"
    chain = list(_chain(exc))
    # The openai client refuses to send a request without a key, and litellm wraps that as a server error: it is a
    # setup fault (no key configured), not worth a retry.
    if any("Missing credentials" in str(e) for e in chain):
        return "auth_error"
    if any(
        isinstance(e, (litellm.Timeout, TimeoutError)) or _named(e, "APITimeoutError", "TimeoutException")
        for e in chain
    ):
        return "timeout"
    if any(
        isinstance(e, (litellm.APIConnectionError, ConnectionError))
        or _named(e, "APIConnectionError", "TransportError")
        for e in chain
    ):
        return "connection_error"
    if isinstance(
        exc, (litellm.InternalServerError, litellm.ServiceUnavailableError, litellm.BadGatewayError)
    ) or (isinstance(getattr(exc, "status_code", None), int) and exc.status_code >= 500):
        return "server_error"
    return "provider_error"


def _retry_after_s(exc: Exception) -> float | None:
    """Seconds from a 429's Retry-After header (delta-seconds or HTTP-date), if it sent one."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or getattr(exc, "headers", None) or {}
    try:
        value = headers.get("retry-after") or headers.get("Retry-After")
    except AttributeError:
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _delay_s(spec: ModelSpec, failed_attempt: int, status: str, retry_after: float | None) -> float:
    if status == "rate_limited" and retry_after is not None:
        return min(retry_after, RETRY_AFTER_CAP_S)
    return min(spec.backoff_s * 2 ** (failed_attempt - 1), BACKOFF_CAP_S)


def _describe(spec: ModelSpec, exc: Exception | None, message: str | None = None) -> str:
    where = spec.api_base or "the provider's default endpoint"
    # litellm's str() repeats the class name ("litellm.Timeout: ..."); say it once.
    detail = message if exc is None else f"{type(exc).__name__}: " + str(exc).removeprefix(
        f"litellm.{type(exc).__name__}: "
    )
    text = " ".join(_scrub(f"{spec.model} at {where}: {detail}").split())
    # Scrub before cutting: a cut could otherwise leave a recognisable prefix of the key.
    return text if len(text) <= _ERROR_CHARS else text[: _ERROR_CHARS - 3] + "..."


# -- the call ------------------------------------------------------------------------------------


def _api_key(spec: ModelSpec) -> str | None:
    if spec.api_key_env is None:
        return None
    key = os.environ.get(spec.api_key_env)
    if not key:
        raise ValueError(
            f"ModelSpec({spec.model!r}).api_key_env: environment variable {spec.api_key_env!r} is unset or empty"
        )
    _register_secret(key)
    return key


def _tool_calls(message: Any) -> list[dict] | None:
    calls = getattr(message, "tool_calls", None) if message is not None else None
    if not calls:
        return None
    out = []
    for call in calls:
        function = getattr(call, "function", None)
        out.append({"id": getattr(call, "id", None) or f"call_{len(out)}",
                    "name": getattr(function, "name", None),
                    "arguments": getattr(function, "arguments", None) or ""})
    return out


def complete(
    spec: ModelSpec, messages: list[dict], *, tools: list[dict] | None = None,
    response_format: dict | None = None, sleep: Callable[[float], None] = time.sleep
) -> CallResult:
    """One chat completion with up to `spec.max_retries` retries; never raises for a provider fault.

    Retries timeouts, 429 (after Retry-After when sent), 5xx, connection faults and empty content;
    returns at once on auth/bad-request errors and on finish_reason "length" ("truncated").
    With `tools`, a reply that calls a tool is "ok" without content; its calls are in `tool_calls`.
    `response_format` (an OpenAI-style dict) goes to litellm as it is; for `openai/` models litellm sends it verbatim.
    Raises ValueError only for a misconfigured spec (e.g. its key env var is unset).
    """
    api_key = _api_key(spec)
    started = time.monotonic()
    attempts = 0
    while True:
        attempts += 1
        raw_text: str | None = None
        tool_calls: list[dict] | None = None
        input_tokens = output_tokens = None
        retry_after: float | None = None
        try:
            response = litellm.completion(
                model=spec.model,
                messages=messages,
                api_base=spec.api_base,
                api_key=api_key,
                timeout=spec.timeout_s,
                num_retries=0,  # also sets the openai client's max_retries to 0: every attempt is ours
                **({"tools": tools} if tools else {}),
                **({"response_format": response_format} if response_format else {}),
                **spec.params,
            )
        except Exception as exc:  # every provider fault arrives as some litellm exception
            status = _classify(exc)
            error = _describe(spec, exc)
            if status == "rate_limited":
                retry_after = _retry_after_s(exc)
        else:
            usage = getattr(response, "usage", None)
            input_tokens = getattr(usage, "prompt_tokens", None)
            output_tokens = getattr(usage, "completion_tokens", None)
            choice = response.choices[0] if getattr(response, "choices", None) else None
            raw_text = choice.message.content if choice is not None else None
            tool_calls = _tool_calls(choice.message) if choice is not None and tools else None
            finish_reason = getattr(choice, "finish_reason", None)
            if finish_reason == "length":
                status = "truncated"
                error = _describe(spec, None, "finish_reason 'length': output hit max_tokens")
            elif tool_calls:
                status, error = "ok", None
            elif raw_text is None or not raw_text.strip():
                status = "empty_response"
                error = _describe(spec, None, f"empty content (finish_reason {finish_reason!r})")
            else:
                status, error = "ok", None

        if status not in RETRYABLE or attempts > spec.max_retries:
            return CallResult(
                status=status,
                raw_text=raw_text,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                latency_s=time.monotonic() - started,
                cost_usd=_cost(spec.model, input_tokens, output_tokens),
                attempts=attempts,
                error=error,
                tool_calls=tool_calls,
            )
        delay = _delay_s(spec, attempts, status, retry_after)
        log.info(
            "llm: attempt %d/%d of %s gave %s; retrying in %.2fs (%s)",
            attempts, spec.max_retries + 1, spec.model, status, delay, error,
        )
        sleep(delay)
