"""Nothing lost across a restart of `stepline dev` (issue 15): kill -9 or SIGTERM a real server process
with a run waiting for an approval, one waiting for an answer and one working, start it again on
the same data folder, and every run finishes — each tool ran exactly once, each final message is
the one an uninterrupted run gives, and the client that followed the working run resumes its
stream with `Last-Event-ID` and gets every part once."""

from __future__ import annotations

import copy
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.restart.chat import body, user
from tests.restart.process import (
    DevProcess,
    Follower,
    assert_resumed_whole,
    journal_lines,
    poll,
    resume,
    start_dev,
    write_book,
)


def send(client: httpx.Client, chat_id: str, text: str) -> httpx.Response:
    return client.post("/api/chat", json=body(chat_id, text, "u1"))


def conversation(client: httpx.Client, chat_id: str) -> dict[str, Any]:
    response = client.get(f"/api/conversations/{chat_id}")
    assert response.status_code == 200, response.text
    return response.json()


def wait_status(client: httpx.Client, chat_id: str, status: str) -> dict[str, Any]:
    return poll(lambda: (c := conversation(client, chat_id))["status"] == status and c, f"{chat_id} {status}")


def tool_part(message: dict[str, Any], tool: str) -> dict[str, Any]:
    return next(p for p in message["parts"] if p["type"] == f"tool-{tool}")


def start_waiting_runs(dev: DevProcess, prefix: str) -> None:
    """A run waiting for an approval (`{prefix}-approve`) and one waiting for an answer (`{prefix}-ask`)."""
    with dev.client() as client:
        send(client, f"{prefix}-approve", "write a note")
        wait_status(client, f"{prefix}-approve", "waiting_approval")
        send(client, f"{prefix}-ask", "ask me a question")
        wait_status(client, f"{prefix}-ask", "waiting_user")


def finish_waiting_runs(dev: DevProcess, prefix: str) -> None:
    """Approve through the webhook; answer through the chat continuation, as `addToolOutput` sends it."""
    with dev.client() as client:
        waiting = conversation(client, f"{prefix}-approve")["messages"][-1]
        approval_id = tool_part(waiting, "write_file")["approval"]["id"]
        decided = client.post(f"/api/approvals/{approval_id}", json={"approved": True})
        assert decided.status_code == 200, decided.text
        wait_status(client, f"{prefix}-approve", "idle")
        asked = conversation(client, f"{prefix}-ask")["messages"][-1]
        answered = copy.deepcopy(asked)
        question = tool_part(answered, "ask_user_question")
        question.update(state="output-available", output="Meeting notes")
        body = {
            "id": f"{prefix}-ask",
            "messages": [user("ask me a question", "u1"), answered],
            "trigger": "submit-message",
            "messageId": asked["id"],
        }
        continued = client.post("/api/chat", json=body)
        assert continued.status_code == 200, continued.text
        wait_status(client, f"{prefix}-ask", "idle")


def final_parts(client: httpx.Client, chat_id: str) -> list[dict[str, Any]]:
    """The answer's parts, without the ids each run draws afresh (approval ids)."""
    message = conversation(client, chat_id)["messages"][-1]
    assert message["status"] == "completed", message
    parts = copy.deepcopy(message["parts"])
    for part in parts:
        if isinstance(part.get("approval"), dict):
            part["approval"].pop("id")
    return parts


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_waiting_and_working_runs_survive_a_restart(tmp_path: Path, stop: signal.Signals) -> None:
    data, journal = tmp_path / "data", tmp_path / "tools.journal"
    model = write_book(tmp_path / "book.json")
    first = start_dev(data, tmp_path, journal=journal, model=model)
    try:
        start_waiting_runs(first, "cut")
        client = first.client(timeout=httpx.Timeout(30, read=None))
        follower = Follower().follow(
            client,
            "POST",
            "/api/chat",
            json=body("cut-work", "work slowly", "u1"),
        )
        follower.wait_for('"text-delta"')  # the tool step is saved; the text step is streaming
        # a browser tab following the waiting run (the resume stream holds while the run waits)
        watcher = Follower().follow(client, "GET", "/api/chat/cut-approve/stream")
        watcher.wait_for('"tool-approval-request"')
        status = first.stop(stop)
    finally:
        if first.process.poll() is None:
            first.process.kill()
    # exited within STOP_SECONDS; uvicorn ends by the signal it caught (after its shutdown), as a process should
    assert status == -stop, first.banner()
    assert follower.ended.wait(10) and watcher.ended.wait(10)
    client.close()
    for cut in (follower, watcher):
        assert cut.frames and cut.frames[-1][1] != "[DONE]", "a stop never tells the client the run ended"

    second = start_dev(data, tmp_path, journal=journal, model=model)
    try:
        assert "3 unfinished runs driven again" in second.banner()
        with second.client(timeout=httpx.Timeout(30, read=None)) as client:
            resumed = resume(client, "cut-work", follower)
            assert resumed.ended.wait(60)
            wait_status(client, "cut-work", "idle")
            assert_resumed_whole(follower, resumed, conversation(client, "cut-work")["messages"][-1])

            finish_waiting_runs(second, "cut")
            # the same three runs, uninterrupted, on the same server
            start_waiting_runs(second, "whole")
            send(client, "whole-work", "work slowly")
            wait_status(client, "whole-work", "idle")
            finish_waiting_runs(second, "whole")
            for kind in ("approve", "ask", "work"):
                assert final_parts(client, f"cut-{kind}") == final_parts(client, f"whole-{kind}"), kind
            assert tool_part(conversation(client, "cut-approve")["messages"][-1], "write_file")["output"]["path"]
            assert conversation(client, "cut-approve")["activeRunId"] is None
    finally:
        second.stop(signal.SIGTERM)
    runs = journal_lines(journal)
    for prefix in ("cut", "whole"):
        assert runs.count(f"{prefix}-approve write_file") == 1, runs
        assert runs.count(f"{prefix}-work list_files") == 1, runs
    assert len(runs) == 4, runs
