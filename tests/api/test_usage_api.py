"""`GET /api/usage` on a running `stepline dev` server, over moto's DynamoDB and over a data folder.

GIVEN two users of one deployment whose price file prices its scripted model, WHEN one of them
chats, THEN their usage today and this month counts the call's tokens and cost, per agent, with
the deployment's user limits beside it, AND the other user's usage shows none of it (isolation:
the counters are keyed by the caller's own user id).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.api.test_chat_api import send, wait_status
from tests.support.server import Running, config, running, write_book
from tests.unit.loop.support import finish, text


@pytest.fixture(params=["moto", "data-folder"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Running]:
    model = write_book(
        tmp_path / "usage-book.json",
        [],
        fallback=[[*text("t", "Hello."), finish(input_tokens=1200, output_tokens=300)]],
    )
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"scripted:usage-book": {"input": 2.0, "output": 10.0}}), encoding="utf-8")
    cfg = config(
        model,
        tokens={"token-a": "user-a", "token-b": "user-b"},
        STEPLINE_PRICES=str(prices),
        STEPLINE_LIMITS=json.dumps({"user_day_usd": 5, "user_month_tokens": 1_000_000}),
    )
    data_dir = tmp_path / "data" if request.param == "data-folder" else None
    with running(cfg, data_dir=data_dir) as live:
        yield live


def test_the_callers_own_usage_and_nobody_elses(server: Running) -> None:
    with server.client("user-a") as a, server.client("user-b") as b:
        assert send(a, "usage-chat", "hello").status_code == 200
        wait_status(a, "usage-chat", "idle")
        mine, theirs = a.get("/api/usage"), b.get("/api/usage")
    assert mine.status_code == 200 and theirs.status_code == 200, (mine.text, theirs.text)
    cost = (1200 * 2.0 + 300 * 10.0) / 1e6
    for period in ("day", "month"):
        usage: dict[str, Any] = mine.json()[period]
        assert (usage["tokens"], usage["calls"], usage["unpricedCalls"]) == (1500, 1, 0)
        assert math.isclose(usage["costUsd"], cost)
        (agent,) = usage["agents"].values()
        assert agent["tokens"] == 1500 and math.isclose(agent["costUsd"], cost)
        other: dict[str, Any] = theirs.json()[period]
        assert (other["tokens"], other["calls"], other["agents"]) == (0, 0, {})
    assert mine.json()["day"]["period"].startswith("day:") and mine.json()["month"]["period"].startswith("month:")
    assert mine.json()["day"]["limitUsd"] == 5 and "limitTokens" not in mine.json()["day"]
    assert mine.json()["month"]["limitTokens"] == 1_000_000


def test_usage_needs_a_user(server: Running) -> None:
    with server.client() as anonymous:
        assert anonymous.get("/api/usage").status_code == 401
