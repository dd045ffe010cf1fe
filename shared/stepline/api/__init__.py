"""The HTTP API (FastAPI): chat stream, resume, approvals, abort, conversations, artifacts.

The names below are imported on first use, so importing one of the API's modules (the stream
function's app, `stepline.api.stream_app`) loads none of the route modules it does not serve.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy_exports import lazy_exports

if TYPE_CHECKING:
    from .app import create_app
    from .deps import ApiOptions
    from .identity import ApiGatewayIdentity, DevTokens, Identity

__all__ = ["ApiGatewayIdentity", "ApiOptions", "DevTokens", "Identity", "create_app"]

_EXPORTS = {
    "ApiGatewayIdentity": "stepline.api.identity",
    "ApiOptions": "stepline.api.deps",
    "DevTokens": "stepline.api.identity",
    "Identity": "stepline.api.identity",
    "create_app": "stepline.api.app",
}

__getattr__ = lazy_exports(__name__, _EXPORTS)
