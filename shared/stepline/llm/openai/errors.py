"""`openai` SDK exceptions → `ModelCallError`, classified once for the loop.

    openai.APITimeoutError        -> kind "timeout"     (retryable)
    openai.APIConnectionError     -> kind "connection"  (retryable; also a connection dropped mid-stream)
    openai.APIStatusError         -> by status (`ModelCallError.from_status`); 429 carries `retry_after`
                                     from `retry-after-ms` / `retry-after` (seconds or an HTTP date);
                                     a 429 `insufficient_quota` is a billing stop, not retryable
    openai.APIError (bare)        -> an error frame inside the stream: an `error` part, not an exception
    any other openai.OpenAIError  -> kind "other", not retryable

Messages name the status, the API's error code and its message, with anything that looks like
an API key scrubbed; they never carry the request body or headers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

import openai
from pydantic import JsonValue

from ..errors import ModelCallError, retry_after_seconds
from .stream_common import scrub_secrets

__all__ = ["model_call_error", "stream_error_payload"]

_MAX_MESSAGE = 500


def model_call_error(error: openai.OpenAIError, *, provider: str, api: str, api_key: str | None) -> ModelCallError:
    """Classify an SDK exception raised while calling `api` (for example "Responses")."""
    if isinstance(error, openai.APITimeoutError):
        return ModelCallError(f"OpenAI {api} request timed out", kind="timeout", provider=provider)
    if isinstance(error, openai.APIConnectionError):
        return ModelCallError(f"OpenAI {api} connection failed or was lost", kind="connection", provider=provider)
    if isinstance(error, openai.APIStatusError):
        return _status_error(error, provider=provider, api=api, api_key=api_key)
    return ModelCallError(f"OpenAI {api} call failed", kind="other", provider=provider, retryable=False)


def _status_error(error: openai.APIStatusError, *, provider: str, api: str, api_key: str | None) -> ModelCallError:
    status = error.status_code
    detail = _server_message(error.body, api_key)
    code = f" {error.code}" if error.code else ""
    message = f"OpenAI {api} returned HTTP {status}{code}" + (f": {detail}" if detail else "")
    retry_after = retry_after_seconds(error.response.headers)
    if status == 429 and error.code == "insufficient_quota":
        # The account is out of credit: waiting will not help.
        return ModelCallError(
            message, kind="rate_limit", provider=provider, status_code=status, retry_after=None, retryable=False
        )
    return ModelCallError.from_status(status, message, provider=provider, retry_after=retry_after)


def _server_message(body: object, api_key: str | None) -> str:
    text = cast(Mapping[str, object], body).get("message") if isinstance(body, Mapping) else None
    if not isinstance(text, str):
        return ""
    text = scrub_secrets(text, api_key)
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE] + "…"


def stream_error_payload(error: openai.APIError, api_key: str | None) -> dict[str, JsonValue]:
    """The JSON of an error frame the SDK raised from inside a stream, for an `error` part."""
    payload: dict[str, JsonValue] = {"message": scrub_secrets(error.message, api_key)}
    for key, value in (("type", error.type), ("code", error.code), ("param", error.param)):
        if value is not None:
            payload[key] = value
    return payload
