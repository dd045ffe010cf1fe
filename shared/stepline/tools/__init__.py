"""Toolsets that ship with Stepline, and how a toolset module is loaded.

A toolset module exposes `TOOLS: list[Tool]` (or `tools()`), and optionally
`TOOL_APPROVAL: dict[str, ApprovalSetting]`. Shipped: `stepline.tools.workspace` (the
conversation's files, artifacts and questions for the user; the default of the worker functions'
settings) and `stepline.tools.demo` (a made-up forecast and a pretend delete; `stepline run`'s
default). Tools that need the run (its user, conversation, store) read the `RunContext` of
`stepline.tools.context`.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..errors import StepLineError
from ..loop.tools import Tool

__all__ = ["ToolsetError", "load_toolset"]


class ToolsetError(StepLineError):
    """A tools module that cannot be imported or defines no tools."""


def load_toolset(name: str) -> tuple[list[Tool], dict[str, Any]]:
    """The tools and the approval policy of the toolset module `name`."""
    try:
        module = importlib.import_module(name)
    except ImportError as error:
        raise ToolsetError(f"tools module {name} cannot be imported: {error}") from error
    tools = module.tools() if callable(getattr(module, "tools", None)) else getattr(module, "TOOLS", None)
    if tools is None:
        raise ToolsetError(f"tools module {name} has neither TOOLS nor tools()")
    return list(tools), dict(getattr(module, "TOOL_APPROVAL", {}))
