"""Which tools a step offers, and in which order (the SDK's `activeTools` and `toolOrder`).

`active_tools` limits the tools the model sees (and may call) in a step. `tool_order` lists names
that go first, in that order; the rest follow alphabetically. A stable order keeps the tool
definitions byte-identical between requests, which is what provider prompt caches key on. Without
`tool_order` the declaration order is kept.
"""

from __future__ import annotations

from .config import LoopConfig
from .tools import Tool

__all__ = ["ordered_tools"]


def ordered_tools(config: LoopConfig) -> list[Tool]:
    """The step's tools: active ones only, in the configured order."""
    tools = [t for t in config.tools if config.active_tools is None or t.name in config.active_tools]
    if config.tool_order is None:
        return tools
    by_name = {t.name: t for t in tools}
    first = [by_name[name] for name in dict.fromkeys(config.tool_order) if name in by_name]
    listed = {t.name for t in first}
    return first + sorted((t for t in tools if t.name not in listed), key=lambda t: t.name)
