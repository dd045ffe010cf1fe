"""Agents as tools: one agent hands a task to another, each call a durable child run.

    researcher = Agent(name="researcher", instructions="Find sources.", tools=[search])
    lead = Agent(name="lead", tools=[researcher.as_tool(description="Research a topic in depth.")])

`Agent.as_tool` builds an `AgentTool`. To the loop it is a tool without an executor (as a client-side
tool is): the step ends with the call and the run waits. The durable runtime
(`stepline.runtime.children`) then starts the call's child run, with the child agent's own
definition and the parent run's context, and the child's end answers the call
(`stepline.runtime.child_results`), which resumes the parent. Nothing holds a process or a thread
while the parent waits.

What the child is asked (`prompt_of`): the `task` string of the default input, or, with a typed
`input` model, the input as JSON. What the parent model reads (`result`): the child's final text
(`"text"`, the default), or its structured output parsed from that text (`"output"`, for a child
with `output`/`output_schema`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from ..loop.tools import Tool
from ..protocol._json import dumps

__all__ = [
    "DEFAULT_MAX_CHILDREN",
    "DEFAULT_MAX_DEPTH",
    "AgentTool",
    "DelegatedTask",
    "ResultKind",
    "agent_tool",
    "agent_tools_of",
    "delegates_of",
    "prompt_of",
]

ResultKind = Literal["text", "output"]
DEFAULT_MAX_DEPTH = 3
"""Levels of sub-agents below the run a person started (a child of a child of a child)."""
DEFAULT_MAX_CHILDREN = 16
"""Child runs one run may start over its life."""


class DelegatedTask(BaseModel):
    """The default input of an agent tool: one task, in the parent model's words."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    task: str = Field(description="What the agent should do: the whole task, with everything it needs to know.")


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentTool(Tool):
    """A tool whose calls are child runs of `agent` (an `Agent`; see the module docstring).

    `max_depth` and `max_children` bound delegation from the run that calls it: a call beyond
    either is refused with a tool error the model reads.
    """

    agent: Any = None
    result: ResultKind = "text"
    max_depth: int = DEFAULT_MAX_DEPTH
    max_children: int = DEFAULT_MAX_CHILDREN

    @property
    def agent_name(self) -> str:
        return str(self.agent.name)


def agent_tool(
    agent: Any,
    *,
    name: str | None = None,
    description: str | None = None,
    input: type[BaseModel] | None = None,
    result: ResultKind = "text",
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_children: int = DEFAULT_MAX_CHILDREN,
) -> AgentTool:
    """`agent` as a tool of another agent (`Agent.as_tool` calls this)."""
    if max_depth < 1 or max_children < 1:
        raise ValueError("max_depth and max_children must be at least 1")
    if result == "output" and agent.output is None and agent.output_schema is None:
        raise ValueError(f"result='output': agent {agent.name} sets no output or output_schema")
    model = input or DelegatedTask
    return AgentTool(
        name=name or agent.name,
        description=description or agent.description or f"Hand a task to the {agent.name} agent.",
        input_model=model,
        input_schema=cast(dict[str, JsonValue], model.model_json_schema()),
        agent=agent,
        result=result,
        max_depth=max_depth,
        max_children=max_children,
    )


def prompt_of(tool: AgentTool, value: JsonValue) -> str:
    """The child's user message for a call's input: the task, or the typed input as JSON."""
    if tool.input_model is DelegatedTask and isinstance(value, dict):
        return str(value.get("task", ""))
    return dumps(value)


def agent_tools_of(agent: Any) -> dict[str, AgentTool]:
    """An agent's agent tools, by tool name (a live toolset's are read now)."""
    tools: Any = agent.tools
    return {t.name: t for t in cast(list[Tool], list(tools)) if isinstance(t, AgentTool)}


def delegates_of(agents: Any) -> dict[str, Any]:
    """Every agent reachable through agent tools from `agents` (name -> agent), nearest first."""
    found: dict[str, Any] = {}
    queue: list[Any] = list(agents)
    while queue:
        agent = queue.pop(0)
        for tool in agent_tools_of(agent).values():
            if tool.agent_name not in found:
                found[tool.agent_name] = tool.agent
                queue.append(tool.agent)
    return found
