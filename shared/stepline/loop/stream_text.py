"""`stream_text`: the in-process agent loop, a loop over the same `run_step` the AWS path runs.

    result = stream_text(model=model, prompt="What is the weather in Paris?", tools=[weather],
                         stop_when=is_step_count(5))
    async for chunk in result.ui_message_stream():
        ...
    print(await result.text())

The run starts at once in a background task; `full_stream`, `ui_message_stream()` and the
awaitable results can each be read any number of times (parts are kept for the run's life).
Nothing is sent to the model before the parameters are checked: `prompt` xor `messages`, and no
system message in `messages` unless `allow_system_in_messages`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..errors import StepLineError
from ..protocol import stream_parts as sp
from ..protocol._json import loads_strict
from ..protocol.chunks import UIMessageChunk
from ..protocol.model_messages import (
    AssistantModelMessage,
    ModelMessage,
    ModelTextPart,
    SystemModelMessage,
    ToolApprovalRequestPart,
    ToolApprovalResponsePart,
    ToolCallPart,
    ToolModelMessage,
    ToolResultPart,
    UserModelMessage,
)
from ..protocol.to_chunks import UIStreamOptions, to_ui_message_stream_async
from . import telemetry
from .approval import ApprovalDecision
from .callbacks import AbortEvent, ChunkEvent, EndEvent, ErrorEvent, StartEvent, notify
from .config import LoopConfig
from .resume import ClientToolOutput, resume_with_client_outputs, resume_with_decisions
from .state import LoopState, PendingApproval, StepOutcome, StepRecord, ToolCallRecord, UsageTotals
from .step import run_step

__all__ = ["InvalidPromptError", "StreamTextResult", "stream_text"]

_MESSAGES: TypeAdapter[list[ModelMessage]] = TypeAdapter(list[ModelMessage])
Transform = Callable[[AsyncIterator[sp.TextStreamPart]], AsyncIterator[sp.TextStreamPart]]


class InvalidPromptError(StepLineError):
    """The prompt parameters are wrong; raised before any model call."""

    name = "AI_InvalidPromptError"


def _initial_messages(
    prompt: str | Sequence[Any] | None, messages: Sequence[Any] | None, allow_system: bool
) -> list[ModelMessage]:
    if (prompt is None) == (messages is None):
        raise InvalidPromptError(
            "pass exactly one of prompt or messages" if prompt is None else "prompt and messages cannot both be given"
        )
    if isinstance(prompt, str):
        return [UserModelMessage(content=[ModelTextPart(text=prompt)])]
    raw = list(prompt if prompt is not None else messages or [])
    try:
        parsed = _MESSAGES.validate_python([m.to_wire() if hasattr(m, "to_wire") else m for m in raw])
    except ValidationError as error:
        raise InvalidPromptError(f"invalid messages: {error.errors()[0]['loc']}: {error.errors()[0]['msg']}") from None
    if messages is not None and not allow_system and any(isinstance(m, SystemModelMessage) for m in parsed):
        raise InvalidPromptError(
            "system messages are not allowed in messages; use instructions (or allow_system_in_messages)"
        )
    return parsed


def _decisions_from_messages(
    messages: list[ModelMessage],
) -> tuple[list[ModelMessage], list[PendingApproval], list[ApprovalDecision]]:
    """The SDK's continuation: a trailing tool message with approval responses decides pending calls."""
    if not messages or not isinstance(messages[-1], ToolModelMessage):
        return messages, [], []
    calls: dict[str, ToolCallPart] = {}
    requests: dict[str, str] = {}
    for message in messages:
        if isinstance(message, AssistantModelMessage):
            for part in message.content:
                if isinstance(part, ToolCallPart):
                    calls[part.tool_call_id] = part
                elif isinstance(part, ToolApprovalRequestPart):
                    requests[part.approval_id] = part.tool_call_id
    # A response whose call already has a result in this message was applied before: never again
    # (the SDK's `collectToolApprovals` skips it too), so a replayed history cannot re-run a tool.
    answered = {p.tool_call_id for p in messages[-1].content if isinstance(p, ToolResultPart)}
    responses = [
        p
        for p in messages[-1].content
        if isinstance(p, ToolApprovalResponsePart) and requests.get(p.approval_id) not in answered
    ]
    if not responses:
        return messages, [], []
    pending: list[PendingApproval] = []
    for response in responses:
        call = calls.get(requests.get(response.approval_id, ""))
        if call is not None:
            record = ToolCallRecord(tool_call_id=call.tool_call_id, tool_name=call.tool_name, input=call.input)
            pending.append(PendingApproval(approval_id=response.approval_id, tool_call=record, requested_at=0))
    decisions = [ApprovalDecision(approval_id=r.approval_id, approved=r.approved, reason=r.reason) for r in responses]
    rest = [p for p in messages[-1].content if not any(p is r for r in responses)]
    kept = messages[:-1] + ([messages[-1].model_copy(update={"content": rest})] if rest else [])
    return kept, pending, decisions


class _Broadcast:
    """Every part, kept; any number of readers from the start."""

    def __init__(self) -> None:
        self.parts: list[sp.TextStreamPart] = []
        self.closed = False
        self._changed = asyncio.Event()

    def push(self, part: sp.TextStreamPart) -> None:
        self.parts.append(part)
        self._changed.set()

    def close(self) -> None:
        self.closed = True
        self._changed.set()

    async def read(self) -> AsyncIterator[sp.TextStreamPart]:
        index = 0
        while True:
            while index < len(self.parts):
                yield self.parts[index]
                index += 1
            if self.closed:
                return
            self._changed.clear()
            if index < len(self.parts) or self.closed:
                continue
            await self._changed.wait()


class StreamTextResult:
    """A running (or finished) loop."""

    def __init__(
        self,
        config: LoopConfig,
        state: LoopState,
        *,
        decisions: Sequence[ApprovalDecision],
        client_outputs: Sequence[ClientToolOutput],
        transforms: Sequence[Transform],
    ) -> None:
        self.config = config
        self.state = state
        self.outcome: StepOutcome | None = None
        self.error: BaseException | None = None
        self.aborted = False
        self._decisions = list(decisions)
        self._client_outputs = list(client_outputs)
        self._broadcast = _Broadcast()
        self._queue: asyncio.Queue[sp.TextStreamPart | None] = asyncio.Queue()
        self._transforms = list(transforms)
        self._task = asyncio.get_running_loop().create_task(self._run())

    # -- reading ------------------------------------------------------------------------------

    @property
    def full_stream(self) -> AsyncIterator[sp.TextStreamPart]:
        """Every TextStreamPart of the run, from the start."""
        return self._broadcast.read()

    def ui_message_stream(self, options: UIStreamOptions | None = None) -> AsyncIterator[UIMessageChunk]:
        """The UI Message Stream of the run (the chunks an HTTP endpoint sends)."""
        base = options or UIStreamOptions()
        if base.response_message_id is None:
            from dataclasses import replace

            base = replace(base, response_message_id=self.state.message_id)
        return to_ui_message_stream_async(self.full_stream, base)

    async def consume(self) -> None:
        """Wait for the run to end."""
        await asyncio.shield(self._task)

    async def text(self) -> str:
        """The final step's text."""
        await self.consume()
        return self.state.steps[-1].text if self.state.steps else ""

    async def steps(self) -> list[StepRecord]:
        await self.consume()
        return list(self.state.steps)

    async def total_usage(self) -> UsageTotals:
        await self.consume()
        return self.state.usage

    async def finish_reason(self) -> str | None:
        await self.consume()
        return None if self.outcome is None else self.outcome.finish_reason

    async def response_messages(self) -> list[ModelMessage]:
        await self.consume()
        return list(self.state.response_messages)

    async def output(self) -> Any:
        """The structured output (`LoopConfig.output`) parsed from the final text."""
        text = await self.text()
        if self.config.output is None:
            raise StepLineError("no output model was configured")
        return self.config.output.model_validate(loads_strict(text))

    # -- running ------------------------------------------------------------------------------

    async def _emit(self, part: sp.TextStreamPart) -> None:
        abort = self.config.abort
        if abort is not None and abort.aborted and not isinstance(part, sp.Abort):
            return  # the body can emit once more before its cancellation lands: nothing follows an abort
        if self.config.callbacks.on_chunk is not None:
            await notify(self.config.callbacks.on_chunk, ChunkEvent(self.state.run_id, part))
        self._queue.put_nowait(part)

    async def _pump(self) -> None:
        async def raw() -> AsyncIterator[sp.TextStreamPart]:
            while (part := await self._queue.get()) is not None:
                yield part

        stream: AsyncIterator[sp.TextStreamPart] = raw()
        for transform in self._transforms:
            stream = transform(stream)
        async for part in stream:
            self._broadcast.push(part)
        self._broadcast.close()

    async def _run(self) -> None:
        pump = asyncio.create_task(self._pump())
        config = self.config
        model = config.model
        agent = config.agent_name or "agent"
        attributes = {"gen_ai.operation.name": telemetry.INVOKE_AGENT, "gen_ai.agent.name": agent}
        attributes |= {"stepline.run_id": self.state.run_id, "gen_ai.provider.name": model.provider}
        attributes["gen_ai.request.model"] = model.model_id
        try:
            with telemetry.span(config.tracer, f"{telemetry.INVOKE_AGENT} {agent}", attributes) as span:
                # on_start comes first (the SDK's order), before on_chunk sees the `start` part.
                await notify(
                    config.callbacks.on_start,
                    StartEvent(
                        self.state.run_id,
                        model.provider,
                        model.model_id,
                        self.state.messages,
                        [t.name for t in config.tools],
                        config.runtime_context,
                    ),
                )
                await self._emit(sp.Start())
                await self._guarded()
                span.update(self._span_outcome())
        finally:
            self._queue.put_nowait(None)
            await pump

    def _span_outcome(self) -> dict[str, telemetry.AttributeValue | None]:
        kind = (
            "aborted"
            if self.aborted
            else "error"
            if self.error is not None
            else (self.outcome.kind if self.outcome is not None else None)
        )
        return {
            "stepline.outcome": kind,
            "stepline.finish_reason": self.outcome.finish_reason if self.outcome is not None else None,
            "stepline.step_count": len(self.state.steps),
        }

    async def _guarded(self) -> None:
        config = self.config
        body = asyncio.create_task(self._steps())
        watchers = {body}
        abort_wait = asyncio.create_task(config.abort.wait()) if config.abort is not None else None
        if abort_wait is not None:
            watchers.add(abort_wait)
        try:
            done, _ = await asyncio.wait(watchers, return_when=asyncio.FIRST_COMPLETED)
            if body not in done:
                body.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await body
                self.aborted = True
                reason = config.abort.reason if config.abort is not None else None
                await self._emit(sp.Abort(reason=reason))
                await notify(config.callbacks.on_abort, AbortEvent(self.state.run_id, reason, list(self.state.steps)))
                return
            error = body.exception()
            if error is not None:
                self.error = error
                await self._emit(sp.StreamError(error=error))
                await notify(config.callbacks.on_error, ErrorEvent(self.state.run_id, error))
        finally:
            if abort_wait is not None:
                abort_wait.cancel()

    async def _steps(self) -> None:
        config = self.config
        async with asyncio.timeout(config.timeouts.total):
            if self._decisions:
                self.state = await resume_with_decisions(config, self.state, self._decisions, emit=self._emit)
            if self._client_outputs:
                self.state = await resume_with_client_outputs(config, self.state, self._client_outputs, emit=self._emit)
            outcome = self.outcome = _still_waiting(self.state)
            while outcome is None:
                async with asyncio.timeout(config.timeouts.step):
                    step_outcome = await run_step(config, self.state, emit=self._emit)
                self.state, self.outcome = step_outcome.state, step_outcome
                if step_outcome.kind != "continue":
                    outcome = step_outcome
        if outcome.kind == "failed" and outcome.error_code != "stream_error":
            await notify(
                config.callbacks.on_error,
                ErrorEvent(self.state.run_id, StepLineError(outcome.error_text or "step failed")),
            )
            return
        await self._emit(
            sp.Finish(finish_reason=outcome.finish_reason or "other", total_usage=_usage(self.state.usage))
        )
        await notify(
            config.callbacks.on_end,
            EndEvent(
                self.state.run_id,
                outcome.finish_reason,
                list(self.state.steps),
                self.state.usage,
                self.state.steps[-1].text if self.state.steps else "",
                list(self.state.response_messages),
            ),
        )


def _still_waiting(state: LoopState) -> StepOutcome | None:
    """A run with approvals or client outputs still outstanding takes no step (decisions may be partial)."""
    finish_reason = state.steps[-1].finish_reason if state.steps else None
    if state.pending_approvals:
        return StepOutcome("await-approval", state, finish_reason=finish_reason)
    if state.pending_client_calls:
        return StepOutcome("await-client", state, finish_reason=finish_reason)
    return None


def _usage(u: UsageTotals) -> sp.LanguageModelUsage:
    return sp.LanguageModelUsage(
        input_tokens=u.input_tokens,
        output_tokens=u.output_tokens,
        reasoning_tokens=u.reasoning_tokens,
        cached_input_tokens=u.cached_input_tokens,
        cache_write_tokens=u.cache_write_tokens,
    )


def stream_text(
    *,
    prompt: str | Sequence[Any] | None = None,
    messages: Sequence[Any] | None = None,
    state: LoopState | None = None,
    approval_decisions: Sequence[ApprovalDecision] = (),
    client_outputs: Sequence[ClientToolOutput] = (),
    run_id: str | None = None,
    message_id: str | None = None,
    transforms: Sequence[Transform] = (),
    **options: Any,
) -> StreamTextResult:
    """Start an agent loop. `options` are `LoopConfig` fields (`model`, `tools`, `stop_when`, …).

    Pass `state` (a stored checkpoint) with `approval_decisions` or `client_outputs` to continue a
    paused run; or, as with the SDK, `messages` ending in a tool message of approval responses.
    """
    config = LoopConfig(**options)
    if state is None:
        initial = _initial_messages(prompt, messages, config.allow_system_in_messages)
        initial, pending, decisions = _decisions_from_messages(initial)
        state = LoopState(
            run_id=run_id or config.new_id("run"),
            message_id=message_id or config.new_id("msg"),
            started_at=config.clock(),
            messages=initial,
            pending_approvals=pending,
        )
        approval_decisions = [*approval_decisions, *decisions]
    return StreamTextResult(
        config, state, decisions=approval_decisions, client_outputs=client_outputs, transforms=transforms
    )
