"""The HTTP API: one FastAPI app for the chat stream, resume, approvals, abort and the REST reads.

The same app object runs everywhere: under uvicorn locally (`stepline dev`) and on AWS behind
the Lambda Web Adapter (the streaming routes) and Mangum (the buffered ones). Every route but
`/api/health` resolves the caller's user first (`stepline.api.identity`) and passes it to every
store call, so another user's ids are simply not found (404), exactly like ids that do not exist.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from anyio import to_thread
from fastapi import Depends, FastAPI, Header, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, StreamingResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException

from ..errors import InvalidUIMessageError
from ..protocol._json import loads_strict
from ..protocol.request import parse_chat_request
from ..protocol.sse import UI_MESSAGE_STREAM_HEADERS, with_keep_alive
from ..runtime.services import Services
from ..runtime.worker import abort_run, decide
from ..store.artifacts import artifact_link
from ..store.errors import ActiveRunExists, Conflict, DecisionConflict, Gone, NotFound
from ..store.replay import EventPosition, parse_event_id
from ..store.workspace import workspace_prefix
from .errors import ApiError, error_body, error_response
from .identity import Identity
from .oneshot import CompletionRequest, ObjectRequest, completion_sse, completion_text, object_text
from .schemas import (
    AbortResult,
    ApprovalDecisionBody,
    ApprovalView,
    ConversationDetail,
    ConversationList,
    Health,
    Id,
    approval_view,
    conversation_detail,
    conversation_summary,
)
from .tail import TailOptions, follow_run
from .turns import ChatStream, latest_run_id, open_chat

__all__ = ["ApiOptions", "create_app"]

_LOG = logging.getLogger("stepline.api")


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiOptions:
    """Limits and timings of the API."""

    max_body_bytes: int = 6 * 1024 * 1024
    """Lambda's synchronous payload limit; a larger body is refused with 413 before it is read whole."""
    keep_alive_seconds: float = 10.0
    poll_seconds: float = 0.1
    stream_max_seconds: float = 840.0
    artifact_link_seconds: int = 300


def _describe_validation(error: RequestValidationError | ValidationError) -> str:
    problems: list[str] = []
    for issue in error.errors():
        location = ".".join(str(p) for p in issue["loc"] if p != "body")
        problems.append(f"{location}: {issue['msg']}" if location else str(issue["msg"]))
    return "; ".join(problems)


def _user(request: Request) -> str:
    identity: Identity = request.app.state.identity
    return identity.user_of(request)


User = Annotated[str, Depends(_user)]
"""The caller's user; every route but the health check depends on it."""


def create_app(services: Services, identity: Identity, options: ApiOptions = ApiOptions()) -> FastAPI:  # noqa: C901
    """The Stepline API over `services`, with users from `identity`."""
    app = FastAPI(
        title="Stepline",
        summary="Durable AI agent conversations speaking the AI SDK UI Message Stream protocol.",
        version="0.1.0",
        openapi_url="/api/openapi.json",
        docs_url="/api/docs",
        redoc_url=None,
        max_body_size=options.max_body_bytes,
    )
    store = services.store
    tail = TailOptions(poll_seconds=options.poll_seconds, max_seconds=options.stream_max_seconds)

    app.state.identity = identity
    app.add_exception_handler(ApiError, error_response)

    def handler(status: int) -> Callable[[Request, Exception], Awaitable[JSONResponse]]:
        async def refuse(_: Request, error: Exception) -> JSONResponse:
            message = str(error) if status != 404 else "not found"
            return JSONResponse(error_body(status, message), status_code=status)

        return refuse

    app.add_exception_handler(NotFound, handler(404))
    app.add_exception_handler(Gone, handler(410))
    app.add_exception_handler(DecisionConflict, handler(409))
    app.add_exception_handler(ActiveRunExists, handler(409))
    app.add_exception_handler(Conflict, handler(409))
    app.add_exception_handler(InvalidUIMessageError, handler(400))

    async def invalid(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, RequestValidationError)
        return JSONResponse(error_body(400, _describe_validation(error)), status_code=400)

    app.add_exception_handler(RequestValidationError, invalid)

    async def http_error(_: Request, error: Exception) -> JSONResponse:
        assert isinstance(error, HTTPException)
        return JSONResponse(error_body(error.status_code, str(error.detail)), error.status_code, error.headers)

    app.add_exception_handler(HTTPException, http_error)

    def sse(frames: AsyncIterator[str]) -> StreamingResponse:
        return StreamingResponse(
            with_keep_alive(_guarded(frames), interval=options.keep_alive_seconds),
            headers=UI_MESSAGE_STREAM_HEADERS,
        )

    def stream_chat(user_id: str, chat: ChatStream, *, stop_at_input: bool) -> StreamingResponse:
        async def frames() -> AsyncIterator[str]:
            for frame in chat.prelude:
                yield frame
            follow = TailOptions(
                poll_seconds=tail.poll_seconds,
                max_seconds=tail.max_seconds,
                stop_at_input=stop_at_input,
                input_grace_seconds=chat.input_grace,
            )
            async for frame in follow_run(
                store, user_id, chat.run_id, after=chat.after, options=follow, clock=services.clock
            ):
                yield frame

        return sse(frames())

    @app.get("/api/health", tags=["meta"])
    def health() -> Health:
        return Health(status="ok", model=f"{services.model.provider}:{services.model.model_id}")

    @app.post(
        "/api/chat",
        tags=["chat"],
        response_class=StreamingResponse,
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ChatRequestBody"}}},
            }
        },
        responses={200: {"content": {"text/event-stream": {}}, "description": "The run's UI Message Stream"}},
    )
    async def chat(request: Request, user_id: User) -> StreamingResponse:
        """Send a message, or continue a waiting run with approval responses or tool outputs (`useChat`)."""
        try:
            payload = loads_strict(await request.body())
        except ValueError as error:
            raise ApiError(400, f"body is not JSON: {error}") from None
        parsed = parse_chat_request(payload)
        opened = await to_thread.run_sync(lambda: open_chat(services, user_id, parsed))
        return stream_chat(user_id, opened, stop_at_input=True)

    @app.get("/api/chat/{chat_id}/stream", tags=["chat"], response_class=StreamingResponse)
    async def resume(
        chat_id: Id,
        user_id: User,
        last_event_id: Annotated[str | None, Header()] = None,
        last_event_seq: Annotated[str | None, Query(alias="lastEventSeq")] = None,
    ) -> Response:
        """Follow the chat's active run: everything (or what came after `Last-Event-ID`), then live; 204 if none."""
        given = last_event_id if last_event_id is not None else last_event_seq
        after: EventPosition | None = parse_event_id(given)
        if given is not None and after is None:
            raise ApiError(400, "Last-Event-ID: use the id of an event of this stream, as sent")
        run_id = await to_thread.run_sync(lambda: _run_to_resume(services, user_id, chat_id, after))
        if run_id is None:
            return Response(status_code=204)
        return stream_chat(user_id, ChatStream(run_id=run_id, after=after), stop_at_input=False)

    @app.post("/api/approvals/{approval_id}", tags=["approvals"])
    def decide_approval(approval_id: Id, body: ApprovalDecisionBody, user_id: User) -> ApprovalView:
        """The approval webhook: decided once; the same decision again returns the same body."""
        approval = decide(services, user_id, approval_id, approved=body.approved, reason=body.reason)
        return approval_view(approval)

    @app.post("/api/runs/{run_id}/abort", tags=["runs"])
    def abort(run_id: Id, user_id: User) -> AbortResult:
        """Stop a run on purpose (a dropped connection never stops one)."""
        store.get_run(user_id, run_id)
        result = abort_run(services, user_id, run_id)
        return AbortResult(run_id=run_id, status=result["status"])

    @app.get("/api/conversations", tags=["conversations"])
    def conversations(
        user_id: User, limit: Annotated[int, Query(ge=1, le=100)] = 20, cursor: str | None = None
    ) -> ConversationList:
        page = store.list_conversations(user_id, limit=limit, cursor=cursor)
        return ConversationList(conversations=[conversation_summary(c) for c in page.items], next_cursor=page.cursor)

    @app.get("/api/conversations/{conversation_id}", tags=["conversations"])
    def conversation(conversation_id: Id, user_id: User) -> ConversationDetail:
        record = store.get_conversation(user_id, conversation_id)
        messages = store.list_messages(user_id, conversation_id, limit=10_000).items
        return conversation_detail(record, messages)

    @app.delete("/api/conversations/{conversation_id}", tags=["conversations"], status_code=204)
    def delete_conversation(conversation_id: Id, user_id: User) -> Response:
        store.delete_conversation(user_id, conversation_id)
        if services.blobs is not None:
            services.blobs.delete_prefix(workspace_prefix(user_id, conversation_id))
        return Response(status_code=204)

    @app.get("/api/artifacts/{artifact_id}", tags=["artifacts"], response_class=RedirectResponse, status_code=307)
    def artifact(artifact_id: Id, user_id: User) -> RedirectResponse:
        """A short-lived link to the artifact (presigned S3 GET)."""
        record = store.get_artifact(user_id, artifact_id)
        if services.blobs is None:
            raise ApiError(503, "no artifact storage is configured")
        try:
            link = artifact_link(services.blobs, record, expires_in=options.artifact_link_seconds)
        except ValueError:
            raise NotFound(artifact_id) from None
        return RedirectResponse(link, status_code=307, headers={"cache-control": "no-store"})

    @app.post("/api/completion", tags=["text"], response_class=StreamingResponse)
    async def completion(
        body: CompletionRequest, user_id: User, protocol: Literal["text", "data"] = "text"
    ) -> StreamingResponse:
        """`useCompletion`: the completion of `prompt` as plain text, or (`?protocol=data`) a UI Message Stream."""
        if protocol == "data":
            return sse(completion_sse(services, body))
        return StreamingResponse(completion_text(services, body), media_type="text/plain; charset=utf-8")

    @app.post("/api/object", tags=["text"], response_class=StreamingResponse)
    async def object_stream(body: ObjectRequest, user_id: User) -> StreamingResponse:
        """`experimental_useObject`: the model's JSON for `input`, streamed as text."""
        return StreamingResponse(object_text(services, body), media_type="text/plain; charset=utf-8")

    _document_chat_body(app)
    return app


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


async def _guarded(frames: AsyncIterator[str]) -> AsyncIterator[str]:
    """End the stream (without `[DONE]`, so the client resumes) when reading the log fails."""
    try:
        async for frame in frames:
            yield frame
    except Exception:
        _LOG.exception("stream ended by an error; the client can resume")


def _document_chat_body(app: FastAPI) -> None:
    from .schemas import ChatRequestBody

    original = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = original()
            schema.setdefault("components", {}).setdefault("schemas", {})["ChatRequestBody"] = (
                ChatRequestBody.model_json_schema(ref_template="#/components/schemas/{model}")
            )
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
