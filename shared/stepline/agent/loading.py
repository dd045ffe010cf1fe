"""Where a runtime finds its agents: `STEPLINE_AGENT=package.module:attribute`.

The attribute is an `Agent`, or a mapping `name -> Agent` (several agents behind one deployment;
the first is the default of a new chat that names none). `stepline dev`, `stepline run` and every
Lambda function read the same reference, and each rebuilds the agents by importing the module
(`stepline dev` and `stepline run` put the working directory on the import path first, so a
project's `agent.py` is found where it lies).

With no reference the runtime serves the default agent: the runtime's model (`STEPLINE_MODEL`,
else the scripted demo book) with the tools of `STEPLINE_TOOLS` (default
`stepline.tools.workspace`).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from ..errors import StepLineError
from ..tools import ToolsetError, load_toolset
from .definition import Agent
from .delegation import delegates_of

__all__ = [
    "DEFAULT_TOOLS",
    "AgentLoadError",
    "AgentSet",
    "PROVIDER_KEYS",
    "UnknownAgentError",
    "agents_from_env",
    "check_keys",
    "default_agent",
    "load_agents",
]

DEFAULT_TOOLS = "stepline.tools.workspace"


class AgentLoadError(StepLineError):
    """The agent reference cannot be imported or names no agent; the message says which part."""


class UnknownAgentError(StepLineError, KeyError):
    """A chat names an agent this deployment does not have."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"agent: no agent named {name!r} (this deployment has: {', '.join(known)})")
        self.agent_name = name

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True, slots=True)
class AgentSet:
    """The agents of a deployment, by name; the first is the default."""

    agents: Mapping[str, Agent]
    reference: str | None = None
    """Where they came from (`module:attribute`), or None for the default agent."""

    def __post_init__(self) -> None:
        if not self.agents:
            raise AgentLoadError(f"{self.reference}: the mapping holds no agent")

    @classmethod
    def single(cls, agent: Agent, reference: str | None = None) -> AgentSet:
        return cls({agent.name: agent}, reference)

    @property
    def default(self) -> Agent:
        return next(iter(self.agents.values()))

    @property
    def default_name(self) -> str:
        return next(iter(self.agents))

    def names(self) -> list[str]:
        return list(self.agents)

    def get(self, name: str | None) -> Agent:
        """The agent called `name` (None: the default); `UnknownAgentError` when there is none."""
        if name is None:
            return self.default
        agent = self.agents.get(name) or delegates_of(self.agents.values()).get(name)
        if agent is None:  # a sub-agent is found through the agents whose tools it is
            raise UnknownAgentError(name, self.names())
        return agent

    def __iter__(self) -> Iterator[tuple[str, Agent]]:
        return iter(self.agents.items())


def _import(module_name: str, reference: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name and module_name.startswith(error.name):
            raise AgentLoadError(
                f"STEPLINE_AGENT={reference}: no module named {module_name}"
                f" (searched the working directory {Path.cwd()} and the Python path)"
            ) from None
        raise AgentLoadError(f"STEPLINE_AGENT={reference}: importing {module_name} failed: {error}") from error
    except StepLineError as error:  # a definition error: it already names the agent or the tool
        raise AgentLoadError(f"STEPLINE_AGENT={reference}: {error}") from None
    except Exception as error:
        raise AgentLoadError(
            f"STEPLINE_AGENT={reference}: importing {module_name} failed: {type(error).__name__}: {error}"
        ) from error


def load_agents(reference: str, *, search: Path | None = None) -> AgentSet:
    """The agents of `package.module:attribute` (`search`: a directory put first on the import path)."""
    module_name, colon, attribute = reference.strip().partition(":")
    if not module_name or not colon or not attribute:
        raise AgentLoadError(f"STEPLINE_AGENT={reference}: use package.module:attribute, such as agent:agent")
    if search is not None and str(search) not in sys.path:
        sys.path.insert(0, str(search))
    module = _import(module_name, reference)
    value: Any = module
    for name in attribute.split("."):
        if not hasattr(value, name):
            raise AgentLoadError(f"STEPLINE_AGENT={reference}: module {module_name} has no attribute {attribute}")
        value = getattr(value, name)
    if isinstance(value, Agent):
        return AgentSet.single(value, reference)
    if isinstance(value, Mapping):
        agents: dict[str, Agent] = {}
        for key, agent in cast(Mapping[Any, Any], value).items():
            if not isinstance(agent, Agent) or not isinstance(key, str):
                raise AgentLoadError(f"STEPLINE_AGENT={reference}: entry {key!r} is not an Agent")
            if agent.name not in (key, "agent"):
                raise AgentLoadError(
                    f"STEPLINE_AGENT={reference}: entry {key!r} holds the agent named {agent.name!r}; use one name"
                )
            agents[key] = agent if agent.name == key else agent.renamed(key)
        return AgentSet(agents, reference)
    raise AgentLoadError(
        f"STEPLINE_AGENT={reference}: {attribute} is a {type(value).__name__}, not an Agent or a mapping of agents"
    )


def default_agent(tools_module: str = DEFAULT_TOOLS) -> Agent:
    """The agent served when none is configured: the runtime's model with a toolset module's tools."""
    try:
        tools, approval = load_toolset(tools_module)
    except ToolsetError as error:
        raise AgentLoadError(f"STEPLINE_TOOLS={tools_module}: {error}") from None
    return Agent(
        name="default",
        description=f"The runtime's model with the tools of {tools_module}",
        tools=tools,
        tool_approval=approval or None,
    )


PROVIDER_KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
"""The variable holding each provider's API key (what the provider SDKs read)."""


def agents_from_env(env: Mapping[str, str], *, search: Path | None = None) -> AgentSet:
    """The agents `STEPLINE_AGENT` names, else the default agent over `STEPLINE_TOOLS`."""
    reference = env.get("STEPLINE_AGENT", "").strip()
    if reference:
        return load_agents(reference, search=search)
    return AgentSet.single(default_agent(env.get("STEPLINE_TOOLS", "").strip() or DEFAULT_TOOLS))


def check_keys(agents: AgentSet, default_model: str, env: Mapping[str, str]) -> None:
    """Fail before serving when an agent's provider has no API key in `env` (naming the variable)."""
    for name, agent in agents:
        spec = agent.model_spec(default_model)
        variable = PROVIDER_KEYS.get(spec.partition(":")[0])
        if variable and not env.get(variable, "").strip() and isinstance(agent.model or default_model, str):
            raise AgentLoadError(f"agent {name} uses the model {spec}: set {variable} to its API key")
