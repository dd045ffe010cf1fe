"""The stream function's app: the streaming routes and the health check, nothing else.

template.yaml routes only `POST /api/chat`, `GET /api/chat/{id}/stream`, `POST /api/completion` and
`POST /api/object` to the stream function (every other path goes to the buffered function, which
serves the whole API), and the Lambda Web Adapter polls `GET /api/health` until the app is ready.
So this app imports no other route module: the conversations, runs, forks, hooks, inspection,
usage and approval-link routes load only in the buffered function and `stepline dev`.
"""

from __future__ import annotations

from fastapi import FastAPI

from ..runtime.services import Services
from . import health, streams
from .deps import ApiOptions
from .identity import Identity
from .shell import app_with_routes

__all__ = ["create_stream_app"]


def create_stream_app(services: Services, identity: Identity, options: ApiOptions = ApiOptions()) -> FastAPI:  # noqa: B008
    """The stream function's Stepline app over `services`, with users from `identity`."""
    return app_with_routes(services, identity, options, [streams.router, health.router])
