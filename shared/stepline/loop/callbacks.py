"""Lifecycle callbacks, fired in the order the AI SDK's `streamText` fires them.

    on_start → prepare_step(0) → on_step_start → on_language_model_call_start → on_chunk…
    → on_language_model_call_end → on_tool_execution_start → (tool) → on_tool_execution_end
    → on_step_end → prepare_step(1) → … → on_end;  on_error / on_abort when those happen.

Each callback receives one event object and may be sync or async; the loop awaits it.
`on_tool_execution_start` is the place for a durable write before a tool runs: if it raises, the
tool does not run and the call ends as a tool error. Any other callback that raises fails the run.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..protocol.stream_parts import TextStreamPart

__all__ = [
    "AbortEvent",
    "Callbacks",
    "ChunkEvent",
    "EndEvent",
    "ErrorEvent",
    "ModelCallEndEvent",
    "ModelCallStartEvent",
    "StartEvent",
    "StepEndEvent",
    "StepStartEvent",
    "ToolExecutionEndEvent",
    "ToolExecutionStartEvent",
    "notify",
]


@dataclass(frozen=True, slots=True)
class StartEvent:
    """The run starts (before any model call)."""

    run_id: str
    provider: str
    model_id: str
    messages: list[Any]
    tools: list[str]
    runtime_context: Any


@dataclass(frozen=True, slots=True)
class StepStartEvent:
    """A step starts (after prepare_step)."""

    run_id: str
    step_number: int
    provider: str
    model_id: str
    messages: list[Any]


@dataclass(frozen=True, slots=True)
class ModelCallStartEvent:
    """A model call starts (once per attempt)."""

    run_id: str
    step_number: int
    attempt: int
    provider: str
    model_id: str
    prompt: list[Any]
    tools: list[str]


@dataclass(frozen=True, slots=True)
class ModelCallEndEvent:
    """A model call ended."""

    run_id: str
    step_number: int
    finish_reason: str
    usage: Any
    response_id: str | None
    duration_ms: int


@dataclass(frozen=True, slots=True)
class ChunkEvent:
    """Every part the run emits."""

    run_id: str
    part: TextStreamPart


@dataclass(frozen=True, slots=True)
class ToolExecutionStartEvent:
    """A tool is about to run; raising here stops it."""

    run_id: str
    step_number: int
    tool_call_id: str
    tool_name: str
    input: Any


@dataclass(frozen=True, slots=True)
class ToolExecutionEndEvent:
    """A tool finished (`error` set when it failed)."""

    run_id: str
    step_number: int
    tool_call_id: str
    tool_name: str
    input: Any
    output: Any
    error: BaseException | None
    duration_ms: int


@dataclass(frozen=True, slots=True)
class StepEndEvent:
    """A step ended; its tool results are settled."""

    run_id: str
    step: Any
    """The `StepRecord`; its `response_messages` are this step's only."""


@dataclass(frozen=True, slots=True)
class EndEvent:
    """The run ended normally."""

    run_id: str
    finish_reason: str | None
    steps: list[Any]
    total_usage: Any
    text: str
    response_messages: list[Any]


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """The run failed."""

    run_id: str
    error: BaseException


@dataclass(frozen=True, slots=True)
class AbortEvent:
    """The run was aborted."""

    run_id: str
    reason: str | None
    steps: list[Any]


Callback = Callable[[Any], Awaitable[None] | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Callbacks:
    """Optional lifecycle callbacks."""

    on_start: Callback | None = None
    on_step_start: Callback | None = None
    on_language_model_call_start: Callback | None = None
    on_chunk: Callback | None = None
    on_language_model_call_end: Callback | None = None
    on_tool_execution_start: Callback | None = None
    on_tool_execution_end: Callback | None = None
    on_step_end: Callback | None = None
    on_end: Callback | None = None
    on_error: Callback | None = None
    on_abort: Callback | None = None
    extra: dict[str, Callback] = field(default_factory=dict[str, Callback])


async def notify(callback: Callback | None, event: object) -> None:
    """Call a callback (sync or async) and wait for it."""
    if callback is None:
        return
    result = callback(event)
    if inspect.isawaitable(result):
        await result
