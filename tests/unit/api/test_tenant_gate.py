"""A tenant's requests pass the gate a few at a time until their responses start; another tenant's pass at once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TypeVar

import pytest
from starlette.types import Message, Receive, Scope, Send

from stepline.api.app import create_app
from stepline.api.identity import DevTokens
from stepline.api.tenant_gate import TenantGate, tenant_of_request
from stepline.runtime.services import Services
from stepline.store.memory import MemoryStore

T = TypeVar("T")


def _run(scenario: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(scenario(), timeout=30))


async def _until(condition: Callable[[], bool]) -> None:
    while not condition():  # noqa: ASYNC110  # what it reads changes in other tasks of this loop
        await asyncio.sleep(0.001)


class Held:
    """An ASGI app whose requests wait until let go; `stream` ones start their response first."""

    def __init__(self) -> None:
        self.inside: list[str] = []
        self.release: dict[str, asyncio.Event] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        name = scope["path"].strip("/")
        self.inside.append(name)
        let_go = self.release.setdefault(name, asyncio.Event())
        if name.startswith("stream"):
            await send({"type": "http.response.start", "status": 200, "headers": []})
        try:
            await let_go.wait()
        finally:
            self.inside.remove(name)
        if not name.startswith("stream"):
            await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    def let_go(self, name: str) -> None:
        self.release.setdefault(name, asyncio.Event()).set()


def _request(gate: TenantGate, tenant: str | None, path: str) -> asyncio.Task[list[Message]]:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    async def call() -> list[Message]:
        headers = [(b"x-tenant", tenant.encode())] if tenant is not None else []
        await gate({"type": "http", "path": f"/{path}", "headers": headers}, receive, send)
        return sent

    return asyncio.create_task(call())


def _tenant(scope: Scope) -> str | None:
    return next((value.decode() for key, value in scope["headers"] if key == b"x-tenant"), None)


def test_a_burst_passes_a_few_at_a_time_while_another_tenant_passes_at_once() -> None:
    async def scenario() -> None:
        app = Held()
        gate = TenantGate(app, per_tenant=2, tenant=_tenant)
        burst = [_request(gate, "a", f"a{n}") for n in range(6)]
        await _until(lambda: len(app.inside) == 2)
        assert app.inside == ["a0", "a1"] and gate.waiting("a") == 4
        other = _request(gate, "b", "b0")
        await _until(lambda: "b0" in app.inside)  # not behind a's four
        assert gate.waiting("a") == 4 and gate.waiting("b") == 0
        app.let_go("a0")
        await _until(lambda: "a2" in app.inside)  # a's next, in its order
        assert sorted(app.inside) == ["a1", "a2", "b0"]
        for name in [f"a{n}" for n in range(6)] + ["b0"]:
            app.let_go(name)
        await asyncio.gather(*burst, other)
        assert gate.waiting("a") == 0

    _run(scenario)


def test_a_response_that_has_started_gives_its_place_to_the_next_request() -> None:
    async def scenario() -> None:
        app = Held()
        gate = TenantGate(app, per_tenant=1, tenant=_tenant)
        stream = _request(gate, "a", "stream0")  # its headers sent, then it follows the run
        await _until(lambda: "stream0" in app.inside)
        after = _request(gate, "a", "read0")
        await _until(lambda: "read0" in app.inside)  # the stream no longer holds the place
        app.let_go("read0")
        app.let_go("stream0")
        sent = await asyncio.gather(stream, after)
        assert [m["type"] for m in sent[1]] == ["http.response.start", "http.response.body"]

    _run(scenario)


def test_a_waiting_request_that_is_cancelled_takes_no_place_and_leaves_none_taken() -> None:
    async def scenario() -> None:
        app = Held()
        gate = TenantGate(app, per_tenant=1, tenant=_tenant)
        first = _request(gate, "a", "a0")
        await _until(lambda: app.inside == ["a0"])
        cancelled = _request(gate, "a", "a1")
        await _until(lambda: gate.waiting("a") == 1)
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        assert gate.waiting("a") == 0
        app.let_go("a0")
        await first
        later = _request(gate, "a", "a2")  # the place a0 held is free, a1 never took one
        app.let_go("a2")
        await asyncio.wait_for(later, 5)
        assert "a1" not in app.release

    _run(scenario)


def test_a_request_whose_tenant_is_not_known_here_is_not_held() -> None:
    async def scenario() -> None:
        app = Held()
        gate = TenantGate(app, per_tenant=1, tenant=_tenant)
        held = _request(gate, "a", "a0")
        unknown = [_request(gate, None, f"u{n}") for n in range(3)]
        await _until(lambda: len(app.inside) == 4)
        for name in ("a0", "u0", "u1", "u2"):
            app.let_go(name)
        await asyncio.gather(held, *unknown)

    _run(scenario)


def test_per_tenant_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="per_tenant: at least 1"):
        TenantGate(Held(), per_tenant=0)


def _scope(services: Services, token: str | None) -> Scope:
    app = create_app(services, DevTokens({"token-a": "user-a", "token-b": "user-b"}))
    headers = [(b"authorization", f"Bearer {token}".encode())] if token is not None else []
    return {"type": "http", "method": "GET", "path": "/api/conversations", "headers": headers, "app": app}


def test_the_places_are_the_tenants_of_the_claim_or_each_users_without_one() -> None:
    plain = Services(store=MemoryStore())
    assert tenant_of_request(_scope(plain, "token-a")) == "user:user-a"  # no tenant claim: a user's own
    assert tenant_of_request(_scope(plain, "token-b")) == "user:user-b"
    assert tenant_of_request(_scope(plain, None)) is None  # no user: not held, the route answers 401
    by_sub = replace(plain, tenant_claim="sub")
    assert tenant_of_request(_scope(by_sub, "token-a")) == "tenant:user-a"
