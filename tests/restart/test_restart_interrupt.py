"""An interrupt survives a kill -9 of `stepline dev`: the server is killed right after it accepted the
interrupting message (the run asked to stop, not yet stopped), mid-stream and mid-tool; after the
restart on the same data folder the interrupted run ends aborted with reason `new_user_message`, its
text so far kept, its started tool never run again, and the new message is answered once.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.restart.chat import body, conversation, text_of
from tests.restart.process import DevProcess, Follower, journal_lines, poll, start_dev, write_book

pytestmark = pytest.mark.timeout(180)

FULL_SLOW_TEXT = "".join(f"word{i} " for i in range(30))


def settled(client: httpx.Client, chat: str) -> dict[str, Any] | None:
    found = conversation(client, chat)
    done = found["activeRunId"] is None and not found["waiting"] and len(found["messages"]) == 4
    return found if done else None


def interrupt_then_kill(dev: DevProcess, chat: str, client: httpx.Client) -> list[Follower]:
    """Tab B interrupts `chat`'s run; the server dies as soon as it has answered B's request."""
    interrupting = Follower().follow(client, "POST", "/api/chat", json=body(chat, "never mind", "u2", "interrupt"))
    assert interrupting.answered.wait(30) and interrupting.status == 200, interrupting.error
    dev.stop(signal.SIGKILL)
    return [interrupting]


def restart(tmp_path: Path, journal: Path, model: str, chat: str) -> dict[str, Any]:
    second = start_dev(tmp_path / "data", tmp_path, journal=journal, model=model, extra_env=TOOLS)
    try:
        with second.client() as client:
            return poll(lambda: settled(client, chat), f"{chat} is answered", timeout=60)
    finally:
        second.stop(signal.SIGTERM)


TOOLS = {"STEPLINE_TOOLS": "tests.restart.control_tools"}


def assert_interrupted(found: dict[str, Any]) -> dict[str, Any]:
    """The first answer aborted for the new message, then the new message answered once."""
    messages = found["messages"]
    assert [(m["role"], m["id"]) for m in messages][::2] == [("user", "u1"), ("user", "u2")], "each message once"
    first, second = messages[1], messages[3]
    assert first["metadata"]["abort"]["reason"] == "new_user_message", first["metadata"]
    assert second["status"] == "completed" and text_of(second).startswith("This is Stepline's scripted demo")
    return first


def test_an_interrupt_mid_stream_survives_a_kill_9(tmp_path: Path) -> None:
    journal, chat = tmp_path / "tools.journal", "kill-interrupt-stream"
    model = write_book(tmp_path / "book.json")
    first = start_dev(tmp_path / "data", tmp_path, journal=journal, model=model, extra_env=TOOLS)
    try:
        client = first.client(timeout=httpx.Timeout(30, read=None))
        working = Follower().follow(client, "POST", "/api/chat", json=body(chat, "work slowly", "u1"))
        working.wait_for('"text-delta"')  # the tool step is saved; the slow text step streams
        followers = [working, *interrupt_then_kill(first, chat, client)]
    finally:
        if first.process.poll() is None:
            first.process.kill()
    assert all(f.ended.wait(10) for f in followers)
    client.close()

    answer = assert_interrupted(restart(tmp_path, journal, model, chat))
    kept = text_of(answer)
    assert kept and FULL_SLOW_TEXT.startswith(kept) and kept != FULL_SLOW_TEXT, "the text so far, not the whole"
    assert journal_lines(journal).count(f"{chat} list_files") == 1


def test_an_interrupt_mid_tool_survives_a_kill_9_without_running_the_tool_again(tmp_path: Path) -> None:
    journal, chat = tmp_path / "tools.journal", "kill-interrupt-tool"
    model = write_book(tmp_path / "book.json")
    first = start_dev(tmp_path / "data", tmp_path, journal=journal, model=model, extra_env=TOOLS)
    try:
        client = first.client(timeout=httpx.Timeout(30, read=None))
        working = Follower().follow(client, "POST", "/api/chat", json=body(chat, "run the gated step", "u1"))
        poll(lambda: f"{chat} gated_step" in journal_lines(journal), "the gated tool runs")
        followers = [working, *interrupt_then_kill(first, chat, client)]
    finally:
        if first.process.poll() is None:
            first.process.kill()
    assert all(f.ended.wait(10) for f in followers)
    client.close()

    answer = assert_interrupted(restart(tmp_path, journal, model, chat))
    assert text_of(answer) == "Starting the gated step."
    (tool,) = [p for p in answer["parts"] if p["type"] == "tool-gated_step"]
    assert tool["state"] == "output-error", "the cut tool's part is closed, not left running"
    assert not [p for p in answer["parts"] if p.get("state") in ("input-streaming", "input-available")]
    assert journal_lines(journal) == [f"{chat} gated_step"], "the tool started once, was cut by the kill, never rerun"
