"""The Anthropic Messages API as a `LanguageModel`, through the official `anthropic` SDK.

The thin I/O layer: `convert` builds the request, the SDK sends it, and
`stream` turns the server-sent events into stream parts. The SDK never retries
(`max_retries=0`): the Stepline loop retries at safe step boundaries, and two retry budgets
stacked would multiply. Failures become `ModelCallError`:

    anthropic.RateLimitError (429)        rate_limit, with `retry_after` from retry-after(-ms)
    529 overloaded                        overloaded
    other anthropic.APIStatusError        ModelCallError.from_status (5xx server, 4xx bad_request, …)
    anthropic.APITimeoutError             timeout
    anthropic.APIConnectionError          connection
    httpx2.TimeoutException mid-stream    timeout
    httpx2.TransportError mid-stream      connection (anthropic 2.14 lets a dropped stream's
                                          transport error through, e.g. RemoteProtocolError)

Messages name the status and the provider's error type and text; never the key or the request.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import AsyncIterator
from typing import Any, cast

import anthropic
import httpx2

from ..base import ModelCallOptions, ModelCapabilities
from ..errors import ModelCallError, retry_after_seconds
from ..stream_parts import ModelStreamPart, V4StreamStart
from .convert import AnthropicRequest, build_request
from .server_results import prompt_documents
from .stream import AnthropicStreamState
from .traits import anthropic_capabilities

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicModel", "to_model_call_error"]

PROVIDER = "anthropic"
DEFAULT_MAX_TOKENS = 8192
DEFAULT_TIMEOUT = 600.0

_COUNTED_FIELDS = frozenset({"system", "tools", "tool_choice", "thinking"})
"""The request fields besides model and messages that the token counting endpoint takes."""

_ClientKey = tuple[str | None, str | None]
# One client per (base URL, key) and event loop: an httpx2 connection pool belongs to the loop that
# opened it, and a Lambda handler that calls `asyncio.run` per invocation gets a new loop each time.
_CLIENTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[_ClientKey, anthropic.AsyncAnthropic]] = (
    weakref.WeakKeyDictionary()
)


class AnthropicModel:
    """A Claude model behind the Messages API.

    Example:
        >>> model = AnthropicModel("claude-sonnet-4-6")  # ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
        >>> async for part in model.stream(ModelCallOptions(prompt=messages)): ...

    Args:
        model_id: The Anthropic model id.
        api_key: The API key; `ANTHROPIC_API_KEY` when None.
        base_url: The API endpoint; `ANTHROPIC_BASE_URL` (or the SDK default) when None.
        timeout: Seconds for the connection and for each read of the stream.
        max_tokens: `max_tokens` when a call sets no `max_output_tokens`.
    """

    def __init__(
        self,
        model_id: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        self._model_id = model_id
        self._api_key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        self._base_url = base_url if base_url is not None else os.environ.get("ANTHROPIC_BASE_URL")
        self._timeout = timeout
        self._max_tokens = max_tokens
        self._capabilities = anthropic_capabilities(model_id)

    def __repr__(self) -> str:
        return f"AnthropicModel({self._model_id!r})"  # never the key

    @property
    def provider(self) -> str:
        return PROVIDER

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def capabilities(self) -> ModelCapabilities:
        return self._capabilities

    def build_request(self, options: ModelCallOptions) -> AnthropicRequest:
        """The request `stream` would send (pure; for tests and debugging)."""
        return build_request(
            options, model_id=self._model_id, capabilities=self._capabilities, default_max_tokens=self._max_tokens
        )

    async def stream(self, options: ModelCallOptions) -> AsyncIterator[ModelStreamPart]:
        """Send one request and yield its parts; raises `ModelCallError` on failure."""
        request = self.build_request(options)
        response = await self._send(request)
        state = AnthropicStreamState(
            uses_json_tool=request.uses_json_tool,
            include_raw=options.include_raw_chunks,
            documents=prompt_documents(options.prompt),
        )
        try:
            yield V4StreamStart(warnings=request.warnings, request_body=request.body)
            async for event in anthropic.AsyncStream.raw_events(response.response):
                for part in state.feed(event.event, event.data):
                    yield part
        except (anthropic.APIError, httpx2.TransportError) as error:
            raise to_model_call_error(error) from error
        finally:
            await response.close()
        for part in state.close():
            yield part

    async def count_tokens(self, options: ModelCallOptions) -> int:
        """The input tokens of the request `stream` would send, as Anthropic counts them.

        `POST /v1/messages/count_tokens` with the request's messages, system prompt, tools, tool
        choice and thinking (the fields the endpoint takes): free, rate limited apart from messages.
        """
        request = self.build_request(options)
        body = {key: value for key, value in request.body.items() if key in _COUNTED_FIELDS}
        try:
            counted = await self._client().messages.count_tokens(
                model=self._model_id,
                messages=cast(Any, request.body["messages"]),
                extra_body=body,
                extra_headers=request.headers,
                timeout=self._timeout,
            )
        except (anthropic.APIError, httpx2.TransportError) as error:
            raise to_model_call_error(error) from error
        return counted.input_tokens

    async def aclose(self) -> None:
        """Close this model's client on the running event loop (others close with their loop)."""
        clients = _CLIENTS.get(asyncio.get_running_loop(), {})
        client = clients.pop((self._base_url, self._api_key), None)
        if client is not None:
            await client.close()

    async def _send(self, request: AnthropicRequest) -> anthropic.AsyncStream[Any]:
        body = dict(request.body)
        model, max_tokens, messages = body.pop("model"), body.pop("max_tokens"), body.pop("messages")
        try:
            # The body is already the API's JSON; fields the typed signature lacks (temperature,
            # mcp_servers, …) travel in extra_body, which the SDK merges into the same object.
            return await self._client().messages.create(
                model=str(model),
                max_tokens=cast(int, max_tokens),
                messages=cast(Any, messages),
                stream=True,
                extra_body=body,
                extra_headers=request.headers,
                timeout=self._timeout,
            )
        except (anthropic.APIError, httpx2.TransportError) as error:
            raise to_model_call_error(error) from error

    def _client(self) -> anthropic.AsyncAnthropic:
        clients = _CLIENTS.setdefault(asyncio.get_running_loop(), {})
        key = (self._base_url, self._api_key)
        if key not in clients:
            clients[key] = anthropic.AsyncAnthropic(api_key=self._api_key, base_url=self._base_url, max_retries=0)
        return clients[key]


def to_model_call_error(error: anthropic.APIError | httpx2.TransportError) -> ModelCallError:
    """Classify an SDK or transport failure (timeouts first: the SDK's timeout is a connection error)."""
    if isinstance(error, anthropic.APITimeoutError | httpx2.TimeoutException):
        return ModelCallError("the Anthropic request timed out", kind="timeout", provider=PROVIDER)
    if isinstance(error, anthropic.APIConnectionError | httpx2.TransportError):
        return ModelCallError("the connection to Anthropic failed or was lost", kind="connection", provider=PROVIDER)
    if isinstance(error, anthropic.APIStatusError):
        return _status_error(error)
    return ModelCallError("the Anthropic response was not understood", kind="other", provider=PROVIDER)


def _status_error(error: anthropic.APIStatusError) -> ModelCallError:
    headers = error.response.headers
    retry_after = retry_after_seconds(headers)
    detail = ": ".join(str(part) for part in (error.type, error.api_message) if part)
    message = f"Anthropic returned HTTP {error.status_code}" + (f" ({detail})" if detail else "")
    return ModelCallError.from_status(error.status_code, message, provider=PROVIDER, retry_after=retry_after)
