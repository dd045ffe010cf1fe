"""Provider stream parts of one model call, mapped to the loop's TextStreamParts as they arrive.

`CallParts.part` handles one part of the adapter's stream: `start-step` before the first real
part (as `streamText` does), text and reasoning blocks collected for the step's messages, tool
calls parsed and validated (through `repair_tool_call` when configured) and handed to the step's
`on_tool_call` right after they are emitted, provider-executed results kept (generated files
through `LoopConfig.generated_files`), the finish part's reason and usage. `ModelCallResult` is
what the call produced; `model_call` runs the attempts around it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..llm.stream_parts import (
    ModelStreamPart,
    V4Custom,
    V4Error,
    V4File,
    V4Finish,
    V4Ping,
    V4Raw,
    V4ReasoningDelta,
    V4ReasoningEnd,
    V4ReasoningStart,
    V4ResponseMetadata,
    V4Source,
    V4StreamStart,
    V4TextDelta,
    V4TextEnd,
    V4TextStart,
    V4ToolCall,
    V4ToolInputDelta,
    V4ToolInputEnd,
    V4ToolInputStart,
    V4ToolResult,
    V4Usage,
)
from ..protocol import stream_parts as sp
from ..protocol.chunks import ProviderMetadata
from .config import LoopConfig
from .generated_files import DROP
from .retry import as_model_error, may_retry
from .state import ToolCallRecord, ToolResultRecord, UsageTotals
from .tool_calls import parse_tool_call

__all__ = ["CallParts", "Emit", "ModelCallResult", "OnToolCall", "usage_totals"]

Emit = Callable[[sp.TextStreamPart], Awaitable[None]]
OnToolCall = Callable[[ToolCallRecord, BaseException | None], Awaitable[None]]
"""Called right after each tool call is emitted (approval parts follow their call immediately)."""

_INVISIBLE = (V4StreamStart, V4ResponseMetadata, V4Ping, V4Raw)


def usage_totals(usage: V4Usage) -> UsageTotals:
    """Provider usage → the metadata vocabulary (unknown stays None)."""
    return UsageTotals(
        input_tokens=usage.input_tokens.total,
        output_tokens=usage.output_tokens.total,
        reasoning_tokens=usage.output_tokens.reasoning,
        cached_input_tokens=usage.input_tokens.cache_read,
        cache_write_tokens=usage.input_tokens.cache_write,
    )


@dataclass
class ModelCallResult:
    """What the call produced, in order, for the step's messages and record."""

    content: list[tuple[str, Any]] = field(default_factory=list[tuple[str, Any]])
    """`("text"|"reasoning", (text, metadata))`, `("tool-call", ToolCallRecord)`, `("provider-result", …)`."""
    tool_calls: list[ToolCallRecord] = field(default_factory=list[ToolCallRecord])
    finish_reason: str = "other"
    raw_finish_reason: str | None = None
    usage: UsageTotals = field(default_factory=UsageTotals)
    provider_metadata: ProviderMetadata | None = None
    response_id: str | None = None
    model_id: str | None = None
    warnings: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    request_body: dict[str, Any] | None = None
    request: dict[str, Any] | None = None
    """The request as sent (`request_view`), when the step is inspected or traced with content."""
    attempts: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    """Each attempt of the call: `startedAt`, `firstOutputAt`, `endedAt` (ms), and for a failed
    one `error` (its kind or class) and `retryReason`."""
    first_output_at: int | None = None
    step_started: bool = False
    visible: bool = False
    stream_error: BaseException | None = None


class CallParts:
    """Maps one attempt's parts; keeps what a retry must not repeat (`start-step`)."""

    def __init__(
        self,
        config: LoopConfig,
        emit: Emit,
        result: ModelCallResult,
        messages: list[Any],
        on_tool_call: OnToolCall,
        provider: str,
    ) -> None:
        self.config = config
        self.provider = provider
        self.emit = emit
        self.on_tool_call = on_tool_call
        self.result = result
        self.messages = messages
        self.texts: dict[str, list[str]] = {}
        self.text_metadata: dict[str, ProviderMetadata | None] = {}

    async def part(self, part: ModelStreamPart) -> None:  # noqa: C901 - one dispatch over the part vocabulary
        result = self.result
        if isinstance(part, V4StreamStart):
            result.warnings = [dict(w) for w in part.warnings]
            result.request_body = part.request_body
            return
        if isinstance(part, V4Error):
            error = as_model_error(part.error, provider=self.provider)
            if may_retry(error, visible=result.visible):
                raise error  # a transient error reported in-stream (e.g. overloaded) before any output: retry
            part = V4Error(error=error)
        if not result.step_started and not isinstance(part, V4Ping):
            result.step_started = True
            await self.emit(sp.StartStep(warnings=tuple(result.warnings)))
        if not isinstance(part, _INVISIBLE):
            if not result.visible:
                result.first_output_at = self.config.clock()
            result.visible = True
        match part:
            case V4ResponseMetadata():
                result.response_id = part.id or result.response_id
                result.model_id = part.model_id or result.model_id
            case V4TextStart() | V4ReasoningStart():
                self.texts[part.id] = []
                self.text_metadata[part.id] = part.provider_metadata
                start = sp.TextStart if isinstance(part, V4TextStart) else sp.ReasoningStart
                await self.emit(start(id=part.id, provider_metadata=part.provider_metadata))
            case V4TextDelta() | V4ReasoningDelta():
                self.texts.setdefault(part.id, []).append(part.delta)
                if part.provider_metadata is not None:
                    self.text_metadata[part.id] = part.provider_metadata
                delta = sp.TextDelta if isinstance(part, V4TextDelta) else sp.ReasoningDelta
                await self.emit(delta(id=part.id, text=part.delta, provider_metadata=part.provider_metadata))
            case V4TextEnd() | V4ReasoningEnd():
                await self._end_text(part)
            case V4ToolInputStart():
                tool = self.config.tool(part.tool_name)
                dynamic = True if tool is not None and tool.kind == "dynamic" else part.dynamic
                title = tool.title if tool is not None and tool.title else part.title
                await self.emit(
                    sp.ToolInputStart(
                        id=part.id,
                        tool_name=part.tool_name,
                        input_encoding=part.input_encoding,
                        title=title,
                        provider_executed=part.provider_executed,
                        provider_metadata=part.provider_metadata,
                        dynamic=dynamic,
                    )
                )
            case V4ToolInputDelta():
                await self.emit(sp.ToolInputDelta(id=part.id, delta=part.delta))
            case V4ToolInputEnd():
                await self.emit(sp.ToolInputEnd(id=part.id))
            case V4ToolCall():
                await self._tool_call(part)
            case V4ToolResult():
                await self._provider_result(part)
            case V4File():
                await self.emit(
                    sp.File(
                        file=sp.GeneratedFile(media_type=part.media_type, base64=part.data),
                        provider_metadata=part.provider_metadata,
                    )
                )
            case V4Source():
                await self.emit(
                    sp.Source(
                        id=part.id,
                        source_type=part.source_type,
                        url=part.url,
                        title=part.title,
                        media_type=part.media_type,
                        filename=part.filename,
                        provider_metadata=part.provider_metadata,
                    )
                )
            case V4Custom():
                await self.emit(sp.Custom(kind=part.kind, provider_metadata=part.provider_metadata))
            case V4Finish():
                result.finish_reason = part.finish_reason.unified
                result.raw_finish_reason = part.finish_reason.raw
                result.usage = usage_totals(part.usage)
                result.provider_metadata = part.provider_metadata
            case V4Error():
                result.stream_error = part.error
                result.finish_reason = "error"
                await self.emit(sp.StreamError(error=part.error))
            case V4Raw():
                if self.config.include.raw_chunks:
                    await self.emit(sp.Raw(raw_value=part.raw_value))
            case V4Ping():
                pass

    async def _end_text(self, part: V4TextEnd | V4ReasoningEnd) -> None:
        metadata = part.provider_metadata if part.provider_metadata is not None else self.text_metadata.get(part.id)
        text = "".join(self.texts.pop(part.id, []))
        if isinstance(part, V4TextEnd):
            self.result.content.append(("text", (text, metadata)))
            citations = tuple(part.citations) if part.citations is not None else None
            await self.emit(sp.TextEnd(id=part.id, citations=citations, provider_metadata=part.provider_metadata))
        else:
            self.result.content.append(("reasoning", (text, metadata)))
            await self.emit(sp.ReasoningEnd(id=part.id, provider_metadata=part.provider_metadata))

    async def _tool_call(self, part: V4ToolCall) -> None:
        call, error = await parse_tool_call(self.config, part, self.messages)
        self.result.tool_calls.append(call)
        self.result.content.append(("tool-call", call))
        tool = self.config.tool(call.tool_name)
        await self.emit(
            sp.ToolCall(
                tool_call_id=call.tool_call_id,
                tool_name=call.tool_name,
                input=call.input,
                title=call.title,
                invalid=bool(call.invalid),
                error=error,
                dynamic=call.dynamic if call.invalid or tool is None else (True if tool.kind == "dynamic" else None),
                provider_executed=call.provider_executed,
                provider_metadata=call.provider_metadata,
            )
        )
        await self.on_tool_call(call, error)

    async def _provider_result(self, part: V4ToolResult) -> None:
        files = self.config.generated_files
        if files is not None and not part.is_error:
            tool = self.config.tool(part.tool_name)
            kept = await files.keep(tool, part.tool_call_id, part.result, preliminary=bool(part.preliminary))
            if kept is DROP:
                return
            part = part.model_copy(update={"result": kept})
        record = ToolResultRecord(
            tool_call_id=part.tool_call_id,
            tool_name=part.tool_name,
            output=None if part.is_error else part.result,
            error_text=_as_text(part.result) if part.is_error else None,
        )
        if not part.preliminary:
            # A preview (a partial image) is not the result: the next step sends the final one only.
            self.result.content.append(("provider-result", (record, part.provider_metadata)))
        call_input = next((c.input for c in self.result.tool_calls if c.tool_call_id == part.tool_call_id), None)
        common: dict[str, Any] = {
            "tool_call_id": part.tool_call_id,
            "tool_name": part.tool_name,
            "input": call_input,
            "provider_executed": True,
            "provider_metadata": part.provider_metadata,
            "dynamic": part.dynamic,
        }
        if part.is_error:
            await self.emit(sp.ToolError(error=part.result, **common))
        else:
            # As `ai@7.0.173` (stream-language-model-call.ts): a provider result's chunk carries no
            # `preliminary` flag; the final result replaces the preview in the UI message.
            await self.emit(sp.ToolResult(output=part.result, **common))


def _as_text(value: Any) -> str:
    from ..protocol._json import dumps

    return value if isinstance(value, str) else dumps(value)
