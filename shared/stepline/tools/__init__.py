"""Toolsets that ship with Stepline, and how a toolset module is loaded.

A toolset module exposes `TOOLS: list[Tool]` (or `tools()`), and optionally
`TOOL_APPROVAL: dict[str, ApprovalSetting]` (or `tool_approval()`). A list and a dict are copied; any
other sequence or mapping (`stepline.tools.mcp.McpToolset` and its `approval`) is kept as it is,
because it is live: the worker reads it again at every step. Shipped: `stepline.tools.workspace` (the
conversation's files, artifacts and questions for the user; the default of the worker functions'
settings), `stepline.tools.demo` (a made-up forecast and a pretend delete, for demos and
tests) and `stepline.tools.mcp` (the tools of MCP servers named by `STEPLINE_MCP_SERVERS`).
Tools that need the run (its user, conversation, store) read the `RunContext` of
`stepline.tools.context`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from ..errors import StepLineError
from ..loop.tools import Tool

__all__ = ["ToolsetError", "load_toolset"]


class ToolsetError(StepLineError):
    """A tools module that cannot be imported or defines no tools."""


def load_toolset(name: str) -> tuple[Sequence[Tool], Mapping[str, Any]]:
    """The tools and the approval policy of the toolset module `name`."""
    try:
        module = importlib.import_module(name)
    except ImportError as error:
        raise ToolsetError(f"tools module {name} cannot be imported: {error}") from error
    tools: Any = module.tools() if callable(getattr(module, "tools", None)) else getattr(module, "TOOLS", None)
    if tools is None:
        raise ToolsetError(f"tools module {name} has neither TOOLS nor tools()")
    approval: Any = (
        module.tool_approval()
        if callable(getattr(module, "tool_approval", None))
        else getattr(module, "TOOL_APPROVAL", {})
    )
    live_tools = isinstance(tools, Sequence) and not isinstance(tools, list | tuple)
    live_approval = isinstance(approval, Mapping) and not isinstance(approval, dict)
    listed = cast(Sequence[Tool], tools) if live_tools else list(cast(Iterable[Tool], tools))
    policy = cast(Mapping[str, Any], approval) if live_approval else dict(cast(Mapping[str, Any], approval))
    return listed, policy
