"""Model call failures, classified once so the loop can decide whether to retry.

    ModelCallError                 a model call failed (StepLineError)
    ├── retryable=True             429 (with `retry_after`), 5xx, timeouts, dropped connections
    └── retryable=False            bad request, authentication, permission, not found, …
    UnsupportedCapabilityError     the model cannot take an input (a file type, …); never retried

Provider adapters turn their SDK's exceptions into these; the loop reads only `retryable`,
`retry_after` and `kind`. Messages never carry credentials, request bodies or Python class names.

One classification serves both providers: `from_status` for an HTTP status, `in_stream_error`
for an error the provider reports inside a 200 stream, by its error code or type:

    OpenAI (`error` event, `response.failed`)     Anthropic (`error` event)     kind
    rate_limit_exceeded                           rate_limit_error              rate_limit
    server_error, internal_error, api_error       api_error                     server
    server_is_overloaded, overloaded, slow_down   overloaded_error              overloaded
    timeout                                       timeout_error                 timeout
    context_length_exceeded, invalid_prompt,      invalid_request_error,        bad_request
      invalid_request_error                         request_too_large
    -                                             authentication_error,         auth
                                                    permission_error
    -                                             not_found_error               not_found
    insufficient_quota (a billing stop)           billing_error                 not retryable
    anything else                                                               other (not retryable)
"""

from __future__ import annotations

import email.utils
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Literal

from ..errors import StepLineError
from .base import FunctionTool, ProviderTool, ToolDefinition

__all__ = [
    "ErrorKind",
    "ModelCallError",
    "UnsupportedCapabilityError",
    "in_stream_error",
    "parse_retry_after",
    "retry_after_seconds",
]

ErrorKind = Literal[
    "rate_limit", "server", "timeout", "connection", "bad_request", "auth", "not_found", "overloaded", "other"
]

_RETRYABLE: frozenset[str] = frozenset({"rate_limit", "server", "timeout", "connection", "overloaded"})

_MAX_MESSAGE = 500

# Error codes and types the providers put in in-stream error events (see the module docstring).
_STREAM_KINDS: dict[str, ErrorKind] = {
    "rate_limit_exceeded": "rate_limit",
    "rate_limit_error": "rate_limit",
    "insufficient_quota": "rate_limit",
    "billing_error": "rate_limit",
    "server_error": "server",
    "internal_error": "server",
    "api_error": "server",
    "server_is_overloaded": "overloaded",
    "overloaded": "overloaded",
    "overloaded_error": "overloaded",
    "slow_down": "overloaded",
    "timeout": "timeout",
    "timeout_error": "timeout",
    "context_length_exceeded": "bad_request",
    "invalid_prompt": "bad_request",
    "invalid_request_error": "bad_request",
    "request_too_large": "bad_request",
    "authentication_error": "auth",
    "permission_error": "auth",
    "not_found_error": "not_found",
}
_BILLING_STOPS = frozenset({"insufficient_quota", "billing_error"})


class ModelCallError(StepLineError):
    """A model call failed.

    Attributes:
        kind: What went wrong, provider-neutral.
        retryable: Whether the same request may succeed later.
        retry_after: Seconds the provider asked us to wait (from `retry-after`), if any.
        status_code: The HTTP status, when there was one.
        provider: The provider name (`openai`, `anthropic`, `scripted`).
        code: The provider's own error code (`insufficient_quota`, `overloaded_error`), if any.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind,
        provider: str,
        status_code: int | None = None,
        retry_after: float | None = None,
        retryable: bool | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.kind: ErrorKind = kind
        self.provider = provider
        self.status_code = status_code
        self.retry_after = retry_after
        self.retryable = kind in _RETRYABLE if retryable is None else retryable

    @classmethod
    def from_status(
        cls,
        status_code: int,
        message: str,
        *,
        provider: str,
        retry_after: float | None = None,
        code: str | None = None,
        retryable: bool | None = None,
    ) -> ModelCallError:
        """Classify an HTTP status."""
        kind: ErrorKind
        if status_code == 429:
            kind = "rate_limit"
        elif status_code == 529:
            kind = "overloaded"
        elif status_code in (408, 504):
            kind = "timeout"
        elif status_code >= 500:
            kind = "server"
        elif status_code in (401, 403):
            kind = "auth"
        elif status_code == 404:
            kind = "not_found"
        elif 400 <= status_code < 500:
            kind = "bad_request"
        else:
            kind = "other"
        return cls(
            message,
            kind=kind,
            provider=provider,
            status_code=status_code,
            retry_after=retry_after,
            code=code,
            retryable=retryable,
        )


def in_stream_error(names: Sequence[object], message: object, *, provider: str, label: str) -> ModelCallError:
    """Classify an error event inside a stream by its code/type `names` (the first known one wins).

    `label` says whose stream it was ("OpenAI Responses", "Anthropic"); the text is
    `<label> stream error <name>: <message>` (the caller scrubs the message of keys).
    """
    known: list[str] = [name for name in names if isinstance(name, str) and name]
    kinds: list[ErrorKind] = [_STREAM_KINDS[name] for name in known if name in _STREAM_KINDS]
    text = f"{label} stream error" + (f" {known[0]}" if known else "")
    if isinstance(message, str) and message:
        text += f": {message if len(message) <= _MAX_MESSAGE else message[:_MAX_MESSAGE] + '…'}"
    retryable = False if any(name in _BILLING_STOPS for name in known) else None
    return ModelCallError(
        text,
        kind=kinds[0] if kinds else "other",
        provider=provider,
        retryable=retryable,
        code=known[0] if known else None,
    )


class UnsupportedCapabilityError(StepLineError):
    """The model cannot take this input (for example a PDF sent to a text-only model)."""

    def __init__(self, message: str, *, provider: str, model_id: str) -> None:
        super().__init__(message)
        self.provider = provider
        self.model_id = model_id


def function_tools_only(
    tools: Sequence[ToolDefinition], *, provider: str, model_id: str, api: str
) -> list[FunctionTool]:
    """The function tools of a call whose API runs no provider tool of this kind.

    Raises `UnsupportedCapabilityError` naming the first provider tool the API cannot send, before
    any request is made.
    """
    for tool in tools:
        if isinstance(tool, ProviderTool):
            raise UnsupportedCapabilityError(
                f"the provider tool {tool.id} ({tool.name}) is not supported by {api} for {model_id}",
                provider=provider,
                model_id=model_id,
            )
    return [tool for tool in tools if isinstance(tool, FunctionTool)]


def parse_retry_after(value: str | None, *, milliseconds: bool = False) -> float | None:
    """Seconds to wait from a retry header; None when absent or unreadable.

    Reads `retry-after` (delta-seconds or an HTTP date), or `retry-after-ms` with `milliseconds=True`.
    """
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None if milliseconds else _seconds_until(value)
    if number < 0:
        return None
    return number / 1000 if milliseconds else number


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from `retry-after-ms`, else `retry-after` (both providers send these)."""
    milliseconds = parse_retry_after(headers.get("retry-after-ms"), milliseconds=True)
    return milliseconds if milliseconds is not None else parse_retry_after(headers.get("retry-after"))


def _seconds_until(http_date: str) -> float | None:
    try:
        when = email.utils.parsedate_to_datetime(http_date)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
