"""The end of an Anthropic message in V4 terms: its finish reason and its usage."""

from __future__ import annotations

from typing import Any, Literal

from ..stream_parts import V4FinishReason, V4InputTokens, V4OutputTokens, V4Usage
from .fields import as_dict, some

__all__ = ["finish_reason", "usage_from_anthropic"]

_STOP_REASONS: dict[str, Literal["stop", "length", "content-filter", "tool-calls", "other"]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool-calls",
    "refusal": "content-filter",
    "pause_turn": "stop",  # a long server-tool turn paused: the SDK ends the step as a stop
}
_INPUT_KEYS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def finish_reason(stop_reason: str | None, *, json_tool: bool = False) -> V4FinishReason:
    """Map `stop_reason`; the raw value is kept. A forced JSON tool's `tool_use` is a normal stop."""
    if stop_reason == "tool_use" and json_tool:
        return V4FinishReason(unified="stop", raw=stop_reason)
    return V4FinishReason(unified=_STOP_REASONS.get(stop_reason or "", "other"), **some(raw=stop_reason))


def usage_from_anthropic(usage: dict[str, Any]) -> V4Usage:
    """Anthropic usage → V4 usage. `input_tokens` excludes cache reads and writes, so the total adds them.

    A count the provider did not report stays None (reasoning tokens, notably): never 0 for unknown.
    """
    no_cache, read, write = (_int(usage.get(key)) for key in _INPUT_KEYS)
    output = _int(usage.get("output_tokens"))
    reasoning = _int(as_dict(usage.get("output_tokens_details")).get("thinking_tokens"))
    total = None if no_cache is None else no_cache + (read or 0) + (write or 0)
    text = output - reasoning if output is not None and reasoning is not None else None
    return V4Usage(
        input_tokens=V4InputTokens(**some(total=total, no_cache=no_cache, cache_read=read, cache_write=write)),
        output_tokens=V4OutputTokens(**some(total=output, text=text, reasoning=reasoning)),
        **some(raw=usage or None),
    )


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
