"""The HTTP API: one FastAPI app for the chat stream, resume, approvals, abort and the REST reads.

The same app object runs everywhere: under uvicorn locally (`stepline dev`) and on AWS behind
the Lambda Web Adapter (the streaming routes) and Mangum (the buffered ones). Every route but
`/api/health` resolves the caller's user first (`stepline.api.identity`) and passes it to every
store call, so another user's ids are simply not found (404), exactly like ids that do not exist.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from ..runtime.services import Services
from . import approval_links, resources, streams
from .cors import install_cors
from .deps import ApiOptions
from .errors import install_error_handlers
from .identity import Identity
from .schemas import ChatRequestBody

__all__ = ["ApiOptions", "create_app"]


def create_app(services: Services, identity: Identity, options: ApiOptions = ApiOptions()) -> FastAPI:  # noqa: B008
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
    app.state.services = services
    app.state.identity = identity
    app.state.options = options
    install_error_handlers(app)
    install_cors(app, options.cors_origins)
    app.include_router(streams.router)
    app.include_router(resources.router)
    app.include_router(approval_links.router)
    _document_chat_body(app)
    return app


def _document_chat_body(app: FastAPI) -> None:
    """`POST /api/chat` reads its body itself (the SDK's validation); the schema is documented here."""
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
