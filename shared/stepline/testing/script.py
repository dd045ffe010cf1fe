"""Scripted models from Python values: what the model says, step by step, without a provider.

    model = scripted_model([
        call("get_weather", city="Paris"),          # step 1: one tool call (finish: tool-calls)
        text("It is sunny in Paris."),              # step 2: the answer (finish: stop)
    ])

Each entry of the list is one model call (one step of the run). An entry is one item (`text`,
`reasoning`, `call`, `fail`), a `step(...)` of several items (text and calls in one step, its
usage, its pacing), or a raw stream part dict. They compile to the one script format of
`stepline.llm.scripted` (`script(...)` returns it: a JSON list of steps, each a list of stream
parts in the AI SDK's `LanguageModelV4StreamPart` shape), so a script written here can be saved
as a file and served with `STEPLINE_MODEL=scripted:script.json`, and a file can be read back with
`ScriptedModel.from_file`.

`FunctionModel` is the other kind (pydantic-ai's `FunctionModel`): a function of the prompt and
the tools returns each step, so the answer can depend on what the model was sent.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from ..llm.base import ModelCallOptions, ModelCapabilities, ToolDefinition
from ..llm.scripted import ScriptedModel, ScriptedStep, play_step
from ..llm.stream_parts import ModelStreamPart
from ..protocol._json import dumps
from ..protocol.model_messages import ModelMessage

__all__ = [
    "FunctionModel",
    "Step",
    "StepValue",
    "call",
    "fail",
    "reasoning",
    "script",
    "scripted_model",
    "step",
    "text",
]

_USAGE: dict[str, JsonValue] = {"inputTokens": {"total": 10}, "outputTokens": {"total": 5}}


@dataclass(frozen=True, slots=True)
class _Text:
    text: str
    kind: str = "text"


@dataclass(frozen=True, slots=True)
class _Call:
    tool_name: str
    input: str
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class _Fail:
    directive: dict[str, JsonValue]


Item = _Text | _Call | _Fail | Mapping[str, Any]
"""One piece of a step: text, reasoning, a tool call, a failure, or a raw stream part dict."""


def text(value: str) -> _Text:
    """The model writes `value` (a text part)."""
    return _Text(value)


def reasoning(value: str) -> _Text:
    """The model reasons `value` (a reasoning part, shown before the answer)."""
    return _Text(value, "reasoning")


def call(tool_name: str, arguments: Mapping[str, Any] | str | None = None, /, **input: Any) -> _Call:
    """The model calls `tool_name` with `arguments` (or keyword arguments).

    A string is sent as the model's JSON text as it is, so a test can send invalid input on
    purpose (`call("get_weather", '{"city": ')`).
    """
    if isinstance(arguments, str):
        return _Call(tool_name, arguments)
    return _Call(tool_name, dumps({**(arguments or {}), **input}))


def fail(
    kind: str = "server", message: str | None = None, *, status: int | None = None, retry_after: float | None = None
) -> _Fail:
    """The model call fails (`kind`: server, rate_limit, overloaded, auth, invalid_request, …)."""
    directive: dict[str, JsonValue] = {"kind": kind}
    if message is not None:
        directive["message"] = message
    if status is not None:
        directive["status"] = status
    if retry_after is not None:
        directive["retryAfter"] = retry_after
    return _Fail(directive)


@dataclass(frozen=True, slots=True)
class Step:
    """One model call of several items, with its finish reason, usage and pacing."""

    items: tuple[Item, ...]
    finish: str | None = None
    """The unified finish reason (default: `tool-calls` when the step calls a tool, else `stop`)."""
    usage: Mapping[str, JsonValue] | None = None
    delay_ms: int = 0
    """A pause before each part (what a test of timeouts, abort or streaming needs)."""


def step(
    *items: Item, finish: str | None = None, usage: Mapping[str, JsonValue] | None = None, delay_ms: int = 0
) -> Step:
    """A step of several items: `step(text("Let me look."), call("search", q="x"))`."""
    return Step(items, finish, usage, delay_ms)


StepValue = Step | Item | Sequence[Item]
"""What one entry of a script may be: a `Step`, one item, or a list of items."""


def _as_step(value: StepValue) -> Step:
    if isinstance(value, Step):
        return value
    if isinstance(value, _Text | _Call | _Fail | Mapping):
        return Step((value,))
    return Step(tuple(value))


def _compile(value: StepValue, index: int) -> list[Any] | dict[str, Any]:
    """One step in the script format (a list of parts, or `{"parts", "delayMs", "raise"}`)."""
    compiled = _as_step(value)
    parts: list[dict[str, Any]] = []
    failure: dict[str, JsonValue] | None = None
    calls = 0
    for position, item in enumerate(compiled.items):
        if isinstance(item, _Text):
            ident = f"{item.kind[0]}{index}-{position}"
            parts += [
                {"type": f"{item.kind}-start", "id": ident},
                {"type": f"{item.kind}-delta", "id": ident, "delta": item.text},
                {"type": f"{item.kind}-end", "id": ident},
            ]
        elif isinstance(item, _Call):
            calls += 1
            ident = item.tool_call_id or f"call-{index}-{position}"
            parts.append({"type": "tool-call", "toolCallId": ident, "toolName": item.tool_name, "input": item.input})
        elif isinstance(item, _Fail):
            failure = item.directive
        else:
            parts.append(dict(item))
    raw_finish = any(p.get("type") == "finish" for p in parts)
    if failure is None and not raw_finish:
        reason = compiled.finish or ("tool-calls" if calls else "stop")
        usage = dict(compiled.usage) if compiled.usage is not None else _USAGE
        parts.append({"type": "finish", "finishReason": {"unified": reason, "raw": reason}, "usage": usage})
    if failure is None and not compiled.delay_ms:
        return parts
    directive: dict[str, Any] = {"parts": parts}
    if compiled.delay_ms:
        directive["delayMs"] = compiled.delay_ms
    if failure is not None:
        directive |= {"raise": failure, "after": len(parts)}
    return directive


def script(steps: Sequence[StepValue]) -> list[Any]:
    """The steps in the script format of `stepline.llm.scripted` (JSON: save it, serve it)."""
    return [_compile(value, index) for index, value in enumerate(steps)]


def scripted_model(steps: Sequence[StepValue], *, model_id: str = "test-script") -> ScriptedModel:
    """A `ScriptedModel` playing `steps`, one per model call; `model.calls` keeps what it was sent.

    A call beyond the last step fails loudly (`ScriptExhaustedError`), and
    `model.assert_consumed()` fails when the run ended before the script did.
    """
    return ScriptedModel.from_script(script(steps), model_id=model_id)


StepFunction = Callable[[list[ModelMessage], list[ToolDefinition]], "StepValue | Awaitable[StepValue]"]
"""`(prompt, tools) -> step`: sync or async."""


@dataclass
class FunctionModel:
    """A `LanguageModel` whose every step is what `function(prompt, tools)` returns.

    The prompt is the model messages of the call (system, user, assistant, tool results), the
    tools the ones it may call; the return value is one script entry (`text(...)`, `call(...)`,
    `step(...)`, a list of items). `calls` keeps every call's options.
    """

    function: StepFunction
    model_id: str = "test-function"
    provider: str = "test"
    capabilities: ModelCapabilities = field(
        default_factory=lambda: ModelCapabilities(input_media_types=("*/*",), reasoning_history=True)
    )
    calls: list[ModelCallOptions] = field(default_factory=list[ModelCallOptions])

    async def stream(self, options: ModelCallOptions) -> AsyncIterator[ModelStreamPart]:
        index = len(self.calls)
        self.calls.append(options)
        value = self.function(list(options.prompt), list(options.tools))
        if inspect.isawaitable(value):
            value = await value
        played = ScriptedStep.parse(_compile(value, index))
        async with aclosing(play_step(played, provider=self.provider)) as parts:
            async for part in parts:
                yield part
