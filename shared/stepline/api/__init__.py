"""The HTTP API (FastAPI): chat stream, resume, approvals, abort, conversations, artifacts."""

from .app import ApiOptions, create_app
from .identity import ApiGatewayIdentity, DevTokens, Identity

__all__ = ["ApiGatewayIdentity", "ApiOptions", "DevTokens", "Identity", "create_app"]
