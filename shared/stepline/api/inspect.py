"""`GET /api/runs/{run_id}/steps`: the run inspector's data, for the run's owner only.

Each step in order with its model request as sent (instructions, messages, tools with their
schemas, settings, provider options), the answer summarised, tokens, timings and retries, and
each tool call with its input, output, duration and who decided its approval, and the sub-agent
tree (`stepline.runtime.inspection`). Another user's run, or one that does not exist, is a 404 alike.
What was recorded was masked when it was written; a run from a deployment that records no
requests (`InspectRequests=false`) has steps without a `request`.
"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, JsonValue
from pydantic.alias_generators import to_camel

from ..runtime.inspection import run_view
from .bodies import CheckedRoute
from .deps import ServicesDep, User
from .schemas import Id

__all__ = ["RunInspection", "router"]

router = APIRouter(route_class=CheckedRoute)


class RunInspection(BaseModel):
    """One run as the inspector shows it; `steps` as `stepline.runtime.inspection.run_view` builds them."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    run_id: str
    conversation_id: str
    message_id: str
    agent: str | None
    provider: str
    model: str
    status: str
    finish_reason: str | None
    usage: dict[str, JsonValue] | None
    error: dict[str, JsonValue] | None
    started_at: int
    ended_at: int | None
    trace_id: str | None
    """The run's OpenTelemetry trace id: the same run in any tracing backend."""
    steps: list[dict[str, JsonValue]]
    parent: dict[str, JsonValue] | None = None
    """On a sub-agent's run: the parent run and the tool call it answers."""
    sub_agents: list[dict[str, JsonValue]] = []
    """The child runs of its agent-tool calls, each with its own (the sub-agent tree)."""


@router.get("/api/runs/{run_id}/steps", tags=["runs"], response_model_by_alias=True)
def run_steps(run_id: Id, user_id: User, services: ServicesDep) -> RunInspection:
    """The run's steps as the inspector shows them (404 when the run is not the caller's)."""
    return RunInspection.model_validate(run_view(services.store, user_id, run_id))
