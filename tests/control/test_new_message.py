"""A new message while a run works, under each policy, over the HTTP API of the dev server.

The agent is `tests.support.control_agents` (a scripted model that records each prompt, a slow
tool and an approval tool, both counting their runs). Every test waits on states, never on time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from stepline.api.identity import DEFAULT_LOCAL_USER
from stepline.protocol.chunks import AbortChunk, StartChunk, ToolApprovalRequestChunk
from stepline.protocol.sse import decode_ui_message_stream
from stepline.store.errors import NotFound
from tests.support import control_agents as agents
from tests.support.server import Running, config, running

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    with running(config(STEPLINE_AGENT="tests.support.control_agents:AGENT")) as live:
        yield live


def message(text: str, message_id: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def post(client: httpx.Client, chat: str, text: str, message_id: str, policy: str | None = None) -> httpx.Response:
    body: dict[str, Any] = {"id": chat, "messages": [message(text, message_id)], "trigger": "submit-message"}
    if policy is not None:
        body["onNewMessage"] = policy
    return client.post("/api/chat", json=body)


def in_background(
    server: Running, call: Callable[[httpx.Client], httpx.Response], user: str | None = None
) -> tuple[threading.Thread, dict[str, httpx.Response]]:
    """`call` with a client of its own (as `user`), in a thread (its response in the dict once it returns)."""
    result: dict[str, httpx.Response] = {}

    def run() -> None:
        with server.client(user) as own:
            result["response"] = call(own)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, result


def until(check: Callable[[], Any], what: str, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.02)
    return value


def stored(client: httpx.Client, chat: str) -> dict[str, Any]:
    response = client.get(f"/api/conversations/{chat}")
    assert response.status_code == 200, response.text
    return response.json()


def streaming_text(server: Running, chat: str) -> bool:
    """The chat's active run has streamed some text (read from its event log)."""
    store = server.server.backend.services.store
    try:
        run_id = store.get_conversation(DEFAULT_LOCAL_USER, chat).active_run_id
    except NotFound:
        return False
    if run_id is None:
        return False
    events = store.events_after(DEFAULT_LOCAL_USER, run_id, 0, now=int(time.time() * 1000))
    return any(c.get("type") == "text-delta" for e in events for c in e.chunks)


def started_as(chunks: list[Any]) -> str | None:
    """The assistant message id a stream's `start` chunk names (None: it does not start so)."""
    first = chunks[0] if chunks else None
    return first.message_id if isinstance(first, StartChunk) else None


def text_of(stored_message: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in stored_message["parts"] if p.get("type") == "text")


def idle(client: httpx.Client, chat: str) -> dict[str, Any] | None:
    conversation = stored(client, chat)
    return conversation if conversation["activeRunId"] is None and not conversation["waiting"] else None


def test_reject_is_a_409_that_says_what_runs(server: Running) -> None:
    with server.client() as client:
        first, _ = in_background(server, lambda c: post(c, "reject", "answer slowly", "u1"))
        until(lambda: streaming_text(server, "reject"), "the run works")
        run_id = stored(client, "reject")["activeRunId"]
        refused = post(client, "reject", "hi", "u2", policy="reject")
        bad = post(client, "reject", "hi", "u3", policy="shout")
        first.join(30)
        conversation = until(lambda: idle(client, "reject"), "the chat is idle")
    assert refused.status_code == 409
    text = refused.json()["error"]["message"]
    assert run_id in text and "u1" in text and "onNewMessage" in text
    assert bad.status_code == 400 and "onNewMessage" in bad.json()["error"]["message"]
    assert [m["id"] for m in conversation["messages"] if m["role"] == "user"] == ["u1"], "nothing written"


def test_queue_answers_two_messages_in_order_each_stream_starting_with_its_run(server: Running) -> None:
    with server.client() as client:
        first, one = in_background(server, lambda c: post(c, "queue", "answer slowly", "u1"))
        until(lambda: streaming_text(server, "queue"), "the first run streams")
        second, two = in_background(server, lambda c: post(c, "queue", "first follow-up", "u2", policy="queue"))
        until(lambda: len(stored(client, "queue")["waiting"]) == 1, "u2 waits")
        third, three = in_background(
            server, lambda c: post(c, "queue", "second follow-up", "u3")
        )  # the agent's default
        waiting = until(lambda: len(stored(client, "queue")["waiting"]) == 2 and stored(client, "queue"), "u3 waits")
        for thread in (first, second, third):
            thread.join(60)
        conversation = until(lambda: idle(client, "queue"), "the chat is idle")
    assert [(w["id"], w["mode"]) for w in waiting["waiting"]] == [("u2", "queue"), ("u3", "queue")]
    assert decode_ui_message_stream(one["response"].text)[-1].type == "finish"
    messages = conversation["messages"]
    assert [(m["role"], m.get("status")) for m in messages] == [("user", "completed"), ("assistant", "completed")] * 3
    assert [m["id"] for m in messages if m["role"] == "user"] == ["u1", "u2", "u3"]
    for response, answer, said in ((two, messages[3], "first follow-up"), (three, messages[5], "second follow-up")):
        chunks = decode_ui_message_stream(response["response"].text)
        assert started_as(chunks) == answer["id"], "the stream is its own run's"
        assert chunks[-1].type == "finish"
        assert text_of(answer) == f"You said: {said}"
    assert text_of(messages[1]).startswith("Slow answer:") and "w79" in text_of(messages[1]), "not cut"


def test_a_queued_message_can_be_cancelled_and_its_stream_ends_aborted(server: Running) -> None:
    with server.client() as client:
        first, _ = in_background(server, lambda c: post(c, "cancel", "answer slowly", "u1"))
        until(lambda: streaming_text(server, "cancel"), "the first run streams")
        queued, result = in_background(server, lambda c: post(c, "cancel", "never mind", "u2", policy="queue"))
        until(lambda: stored(client, "cancel")["waiting"], "u2 waits")
        cancelled = client.delete("/api/conversations/cancel/queue/u2")
        queued.join(30)
        again = client.delete("/api/conversations/cancel/queue/u2")
        first.join(30)
        conversation = until(lambda: idle(client, "cancel"), "the chat is idle")
        other = client.delete("/api/conversations/cancel/queue/u1")
    assert cancelled.status_code == 204 and again.status_code == 404 and other.status_code == 404
    chunks = decode_ui_message_stream(result["response"].text)
    assert len(chunks) == 1 and isinstance(chunks[0], AbortChunk) and chunks[0].reason == "queued_message_cancelled"
    assert [m["id"] for m in conversation["messages"] if m["role"] == "user"] == ["u1"]


def test_interrupt_mid_stream_cuts_the_model_call_keeps_the_text_and_answers_the_new_message(server: Running) -> None:
    with server.client() as client:
        first, one = in_background(server, lambda c: post(c, "interrupt", "answer slowly", "u1"))
        until(lambda: streaming_text(server, "interrupt"), "the first run streams")
        calls = len(agents.PROMPTS)
        response = post(client, "interrupt", "stop, do this instead", "u2", policy="interrupt")
        first.join(30)
        conversation = until(lambda: idle(client, "interrupt"), "the chat is idle")
    old, new = conversation["messages"][1], conversation["messages"][3]
    assert old["status"] == "aborted" and old["metadata"]["abort"]["reason"] == "new_user_message"
    assert text_of(old).startswith("Slow answer:") and "w79" not in text_of(old), "cut, the text so far kept"
    assert decode_ui_message_stream(one["response"].text)[-1].type == "abort"
    chunks = decode_ui_message_stream(response.text)
    assert started_as(chunks) == new["id"] and chunks[-1].type == "finish"
    assert text_of(new) == "You said: stop, do this instead" and new["status"] == "completed"
    assert len(agents.PROMPTS) == calls + 1, "one call more: the new turn's (the old run made no other)"


def test_interrupt_mid_tool_lets_the_tool_finish_once_then_answers(server: Running) -> None:
    with server.client() as client:
        before = agents.RUNS["slow_step"]
        started = agents.STARTED["slow_step"]
        first, _ = in_background(server, lambda c: post(c, "interrupt-tool", "use the slow tool", "u1"))
        until(lambda: agents.STARTED["slow_step"] == started + 1, "the tool runs")
        calls = len(agents.PROMPTS)
        response = post(client, "interrupt-tool", "something else", "u2", policy="interrupt")
        first.join(30)
        conversation = until(lambda: idle(client, "interrupt-tool"), "the chat is idle")
    assert agents.RUNS["slow_step"] == before + 1 and agents.STARTED["slow_step"] == started + 1, "ran once, whole"
    old = conversation["messages"][1]
    tool = next(p for p in old["parts"] if p.get("type") == "tool-slow_step")
    assert tool["state"] == "output-available" and tool["output"] == "done one", "its result is recorded"
    assert old["status"] == "aborted" and old["metadata"]["abort"]["reason"] == "new_user_message"
    assert "The slow tool is done." not in text_of(old), "the old run made no model call after its tool"
    assert len(agents.PROMPTS) == calls + 1
    assert decode_ui_message_stream(response.text)[-1].type == "finish"
    assert text_of(conversation["messages"][3]) == "You said: something else"


def test_steer_reaches_the_model_at_the_next_step_in_the_same_assistant_message(server: Running) -> None:
    with server.client() as client:
        with agents.task_held_until(lambda: agents.steer_waiting(server, "steer")):
            first, one = in_background(server, lambda c: post(c, "steer", "do a long task", "u1"))
            until(lambda: streaming_text(server, "steer"), "the first step streams")
            run_id = stored(client, "steer")["activeRunId"]
            steered = post(client, "steer", "please answer in capitals", "u2", policy="steer")
            first.join(30)
        conversation = until(lambda: idle(client, "steer"), "the chat is idle")
    messages = conversation["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"], "no turn of its own: it joined the run"
    answer = messages[1]
    kinds = [p["type"] for p in answer["parts"] if p["type"] in ("tool-slow_step", "steering-message", "step-start")]
    assert kinds == ["step-start", "tool-slow_step", "steering-message", "step-start"], (
        "after the tool, before the call"
    )
    steer = next(p for p in answer["parts"] if p["type"] == "steering-message")
    assert steer["id"] == "u2" and steer["parts"] == [{"type": "text", "text": "please answer in capitals"}]
    assert text_of(answer).endswith("OK, STEERED INTO CAPITALS.") and "unsteered" not in text_of(answer)
    assert agents.PROMPTS[-1][-2:] == ["do a long task", "please answer in capitals"], "the model saw it as a user"
    for response in (one["response"], steered):
        chunks = decode_ui_message_stream(response.text)
        assert started_as(chunks) == answer["id"], "the same assistant message"
        assert any(c.type == "steering-message" for c in chunks) and chunks[-1].type == "finish"
    assert answer["metadata"]["runId"] == run_id


def test_a_new_message_closes_a_waiting_approval_with_the_reason_recorded(server: Running) -> None:
    with server.client() as client:
        first = post(client, "approval", "remember milk", "u1")
        request = next(c for c in decode_ui_message_stream(first.text) if isinstance(c, ToolApprovalRequestChunk))
        moved_on = post(client, "approval", "forget it", "u2", policy="queue")
        late = client.post(f"/api/approvals/{request.approval_id}", json={"approved": True})
        conversation = until(lambda: idle(client, "approval"), "the chat is idle")
    store = server.server.backend.services.store
    user = conversation["messages"][0]
    approval = store.get_approval(DEFAULT_LOCAL_USER, request.approval_id)
    assert approval.status == "expired" and approval.expired_reason == "new_user_message"
    assert late.status_code == 410 and agents.RUNS["remember"] == 0
    assert decode_ui_message_stream(moved_on.text)[-1].type == "finish" and user["id"] == "u1"


def test_a_steer_the_run_never_reached_becomes_the_next_turn(server: Running) -> None:
    with server.client() as client:
        first, one = in_background(server, lambda c: post(c, "steer-late", "answer slowly", "u1"))
        until(lambda: streaming_text(server, "steer-late"), "the only step streams")
        steered, late = in_background(server, lambda c: post(c, "steer-late", "and then this", "u2", policy="steer"))
        until(lambda: stored(client, "steer-late")["waiting"], "u2 waits for a step boundary")
        first.join(30)
        steered.join(30)
        conversation = until(lambda: idle(client, "steer-late"), "the chat is idle")
        resumed = client.get("/api/chat/steer-late/stream")
    messages = conversation["messages"]
    assert [m["id"] for m in messages if m["role"] == "user"] == ["u1", "u2"], "a turn of its own"
    assert not any(p["type"] == "steering-message" for p in messages[1]["parts"])
    assert text_of(messages[3]) == "You said: and then this" and messages[3]["status"] == "completed"
    assert decode_ui_message_stream(one["response"].text)[-1].type == "finish"
    assert started_as(decode_ui_message_stream(late["response"].text)) == messages[1]["id"], "it followed the run"
    assert resumed.status_code == 204, "nothing left to follow"
