"""The API on Lambda: the FastAPI app over services from the environment, users from the authorizer.

Two functions run it (template.yaml): `ApiFunction` through Mangum, the whole API (API Gateway
sends it every path but the streaming ones), and `StreamFunction` under uvicorn behind the Lambda
Web Adapter, the SSE routes and the health check only (`stepline.api.stream_app`: Mangum collects
a response body whole, so it cannot stream; and the stream function loads no other route module).
"""

from __future__ import annotations

import os
from typing import Any

from fastapi import FastAPI

from ..api.cors import parse_origins
from ..api.deps import ApiOptions
from ..api.identity import ApiGatewayIdentity
from .wiring import ConfigurationError, Settings, build_services

__all__ = ["api_app", "api_options", "buffered_handler", "stream_app"]


def api_options(settings: Settings) -> ApiOptions:
    """The API's options from the function's settings (`STEPLINE_CORS_ORIGINS`)."""
    try:
        origins = parse_origins(settings.cors_origins)
    except ValueError as error:
        raise ConfigurationError(f"Stepline environment is not usable: STEPLINE_CORS_ORIGINS: {error}") from None
    return ApiOptions(cors_origins=origins)


def api_app(options: ApiOptions | None = None) -> FastAPI:
    """The whole API over this function's services (built once per cold start, from one read of the environment)."""
    from ..api.app import create_app
    from .unattended_wiring import with_unattended

    settings = Settings.from_env(os.environ)
    services = build_services(settings)
    return create_app(services, ApiGatewayIdentity(), with_unattended(services, options or api_options(settings)))


def stream_app(options: ApiOptions | None = None) -> FastAPI:
    """The stream function's app: its routes over this function's services, built as `api_app` builds them.

    Without the callback and hook options (`with_unattended`): only `POST /api/runs` and the hooks
    use them, and the stream function serves neither.
    """
    from ..api.stream_app import create_stream_app

    settings = Settings.from_env(os.environ)
    services = build_services(settings)
    return create_stream_app(services, ApiGatewayIdentity(), options or api_options(settings))


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
