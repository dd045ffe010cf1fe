"""The API on Lambda: the one FastAPI app, over services from the environment, users from the authorizer.

Two functions run it (template.yaml): `ApiFunction` through Mangum for the buffered routes, and
`StreamFunction` under uvicorn behind the Lambda Web Adapter for the SSE routes (Mangum collects a
response body whole, so it cannot stream).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI

from ..api.app import ApiOptions, create_app
from ..api.cors import parse_origins
from ..api.identity import ApiGatewayIdentity
from .wiring import ConfigurationError, Settings, services_from_env

__all__ = ["api_app", "api_options", "buffered_handler"]


def api_options(env: Mapping[str, str]) -> ApiOptions:
    """The API's options from the function's environment (`STEPLINE_CORS_ORIGINS`)."""
    try:
        origins = parse_origins(Settings.from_env(env).cors_origins)
    except ValueError as error:
        raise ConfigurationError(f"Stepline environment is not usable: STEPLINE_CORS_ORIGINS: {error}") from None
    return ApiOptions(cors_origins=origins)


def api_app(options: ApiOptions | None = None) -> FastAPI:
    """The app over this function's services (built once per cold start)."""
    return create_app(services_from_env(), ApiGatewayIdentity(), options or api_options(os.environ))


def buffered_handler(app: FastAPI) -> Any:
    """The Lambda handler of the buffered routes (API Gateway REST proxy events)."""
    from mangum import Mangum

    return Mangum(app, lifespan="off")
