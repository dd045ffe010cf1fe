"""An edit (`sendMessage({ text, messageId })`) while a run works, under each new-message policy, over HTTP.

The agent is `tests.support.control_agents` (a scripted model that records each prompt). `interrupt`
stops the run and starts the edited branch; `queue` waits for the run to end; `reject` is a 409.
Every test waits on states, never on time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stepline.protocol.sse import decode_ui_message_stream
from tests.control.test_new_message import (
    idle,
    in_background,
    message,
    post,
    started_as,
    stored,
    streaming_text,
    text_of,
    until,
)
from tests.support import control_agents as agents
from tests.support.server import Running, config, running

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    with running(config(STEPLINE_AGENT="tests.support.control_agents:AGENT")) as live:
        yield live


def edit(client: httpx.Client, chat: str, text: str, message_id: str, policy: str) -> httpx.Response:
    body: dict[str, Any] = {
        "id": chat,
        "messages": [message(text, message_id)],
        "trigger": "submit-message",
        "messageId": message_id,
        "onNewMessage": policy,
    }
    return client.post("/api/chat", json=body)


def first_turn_then_slow(
    server: Running, client: httpx.Client, chat: str, first: str = "u1"
) -> tuple[Any, dict[str, httpx.Response]]:
    """`first` answered, then u2 `answer slowly` streaming in the background."""
    assert decode_ui_message_stream(post(client, chat, "hello", first).text)[-1].type == "finish"
    slow = in_background(server, lambda c: post(c, chat, "answer slowly", "u2"))
    until(lambda: streaming_text(server, chat), "the slow run streams")
    return slow


def test_an_edit_under_interrupt_stops_the_run_and_starts_the_edited_branch(server: Running) -> None:
    with server.client() as client:
        thread, slow = first_turn_then_slow(server, client, "edit-interrupt")
        calls = len(agents.PROMPTS)
        response = edit(client, "edit-interrupt", "hello again", "u1", "interrupt")
        thread.join(30)
        conversation = until(lambda: idle(client, "edit-interrupt"), "the chat is idle")
    assert response.status_code == 200, response.text
    assert decode_ui_message_stream(slow["response"].text)[-1].type == "abort"
    chunks = decode_ui_message_stream(response.text)
    active = conversation["messages"]
    assert [m["role"] for m in active] == ["user", "assistant"], "the edit replaced u1: the branch has one turn"
    assert text_of(active[0]) == "hello again" and active[0]["id"] != "u1"
    assert started_as(chunks) == active[1]["id"] and chunks[-1].type == "finish"
    assert text_of(active[1]) == "You said: hello again"
    assert len(agents.PROMPTS) == calls + 1 and agents.PROMPTS[-1] == ["hello again"], "the model saw only the edit"


def test_an_edit_under_queue_waits_for_the_run_to_end(server: Running) -> None:
    with server.client() as client:
        thread, slow = first_turn_then_slow(server, client, "edit-queue")
        response = edit(client, "edit-queue", "hello later", "u1", "queue")
        thread.join(30)
        conversation = until(lambda: idle(client, "edit-queue"), "the chat is idle")
    assert response.status_code == 200, response.text
    assert decode_ui_message_stream(slow["response"].text)[-1].type == "finish", "the slow run was not stopped"
    assert decode_ui_message_stream(response.text)[-1].type == "finish"
    active = conversation["messages"]
    assert [text_of(m) for m in active] == ["hello later", "You said: hello later"]
    assert agents.PROMPTS[-1] == ["hello later"]


def test_an_edit_under_reject_is_a_409_and_changes_nothing(server: Running) -> None:
    with server.client() as client:
        thread, _ = first_turn_then_slow(server, client, "edit-reject")
        response = edit(client, "edit-reject", "hello never", "u1", "reject")
        thread.join(30)
        conversation = until(lambda: idle(client, "edit-reject"), "the chat is idle")
    assert response.status_code == 409 and "before editing" in response.text, response.text
    assert [text_of(m) for m in conversation["messages"]][:3] == ["hello", "You said: hello", "answer slowly"]
    assert len(conversation["messages"]) == 4


def test_a_queued_edit_whose_point_left_the_active_branch_is_dropped_and_its_stream_ends_aborted(
    server: Running,
) -> None:
    chat = "edit-gone"
    with server.client() as client:
        assert decode_ui_message_stream(post(client, chat, "hello", "u1").text)[-1].type == "finish"
        thread, _ = first_turn_then_slow(server, client, chat, first="u0")  # u1 a1 u0 a0, u2 working
        first, one = in_background(server, lambda c: edit(c, chat, "root edit", "u1", "queue"))
        until(lambda: len(stored(client, chat)["waiting"]) == 1, "the first edit waits")
        second = edit(client, chat, "later edit", "u0", "queue")  # its point (after u1's answer) leaves with the first
        first.join(30)
        thread.join(30)
        conversation = until(lambda: idle(client, chat), "the chat is idle")
    assert decode_ui_message_stream(one["response"].text)[-1].type == "finish"
    last = decode_ui_message_stream(second.text)[-1]
    assert last.type == "abort" and getattr(last, "reason", None) == "queued_message_cancelled", last
    assert [text_of(m) for m in conversation["messages"]] == ["root edit", "You said: root edit"]
    assert not conversation["waiting"]
