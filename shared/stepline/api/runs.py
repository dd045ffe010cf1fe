"""Headless runs: `POST /api/runs` starts one for another system, `GET /api/runs/{id}` reports on it.

The run is a turn like a chat message's: a conversation of the caller, streamed by
`GET /api/chat/{conversationId}/stream`, answered and continued in the chat UI. `Idempotency-Key`
makes a retried POST answer the run the first one started (`stepline.runtime.headless`).
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal, cast

from anyio import to_thread
from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import JSONResponse
from pydantic import Field, JsonValue

from ..agent.loading import UnknownAgentError
from ..errors import InvalidUIMessageError
from ..protocol._ui_validation import validate_ui_messages
from ..protocol.request import message_to_wire
from ..runtime.callback_urls import RefusedUrl
from ..runtime.deliveries import Attempt
from ..runtime.headless import HeadlessStart, IdempotencyMismatch, Started, start_headless, unattended_of
from ..runtime.services import Services
from ..runtime.working_runs import admitted
from ..store.errors import ActiveRunExists, Conflict
from ..store.records import TERMINAL
from .bodies import CheckedRoute
from .deps import Options, ServicesDep, Threads, User
from .errors import ApiError
from .identity import request_claims
from .rate_limits import rate_limited
from .schemas import Id, StoredMessage, _Body  # pyright: ignore[reportPrivateUsage]

__all__ = ["RunRequestBody", "RunView", "router", "user_message"]

router = APIRouter(route_class=CheckedRoute)
_KEY_CHARS = 255


class RunRequestBody(_Body):
    """`POST /api/runs`."""

    agent: str | None = Field(default=None, description="The agent (default: the deployment's default)")
    input: str | dict[str, JsonValue] = Field(description="The user message: text, or a UIMessage with role user")
    conversation_id: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9._:@+=-]{1,200}$", description="Continue this conversation"
    )
    metadata: dict[str, JsonValue] = Field(default_factory=dict[str, JsonValue])
    callback_url: str | None = Field(
        default=None, description="https URL for signed notices of the run's end and waits"
    )


class StartedRun(_Body):
    """`202` of `POST /api/runs`."""

    run_id: str
    conversation_id: str


class DeliveryView(_Body):
    id: str
    type: str
    state: Literal["pending", "delivered", "failed"]
    attempts: list[Attempt]


class CallbackView(_Body):
    url: str
    deliveries: list[DeliveryView]


class PendingApproval(_Body):
    approval_id: str
    tool_call_id: str
    tool_name: str
    expires_at: int | None


class RunView(_Body):
    """`GET /api/runs/{id}`: the run's state; its final message and usage once it has ended."""

    run_id: str
    conversation_id: str
    agent: str | None
    status: str
    trigger: str
    started_at: int
    ended_at: int | None
    finish_reason: str | None
    usage: dict[str, JsonValue] | None
    error: dict[str, JsonValue] | None
    metadata: dict[str, JsonValue]
    message: StoredMessage | None = Field(description="The assistant message, once the run has ended")
    pending_approvals: list[PendingApproval]
    callback: CallbackView | None


def user_message(value: str | dict[str, JsonValue]) -> dict[str, Any]:
    """A run's input as a user UIMessage (wire form); a 400 names what is wrong with a given one."""
    if isinstance(value, str):
        if not value.strip():
            raise ApiError(400, "input: must not be empty")
        return {"id": f"msg-{uuid.uuid4().hex}", "role": "user", "parts": [{"type": "text", "text": value}]}
    try:
        message = validate_ui_messages([value], root="input")[0]
    except InvalidUIMessageError as error:
        raise ApiError(400, str(error).replace("input[0]", "input")) from None
    if message.role != "user":
        raise ApiError(400, "input.role: a run's input is a user message")
    return message_to_wire(message)


@router.post("/api/runs", tags=["runs"], status_code=202, dependencies=[Depends(rate_limited)])
async def start_run(
    body: RunRequestBody,
    request: Request,
    user_id: User,
    services: ServicesDep,
    options: Options,
    threads: Threads,
    idempotency_key: Annotated[str | None, Header(max_length=_KEY_CHARS)] = None,
) -> JSONResponse:
    """Start a run without a chat client; the same `Idempotency-Key` again answers the same run."""
    if idempotency_key is not None and not idempotency_key.strip():
        raise ApiError(400, "Idempotency-Key: must not be empty")
    url, policy = body.callback_url, options.callbacks
    if url is not None:
        if policy is None:
            raise ApiError(400, "callbackUrl: callbacks are not configured on this deployment (no callback secret)")
        try:
            await to_thread.run_sync(lambda: policy.check(url))
        except RefusedUrl as error:
            raise ApiError(400, str(error)) from None
    start = HeadlessStart(
        agent=body.agent,
        message=user_message(body.input),
        conversation_id=body.conversation_id,
        metadata=body.metadata,
        callback_url=body.callback_url,
        idempotency_key=idempotency_key,
        request=cast(JsonValue, body.model_dump(mode="json", by_alias=True)),
        claims=request_claims(request.app.state.identity, request, user_id),
    )
    started = await admitted(services, user_id, start.claims, lambda: threads(lambda: _start(services, user_id, start)))
    answer = StartedRun(run_id=started.run.run_id, conversation_id=started.run.conversation_id)
    headers = {"idempotent-replayed": "true"} if started.replayed else {}
    return JSONResponse(answer.model_dump(by_alias=True), status_code=202, headers=headers)


def _start(services: Services, user_id: str, start: HeadlessStart) -> Started:
    try:
        return start_headless(services, user_id, start)
    except UnknownAgentError as error:
        raise ApiError(400, f"agent: {error}") from None
    except IdempotencyMismatch as error:
        raise ApiError(422, str(error)) from None
    except ActiveRunExists:
        raise ApiError(409, "conversationId: a run is already active in this conversation") from None
    except Conflict as error:
        raise ApiError(409, f"conversationId: {error}") from None


@router.get("/api/runs/{run_id}", tags=["runs"])
def get_run(run_id: Id, user_id: User, services: ServicesDep) -> RunView:
    """The run: status, pending approvals, callback deliveries; the final message and usage once ended."""
    store = services.store
    run = store.get_run(user_id, run_id)
    started = unattended_of(run)
    message = None
    if run.status in TERMINAL["run"]:
        m = store.get_message(user_id, run.conversation_id, run.assistant_message_id)
        message = StoredMessage(
            id=m.message_id, role=m.role, parts=m.parts, metadata=m.metadata, status=m.status, run_id=m.run_id
        )
    pending = [
        PendingApproval(
            approval_id=a.approval_id, tool_call_id=a.tool_call_id, tool_name=a.tool_name, expires_at=a.expires_at
        )
        for a in store.pending_approvals(user_id)
        if a.run_id == run_id
    ]
    metadata = started.get("metadata")
    return RunView(
        run_id=run.run_id,
        conversation_id=run.conversation_id,
        agent=run.agent,
        status=run.status,
        trigger=str(started.get("trigger") or run.trigger),
        started_at=run.started_at,
        ended_at=run.ended_at,
        finish_reason=run.finish_reason,
        usage=run.usage,
        error=run.error,
        metadata=cast(dict[str, JsonValue], metadata) if isinstance(metadata, dict) else {},
        message=message,
        pending_approvals=pending,
        callback=_callback(services, user_id, run_id, started.get("callbackUrl")),
    )


def _callback(services: Services, user_id: str, run_id: str, url: JsonValue) -> CallbackView | None:
    if not isinstance(url, str):
        return None
    log = services.deliveries
    found = [] if log is None else log.deliveries(user_id, run_id)
    views = [DeliveryView(id=d.delivery_id, type=d.type, state=d.state, attempts=d.attempts) for d in found]
    return CallbackView(url=url, deliveries=views)
