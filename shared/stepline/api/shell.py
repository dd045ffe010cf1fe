"""The app around the routes: the FastAPI object, its state, middleware, error answers and OpenAPI document.

Both apps build on it: the whole API (`stepline.api.app`, locally and in the buffered function)
and the stream function's (`stepline.api.stream_app`, only the routes that function serves).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter, FastAPI

from ..runtime.services import Services
from .bodies import BodyLimit
from .cors import install_cors
from .deps import ApiOptions
from .errors import install_error_handlers
from .identity import Identity
from .schemas import ChatRequestBody, ErrorBody
from .threads import FairThreads

__all__ = ["app_with_routes"]


def app_with_routes(
    services: Services, identity: Identity, options: ApiOptions, routers: Sequence[APIRouter]
) -> FastAPI:
    """A Stepline app over `services`, with users from `identity`, serving `routers` (in this order)."""
    app = FastAPI(
        title="Stepline",
        summary="Durable AI agent conversations speaking the AI SDK UI Message Stream protocol.",
        version="0.1.0",
        openapi_url="/api/openapi.json",
        docs_url="/api/docs",
        redoc_url=None,
    )
    app.state.services = services
    app.state.identity = identity
    app.state.options = options
    app.state.threads = FairThreads()
    install_error_handlers(app)
    app.add_middleware(BodyLimit, max_bytes=options.max_body_bytes)
    install_cors(app, options.cors_origins)  # outside the limit: a 413 has the CORS headers too
    for router in routers:
        app.include_router(router)
    _document(app)
    return app


def _document(app: FastAPI) -> None:
    """The OpenAPI document as the app answers: the chat body, and the errors' real status and shape.

    `POST /api/chat` reads its body itself (the SDK's validation), so its schema is added here.
    FastAPI documents a 422 with its own error shape for every route with parameters; the app
    answers a malformed request with a 400 `ErrorBody` (`stepline.api.errors`), and any other
    refusal (401, 404, 409, 410, 413) with the same shape.
    """
    original = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = original()
            schemas = schema.setdefault("components", {}).setdefault("schemas", {})
            schemas["ChatRequestBody"] = ChatRequestBody.model_json_schema(ref_template=_REF)
            schemas["ErrorBody"] = ErrorBody.model_json_schema(ref_template=_REF)
            for name in ("HTTPValidationError", "ValidationError"):
                schemas.pop(name, None)
            for path, operations in schema.get("paths", {}).items():
                for operation in operations.values():
                    _document_errors(operation["responses"], public=path == "/api/health")
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


_REF = "#/components/schemas/{model}"


def _document_errors(responses: dict[str, Any], *, public: bool) -> None:
    responses.pop("422", None)
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    if not public:
        responses["400"] = {"description": "A malformed request: the message names the field", "content": error}
        responses["4XX"] = {"description": "Refused (401, 404, 409, 410, 413): the message says why", "content": error}
