"""OpenAI language models on the official `openai` SDK: Responses (default), Chat Completions, auto.

The thin I/O layer over the pure modules of this package (listed in its `__init__`).

A call: convert (warnings, or `UnsupportedCapabilityError` before any I/O), POST with
`stream=True`, yield `stream-start`, then the parts of each event, then `finish`. Failures before
or during streaming raise `ModelCallError` (a connection dropped mid-stream raises after the parts
already yielded); an error frame inside the stream becomes an `error` part carrying a classified
`ModelCallError`.

The SDK must not retry: Stepline's loop retries at safe step boundaries and must not multiply its
budget with the SDK's. Clients are shared per (event loop, base URL, API key); whoever owns the
loop closes them before it ends: `close_model(model)` or `aclose_openai_clients()`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Literal, Protocol, cast

import httpx2
import openai
from pydantic import JsonValue

from ..base import ModelCallOptions, ModelCapabilities, ProviderTool
from ..errors import ModelCallError, UnsupportedCapabilityError
from ..stream_parts import ModelStreamPart, V4Raw, V4StreamStart
from .capabilities import chat_capabilities, responses_capabilities
from .chat_convert import build_chat_request
from .chat_stream import ChatStreamState
from .clients import CLIENTS, OpenAIApiCache
from .errors import model_call_error, stream_error_payload
from .options import CallWarning, OpenAIApi
from .responses_convert import build_responses_request
from .responses_stream import ResponsesStreamState

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_TIMEOUT_SECONDS",
    "OpenAIChatModel",
    "OpenAIModel",
    "OpenAIResponsesModel",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_TIMEOUT_SECONDS = 300.0
"""Per request; with streaming it bounds the wait for the first byte and between two events."""


# --- the two APIs -----------------------------------------------------------------------------


class _StreamState(Protocol):
    def process(self, raw: Mapping[str, Any]) -> list[ModelStreamPart]: ...

    def error(self, payload: dict[str, JsonValue]) -> list[ModelStreamPart]: ...

    def finish(self) -> list[ModelStreamPart]: ...


class _SdkStream(Protocol):
    def __aiter__(self) -> AsyncIterator[Any]: ...

    async def close(self) -> None: ...


class _OpenAIModelBase:
    _api_label: str = "API"

    def __init__(
        self,
        model_id: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        client: openai.AsyncOpenAI | None = None,
        capabilities: ModelCapabilities | None = None,
        provider: str = "openai",
    ) -> None:
        self._model_id = model_id
        self._api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if base_url is None and client is not None:
            base_url = str(client.base_url)
        self._base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self._timeout = timeout
        self._client_override = client
        self._capabilities_override = capabilities
        self._provider = provider

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def base_url(self) -> str:
        """The API base URL calls go to (the argument, the client's, `OPENAI_BASE_URL` or OpenAI's)."""
        return self._base_url

    @property
    def api_key(self) -> str | None:
        """The API key (the argument or `OPENAI_API_KEY`); kept out of every error message."""
        return self._api_key

    def client(self) -> openai.AsyncOpenAI:
        """The SDK client for the running event loop (shared, `max_retries=0`)."""
        if self._client_override is not None:
            return self._client_override
        if not self._api_key:
            message = "no OpenAI API key: pass api_key= or set OPENAI_API_KEY"
            raise ModelCallError(message, kind="auth", provider=self._provider, retryable=False)
        return CLIENTS.get(base_url=self._base_url, api_key=self._api_key)

    async def aclose(self) -> None:
        """Close the shared client this model uses on the running loop (`close_model` calls this).

        A client passed in by the caller stays open: its owner closes it.
        """
        if self._client_override is None and self._api_key:
            await CLIENTS.aclose_one(base_url=self._base_url, api_key=self._api_key)

    def _error(self, error: openai.OpenAIError) -> ModelCallError:
        return model_call_error(error, provider=self._provider, api=self._api_label, api_key=self._api_key)

    async def _run(
        self,
        open_stream: Callable[[], Awaitable[_SdkStream]],
        state: _StreamState,
        warnings: list[CallWarning],
        include_raw_chunks: bool,
        request_body: dict[str, Any] | None = None,
    ) -> AsyncIterator[ModelStreamPart]:
        try:
            stream = await open_stream()
        except openai.OpenAIError as error:
            raise self._error(error) from None
        yield V4StreamStart(warnings=warnings, request_body=request_body)
        try:
            async for event in stream:
                raw = cast(dict[str, Any], event.to_dict())
                if include_raw_chunks:
                    yield V4Raw(raw_value=cast(JsonValue, raw))
                for part in state.process(raw):
                    yield part
        except (openai.APIStatusError, openai.APIConnectionError) as error:
            raise self._error(error) from None
        except openai.APIError as error:
            # The SDK raises an error frame inside the stream as a bare APIError: report it as a part.
            for part in state.error(stream_error_payload(error, self._api_key)):
                yield part
        finally:
            await stream.close()
        for part in state.finish():
            yield part


class OpenAIResponsesModel(_OpenAIModelBase):
    """An OpenAI model over the Responses API (`POST /v1/responses`, streamed).

    Args:
        model_id: The model, e.g. `"gpt-5-mini"`, `"gpt-4.1"`, `"o4-mini"`.
        api_key: Defaults to `OPENAI_API_KEY` (read when the model is made).
        base_url: Defaults to `OPENAI_BASE_URL`, else `https://api.openai.com/v1`.
        timeout: Seconds per request (first byte, and between two stream events).
        client: A ready `openai.AsyncOpenAI` to use instead of the shared one (give it `max_retries=0`).
        capabilities: Override what the model accepts (derived from `model_id` otherwise).
        provider: The providerOptions / providerMetadata key, `"openai"`.

    Example:
        model = OpenAIResponsesModel("gpt-5-mini", timeout=60)
        async for part in model.stream(ModelCallOptions(prompt=messages)):
            ...
    """

    _api_label = "Responses"

    @property
    def capabilities(self) -> ModelCapabilities:
        return self._capabilities_override or responses_capabilities(self._model_id)

    async def stream(self, options: ModelCallOptions) -> AsyncIterator[ModelStreamPart]:
        """Stream one call; see `LanguageModel.stream`."""
        request = build_responses_request(
            self._model_id, options, provider=self._provider, capabilities=self._capabilities_override
        )
        client = self.client()

        async def open_stream() -> _SdkStream:
            return await client.responses.create(
                **request.body, stream=True, extra_headers=options.headers or None, timeout=self._timeout
            )

        state = ResponsesStreamState(provider=self._provider, tool_names=request.tool_names)
        async for part in self._run(open_stream, state, request.warnings, options.include_raw_chunks, request.body):
            yield part


class OpenAIChatModel(_OpenAIModelBase):
    """An OpenAI (or OpenAI-compatible) model over Chat Completions (`POST /v1/chat/completions`).

    Takes the same arguments as `OpenAIResponsesModel`.

    Example:
        model = OpenAIChatModel("llama3.1", base_url="http://localhost:11434/v1", api_key="unused")
        async for part in model.stream(ModelCallOptions(prompt=messages)):
            ...
    """

    _api_label = "Chat Completions"

    @property
    def capabilities(self) -> ModelCapabilities:
        return self._capabilities_override or chat_capabilities(self._model_id)

    async def stream(self, options: ModelCallOptions) -> AsyncIterator[ModelStreamPart]:
        """Stream one call; see `LanguageModel.stream`."""
        request = build_chat_request(
            self._model_id, options, provider=self._provider, capabilities=self._capabilities_override
        )
        client = self.client()

        async def open_stream() -> _SdkStream:
            return await client.chat.completions.create(
                **request.body, stream=True, extra_headers=options.headers or None, timeout=self._timeout
            )

        state = ChatStreamState(provider=self._provider)
        async for part in self._run(open_stream, state, request.warnings, options.include_raw_chunks, request.body):
            yield part


# --- auto ---------------------------------------------------------------------------------------


_API_CACHE = OpenAIApiCache()

# Statuses meaning "no such route": an OpenAI-compatible server without the Responses API.
_NO_RESPONSES_API = frozenset({404, 405, 501})
# Statuses meaning "the route exists and rejected the empty body": the Responses API is there.
_ROUTE_EXISTS = frozenset({400, 422})


class OpenAIModel:
    """An OpenAI model that picks its API: `api="auto"` (default), `"responses"` or `"chat"`.

    `auto` asks the server once per base URL whether it has the Responses API (`POST /responses`
    with an empty body: OpenAI answers 400 for the missing model, a server without the route
    answers 404) and uses Chat Completions when it does not. The answer is cached per base URL
    in `api_cache` (a process-wide cache by default). A call listing one of OpenAI's built-in
    tools (`stepline.llm.openai.tools`) never falls back: on a server without the Responses API
    it fails with `UnsupportedCapabilityError` before the model is called.

    Args:
        model_id: The model, e.g. `"gpt-5-mini"`.
        api: `"auto"`, `"responses"` or `"chat"`.
        api_cache: Where probe answers are kept (defaults to the shared cache).
        **kwargs: `api_key`, `base_url`, `timeout`, `client`, `capabilities`, `provider`, as for
            `OpenAIResponsesModel`.

    Example:
        model = OpenAIModel("qwen2.5", base_url="http://127.0.0.1:8000/v1", api_key="local")
        async for part in model.stream(ModelCallOptions(prompt=messages)):
            ...
    """

    def __init__(
        self,
        model_id: str,
        *,
        api: Literal["auto", "responses", "chat"] = "auto",
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        client: openai.AsyncOpenAI | None = None,
        capabilities: ModelCapabilities | None = None,
        provider: str = "openai",
        api_cache: OpenAIApiCache | None = None,
    ) -> None:
        settings: dict[str, Any] = {
            "api_key": api_key,
            "base_url": base_url,
            "timeout": timeout,
            "client": client,
            "capabilities": capabilities,
            "provider": provider,
        }
        self._responses = OpenAIResponsesModel(model_id, **settings)
        self._chat = OpenAIChatModel(model_id, **settings)
        self._api: Literal["auto", "responses", "chat"] = api
        self._api_cache = api_cache if api_cache is not None else _API_CACHE
        self._api_key = self._responses.api_key
        self._timeout = timeout

    @property
    def provider(self) -> str:
        return self._responses.provider

    @property
    def model_id(self) -> str:
        return self._responses.model_id

    @property
    def api_key(self) -> str | None:
        """The API key both APIs use (the argument or `OPENAI_API_KEY`)."""
        return self._api_key

    @property
    def capabilities(self) -> ModelCapabilities:
        """The chosen API's capabilities; before an `auto` probe, the Responses API's."""
        api = self._api if self._api != "auto" else self._api_cache.get(self._responses.base_url)
        return self._chat.capabilities if api == "chat" else self._responses.capabilities

    def client(self) -> openai.AsyncOpenAI:
        """The SDK client for the running event loop (one for both APIs)."""
        return self._responses.client()

    async def aclose(self) -> None:
        """Close the shared client this model uses on the running loop (`close_model` calls this)."""
        await self._responses.aclose()

    async def resolve_api(self) -> OpenAIApi:
        """The API calls use (probing the server once per base URL when `api="auto"`)."""
        api = self._api
        if api != "auto":
            return api
        return await self._api_cache.resolve(self._responses.base_url, self._probe)

    async def stream(self, options: ModelCallOptions) -> AsyncIterator[ModelStreamPart]:
        """Stream one call on the resolved API; see `LanguageModel.stream`."""
        api = await self.resolve_api()
        if api == "chat":
            # OpenAI's built-in tools exist only on the Responses API: no silent fallback without them.
            for tool in options.tools:
                if isinstance(tool, ProviderTool):
                    raise UnsupportedCapabilityError(
                        f"the provider tool {tool.id} ({tool.name}) needs the OpenAI Responses API, "
                        f"which {self._responses.base_url} does not serve (api='auto' chose Chat Completions)",
                        provider=self.provider,
                        model_id=self.model_id,
                    )
        model = self._chat if api == "chat" else self._responses
        async for part in model.stream(options):
            yield part

    async def _probe(self) -> OpenAIApi:
        client = self._responses.client()
        try:
            await client.post("/responses", cast_to=httpx2.Response, body={}, options={"timeout": self._timeout})
        except openai.APIStatusError as error:
            if error.status_code in _NO_RESPONSES_API:
                return "chat"
            if error.status_code in _ROUTE_EXISTS:
                return "responses"
            # 401, 429, 5xx…: the server could not tell us; fail this call and probe again next time.
            raise self._probe_error(error) from None
        except openai.OpenAIError as error:
            raise self._probe_error(error) from None
        return "responses"

    def _probe_error(self, error: openai.OpenAIError) -> ModelCallError:
        return model_call_error(error, provider=self.provider, api="Responses probe", api_key=self._api_key)
