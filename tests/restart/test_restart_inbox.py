"""Messages waiting behind a run survive a kill -9 of `stepline dev`: after the restart on the same
data folder, the interrupted run finishes and every queued message is answered once, in order; a
steering message is answered once too (inside the run it steered, or as the next turn)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import httpx

from tests.restart.chat import body, conversation
from tests.restart.process import Follower, poll, start_dev, write_book


def settled(client: httpx.Client, chat: str) -> dict[str, Any] | None:
    found = conversation(client, chat)
    return found if found["activeRunId"] is None and not found["waiting"] else None


def test_queued_and_steering_messages_survive_a_kill_9(tmp_path: Path) -> None:
    data, journal = tmp_path / "data", tmp_path / "tools.journal"
    model = write_book(tmp_path / "book.json")
    first = start_dev(data, tmp_path, journal=journal, model=model)
    try:
        client = first.client(timeout=httpx.Timeout(30, read=None))
        working = Follower().follow(client, "POST", "/api/chat", json=body("queued", "work slowly", "u1"))
        steered = Follower().follow(client, "POST", "/api/chat", json=body("steered", "work slowly", "s1"))
        working.wait_for('"text-delta"')
        steered.wait_for('"text-delta"')
        followers = [working, steered]
        for index, text in enumerate(("first after", "second after"), start=2):
            followers.append(Follower().follow(client, "POST", "/api/chat", json=body("queued", text, f"u{index}")))
            poll(lambda i=index: len(conversation(client, "queued")["waiting"]) == i - 1, f"u{index} waits")
        followers.append(
            Follower().follow(client, "POST", "/api/chat", json=body("steered", "and this", "s2", policy="steer"))
        )
        poll(lambda: conversation(client, "steered")["waiting"], "s2 waits")
        first.stop(signal.SIGKILL)
    finally:
        if first.process.poll() is None:
            first.process.kill()
    for follower in followers:
        assert follower.ended.wait(10)
    client.close()

    second = start_dev(data, tmp_path, journal=journal, model=model)
    try:
        with second.client() as client:
            queued = poll(lambda: settled(client, "queued"), "the queue is answered", timeout=60)
            steering = poll(lambda: settled(client, "steered"), "the steering message is answered", timeout=60)
    finally:
        second.stop(signal.SIGTERM)
    messages = queued["messages"]
    assert [(m["role"], m["status"]) for m in messages] == [("user", "completed"), ("assistant", "completed")] * 3
    assert [m["id"] for m in messages if m["role"] == "user"] == ["u1", "u2", "u3"], "each once, in order"
    steered_ids = [m["id"] for m in steering["messages"] if m["role"] == "user"] + [
        p["id"] for m in steering["messages"] for p in m["parts"] if p["type"] == "steering-message"
    ]
    assert sorted(steered_ids) == ["s1", "s2"], "the steering message reached the chat exactly once"
    assert all(m["status"] == "completed" for m in steering["messages"])
