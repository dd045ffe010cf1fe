"""`POST /api/hooks/{agent}/{hook}`: a signed delivery from another system becomes a run.

No user token: the signature is the permission (`stepline.runtime.hook_signatures`), and the run
is a conversation of the hook's `owner`. The order is the point: the signature is checked on the
raw body before anything is parsed or stored, so a forged, stale or replayed delivery is a 401
that leaves nothing behind. The payload (JSON) goes through the hook's `prompt` function; None
accepts the delivery without a run (200). A delivery id already used starts no second run (401:
the same delivery again is a replay).
"""

from __future__ import annotations

import uuid

from anyio import to_thread
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import JsonValue

from ..agent.unattended import Hook
from ..protocol._json import loads_strict
from ..runtime.headless import HeadlessStart, Started, start_headless
from ..runtime.hook_signatures import BadSignature, verify
from ..runtime.services import Services
from ..runtime.working_runs import admitted
from .bodies import CheckedRoute
from .deps import ApiOptions
from .errors import ApiError
from .schemas import Id

__all__ = ["router"]

router = APIRouter(route_class=CheckedRoute)


@router.post("/api/hooks/{agent}/{hook}", tags=["hooks"], status_code=202)
async def receive(agent: Id, hook: Id, request: Request) -> JSONResponse:
    """A signed webhook delivery (Standard Webhooks headers) starts a run of the hook's agent."""
    services: Services = request.app.state.services
    options: ApiOptions = request.app.state.options
    found = _hook(services, agent, hook)
    secrets = options.hook_secrets
    secret = None if secrets is None else await to_thread.run_sync(lambda: secrets.secret(agent, hook))
    if secret is None:
        raise ApiError(503, f"hook {agent}/{hook} has no secret configured")
    body = await request.body()
    try:
        delivery_id = verify(secret, body, request.headers)
    except BadSignature as error:
        raise ApiError(401, str(error)) from None
    try:
        payload: JsonValue = loads_strict(body)
    except ValueError:
        raise ApiError(400, "body: not JSON") from None
    try:
        prompt = found.prompt_for(payload)
    except Exception as error:  # the hook's own function refused this payload
        raise ApiError(422, f"payload: hook {hook} could not map it ({type(error).__name__}: {error})") from None
    if prompt is None or not prompt.strip():
        return JSONResponse({"runId": None, "ignored": True}, status_code=200)
    start = HeadlessStart(
        agent=agent,
        message={"id": f"msg-{uuid.uuid4().hex}", "role": "user", "parts": [{"type": "text", "text": prompt}]},
        trigger="hook",
        metadata={**found.metadata, "hook": hook, "deliveryId": delivery_id},
        idempotency_key=f"hook:{agent}/{hook}:{delivery_id}",
        request={"delivery": delivery_id},
        title=f"{hook}: {prompt[:60]}",
    )
    owner = found.owner
    started: Started = await admitted(
        services, owner, start.claims, lambda: to_thread.run_sync(lambda: start_headless(services, owner, start))
    )
    if started.replayed:
        raise ApiError(401, f"webhook-id {delivery_id} was already delivered (a replay)")
    return JSONResponse({"runId": started.run.run_id, "conversationId": started.run.conversation_id}, status_code=202)


def _hook(services: Services, agent: str, hook: str) -> Hook:
    try:
        found = services.agent(agent)
    except KeyError:
        raise ApiError(404, f"no agent {agent}") from None
    entry = next((h for h in found.hooks if h.name == hook), None)
    if entry is None:
        raise ApiError(404, f"agent {agent} has no hook {hook}")
    return entry
