"""Parse a model's tool call: known tool, JSON input, schema-valid — or repaired, or invalid.

Mirrors `parse-tool-call.ts` (`ai@7.0.173`): an unknown (or inactive) tool or an input that does
not parse or fit the schema goes through `repair_tool_call` when one is configured; what still
fails becomes an *invalid* tool call (`dynamic`, `invalid`, with the error), which the model sees
as a tool error in its next step. Error names follow the SDK's so the text the model reads is the
same (`AI_NoSuchToolError: Model tried to call unavailable tool 'x'. Available tools: a, b.`).
"""

from __future__ import annotations

import inspect
from typing import Any

from ..errors import StepLineError
from ..llm.stream_parts import V4ToolCall
from ..protocol._json import loads_strict
from ..protocol.to_chunks import error_message
from .config import LoopConfig
from .state import ToolCallRecord
from .tools import InvalidToolInputError, Tool

__all__ = ["NoSuchToolError", "ToolCallRepairError", "ToolInputError", "parse_tool_call"]


class NoSuchToolError(StepLineError):
    """The model called a tool that is not available in this step."""

    name = "AI_NoSuchToolError"

    def __init__(self, tool_name: str, available: list[str]) -> None:
        listed = f"Available tools: {', '.join(available)}." if available else "No tools are available."
        super().__init__(f"Model tried to call unavailable tool '{tool_name}'. {listed}")
        self.tool_name = tool_name


class ToolInputError(StepLineError):
    """The tool input does not parse as JSON or does not fit the tool's schema."""

    name = "AI_InvalidToolInputError"


class ToolCallRepairError(StepLineError):
    """`repair_tool_call` itself failed."""

    name = "AI_ToolCallRepairError"


def _available(config: LoopConfig) -> list[str]:
    names = [t.name for t in config.tools]
    return [n for n in names if n in config.active_tools] if config.active_tools is not None else names


def _lookup(config: LoopConfig, name: str) -> Tool | None:
    if config.active_tools is not None and name not in config.active_tools:
        return None
    return config.tool(name)


def _parse(config: LoopConfig, part: V4ToolCall) -> ToolCallRecord:
    tool = _lookup(config, part.tool_name)
    if tool is None:
        raise NoSuchToolError(part.tool_name, _available(config))
    try:
        value: Any = {} if not part.input.strip() else loads_strict(part.input)
    except ValueError as error:
        raise ToolInputError(f"Invalid input for tool {part.tool_name}: JSON parsing failed: {error}") from None
    try:
        tool.validate_input(value)
    except InvalidToolInputError as error:
        raise ToolInputError(str(error)) from None
    return ToolCallRecord(
        tool_call_id=part.tool_call_id,
        tool_name=part.tool_name,
        input=value,
        provider_executed=part.provider_executed,
        dynamic=True if tool.kind == "dynamic" else None,
        title=tool.title,
        provider_metadata=part.provider_metadata,
    )


async def _repair(
    config: LoopConfig, part: V4ToolCall, error: StepLineError, messages: list[Any]
) -> ToolCallRecord | None:
    if config.repair_tool_call is None:
        return None
    try:
        repaired = config.repair_tool_call(
            tool_call={"toolCallId": part.tool_call_id, "toolName": part.tool_name, "input": part.input},
            tools={t.name: t for t in config.tools},
            error=error,
            messages=messages,
        )
        if inspect.isawaitable(repaired):
            repaired = await repaired
    except Exception as repair_error:
        raise ToolCallRepairError(f"Error repairing tool call: {error_message(repair_error)}") from repair_error
    if repaired is None:
        return None
    fixed = part.model_copy(
        update={"tool_name": repaired.get("toolName", part.tool_name), "input": repaired.get("input", part.input)}
    )
    return _parse(config, fixed)


async def parse_tool_call(
    config: LoopConfig, part: V4ToolCall, messages: list[Any]
) -> tuple[ToolCallRecord, BaseException | None]:
    """The call record, and the error when the call is invalid."""
    if part.provider_executed and part.dynamic and config.tool(part.tool_name) is None:
        value = _json_or_text(part.input)
        return ToolCallRecord(
            tool_call_id=part.tool_call_id,
            tool_name=part.tool_name,
            input=value,
            provider_executed=True,
            dynamic=True,
            provider_metadata=part.provider_metadata,
        ), None
    try:
        try:
            return _parse(config, part), None
        except (NoSuchToolError, ToolInputError) as error:
            repaired = await _repair(config, part, error, messages)
            if repaired is None:
                raise
            return repaired, None
    except StepLineError as error:
        tool = config.tool(part.tool_name)
        return ToolCallRecord(
            tool_call_id=part.tool_call_id,
            tool_name=part.tool_name,
            input=_json_or_text(part.input),
            provider_executed=part.provider_executed,
            dynamic=True,
            invalid=True,
            error_text=error_message(error),
            title=tool.title if tool is not None else None,
            provider_metadata=part.provider_metadata,
        ), error


def _json_or_text(text: str) -> Any:
    try:
        return loads_strict(text)
    except ValueError:
        return text
