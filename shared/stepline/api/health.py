"""`GET /api/health`: the one route without a user, in both API functions (the stream function's readiness check)."""

from __future__ import annotations

from fastapi import APIRouter

from .bodies import CheckedRoute
from .deps import ServicesDep
from .schemas import Health

__all__ = ["router"]

router = APIRouter(route_class=CheckedRoute)


@router.get("/api/health", tags=["meta"])
def health(services: ServicesDep) -> Health:
    return Health(status="ok", model=services.model_spec(services.agent_set.default))
