"""`GET /api/agents`: the agents of this deployment, for a client to pick the agent of a new chat.

Each agent's name, description, model and tools (name, description, whether a call waits for a
person): what a person choosing an agent needs, nothing secret (no instructions, headers or
provider options). A new chat names its agent with `agent` in the chat request's body
(`DefaultChatTransport`'s `body` option); the conversation keeps it for its life.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter

from .bodies import CheckedRoute
from .deps import ServicesDep, User
from .schemas import _Body  # pyright: ignore[reportPrivateUsage]

__all__ = ["AgentList", "AgentView", "router"]

router = APIRouter(route_class=CheckedRoute)


class AgentToolView(_Body):
    """A tool of an agent."""

    name: str
    description: str | None
    approval: Literal["required", "per-call", "none"]
    """`required`: every call waits for a person; `per-call`: a policy decides; `none`: never."""
    client_side: bool
    """The client supplies the output (a question for the user)."""


class AgentView(_Body):
    """One agent."""

    name: str
    description: str | None
    model: str
    """`provider:model-id`."""
    tools: list[AgentToolView]


class AgentList(_Body):
    """The deployment's agents; `default` answers a new chat that names none."""

    default: str
    agents: list[AgentView]


@router.get("/api/agents", tags=["agents"])
def list_agents(user_id: User, services: ServicesDep) -> AgentList:
    """The agents a new chat may name (`body.agent`)."""
    views = [
        AgentView(
            name=name,
            description=agent.description,
            model=services.model_spec(agent),
            tools=[
                AgentToolView(
                    name=t.name,
                    description=t.description,
                    approval=agent.approval_of(t.name),
                    client_side=t.client_side,
                )
                for t in agent.tools
            ],
        )
        for name, agent in services.agent_set
    ]
    return AgentList(default=services.agent_set.default_name, agents=views)
