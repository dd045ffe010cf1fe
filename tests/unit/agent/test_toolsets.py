"""`Agent(tools=...)`: function tools and toolsets in one list; a toolset stays live, read at every step."""

from __future__ import annotations

import pytest

from stepline import Agent, AgentDefinitionError, tool
from stepline.agent.toolsets import LiveTools, ToolList
from stepline.loop.tools import Tool


@tool
def lookup(order_id: str) -> str:
    """Look up an order."""
    return order_id


@tool(approval="user-approval")
def refund(order_id: str) -> str:
    """Refund an order."""
    return order_id


class Growing(LiveTools):
    """A live toolset: what it holds changes between reads (as an MCP server listed late)."""

    def __init__(self) -> None:
        self.tools: list[Tool] = []

    def _current(self) -> list[Tool]:
        return list(self.tools)


def test_a_list_of_tools_is_a_tuple_checked_at_definition() -> None:
    assert Agent(tools=[lookup, [refund]]).tools == (lookup, refund)
    with pytest.raises(AgentDefinitionError, match="two tools are named lookup"):
        Agent(tools=[lookup, lookup])


def test_a_toolset_in_the_list_is_read_again_at_every_read() -> None:
    live = Growing()
    agent = Agent(tools=[lookup, live, refund])
    assert isinstance(agent.tools, ToolList)
    assert [t.name for t in agent.tools] == ["lookup", "refund"]
    live.tools.append(Tool(name="late", description="Listed later."))
    assert [t.name for t in agent.tools] == ["lookup", "late", "refund"]
    assert len(agent.tools) == 3 and agent.tools[1].name == "late"
    assert agent.approval_of("refund") == "required" and agent.approval_of("late") == "none"


def test_a_toolset_alone_is_kept_as_it_is() -> None:
    live = Growing()
    assert Agent(tools=live).tools is live


@pytest.mark.parametrize("value", [[lookup, 3], [lookup, "refund"], 3, "lookup"])
def test_anything_else_is_refused_naming_its_kind(value: object) -> None:
    with pytest.raises(AgentDefinitionError, match="tools: expected"):
        Agent(tools=value)
