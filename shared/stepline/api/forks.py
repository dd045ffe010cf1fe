"""`POST /api/runs/{runId}/fork`: a new run from one of an ended run's steps, on a new branch (`runtime.fork`).

The steps before the fork point are replayed from the source's checkpoint and log (no model call,
no tool call); a changed approval decision or question answer is applied there; then the loop goes
on live. The answer names the fork; its stream is the conversation's (`GET /api/chat/{id}/stream`).
"""

from __future__ import annotations

import uuid

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import Field, JsonValue

from ..errors import InvalidUIMessageError
from ..protocol._ui_validation import validate_ui_messages
from ..protocol.request import message_to_wire
from ..runtime.fork import ForkRefused, ForkRequest, fork_run
from ..runtime.fork_seed import Answer, Decision, ForkEdits
from .bodies import CheckedRoute
from .deps import ServicesDep, Threads, User
from .errors import ApiError
from .schemas import Id, _Body  # pyright: ignore[reportPrivateUsage]

__all__ = ["ForkBody", "router"]

router = APIRouter(route_class=CheckedRoute)


class ForkDecision(_Body):
    approval_id: str = Field(
        min_length=1, max_length=200, description="An approval of the run (or of one it was forked from)"
    )
    approved: bool
    reason: str | None = Field(default=None, max_length=2000)


class ForkAnswer(_Body):
    tool_call_id: str = Field(
        min_length=1, max_length=200, description="A question (client-side tool call) a person answered"
    )
    output: JsonValue = None
    error_text: str | None = Field(default=None, max_length=2000)


class ForkBody(_Body):
    """`POST /api/runs/{runId}/fork`."""

    step: int | None = Field(
        default=None, description="The fork's first live step (0-based); implied by a changed approval or answer"
    )
    approvals: list[ForkDecision] = Field(default_factory=list[ForkDecision], max_length=50)
    answers: list[ForkAnswer] = Field(default_factory=list[ForkAnswer], max_length=50)
    message: str | dict[str, JsonValue] | None = Field(
        default=None, description="A user message the model reads at the fork point: text, or a UIMessage"
    )


class StartedFork(_Body):
    """`201` of `POST /api/runs/{runId}/fork`."""

    run_id: str
    conversation_id: str
    message_id: str
    forked_from: dict[str, JsonValue]


def _message(value: str | dict[str, JsonValue] | None) -> dict[str, JsonValue] | None:
    if value is None:
        return None
    if isinstance(value, str):
        if not value.strip():
            raise ApiError(400, "message: must not be empty")
        return {"id": f"msg-{uuid.uuid4().hex}", "role": "user", "parts": [{"type": "text", "text": value}]}
    try:
        message = validate_ui_messages([value], root="message")[0]
    except InvalidUIMessageError as error:
        raise ApiError(400, str(error).replace("message[0]", "message")) from None
    if message.role != "user":
        raise ApiError(400, "message.role: the message added at a fork point is a user message")
    return message_to_wire(message)


def _edits(body: ForkBody) -> ForkEdits:
    decisions = {d.approval_id: Decision(d.approved, d.reason) for d in body.approvals}
    answers = {a.tool_call_id: Answer(a.output, a.error_text) for a in body.answers}
    if len(decisions) != len(body.approvals):
        raise ApiError(400, "approvals: an approval is named twice")
    if len(answers) != len(body.answers):
        raise ApiError(400, "answers: a tool call is named twice")
    return ForkEdits(decisions=decisions, answers=answers, message=_message(body.message))


@router.post("/api/runs/{run_id}/fork", tags=["runs"], status_code=201)
async def fork(run_id: Id, body: ForkBody, user_id: User, services: ServicesDep, threads: Threads) -> JSONResponse:
    """Fork the ended run at a step, with a changed decision or answer; 404 for another user's run."""
    request = ForkRequest(step=body.step, edits=_edits(body))
    try:
        started = await threads(lambda: fork_run(services, user_id, run_id, request))
    except ForkRefused as error:
        raise ApiError(error.status, str(error)) from None
    origin = (started.run.context or {}).get("fork") or {}
    answer = StartedFork(
        run_id=started.run.run_id,
        conversation_id=started.run.conversation_id,
        message_id=started.assistant_message.message_id,
        forked_from=origin if isinstance(origin, dict) else {},
    )
    return JSONResponse(answer.model_dump(by_alias=True), status_code=201)
