"""The inbox is the user's own: another user's chat id is a chat of their own (nothing of the
first user's is seen or changed), and cancelling another user's queued message is a 404 like a
message that was never queued."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.control.test_new_message import in_background, post, stored, until
from tests.support.server import Running, config, running

TOKENS = {"token-alice": "alice", "token-bob": "bob"}
pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    with running(config(STEPLINE_AGENT="tests.support.control_agents:AGENT", tokens=TOKENS)) as live:
        yield live


def test_another_users_queue_is_not_found(server: Running) -> None:
    with server.client("alice") as alice, server.client("bob") as bob:
        working, _ = in_background(server, lambda c: post(c, "mine", "answer slowly", "u1"), "alice")
        until(
            lambda: alice.get("/api/conversations/mine").status_code == 200 and stored(alice, "mine")["activeRunId"],
            "run",
        )
        queued, _ = in_background(server, lambda c: post(c, "mine", "later", "u2", policy="queue"), "alice")
        until(lambda: stored(alice, "mine")["waiting"], "alice's message waits")
        cancelled = bob.delete("/api/conversations/mine/queue/u2")
        seen = bob.get("/api/conversations/mine")
        theirs = post(bob, "mine", "hello", "b1", policy="steer")  # a chat of bob's own: no run to steer
        still = stored(alice, "mine")["waiting"]
        working.join(30)
        queued.join(30)
        alice_chat = until(
            lambda: (c := stored(alice, "mine"))["activeRunId"] is None and not c["waiting"] and c, "idle"
        )
    assert cancelled.status_code == 404 and seen.status_code == 404
    assert [w["id"] for w in still] == ["u2"], "bob changed nothing"
    assert theirs.status_code == 200 and stored_roles(server, "bob") == ["user", "assistant"]
    assert [m["id"] for m in alice_chat["messages"] if m["role"] == "user"] == ["u1", "u2"]


def stored_roles(server: Running, user: str) -> list[str]:
    with server.client(user) as http:
        return [m["role"] for m in stored(http, "mine")["messages"]]
