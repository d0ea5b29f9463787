"""``AnthropicModel``: the Messages API, streamed, with our own retries and fallback.

This is the one place that talks to ``anthropic``. It imports the SDK lazily, on the
first request: the SDK takes about a second to import, and a kernel loading the
extension should not pay that before the user asks anything.

Why raw SSE events: the SDK's typed events coerce block and event types it does not know
into the nearest known class (and warn when dumped). We take the response the SDK opened
(``messages.create(stream=True)``, so auth, headers and HTTP errors are the SDK's) and read
its Server-Sent Events with the SDK's own decoder (``AsyncStream.raw_events``): every
block and event stays exactly as it came on the wire, unknown ones included.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import weakref
from dataclasses import dataclass, fields
from collections.abc import AsyncGenerator
from typing import Any

from ..loop.events import AssistantMessage, ModelFallback, ModelRetry, StreamEvent
from ..loop.model_protocol import ModelError, ModelEvent, ModelRequest
from ..loop.usage import Usage
from ..loop.wire import ThinkingConfig
from .accumulate import MessageAccumulator
from .compat import EndpointFeatures
from .pricing import cost_usd
from .providers import (NO_API_KEY_MESSAGE, PROVIDER_CHECK, PROVIDER_REACH, Provider, ProviderSettings,
                        base_url_from_env, credentials_error, make_client, raw_events, resolve_provider, wire_model)
from .reader import Inbox, ReadJob, ReaderThread
from .request import build_params
from .retry import Failure, backoff_delay, classify_exception, from_error_event, to_model_error
from .tls import shared_tls_context

__all__ = ["AnthropicModel", "DEFAULT_MODEL", "NO_API_KEY_MESSAGE"]

# The newest Sonnet the installed SDK (2.14) lists; it marks claude-sonnet-4-5 deprecated.
DEFAULT_MODEL = "claude-sonnet-5-5"
#: Seconds without any event from the server (pings count) before a stream counts as stalled.
DEFAULT_STALL_TIMEOUT_S = 60.0
STALL_TIMEOUT_ENV = "JUPYTER_AGENT_STALL_TIMEOUT"
_REQUEST_DEFAULT_MAX_TOKENS = next(f.default for f in fields(ModelRequest) if f.name == "max_tokens")


class AnthropicModel:
    """A :class:`~jupyter_agent.loop.model_protocol.Model` backed by the Messages API.

    ``model``: the model id (default: env ``JUPYTER_AGENT_MODEL``, else
    :data:`DEFAULT_MODEL`). ``api_key``/``base_url`` default to ``ANTHROPIC_API_KEY`` /
    ``ANTHROPIC_BASE_URL``. ``max_tokens``/``thinking`` apply when the request leaves
    them at their defaults. Retries: up to ``max_retries`` per model with exponential
    backoff (``retry_base_delay_s`` doubling, at most ``retry_max_delay_s``, or the
    server's ``retry-after``). After ``fallback_after`` overloaded errors in a row, with
    ``fallback_model`` set, it switches to that model for the rest of its life
    (``active_model``). ``stall_timeout_s``: no event from the server for this long counts
    as a stall (default: env ``JUPYTER_AGENT_STALL_TIMEOUT``, else 60 s); it is timed on the
    model's reader thread, so a user's cell that blocks the caller's loop never counts.
    ``client``: an ``anthropic.AsyncAnthropic`` to use (its own retries are turned off).
    ``record_to``: append every response to this transcript file (replayable offline).
    ``keep_alive``: reuse connections between requests; by default yes, except for a
    loopback ``base_url`` (a test server or local proxy), where a fresh connection costs
    nothing and none is left open for the garbage collector to warn about.
    ``provider``: where requests go (``anthropic``, ``bedrock``, ``vertex``, ``foundry``;
    default ``$JUPYTER_AGENT_PROVIDER``, else ``anthropic``), through the SDK's client for it,
    with ``provider_settings`` (region, project, resource) and the model id mapped to the
    provider's (:mod:`jupyter_agent.model.providers`). For a provider other than
    ``anthropic``, ``api_key`` is its key (Bedrock API key, Vertex access token, Foundry key)
    and ``base_url`` defaults to its SDK's variable (``ANTHROPIC_BEDROCK_BASE_URL``...).
    """

    #: ``price(model, usage) -> USD``: what the loop's meter charges for a response cut short.
    price = staticmethod(cost_usd)

    def __init__(self, model: str | None = None, *, api_key: str | None = None, base_url: str | None = None,
                 max_tokens: int = 8192, thinking: ThinkingConfig | None = None, max_retries: int = 4,
                 retry_base_delay_s: float = 0.5, retry_max_delay_s: float = 16.0,
                 fallback_model: str | None = None, fallback_after: int = 3, stall_timeout_s: float | None = None,
                 client: Any = None, record_to: str | os.PathLike[str] | None = None,
                 keep_alive: bool | None = None, provider: str | Provider | None = None,
                 provider_settings: ProviderSettings | None = None) -> None:
        self.provider = resolve_provider(provider)
        self.provider_settings = provider_settings or ProviderSettings()
        self.name: str = model or os.environ.get("JUPYTER_AGENT_MODEL") or DEFAULT_MODEL
        self.active_model = self.name
        self.max_tokens = max_tokens
        self.thinking = thinking
        self.max_retries = max(0, max_retries)
        self.retry_base_delay_s = retry_base_delay_s
        self.retry_max_delay_s = retry_max_delay_s
        self.fallback_model = fallback_model
        self.fallback_after = max(1, fallback_after)
        self._setting_error: ModelError | None = None
        if stall_timeout_s is None:
            stall_timeout_s, self._setting_error = _stall_timeout_from_env()
        self.stall_timeout_s = stall_timeout_s
        if self.provider_settings.pinned:  # the administrator's: no variable or argument moves it
            if base_url and base_url != self.provider_settings.base_url:
                raise ValueError("base_url cannot be set: the administrator's policy pins where requests go "
                                 "(provider_base_url in jupyter_agent_policy.json).")
            self.base_url = self.provider_settings.base_url or None
        else:
            self.base_url = base_url or base_url_from_env(self.provider)
        self.keep_alive = keep_alive if keep_alive is not None else not _is_loopback(self.base_url)
        self._client_loop: Any = None
        self._reader: ReaderThread | None = None
        self._api_key = api_key  # private: never in repr() or in any message
        self._client = client
        self._client_ready = False
        self._owns_client = client is None
        self._rng = random.Random()
        #: what the endpoint turned out to lack (a local server: caching, thinking...), learned once
        self.endpoint = EndpointFeatures()
        self.recorder = None
        if record_to is not None:
            from .transcript import TranscriptRecorder  # pure module, no server started

            self.recorder = TranscriptRecorder(record_to, model=self.name)

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        if self.provider is not Provider.ANTHROPIC:
            where += f", provider={self.provider.value!r}"
        return f"AnthropicModel({self.name!r}{where})"

    # -- client ----------------------------------------------------------------------------------
    def _sdk(self) -> tuple[Any, Any]:
        import anthropic
        import httpx2

        return anthropic, httpx2

    def _get_client(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._client_ready:
            # Our own client's connections belong to the loop that made them; a new loop
            # (asyncio.run twice, one test after another) gets a new client.
            if self._owns_client and self._client_loop is not None and self._client_loop() is not loop:
                self._client_ready = False
                self._client = None
            else:
                return self._client
        anthropic, httpx2 = self._sdk()
        self._owns_client = self._client is None
        if self._client is not None:
            self._client = self._client.with_options(max_retries=0)
        else:
            timeout = anthropic.Timeout(self.stall_timeout_s, connect=min(10.0, self.stall_timeout_s))
            # Our own httpx2 client (with the SDK's defaults): the SDK's internal one closes
            # itself from __del__ by scheduling a task on whatever loop is running then,
            # which fails noisily when that is not the loop its connections belong to.
            limits = httpx2.Limits(max_connections=1000, max_keepalive_connections=100 if self.keep_alive else 0)
            # The TLS context is the library's default, built once per process (tls.py).
            http_client = anthropic.DefaultAsyncHttpxClient(timeout=timeout, limits=limits,
                                                            verify=shared_tls_context())
            common: dict[str, Any] = {"max_retries": 0, "timeout": timeout, "http_client": http_client}
            key = self._api_key or (os.environ.get("ANTHROPIC_API_KEY") if self.provider is Provider.ANTHROPIC
                                    else None) or None
            try:  # the provider's own SDK client (providers.py); its credential messages
                client = make_client(self.provider, self.provider_settings, api_key=key,
                                     base_url=self.base_url, common=common)
            except anthropic.AnthropicError as e:  # CredentialsError in some SDK versions
                if _is_credentials(e):
                    raise ModelError(NO_API_KEY_MESSAGE, kind="no_api_key") from None
                raise
            if self.provider is Provider.ANTHROPIC and not (
                    client.api_key or client.auth_token or getattr(client, "credentials", None)):
                raise ModelError(NO_API_KEY_MESSAGE, kind="no_api_key")
            self._client = client
            self._client_loop = weakref.ref(loop)
        self._client_ready = True
        return self._client

    async def aclose(self) -> None:
        """Close our HTTP client's connections and stop the reader thread; a later request
        opens a new client on a new thread.

        A client passed in by the caller is theirs to close and is left open.
        """
        reader, self._reader = self._reader, None
        if reader is None:
            return
        if reader.alive:
            with contextlib.suppress(RuntimeError):  # stopped meanwhile: its loop is gone
                await reader.run(self._close_client())
        await reader.aclose()

    async def _close_client(self) -> None:
        """On the reader's loop, where the client's connections live."""
        if self._client_ready and self._owns_client and self._client is not None:
            client, self._client, self._client_ready = self._client, None, False
            await client.close()

    # -- streaming ---------------------------------------------------------------------------------
    async def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        """Stream one response; see :class:`~jupyter_agent.loop.model_protocol.Model`.

        Yields a ``StreamEvent`` per SSE event (``ping`` excluded), ``ModelRetry`` /
        ``ModelFallback`` when starting over, and one ``AssistantMessage`` last. Raises
        ``ModelError`` (``PromptTooLongError`` for an over-long prompt) when it gives up.
        The HTTP work happens on the model's reader thread (``reader.py``); this generator
        runs on the caller's loop.
        """
        if self._setting_error is not None:
            raise self._setting_error
        reader = self._reader_thread()
        await reader.run(self._open_client())  # no key: the friendly error, before any request
        max_tokens = self.max_tokens if request.max_tokens == _REQUEST_DEFAULT_MAX_TOKENS else request.max_tokens
        params = self.endpoint.adapt(build_params(request, max_tokens=max_tokens,
                                                  thinking=request.thinking or self.thinking))
        attempt = 0
        overloaded_streak = 0
        while True:
            model = self.active_model
            acc = MessageAccumulator()
            outcome: dict[str, Any] = {}
            # aclosing: if our consumer stops (aclose at a yield below), the attempt's
            # finally block must run now and close the HTTP response, not at GC time.
            async with contextlib.aclosing(self._attempt(reader, model, params, acc, outcome)) as events:
                async for event in events:
                    yield event
            failure: Failure | None = outcome.get("failure")
            if failure is None:
                if (lacking := self.endpoint.observe_usage(acc.usage, params)) is not None:
                    yield self.endpoint.notice(lacking)  # once: later requests leave it out
                    params = self.endpoint.adapt(params)
                yield self._finish(acc, model, outcome.get("request_id"))
                return
            if (lacking := self.endpoint.refused(failure.kind, failure.message, params)) is not None:
                # a server without this feature (compat.py): said once, then sent again without it
                yield self.endpoint.notice(lacking)
                params = self.endpoint.adapt(params)
                continue
            # a cloud provider's own advice (providers.py)
            check, reach = PROVIDER_CHECK.get(self.provider), PROVIDER_REACH.get(self.provider)
            if not failure.retryable:
                raise to_model_error(failure, model=model, attempts=attempt + 1, check=check, reach=reach)
            overloaded_streak = overloaded_streak + 1 if failure.overloaded else 0
            if (self.fallback_model and model != self.fallback_model
                    and overloaded_streak >= self.fallback_after):
                self.active_model = self.fallback_model
                attempt = overloaded_streak = 0
                yield ModelFallback(from_model=model, to_model=self.fallback_model, error=failure.message)
                continue
            attempt += 1
            if attempt > self.max_retries:
                raise to_model_error(failure, model=model, attempts=attempt, check=check, reach=reach)
            delay = backoff_delay(attempt, base_s=self.retry_base_delay_s, max_s=self.retry_max_delay_s,
                                  retry_after=failure.retry_after, rng=self._rng)
            yield ModelRetry(attempt=attempt, max_retries=self.max_retries, delay_s=delay,
                             error=f"{failure.kind}: {failure.message}", status=failure.status)
            await asyncio.sleep(delay)

    def _reader_thread(self) -> ReaderThread:
        if self._reader is None or not self._reader.alive:
            self._reader = ReaderThread(name=f"jupyter-agent-reader-{self.name}")
        return self._reader

    async def _open_client(self) -> None:
        self._get_client()

    async def _attempt(self, reader: ReaderThread, model: str, params: dict[str, Any], acc: MessageAccumulator,
                       outcome: dict[str, Any]) -> AsyncGenerator[StreamEvent, None]:
        """One HTTP request, read by the reader thread (:meth:`_read`). Yields its stream
        events on the caller's loop; leaves ``failure``/``request_id`` in ``outcome``. The
        response is closed on every way out, including ``aclose()``, before this returns."""
        anthropic, httpx2 = self._sdk()
        inbox = Inbox(asyncio.get_running_loop())
        job = ReadJob(reader.loop, self._read(model, params, inbox), inbox)
        try:
            while (item := await job.next()) is not ReadJob.CLOSED:
                if isinstance(item, BaseException):
                    raise item  # raised on the reader's side, classified here
                if isinstance(item, _Opened):
                    outcome["request_id"] = item.request_id
                    continue
                try:
                    data = item.json()
                except ValueError:
                    outcome["failure"] = Failure("api_error", f"malformed {item.event} event: {item.data[:200]!r}")
                    return
                if item.event == "error":
                    outcome["failure"] = from_error_event(data)
                    return
                outcome["events"] = outcome.get("events", 0) + 1
                yield acc.feed(item.event, data)
            if not acc.done:
                received = outcome.get("events", 0)
                outcome["failure"] = Failure("stream_cut", f"the connection closed after {received} events, "
                                                           "before message_stop")
        except Exception as exc:  # noqa: BLE001 - classified below, re-raised if not ours
            failure = classify_exception(exc, anthropic=anthropic, httpx=httpx2, stall_timeout_s=self.stall_timeout_s)
            if failure is None:
                if (no_credentials := credentials_error(self.provider, exc)) is not None:
                    raise no_credentials from None  # e.g. Google's ADC gone since the client was made
                raise
            outcome["failure"] = failure
        finally:
            await job.close()  # the response is closed before this attempt ends

    async def _read(self, model: str, params: dict[str, Any], inbox: Inbox) -> None:
        """On the reader thread's loop: send the request and put its raw SSE events (or the
        exception that ended it) into ``inbox``. That loop runs nothing else, so the stall
        timer counts only time in which the server sent nothing, even while the caller's
        loop is blocked by a user's cell; pings count as life."""
        sdk_stream = events = None
        try:
            client = self._get_client()
            # The SDK's read timeout covers waiting for headers; this bounds it regardless.
            async with asyncio.timeout(self.stall_timeout_s + 10):
                sdk_stream = await client.messages.create(model=wire_model(self.provider, model), stream=True,
                                                          **params)
            headers = sdk_stream.response.headers
            inbox.put(_Opened(headers.get("request-id") or headers.get("x-amzn-requestid")))
            events = raw_events(sdk_stream)  # SSE, or Bedrock's event-stream frames (providers.py)
            while True:
                try:
                    async with asyncio.timeout(self.stall_timeout_s):
                        sse = await anext(events)
                except StopAsyncIteration:
                    return
                if sse.event is None or sse.event == "ping" or not sse.data:
                    continue  # pings still count as life: the stall timer restarts per event
                inbox.put(sse)
        except Exception as exc:  # noqa: BLE001 - handed to the caller's side, which decides
            inbox.put(exc)
        finally:
            if events is not None:
                with contextlib.suppress(Exception):
                    await events.aclose()
            if sdk_stream is not None:
                with contextlib.suppress(Exception):
                    await sdk_stream.close()

    def _finish(self, acc: MessageAccumulator, model: str, request_id: str | None) -> AssistantMessage:
        usage = Usage.from_api(acc.wire_snapshot.get("usage"))
        usage.requests = 1
        served = acc.snapshot.get("model") or model
        usage.cost_usd = self.price(served, usage)
        msg = AssistantMessage(message=acc.message(), usage=usage, model=served,
                               stop_reason=acc.stop_reason, request_id=request_id)
        if self.recorder is not None:
            self.recorder.add(msg)
        return msg


@dataclass(frozen=True)
class _Opened:
    """The reader's first item: the response's headers arrived."""

    request_id: str | None


def _stall_timeout_from_env() -> tuple[float, ModelError | None]:
    """The stall limit the environment sets, and the error to raise at the first request
    when it sets a bad one (a run then ends with that message, not a kernel traceback)."""
    raw = os.environ.get(STALL_TIMEOUT_ENV)
    if not raw:
        return DEFAULT_STALL_TIMEOUT_S, None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        return DEFAULT_STALL_TIMEOUT_S, ModelError(
            f"{STALL_TIMEOUT_ENV}={raw!r} is not a number of seconds above 0: set it to one "
            f"(e.g. 60) or unset it for the default ({DEFAULT_STALL_TIMEOUT_S:g} s).", kind="invalid_setting")
    return value, None


def _is_loopback(url: str | None) -> bool:
    if not url:
        return False
    from urllib.parse import urlsplit

    host = (urlsplit(url).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


def _is_credentials(exc: BaseException) -> bool:
    return type(exc).__name__ == "CredentialsError" or any(
        c.__name__ == "CredentialsError" for c in type(exc).__mro__)
