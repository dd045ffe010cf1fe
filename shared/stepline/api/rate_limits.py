"""Request rate limits per user and per tenant on the routes that start work (`POST /api/chat`, `POST /api/runs`).

`user_requests_per_minute` and `tenant_requests_per_minute` (`STEPLINE_LIMITS`) count requests in
fixed UTC minutes on the store's usage counters (`stepline.store.usage_counters`: one atomic
check-and-add per counter, on DynamoDB a conditional `ADD`), so every API function instance
shares the count. A request past either limit is refused before anything is read or started:
429 with `Retry-After` (the seconds to the next minute) and the JSON error body naming the limit.
A refused request counts on neither counter.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from fastapi import Request
from starlette.exceptions import HTTPException

from ..runtime.budget_gate import tenant_of
from ..runtime.services import Services
from ..store.usage_counters import Ceiling, CounterKey, Scope
from .deps import ServicesDep, Threads, User
from .identity import request_claims

__all__ = ["RateRefusal", "check_rate", "rate_limited"]

_MINUTE_MS = 60_000


def _minute(now_ms: int) -> str:
    return "minute:" + datetime.fromtimestamp(now_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M")


@dataclass(frozen=True, slots=True)
class RateRefusal:
    """A request a rate limit refused: which limit, its value, and when to retry."""

    limit: str
    value: int
    retry_after: int
    """Seconds until the next minute, when the count starts again."""

    def message(self) -> str:
        return f"too many requests: {self.limit} is {self.value}; retry in {self.retry_after} s"


def check_rate(services: Services, user_id: str, tenant: str) -> RateRefusal | None:
    """Count one request; the refusal when a limit is reached (None: the request may go ahead)."""
    limits = services.limits
    if limits is None or not limits.rates:
        return None
    now = services.clock()
    period = _minute(now)
    candidates: tuple[tuple[Scope, str, str, int | None], ...] = (
        ("user", user_id, "user_requests_per_minute", limits.user_requests_per_minute),
        ("tenant", tenant, "tenant_requests_per_minute", limits.tenant_requests_per_minute),
    )
    ceilings = [
        Ceiling(CounterKey(scope, owner, period), name, tokens=limit)
        for scope, owner, name, limit in candidates
        if limit is not None
    ]
    refused = services.store.counters.reserve(ceilings, 1, 0)
    if refused is None:
        return None
    retry_after = max(1, -(-(_MINUTE_MS - now % _MINUTE_MS) // 1000))
    return RateRefusal(refused.name, refused.tokens or 0, retry_after)


async def rate_limited(request: Request, user_id: User, services: ServicesDep, threads: Threads) -> None:
    """The routes' dependency: 429 with `Retry-After` past a request rate limit.

    Without a rate limit set, nothing to count and no hop to the API's threads (which every
    request shares); with one, the count runs there (a store write).
    """
    if services.limits is None or not services.limits.rates:
        return
    await threads(lambda: _check(request, user_id, services))


def _check(request: Request, user_id: str, services: Services) -> None:
    claims = request_claims(request.app.state.identity, request, user_id)
    refusal = check_rate(services, user_id, tenant_of(claims, services.tenant_claim))
    if refusal is not None:
        raise HTTPException(429, refusal.message(), {"Retry-After": str(refusal.retry_after)})
