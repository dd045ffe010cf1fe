"""Request rate limits per user and per tenant on `POST /api/chat` and `POST /api/runs`.

GIVEN a deployment allowing each user two requests a minute, WHEN a user sends a third, THEN it is
a 429 with `Retry-After` and a JSON body naming the limit, nothing is started, and another user is
not affected; the count is shared by the two entry points. A tenant's limit counts its users
together (the counter is the store's, atomic, so every API instance shares it).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pytest

from stepline.api.rate_limits import check_rate
from stepline.loop.limits import Limits
from stepline.runtime.services import Services
from stepline.store.memory import MemoryStore
from tests.api.test_chat_api import send, wait_status
from tests.support.server import Running, config, running, write_book
from tests.unit.loop.support import finish, text

MINUTE = 1_764_633_600_000  # 2025-12-02T00:00:00Z
_MINUTE_MS = 60_000


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Running]:
    model = write_book(tmp_path / "rate-book.json", [], fallback=[[*text("t", "Hello."), finish()]])
    cfg = config(
        model,
        tokens={"token-a": "user-a", "token-b": "user-b"},
        STEPLINE_LIMITS=json.dumps({"userRequestsPerMinute": 2}),
    )
    with running(cfg) as live:
        yield live


def _early_in_a_minute(server: Running) -> None:
    """Wait, if need be, until 30 s or more of the server's minute are left.

    The limit counts per minute of the clock (`check_rate`): requests on both sides of a minute's
    end are counted in two minutes, so the test's requests must fall in one.
    """
    now = server.server.backend.services.clock()
    left = _MINUTE_MS - now % _MINUTE_MS
    if left < 30_000:
        time.sleep(left / 1000 + 0.1)


def test_the_request_past_a_users_rate_is_429_with_retry_after(server: Running) -> None:
    _early_in_a_minute(server)
    with server.client("user-a") as a, server.client("user-b") as b:
        assert send(a, "rate-1", "hello").status_code == 200
        wait_status(a, "rate-1", "idle")
        started = a.post("/api/runs", json={"input": "Write it."})
        assert started.status_code == 202, started.text
        refused = send(a, "rate-2", "hello")
        refused_run = a.post("/api/runs", json={"input": "Write it."})
        other = send(b, "rate-3", "hello")
        missing = a.get("/api/conversations/rate-2")
    for response in (refused, refused_run):
        assert response.status_code == 429, response.text
        assert 1 <= int(response.headers["retry-after"]) <= 60
        error = response.json()["error"]
        assert error["status"] == 429 and "user_requests_per_minute is 2" in error["message"]
    assert missing.status_code == 404  # the refused chat started nothing
    assert other.status_code == 200  # another user's count is their own


@dataclass
class _Services:
    """What `check_rate` reads of the services."""

    limits: Limits
    store: MemoryStore
    now: int

    def clock(self) -> int:
        return self.now


def test_a_tenants_rate_counts_its_users_together_per_minute() -> None:
    services = _Services(Limits(tenant_requests_per_minute=3, user_requests_per_minute=2), MemoryStore(), MINUTE)
    checked = cast(Services, services)
    assert check_rate(checked, "ann", "acme") is None
    assert check_rate(checked, "ann", "acme") is None
    user_refusal = check_rate(checked, "ann", "acme")
    assert user_refusal is not None and user_refusal.limit == "user_requests_per_minute"
    assert check_rate(checked, "bob", "acme") is None  # the refused request was not counted for acme
    services.now = MINUTE + 15_000
    refused = check_rate(checked, "cy", "acme")
    assert refused is not None and refused.limit == "tenant_requests_per_minute"
    assert refused.retry_after == 45 and "tenant_requests_per_minute is 3" in refused.message()
    assert check_rate(checked, "dee", "globex") is None  # another tenant
    services.now = MINUTE + 60_000  # the next minute
    assert check_rate(checked, "cy", "acme") is None
