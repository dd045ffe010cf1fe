"""What both OpenAI stream state machines share: token usage and in-stream errors (pure).

An error the provider reports inside a stream (a Responses `error` event or `response.failed`, a
Chat Completions `{"error": ...}` chunk) becomes an `error` part whose `error` is a
`ModelCallError` classified from the API's error code, so the loop can retry a transient one
(`rate_limit_exceeded`, `server_error`, …) when nothing visible was streamed yet.

Token usage:

Unlike `@ai-sdk/openai` 4.0.46 (`convert-openai-responses-usage.ts`, `convert-openai-chat-usage.ts`),
which reads a missing detail as 0, a count the server did not send stays None here, and so does
anything derived from it: an OpenAI-compatible server that reports no cache counts has not
reported a cache miss.

    Responses               Chat Completions                            V4Usage
    input_tokens            prompt_tokens                               input_tokens.total
    input_tokens_details.   prompt_tokens_details.cached_tokens         input_tokens.cache_read
      cached_tokens
    …cache_write_tokens     …cache_write_tokens                         input_tokens.cache_write
    (total - read - write)                                              input_tokens.no_cache
    output_tokens           completion_tokens                           output_tokens.total
    output_tokens_details.  completion_tokens_details.reasoning_tokens  output_tokens.reasoning
      reasoning_tokens
    (total - reasoning)                                                 output_tokens.text
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, JsonValue

from ..errors import ModelCallError, in_stream_error
from ..stream_parts import V4InputTokens, V4OutputTokens, V4Usage

__all__ = ["Loose", "ToolCallBuffer", "chat_usage", "iso_timestamp", "responses_usage", "scrub_secrets", "stream_error"]

_KEY_PATTERN = re.compile(r"\b(sk|sess|rk)-[A-Za-z0-9_\-*.]{4,}")


class Loose(BaseModel):
    """A stream event read leniently: fields this code does not know are kept, never rejected."""

    model_config: ClassVar[ConfigDict] = ConfigDict(extra="allow", defer_build=True)


class ToolCallBuffer:
    """A function call's arguments, collected from its streamed deltas."""

    __slots__ = ("arguments", "call_id", "name")

    def __init__(self, call_id: str, name: str) -> None:
        self.call_id = call_id
        self.name = name
        self.arguments = ""


def iso_timestamp(seconds: float | None) -> str | None:
    """A Unix time from OpenAI (`created`, `created_at`) as the SDK's ISO string, `...Z`."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def responses_usage(usage: Mapping[str, JsonValue] | None) -> V4Usage:
    """The `usage` object of a Responses API response."""
    return _usage(usage, prefix_in="input_tokens", prefix_out="output_tokens")


def chat_usage(usage: Mapping[str, JsonValue] | None) -> V4Usage:
    """The `usage` object of a Chat Completions chunk."""
    return _usage(usage, prefix_in="prompt_tokens", prefix_out="completion_tokens")


def _usage(usage: Mapping[str, JsonValue] | None, *, prefix_in: str, prefix_out: str) -> V4Usage:
    if usage is None:
        return V4Usage(input_tokens=V4InputTokens(), output_tokens=V4OutputTokens())
    total_in = _int(usage.get(prefix_in))
    total_out = _int(usage.get(prefix_out))
    cached = _int(_detail(usage, f"{prefix_in}_details", "cached_tokens"))
    cache_write = _int(_detail(usage, f"{prefix_in}_details", "cache_write_tokens"))
    reasoning = _int(_detail(usage, f"{prefix_out}_details", "reasoning_tokens"))
    no_cache = None if total_in is None or cached is None else total_in - cached - (cache_write or 0)
    text = None if total_out is None or reasoning is None else total_out - reasoning
    input_tokens = {"total": total_in, "no_cache": no_cache, "cache_read": cached, "cache_write": cache_write}
    output_tokens = {"total": total_out, "text": text, "reasoning": reasoning}
    # Unknown counts are left unset (None in Python), so the wire form omits them as the SDK's does.
    return V4Usage(
        input_tokens=V4InputTokens(**_known(input_tokens)),
        output_tokens=V4OutputTokens(**_known(output_tokens)),
        raw=dict(usage),
    )


def _known(counts: dict[str, int | None]) -> dict[str, int]:
    return {name: count for name, count in counts.items() if count is not None}


def _detail(usage: Mapping[str, JsonValue], group: str, key: str) -> JsonValue:
    details = usage.get(group)
    return details.get(key) if isinstance(details, dict) else None


def _int(value: JsonValue) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def stream_error(payload: Mapping[str, JsonValue], *, provider: str, api: str) -> ModelCallError:
    """A `ModelCallError` for an error frame (`{"code", "type", "message"}`) inside an `api` stream."""
    message = payload.get("message")
    text = scrub_secrets(message) if isinstance(message, str) else None
    return in_stream_error([payload.get("code"), payload.get("type")], text, provider=provider, label=f"OpenAI {api}")


def scrub_secrets(text: str, api_key: str | None = None) -> str:
    """Remove the API key and anything shaped like an OpenAI key (`sk-…`, even masked) from `text`."""
    if api_key:
        text = text.replace(api_key, "[redacted]")
    return _KEY_PATTERN.sub("[redacted]", text)
