"""The HTTP API (FastAPI): chat stream, resume, approvals, abort, conversations, artifacts."""

from .app import create_app
from .deps import ApiOptions
from .identity import ApiGatewayIdentity, DevTokens, Identity

__all__ = ["ApiGatewayIdentity", "ApiOptions", "DevTokens", "Identity", "create_app"]
