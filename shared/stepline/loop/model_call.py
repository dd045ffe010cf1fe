"""One model call of a step: provider parts in, TextStreamParts out, retried at a safe boundary.

The call's parts are mapped to the loop's TextStreamParts as they arrive (`start-step` on the
first real part, as `streamText` does), tool calls are parsed and validated (through
`repair_tool_call` when that is configured), and approval parts are emitted right after the call
they belong to. The tools themselves run after the call (`tool_execution`).

Retry (the rule is `retry.may_retry`): a transient failure (429, 5xx,
overloaded, timeout, dropped connection, or one of these as an in-stream error event) is retried
only while nothing visible has been streamed in this step; the prompt already carries the
completed steps' tool calls and results, so completed tools never run again. Each retry is
recorded (`data-retry` part and `LoopState.retries`, numbered across the run) and waits with
exponential backoff and jitter, or as long as the provider's `retry-after` asks. After visible
output, a failure ends the step with the partial result kept (`StepFailure.retryable` is False).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..llm.base import LanguageModel, ModelCallOptions
from ..llm.errors import ModelCallError
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
from ..protocol.metadata import RetryRecord
from . import telemetry
from .callbacks import ModelCallEndEvent, ModelCallStartEvent, notify
from .config import LoopConfig
from .generated_files import DROP
from .retry import as_model_error, may_retry, retry_reason
from .state import ToolCallRecord, ToolResultRecord, UsageTotals
from .tool_calls import parse_tool_call

__all__ = ["Emit", "ModelCallResult", "OnToolCall", "StepFailure", "backoff_delay", "run_model_call", "usage_totals"]

Emit = Callable[[sp.TextStreamPart], Awaitable[None]]
OnToolCall = Callable[[ToolCallRecord, BaseException | None], Awaitable[None]]
"""Called right after each tool call is emitted (approval parts follow their call immediately)."""

_INVISIBLE = (V4StreamStart, V4ResponseMetadata, V4Ping, V4Raw)


class StepFailure(Exception):
    """The model call failed for good; the step ends with `finish_reason="error"`.

    `retryable`: the step may be run again from its start (`retry.may_retry`: transient, and
    nothing visible was streamed), which the durable path does once the in-step retries are spent.
    """

    def __init__(self, error: BaseException, *, retryable: bool) -> None:
        super().__init__(str(error))
        self.error = error
        self.retryable = retryable


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
    step_started: bool = False
    visible: bool = False
    stream_error: BaseException | None = None


class _Call:
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


def backoff_delay(config: LoopConfig, attempt: int, retry_after: float | None) -> float:
    """Exponential backoff with full jitter, or the provider's `retry-after` when it asked for longer."""
    ceiling = min(config.retry_max_delay, config.retry_base_delay * 2 ** (attempt - 1))
    delay = random.uniform(ceiling / 2, ceiling)
    return max(delay, retry_after or 0.0)


async def run_model_call(
    config: LoopConfig,
    model: LanguageModel,
    options: ModelCallOptions,
    *,
    emit: Emit,
    run_id: str,
    step_number: int,
    retries: list[RetryRecord],
    on_tool_call: OnToolCall,
    result: ModelCallResult | None = None,
) -> ModelCallResult:
    """Stream one model call into `emit`; raises `StepFailure` when it fails for good.

    `result` is filled in place when given, so the caller sees what `on_tool_call` added to it (approval
    parts) and how far the call got when it fails.
    """
    attempt = 0
    result = result if result is not None else ModelCallResult()
    while True:
        started = config.clock()
        await notify(
            config.callbacks.on_language_model_call_start,
            ModelCallStartEvent(
                run_id,
                step_number,
                attempt,
                model.provider,
                model.model_id,
                options.prompt,
                [t.name for t in options.tools],
            ),
        )
        call = _Call(config, emit, result, list(options.prompt), on_tool_call, model.provider)
        attributes = {
            "gen_ai.provider.name": model.provider,
            "gen_ai.request.model": model.model_id,
            "stepline.step_number": step_number,
            "stepline.attempt": attempt,
        }
        try:
            with telemetry.span(config.tracer, telemetry.MODEL_CALL, attributes) as span:
                await _stream(config, model, options, call)
                span.update(
                    {
                        "gen_ai.response.finish_reasons": [result.finish_reason],
                        "gen_ai.usage.input_tokens": result.usage.input_tokens,
                        "gen_ai.usage.output_tokens": result.usage.output_tokens,
                    }
                )
        except (ModelCallError, TimeoutError) as error:
            retryable = may_retry(error, visible=result.visible)
            if not retryable or attempt >= config.max_retries:
                raise StepFailure(error, retryable=retryable) from error
            attempt += 1
            reason = retry_reason(error)
            number = len(retries) + 1  # numbered across the run, so numbers only grow
            retries.append(RetryRecord(reason=reason, attempt=number, at=config.clock()))
            await emit(sp.Data(name="retry", data={"reason": reason, "attempt": number}))
            await config.sleep(backoff_delay(config, attempt, getattr(error, "retry_after", None)))
            continue
        await notify(
            config.callbacks.on_language_model_call_end,
            ModelCallEndEvent(
                run_id, step_number, result.finish_reason, result.usage, result.response_id, config.clock() - started
            ),
        )
        return result


async def _stream(config: LoopConfig, model: LanguageModel, options: ModelCallOptions, call: _Call) -> None:
    chunk_timeout = config.timeouts.chunk
    if chunk_timeout is None:
        async for part in model.stream(options):
            await call.part(part)
        return
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(chunk_timeout) as deadline:
        async for part in model.stream(options):
            await call.part(part)
            deadline.reschedule(loop.time() + chunk_timeout)
