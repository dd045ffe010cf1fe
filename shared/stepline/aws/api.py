"""The API on Lambda: the one FastAPI app, over services from the environment, users from the authorizer.

Two functions run it (template.yaml): `ApiFunction` through Mangum for the buffered routes, and
`StreamFunction` under uvicorn behind the Lambda Web Adapter for the SSE routes (Mangum collects a
response body whole, so it cannot stream).
"""

from __future__ import annotations

import os
from typing import Any

from fastapi import FastAPI

from ..api.app import create_app
from ..api.cors import parse_origins
from ..api.deps import ApiOptions
from ..api.identity import ApiGatewayIdentity
from .wiring import ConfigurationError, Settings, build_services

__all__ = ["api_app", "api_options", "buffered_handler"]


def api_options(settings: Settings) -> ApiOptions:
    """The API's options from the function's settings (`STEPLINE_CORS_ORIGINS`)."""
    try:
        origins = parse_origins(settings.cors_origins)
    except ValueError as error:
        raise ConfigurationError(f"Stepline environment is not usable: STEPLINE_CORS_ORIGINS: {error}") from None
    return ApiOptions(cors_origins=origins)


def api_app(options: ApiOptions | None = None) -> FastAPI:
    """The app over this function's services (built once per cold start, from one read of the environment)."""
    from .unattended_wiring import with_unattended

    settings = Settings.from_env(os.environ)
    services = build_services(settings)
    return create_app(services, ApiGatewayIdentity(), with_unattended(services, options or api_options(settings)))


def buffered_handler(app: FastAPI) -> Any:
    """The Lambda handler of the buffered routes (API Gateway REST proxy events).

    With tracing on, the spans of the request are exported once its response is built, before
    the function returns (Lambda freezes the environment right after).
    """
    from mangum import Mangum

    mangum = Mangum(app, lifespan="off")
    telemetry = app.state.services.telemetry
    if telemetry is None:
        return mangum

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            return mangum(event, context)
        finally:
            telemetry.flush()

    return handler
