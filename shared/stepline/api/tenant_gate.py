"""At most a few requests of one tenant at once in the app, so a tenant's burst never crowds out another's.

A server that takes 200 requests of one tenant at once parses, routes and validates all of them
in one event loop and runs their store work on its threads; another tenant's request, arriving
in the middle, then waits behind that work at every step (the loop runs its callbacks in order,
and the threads share one interpreter lock). Here each tenant's requests pass this gate
`per_tenant` at a time, in their order; a request holds its place until its response starts (a
stream's headers: what follows is the stream's, paced by the API's threads, `stepline.api.threads`)
or it ends. The others wait before their body is read, for nothing but a place. Another tenant's
request passes at once, and meets at most `per_tenant` requests of the first.

The tenant is read from the request's identity when that does no I/O (the dev tokens, API
Gateway's claims: `Identity.blocking` false), from the deployment's tenant claim; without one,
each user has places of its own. A request whose identity would have to be fetched, or that has
none (the route answers 401), passes without waiting. On Lambda an environment serves
one request at a time, so nothing waits here; on `stepline dev` (and any server running the app
with many requests at once) this is what keeps one tenant's flood from delaying another's first
token (`bench/fairness.py`).

Hand-written: an ASGI middleware of a few lines over `asyncio.Semaphore` (first come, first
served within a tenant); the libraries that limit concurrency (anyio's `CapacityLimiter`) limit
it for everyone at once, which is not this.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..runtime.budget_gate import tenant_of
from ..runtime.services import Services
from .identity import Identity, request_claims

__all__ = ["DEFAULT_PER_TENANT", "TenantGate", "tenant_of_request"]

DEFAULT_PER_TENANT = 4
"""Requests of one tenant in the app at once (before their responses start). A request spends a
few milliseconds there (its turn started, its stream's headers sent), so four keep a tenant's own
burst moving at the store's pace (its writes take turns anyway) while another tenant's request
shares the loop and the threads with four, not with the burst."""


def tenant_of_request(scope: Scope) -> str | None:
    """Whose places the request takes: its tenant, or its user when the deployment names no tenant claim.

    (Without a tenant claim every user is in the one default tenant, which would make them share
    the places.) None: not known here without I/O, or no user (the route answers 401).
    """
    app = scope.get("app")
    state = getattr(app, "state", None)
    identity: Identity | None = getattr(state, "identity", None)
    services: Services | None = getattr(state, "services", None)
    if identity is None or services is None or identity.blocking:
        return None
    request = Request(scope)
    try:
        user_id = identity.user_of(request)
    except HTTPException:
        return None
    if not services.tenant_claim:
        return f"user:{user_id}"
    return "tenant:" + tenant_of(request_claims(identity, request, user_id), services.tenant_claim)


@dataclass(slots=True)
class _Places:
    """One tenant's places: taken in order; dropped when none of its requests holds or waits for one."""

    free: asyncio.Semaphore
    holding: int = 0
    waiting: int = 0


class TenantGate:
    """ASGI middleware: `per_tenant` requests of a tenant at once until their responses start."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        per_tenant: int = DEFAULT_PER_TENANT,
        tenant: Callable[[Scope], str | None] = tenant_of_request,
    ) -> None:
        if per_tenant < 1:
            raise ValueError(f"per_tenant: at least 1, not {per_tenant}")
        self._app = app
        self._per_tenant = per_tenant
        self._tenant = tenant
        self._tenants: dict[str, _Places] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        tenant = self._tenant(scope) if scope["type"] == "http" else None
        if tenant is None:
            await self._app(scope, receive, send)
            return
        places = self._tenants.get(tenant)
        if places is None:
            places = self._tenants[tenant] = _Places(asyncio.Semaphore(self._per_tenant))
        held = False

        def give_back() -> None:
            nonlocal held
            if held:
                held = False
                places.holding -= 1
                places.free.release()

        async def started(message: Message) -> None:
            if message["type"] == "http.response.start":
                give_back()  # the stream that follows is not the gate's
            await send(message)

        places.waiting += 1
        try:
            try:
                await places.free.acquire()
            finally:
                places.waiting -= 1
            places.holding += 1
            held = True
            await self._app(scope, receive, started)
        finally:
            give_back()
            if not places.holding and not places.waiting and self._tenants.get(tenant) is places:
                del self._tenants[tenant]  # (a stream that ends later finds its tenant's places gone or new)

    def waiting(self, tenant: str) -> int:
        """Requests of `tenant` waiting for a place (for tests and a look at a busy server)."""
        places = self._tenants.get(tenant)
        return places.waiting if places is not None else 0
