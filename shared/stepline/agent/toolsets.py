"""An agent's `tools` setting: function tools and toolsets, side by side in one list.

    Agent(tools=[lookup_order, McpToolset([StdioServer(name="notes", command="python", args=["server.py"])])])

A toolset is any sequence of tools that is not a list or a tuple: it is *live*, read again at every
step (an MCP toolset lists its servers' tools when a step first needs them, and a server that was
down is asked again later). A list of tools only becomes a tuple, checked when the agent is
defined; a list with a toolset in it becomes a `ToolList`, which reads its toolsets afresh each
time it is iterated, so the loop sees what they hold now. A tool that needs approval says so
itself (`Tool.approval`: `@tool(approval=...)`, or an MCP server's `approval` entry).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, cast, overload

from ..loop.tools import Tool

__all__ = ["LiveTools", "ToolList", "agent_tools"]


class LiveTools(Sequence[Tool]):
    """A sequence of tools computed afresh at every read: subclasses say how (`_current`)."""

    def _current(self) -> list[Tool]:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._current())

    def __len__(self) -> int:
        return len(self._current())

    @overload
    def __getitem__(self, index: int) -> Tool: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Tool]: ...
    def __getitem__(self, index: int | slice) -> Tool | Sequence[Tool]:
        return self._current()[index]


class ToolList(LiveTools):
    """Fixed tools and live toolsets in their order, flattened at every read."""

    def __init__(self, parts: Sequence[Tool | Sequence[Tool]]) -> None:
        self._parts = tuple(parts)

    def _current(self) -> list[Tool]:
        tools: list[Tool] = []
        for part in self._parts:
            if isinstance(part, Tool):
                tools.append(part)
            else:
                tools.extend(part)
        return tools

    def __repr__(self) -> str:
        return f"ToolList({list(self._parts)!r})"


def agent_tools(value: Any) -> tuple[Tool, ...] | Sequence[Tool]:
    """What `Agent(tools=value)` keeps: a tuple when every tool is known now, else a live sequence.

    Raises:
        ValueError: naming the kinds of values that are neither tools nor toolsets.
    """
    if not isinstance(value, list | tuple):
        if isinstance(value, Sequence) and not isinstance(value, str | bytes):
            return cast(Sequence[Tool], value)  # a toolset on its own: live
        raise ValueError("tools: expected a list of tools or a toolset")
    parts: list[Tool | Sequence[Tool]] = []
    wrong: set[str] = set()
    for item in cast(Sequence[Any], value):
        if isinstance(item, Tool):
            parts.append(item)
        elif isinstance(item, list | tuple):  # a toolset module's TOOLS list: its tools, known now
            nested = agent_tools(item)
            parts.extend(nested if isinstance(nested, tuple) else [nested])
        elif isinstance(item, Sequence) and not isinstance(item, str | bytes):
            parts.append(cast(Sequence[Tool], item))
        else:
            wrong.add(type(item).__name__)
    if wrong:
        raise ValueError(f"tools: expected tools (@tool or tool(...)) or toolsets, got {', '.join(sorted(wrong))}")
    if all(isinstance(part, Tool) for part in parts):
        return tuple(cast(list[Tool], parts))
    return ToolList(parts)
