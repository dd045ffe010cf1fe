"""Where a request body enters the API: its size limit and its parse, the same for every route.

- `BodyLimit` (ASGI middleware) refuses a body over the limit with the API's JSON error, 413:
  at once when `Content-Length` says so, else while the body is read. (Starlette's own limiter,
  FastAPI's `max_body_size`, answers a declared length over the limit in plain text, replacing
  whatever response the app made.)
- `CheckedRoute` makes FastAPI parse the JSON bodies of its routes with `parse_json_body`
  (depth, Unicode), and `read_json` does the same for a route that reads its body itself
  (`POST /api/chat`). A refusal is a 400 naming where the problem is.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute
from pydantic import JsonValue
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import InvalidUIMessageError
from ..protocol.json_limits import parse_json_body
from .errors import error_response

__all__ = ["BodyLimit", "BodyRefused", "CheckedRoute", "read_json"]


class BodyRefused(HTTPException):
    """A body the API does not read further (an `HTTPException`, so FastAPI's body parsing lets it through)."""


def too_large(limit: int) -> str:
    return f"body: larger than the limit of {limit} bytes"


class BodyLimit:
    """Refuse request bodies over `max_bytes` with a JSON 413 (see the module docstring)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await error_response(413, too_large(self.max_bytes))(scope, receive, send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyRefused(413, too_large(self.max_bytes))
            return message

        await self.app(scope, counted, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def read_json(request: Request) -> JsonValue:
    """The request's body as JSON within the limits (`parse_json_body`), or a 400 that names the problem."""
    try:
        return parse_json_body(await request.body())
    except InvalidUIMessageError as error:
        raise BodyRefused(400, str(error)) from None


class _CheckedRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = await read_json(self)
        return self._json


class CheckedRoute(APIRoute):
    """An `APIRoute` whose JSON body is parsed by `read_json` (FastAPI's own parse is plain `json.loads`)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def checked(request: Request) -> Response:
            return await handler(_CheckedRequest(request.scope, request.receive))

        return checked
