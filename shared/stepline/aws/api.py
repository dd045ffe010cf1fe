"""The API on Lambda: the one FastAPI app, over services from the environment, users from the authorizer.

Two functions run it (template.yaml): `ApiFunction` through Mangum for the buffered routes, and
`StreamFunction` under uvicorn behind the Lambda Web Adapter for the SSE routes (Mangum collects a
response body whole, so it cannot stream).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from ..api.app import ApiOptions, create_app
from ..api.identity import ApiGatewayIdentity
from .wiring import services_from_env

__all__ = ["api_app", "buffered_handler"]


def api_app(options: ApiOptions = ApiOptions()) -> FastAPI:  # noqa: B008 - frozen
    """The app over this function's services (built once per cold start)."""
    return create_app(services_from_env(), ApiGatewayIdentity(), options)


def buffered_handler(app: FastAPI) -> Any:
    """The Lambda handler of the buffered routes (API Gateway REST proxy events)."""
    from mangum import Mangum

    return Mangum(app, lifespan="off")
