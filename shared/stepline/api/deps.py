"""What every route depends on: the caller's user, the services, the options (set by `create_app`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from anyio import to_thread
from fastapi import Depends, Request

from ..runtime.budget_gate import tenant_of
from ..runtime.callback_urls import UrlPolicy
from ..runtime.hook_signatures import HookSecrets
from ..runtime.services import Services
from .identity import Identity, request_claims
from .threads import FairThreads, RunSync

__all__ = ["ApiOptions", "Options", "ServicesDep", "Threads", "User"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiOptions:
    """Limits and timings of the API."""

    max_body_bytes: int = 6 * 1024 * 1024
    """Lambda's synchronous payload limit; a larger body is refused with 413 before it is read whole."""
    keep_alive_seconds: float = 10.0
    poll_seconds: float = 0.1
    push_poll_seconds: float = 1.0
    """With notifications from the run's writer (`Services.stream_push`), the fallback poll of a stream."""
    wait_poll_seconds: float = 1.0
    """A stream following a run that waits for a person polls it at most this often (it backs off)."""
    resume_wait_seconds: float = 300.0
    """A resume stream follows a run through a wait for a person this long, then ends with `[DONE]`
    (a held stream is billed function time; the client answers the stock way, or resumes)."""
    stream_max_seconds: float = 840.0
    artifact_link_seconds: int = 300
    cors_origins: tuple[str, ...] = ()
    """Browser origins other than the API's own that may call it (`stepline.api.cors`)."""
    callbacks: UrlPolicy | None = None
    """The callback URLs `POST /api/runs` accepts; None: callbacks are off (no signing secret)."""
    hook_secrets: HookSecrets | None = None
    """Where inbound webhooks' secrets come from (`POST /api/hooks/...`); None: hooks answer 503."""


async def _user(request: Request) -> str:
    """Inline when the identity does no I/O; else on one of the API's threads (it may fetch keys)."""
    identity: Identity = request.app.state.identity
    if identity.blocking:
        return await to_thread.run_sync(lambda: identity.user_of(request))
    return identity.user_of(request)


async def _services(request: Request) -> Services:
    """Async: no I/O, so no hop to the API's threads (a sync dependency takes one of theirs per request)."""
    services: Services = request.app.state.services
    return services


async def _options(request: Request) -> ApiOptions:
    """Async, as `_services`."""
    options: ApiOptions = request.app.state.options
    return options


async def _threads(request: Request, user_id: Annotated[str, Depends(_user)]) -> RunSync:
    """The API's threads as the caller's tenant takes them (`stepline.api.threads`)."""
    threads: FairThreads = request.app.state.threads
    services: Services = request.app.state.services
    claims = request_claims(request.app.state.identity, request, user_id)
    return threads.of(tenant_of(claims, services.tenant_claim))


User = Annotated[str, Depends(_user)]
"""The caller's user; every route but the health check depends on it."""
ServicesDep = Annotated[Services, Depends(_services)]
Options = Annotated[ApiOptions, Depends(_options)]
Threads = Annotated[RunSync, Depends(_threads)]
"""Where a route runs its blocking work: the API's threads, taken in turn by tenants."""
