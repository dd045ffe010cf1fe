"""A scripted long task against a model fake with a small context window that refuses oversize requests.

`LongTask` is a `FunctionModel` step function (a scripted model, named as such): it reads parts
1..`total` with the `read` tool, one call a step, then answers. Every request is measured as a
provider would see it, independently of Stepline's own counts: tiktoken over the JSON of every
prompt message and tool definition. Over `window` it fails the call as providers do (400
`context_length_exceeded`); a tool call without its result (or a result without its call) fails it
too. A request whose system prompt is the summarizer's is answered with a summary that names the
last part read, so the task needs no memory of its own: what it knows is what the prompt says.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from stepline.context.groups import unpaired_calls
from stepline.context.policy import DEFAULT_SUMMARY_INSTRUCTIONS
from stepline.context.tokens import TiktokenCounter
from stepline.llm.base import ToolDefinition
from stepline.llm.errors import ModelCallError
from stepline.loop.tools import Tool
from stepline.protocol._json import dumps
from stepline.protocol.model_messages import ModelMessage, SystemModelMessage
from stepline.testing.script import FunctionModel, call, text

__all__ = ["LongTask", "long_task_model", "part_text", "read_tool"]

_PART = re.compile(r"part (\d+):")
_SUMMARY = re.compile(r"parts 1 to (\d+) are read", re.IGNORECASE)
_WORDS = (
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "oscar",
    "papa",
)


def part_text(part: int, size: int) -> str:
    """The output of `read(part)`: `size` bytes of varied words, its number at the start."""
    words = [_WORDS[(part * 7 + i * 13) % len(_WORDS)] + str(i % 97) for i in range(size // 6 + 1)]
    return (f"part {part}: " + " ".join(words))[:size]


def read_tool(size: int) -> Tool:
    def read(args: Any) -> str:
        return part_text(int(args["part"]), size)

    return Tool(
        name="read",
        description="Read one part of the document.",
        input_schema={"type": "object", "properties": {"part": {"type": "integer"}}, "required": ["part"]},
        execute=read,
    )


@dataclass
class LongTask:
    total: int
    window: int = 32_000
    sizes: list[int] = field(default_factory=list[int])
    summaries: int = 0
    """Summaries answered."""
    summary_requests: int = 0
    """Summarizer requests received (a crashed one included)."""
    refused: int = 0
    before_answer: Callable[[str, int], None] | None = None
    """Called with ("summary" | "step", count so far) before answering: a test crashes from here."""
    _counter: TiktokenCounter = field(default_factory=TiktokenCounter)

    def wire_tokens(self, prompt: Sequence[ModelMessage], tools: Sequence[ToolDefinition]) -> int:
        messages = sum(self._counter.count(dumps(m.to_wire())) + 4 for m in prompt)
        definitions = [{"name": t.name, "schema": getattr(t, "input_schema", None)} for t in tools]
        schemas = sum(self._counter.count(dumps(d)) for d in definitions)
        return messages + schemas

    def __call__(self, prompt: list[ModelMessage], tools: list[ToolDefinition]) -> Any:
        size = self.wire_tokens(prompt, tools)
        self.sizes.append(size)
        if size > self.window:
            self.refused += 1
            raise ModelCallError(
                f"This model's maximum context length is {self.window} tokens; the request has {size}.",
                kind="bad_request",
                provider="test",
                status_code=400,
                code="context_length_exceeded",
            )
        unpaired = unpaired_calls(prompt)
        if unpaired:
            raise ModelCallError(f"tool calls without results: {unpaired}", kind="bad_request", provider="test")
        done = self.parts_read(prompt)
        summarizing = isinstance(prompt[0], SystemModelMessage) and prompt[0].content == DEFAULT_SUMMARY_INSTRUCTIONS
        self.summary_requests += summarizing
        if self.before_answer is not None:
            self.before_answer("summary" if summarizing else "step", self.summaries)
        if summarizing:
            self.summaries += 1
            return text(f"Parts 1 to {done} are read; each part was a list of words. The rest remain.")
        if done >= self.total:
            return text(f"All {self.total} parts are read.")
        return call("read", part=done + 1)

    @staticmethod
    def parts_read(prompt: Sequence[ModelMessage]) -> int:
        seen = [0]
        for message in prompt:
            wire = dumps(message.to_wire())
            seen += [int(n) for n in _PART.findall(wire)] + [int(n) for n in _SUMMARY.findall(wire)]
        return max(seen)


def long_task_model(task: LongTask, model_id: str = "window-32k") -> FunctionModel:
    return FunctionModel(task, model_id=model_id)
