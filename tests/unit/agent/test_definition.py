"""`Agent` and `@tool`: what a definition infers, and the errors that name what is wrong at import time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from stepline import Agent, AgentDefinitionError, RunContext, ToolContext, ToolDefinitionError, tool
from stepline.agent.loading import AgentLoadError, UnknownAgentError, load_agents
from stepline.loop.tools import Tool


class Address(BaseModel):
    street: str
    city: str


@tool
def ship(
    sku: Annotated[str, Field(description="The stock keeping unit")],
    to: Address,
    speed: Literal["standard", "express"] = "standard",
    quantity: int = 1,
) -> dict[str, Any]:
    """Ship an item to an address.

    Args:
        quantity: How many items (the docstring describes what Field does not).
        speed: How fast it travels.
    """
    return {"sku": sku, "city": to.city, "speed": speed, "quantity": quantity}


def test_tool_infers_name_description_and_schema_from_the_function() -> None:
    schema = ship.input_schema
    assert ship.name == "ship"
    assert ship.description == "Ship an item to an address."
    assert schema["required"] == ["sku", "to"]
    properties: Any = schema["properties"]
    assert properties["sku"]["description"] == "The stock keeping unit"
    assert properties["speed"] == {
        "default": "standard",
        "description": "How fast it travels.",
        "enum": ["standard", "express"],
        "title": "Speed",
        "type": "string",
    }
    assert properties["quantity"]["description"].startswith("How many items")
    assert "$defs" in schema and "Address" in schema["$defs"]  # a nested pydantic model
    assert schema["additionalProperties"] is False


def run_tool(definition: Tool, value: Any, runtime_context: Any = None) -> list[tuple[Any, bool]]:
    context = ToolContext(
        tool_call_id="c1", tool_name=definition.name, run_id="r", messages=[], runtime_context=runtime_context
    )

    async def go() -> list[tuple[Any, bool]]:
        return [pair async for pair in definition.run(definition.validate_input(value), context)]

    return asyncio.run(go())


def test_tool_validates_and_calls_sync_async_and_generator_functions_with_their_contexts() -> None:
    assert run_tool(ship, {"sku": "X", "to": {"street": "1 Main", "city": "Oslo"}}) == [
        ({"sku": "X", "city": "Oslo", "speed": "standard", "quantity": 1}, False)
    ]

    @tool
    async def whoami(prefix: str, run: RunContext, call: ToolContext) -> str:
        """Say who asks."""
        return f"{prefix}{run.user_id}:{call.tool_call_id}"

    @tool
    async def count(up_to: int) -> AsyncIterator[int]:
        """Count, with preliminary outputs."""
        for number in range(1, up_to + 1):
            yield number

    context = RunContext(user_id="u1", conversation_id="c", run_id="r", message_id="m", store=Any)  # type: ignore[arg-type]
    assert whoami.input_schema["properties"].keys() == {"prefix"}  # type: ignore[union-attr]
    assert run_tool(whoami, {"prefix": "> "}, context) == [("> u1:c1", False)]
    assert run_tool(count, {"up_to": 3}) == [(1, True), (2, True), (3, False)]


def test_a_single_pydantic_model_parameter_is_the_whole_input() -> None:
    @tool(name="deliver", approval="user-approval")
    def deliver(address: Address) -> str:
        """Deliver."""
        return address.city

    assert deliver.input_schema["required"] == ["street", "city"]
    assert deliver.approval == "user-approval"
    assert run_tool(deliver, {"street": "s", "city": "Rome"}) == [("Rome", False)]


def test_a_client_side_tool_has_no_executor() -> None:
    @tool(client_side=True)
    def ask(question: str) -> str:
        """Ask the user."""
        raise AssertionError("never called")

    assert ask.client_side and ask.execute is None and ask.input_schema["required"] == ["question"]


def test_the_schema_constructor_form_stays() -> None:
    schema_tool = tool("echo", "Echo it", {"type": "object", "properties": {"x": {"type": "string"}}}, lambda v: v)
    assert (schema_tool.name, schema_tool.input_model) == ("echo", None)


class Opaque:
    """A type pydantic has no schema for."""


def test_a_function_pydantic_cannot_describe_is_refused_naming_the_tool() -> None:
    def broken(thing: Opaque) -> None:
        """Cannot be described."""

    with pytest.raises(ToolDefinitionError, match="tool broken: pydantic cannot build its input schema"):
        tool(broken)

    def untyped(thing) -> None:  # type: ignore[no-untyped-def]
        """No annotation."""

    with pytest.raises(ToolDefinitionError, match="tool untyped: parameter thing has no type annotation"):
        tool(untyped)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"temprature": 0.2}, "agent agent: temprature: not a setting of Agent"),
        ({"tools": [ship, ship]}, "agent agent: tools: two tools are named ship"),
        ({"tools": [ship], "active_tools": ["shipp"]}, "active_tools: no tool named shipp (its tools: ship)"),
        ({"tools": [ship], "tool_approval": {"refund": "user-approval"}}, "tool_approval: no tool named refund"),
        ({"name": "has space"}, "agent has space: name: use 1-64 characters"),
        ({"model": "gpt-5"}, "model: must be 'provider:model-id'"),
        ({"temperature": "hot"}, "temperature: Input should be a valid number"),
        ({"max_retries": -1}, "max_retries: Input should be greater than or equal to 0"),
    ],
)
def test_a_definition_error_names_the_setting(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(AgentDefinitionError) as caught:
        Agent(**settings)
    assert message in str(caught.value)


def test_the_fingerprint_follows_the_definition() -> None:
    one = Agent(name="a", tools=[ship], temperature=0.1)
    assert one.fingerprint() == Agent(name="a", tools=[ship], temperature=0.1).fingerprint()
    assert one.fingerprint() != Agent(name="a", tools=[ship], temperature=0.2).fingerprint()
    assert one.fingerprint() != Agent(name="a", tools=[], temperature=0.1).fingerprint()


def test_approval_of_reports_each_tools_rule() -> None:
    @tool(approval="user-approval")
    def refund(cents: int) -> int:
        """Refund."""
        return cents

    agent = Agent(tools=[ship, refund])
    assert (agent.approval_of("ship"), agent.approval_of("refund")) == ("none", "required")
    overridden = Agent(tools=[ship, refund], tool_approval={"refund": "approved"})
    assert overridden.approval_of("refund") == "none"
    policy = Agent(tools=[ship], tool_approval=lambda name, value, context: "user-approval")
    assert policy.approval_of("ship") == "per-call"


MODULE = """
from stepline import Agent
first = Agent(name="first", description="one")
second = Agent(name="second")
AGENTS = {"first": first, "second": second}
mislabelled = {"third": first}
not_an_agent = 3
"""


def test_load_agents_reads_an_agent_or_a_mapping_and_names_every_mistake(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "team_agents.py").write_text(MODULE)
    (tmp_path / "broken_agents.py").write_text("from stepline import Agent\nagent = Agent(temprature=1)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    single = load_agents("team_agents:first")
    assert (single.names(), single.default.description) == (["first"], "one")
    several = load_agents("team_agents:AGENTS")
    assert several.names() == ["first", "second"] and several.default_name == "first"
    with pytest.raises(UnknownAgentError, match="no agent named 'nope' \\(this deployment has: first, second\\)"):
        several.get("nope")
    for reference, message in [
        ("team_agents", "use package.module:attribute"),
        ("missing_module:agent", "no module named missing_module"),
        ("team_agents:absent", "module team_agents has no attribute absent"),
        ("team_agents:not_an_agent", "not_an_agent is a int, not an Agent or a mapping of agents"),
        ("team_agents:mislabelled", "entry 'third' holds the agent named 'first'"),
        ("broken_agents:agent", "temprature: not a setting of Agent"),
    ]:
        with pytest.raises(AgentLoadError, match=message):
            load_agents(reference)
