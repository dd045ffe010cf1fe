"""The streaming routes: the chat, its resume, and the two text streams (completion, object)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.responses import StreamingResponse

from ..protocol.request import parse_chat_request
from ..protocol.sse import UI_MESSAGE_STREAM_HEADERS, with_keep_alive
from ..runtime.child_results import children_at_work
from ..runtime.services import Services
from ..runtime.stream_push import coalescing_window
from ..runtime.watchers import noter
from ..runtime.working_runs import admitted
from ..store.errors import NotFound
from ..store.replay import EventPosition, parse_event_id
from .bodies import CheckedRoute, read_json
from .deps import ApiOptions, Options, ServicesDep, Threads, User
from .errors import ApiError
from .identity import request_claims
from .oneshot import CompletionRequest, ObjectRequest, completion_sse, completion_text, object_text
from .queued import cancelled_frames, queued_run_started
from .rate_limits import rate_limited
from .schemas import Id
from .tail import TailOptions, follow_run
from .threads import RunSync
from .turns import Caller, ChatStream, latest_run_id, open_chat

__all__ = ["router"]

_LOG = logging.getLogger("stepline.api")
router = APIRouter(route_class=CheckedRoute)
_TEXT = "text/plain; charset=utf-8"


def sse(frames: AsyncIterator[str], options: ApiOptions) -> StreamingResponse:
    """A UI Message Stream response: the protocol's headers, keep-alive comments while idle."""
    return StreamingResponse(
        with_keep_alive(_guarded(frames), interval=options.keep_alive_seconds), headers=UI_MESSAGE_STREAM_HEADERS
    )


def _stream_chat(
    services: Services,
    options: ApiOptions,
    user_id: str,
    chat: ChatStream,
    threads: RunSync,
    *,
    stop_at_input: bool,
) -> StreamingResponse:
    follow = TailOptions(
        poll_seconds=options.poll_seconds,
        push_poll_seconds=options.push_poll_seconds,
        push_linger_seconds=coalescing_window(services.stream_push),
        wait_poll_seconds=options.wait_poll_seconds,
        max_seconds=options.stream_max_seconds,
        stop_at_input=stop_at_input,
        wait_hold_seconds=None if stop_at_input else options.resume_wait_seconds,
        input_grace_seconds=chat.input_grace,
    )

    async def frames() -> AsyncIterator[str]:
        if chat.queued is not None:  # a queued message: nothing until its run starts
            started = await queued_run_started(
                services,
                user_id,
                chat.conversation_id,
                chat.run_id,
                chat.queued,
                threads,
                poll_seconds=options.poll_seconds,
                max_seconds=options.stream_max_seconds,
            )
            if started is not True:  # cancelled (the abort chunk), or waited too long (the client resumes)
                for frame in cancelled_frames() if started is False else []:
                    yield frame
                return
        for frame in chat.prelude:
            yield frame
        # Subscribed before the tail's first read: whatever is appended after that read wakes it.
        wake = services.stream_push.subscribe(user_id, chat.run_id) if services.stream_push is not None else None
        try:
            tail = follow_run(
                services.store,
                user_id,
                chat.run_id,
                after=chat.after,
                options=follow,
                clock=services.clock,
                threads=threads,
                wake=wake,
                at_work=lambda run: children_at_work(services, run),
                note=noter(services, user_id, chat.run_id),
            )
            async for frame in tail:
                yield frame
        finally:
            if wake is not None:
                wake.close()

    return sse(frames(), options)


async def _guarded(frames: AsyncIterator[str]) -> AsyncIterator[str]:
    """End the stream (without `[DONE]`, so the client resumes) when reading the log fails."""
    try:
        async for frame in frames:
            yield frame
    except Exception:
        _LOG.exception("stream ended by an error; the client can resume")


@router.post(
    "/api/chat",
    tags=["chat"],
    dependencies=[Depends(rate_limited)],
    response_class=StreamingResponse,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ChatRequestBody"}}},
        }
    },
    responses={200: {"content": {"text/event-stream": {}}, "description": "The run's UI Message Stream"}},
)
async def chat(
    request: Request, user_id: User, services: ServicesDep, options: Options, threads: Threads
) -> StreamingResponse:
    """Send a message, or continue a waiting run with approval responses or tool outputs (`useChat`)."""
    parsed = parse_chat_request(await read_json(request))
    caller = Caller(claims=request_claims(request.app.state.identity, request, user_id), body=dict(parsed.extra_body))
    opened = await admitted(
        services, user_id, caller.claims, lambda: threads(lambda: open_chat(services, user_id, parsed, caller))
    )
    return _stream_chat(services, options, user_id, opened, threads, stop_at_input=True)


@router.get(
    "/api/chat/{chat_id}/stream",
    tags=["chat"],
    response_class=StreamingResponse,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "The active run's UI Message Stream"},
        204: {"description": "Nothing to resume"},
    },
)
async def resume(
    chat_id: Id,
    user_id: User,
    services: ServicesDep,
    options: Options,
    threads: Threads,
    last_event_id: Annotated[str | None, Header()] = None,
    last_event_seq: Annotated[str | None, Query(alias="lastEventSeq")] = None,
) -> Response:
    """Follow the chat's active run: everything (or what came after `Last-Event-ID`), then live; 204 if none."""
    given = last_event_id if last_event_id is not None else last_event_seq
    after: EventPosition | None = parse_event_id(given)
    if given is not None and after is None:
        raise ApiError(400, "Last-Event-ID: use the id of an event of this stream, as sent")
    run_id = await threads(lambda: _run_to_resume(services, user_id, chat_id, after))
    if run_id is None:
        return Response(status_code=204)
    resumed = ChatStream(run_id=run_id, after=after)
    return _stream_chat(services, options, user_id, resumed, threads, stop_at_input=False)


def _run_to_resume(services: Services, user_id: str, chat_id: str, after: EventPosition | None) -> str | None:
    """The run a resume follows, or None (204).

    The chat's active run; or, for a client that names the last event it saw, the chat's latest run
    while it has events after that one (a client cut off just before the end still gets the end).
    A chat that does not exist, or is another user's, has none: the stock client asks on every
    mount, also for a chat it has just created, so "nothing to resume" is the answer for both.
    """
    store = services.store
    try:
        conversation = store.get_conversation(user_id, chat_id)
    except NotFound:
        return None
    if conversation.active_run_id is not None or after is None:
        return conversation.active_run_id
    latest = latest_run_id(store.list_messages(user_id, chat_id, limit=10_000).items)
    if latest is None or store.get_run(user_id, latest).last_event_seq <= after[0]:
        return None
    return latest


@router.post("/api/completion", tags=["text"], response_class=StreamingResponse)
async def completion(
    body: CompletionRequest,
    user_id: User,
    services: ServicesDep,
    options: Options,
    protocol: Literal["text", "data"] = "text",
) -> StreamingResponse:
    """`useCompletion`: the completion of `prompt` as plain text, or (`?protocol=data`) a UI Message Stream."""
    if protocol == "data":
        return sse(completion_sse(services, body), options)
    return StreamingResponse(completion_text(services, body), media_type=_TEXT)


@router.post("/api/object", tags=["text"], response_class=StreamingResponse)
async def object_stream(body: ObjectRequest, user_id: User, services: ServicesDep) -> StreamingResponse:
    """`experimental_useObject`: the model's JSON for `input`, streamed as text."""
    return StreamingResponse(object_text(services, body), media_type=_TEXT)
