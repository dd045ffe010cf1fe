"""The HTTP API: one FastAPI app for the chat stream, resume, approvals, abort and the REST reads.

The same app object runs everywhere: under uvicorn locally (`stepline dev`) and on AWS in the
buffered function (Mangum). The stream function behind the Lambda Web Adapter serves only the
streaming routes and the health check, with the same app around them (`stepline.api.stream_app`).
Every route but `/api/health` resolves the caller's user first (`stepline.api.identity`) and
passes it to every store call, so another user's ids are simply not found (404), exactly like ids
that do not exist.
"""

from __future__ import annotations

from fastapi import FastAPI

from ..runtime.services import Services
from . import agents, approval_links, forks, health, hooks, inspect, resources, runs, streams, usage
from .deps import ApiOptions
from .identity import Identity
from .shell import app_with_routes

__all__ = ["create_app"]


def create_app(services: Services, identity: Identity, options: ApiOptions = ApiOptions()) -> FastAPI:  # noqa: B008
    """The Stepline API over `services`, with users from `identity`."""
    routers = (streams, health, resources, agents, approval_links, inspect, runs, forks, hooks, usage)
    return app_with_routes(services, identity, options, [module.router for module in routers])
