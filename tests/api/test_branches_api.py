"""Edit and branch over HTTP on the local backend with the scripted demo model: the AI SDK's own request shapes.

An edit is `sendMessage({ text, messageId })` (`submit-message`, `messageId` naming the edited user
message, the list cut after it); a regeneration of an earlier answer is `regenerate({ messageId })`
(`regenerate-message`, the list cut before that answer). What the model saw is read from the run
inspector (`GET /api/runs/{id}/steps`, the requests as sent).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from stepline.protocol.chunks import StartChunk
from stepline.protocol.sse import decode_ui_message_stream
from tests.api.test_chat_api import slow_demo_model
from tests.support.server import Running, config, running


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    model = slow_demo_model(tmp_path_factory)
    with running(config(model, tokens={"tok-alice": "alice", "tok-bob": "bob"})) as live:
        yield live


def user(text: str, message_id: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def post(client: httpx.Client, chat: str, messages: list[dict[str, Any]], **fields: Any) -> httpx.Response:
    return client.post("/api/chat", json={"id": chat, "messages": messages, "trigger": "submit-message", **fields})


def answer(response: httpx.Response) -> dict[str, Any]:
    """The assistant message a chat response streamed (its id and the run it names)."""
    assert response.status_code == 200, response.text
    chunks = decode_ui_message_stream(response.text)
    assert chunks[-1].type == "finish", chunks[-1]
    start = chunks[0]
    assert isinstance(start, StartChunk) and start.message_id is not None
    return {"id": start.message_id, "role": "assistant", "parts": []}


def conversation(client: httpx.Client, chat: str) -> dict[str, Any]:
    response = client.get(f"/api/conversations/{chat}")
    assert response.status_code == 200, response.text
    return response.json()


def seen_by_model(client: httpx.Client, run_id: str) -> str:
    """Everything the run's model requests carried, as text."""
    response = client.get(f"/api/runs/{run_id}/steps")
    assert response.status_code == 200, response.text
    return json.dumps([step.get("request") for step in response.json()["steps"]])


def three_turns(client: httpx.Client, chat: str) -> list[dict[str, Any]]:
    """u1 a1 u2 a2 u3 a3, each answered."""
    history: list[dict[str, Any]] = []
    for n, text in enumerate(("alpha zebra", "bravo yak", "charlie xenon"), start=1):
        history.append(user(text, f"u{n}"))
        history.append(answer(post(client, chat, history)))
    return history


def test_an_edit_of_an_earlier_message_branches_and_the_old_turns_leave_the_model_context(server: Running) -> None:
    with server.client(user="alice") as client:
        history = three_turns(client, "edit-1")
        edited = post(client, "edit-1", [*history[:2], user("bravo EDITED", "u2")], messageId="u2")
        new_answer = answer(edited)
        shown = conversation(client, "edit-1")
        run_id = shown["messages"][-1]["runId"]
        seen = seen_by_model(client, run_id)
    ids = [m["id"] for m in shown["messages"]]
    assert ids[:2] == ["u1", history[1]["id"]] and ids[3] == new_answer["id"] and len(ids) == 4
    assert ids[2] != "u2", "the edit is a new stored message; the original stays on its branch"
    assert shown["messages"][2]["parts"][0]["text"] == "bravo EDITED"
    (point,) = shown["branches"]
    assert point == {"parentId": history[1]["id"], "siblingIds": ["u2", ids[2]], "activeId": ids[2]}
    assert "alpha zebra" in seen and "bravo EDITED" in seen
    assert "bravo yak" not in seen and "charlie xenon" not in seen, "the other branch is out of the context"


def test_switching_branches_restores_the_old_one_whole_and_back(server: Running) -> None:
    with server.client(user="alice") as client:
        history = three_turns(client, "edit-2")
        answer(post(client, "edit-2", [*history[:2], user("bravo EDITED", "u2")], messageId="u2"))
        edited = conversation(client, "edit-2")
        switched = client.post("/api/conversations/edit-2/branch", json={"messageId": "u2"})
        back = client.post("/api/conversations/edit-2/branch", json={"messageId": edited["messages"][2]["id"]})
        missing = client.post("/api/conversations/edit-2/branch", json={"messageId": "nope"})
        unnamed = client.post("/api/conversations/edit-2/branch", json={})
    assert switched.status_code == 200, switched.text
    assert [m["id"] for m in switched.json()["messages"]] == [m["id"] for m in history]
    assert switched.json()["branches"][0]["activeId"] == "u2"
    assert back.json()["messages"] == edited["messages"]
    assert missing.status_code == 404
    assert unnamed.status_code == 400 and "messageId" in unnamed.text


def test_a_regeneration_of_an_earlier_answer_branches_after_its_question(server: Running) -> None:
    with server.client(user="alice") as client:
        history = three_turns(client, "regen-1")
        body = {
            "id": "regen-1",
            "messages": history[:1],
            "trigger": "regenerate-message",
            "messageId": history[1]["id"],
        }
        new_answer = answer(client.post("/api/chat", json=body))
        shown = conversation(client, "regen-1")
        seen = seen_by_model(client, shown["messages"][-1]["runId"])
        then = post(client, "regen-1", [history[0], new_answer, user("delta walrus", "u4")])
        after = conversation(client, "regen-1")
    assert [m["id"] for m in shown["messages"]] == ["u1", new_answer["id"]]
    assert shown["branches"] == [
        {"parentId": "u1", "siblingIds": [history[1]["id"], new_answer["id"]], "activeId": new_answer["id"]}
    ]
    assert "alpha zebra" in seen and "bravo yak" not in seen
    answer(then)
    assert [m["id"] for m in after["messages"]][:3] == ["u1", new_answer["id"], "u4"]


def test_bad_edits_are_refused_naming_the_field_and_write_nothing(server: Running) -> None:
    with server.client(user="alice") as client:
        history = three_turns(client, "edit-bad")
        before = conversation(client, "edit-bad")
        assistant_id = history[1]["id"]
        not_user = post(client, "edit-bad", [history[0], user("x", assistant_id)], messageId=assistant_id)
        unknown = client.post(
            "/api/chat",
            json={"id": "edit-bad", "messages": history[:1], "trigger": "regenerate-message", "messageId": "nope"},
        )
        unchanged = conversation(client, "edit-bad")
    with server.client(user="bob") as bob:
        their_switch = bob.post("/api/conversations/edit-bad/branch", json={"messageId": "u2"})
        their_read = bob.get("/api/conversations/edit-bad")
        their_edit = post(bob, "edit-bad", [user("x", "u2")], messageId="u2")
    assert not_user.status_code == 400 and "messageId" in not_user.text and "not a user message" in not_user.text
    assert unknown.status_code == 400 and "messageId" in unknown.text
    assert unchanged == before, "a refused edit wrote nothing"
    assert their_switch.status_code == 404 and their_read.status_code == 404
    assert their_edit.status_code == 200, "bob's own chat of that id (a new one): ours is not touched"
    with server.client(user="alice") as client:
        assert conversation(client, "edit-bad") == before


def test_an_edit_while_the_run_works_is_a_409_under_reject_and_two_racing_edits_make_one_branch(
    server: Running,
) -> None:
    """Under `reject` (the edit under `queue` / `interrupt`: tests/control/test_edit_while_working.py)."""
    with server.client(user="alice") as client:
        history = three_turns(client, "edit-race")
        slow = [*history, user("answer slowly please", "u4")]
        streaming = threading.Thread(target=lambda: post(client, "edit-race", slow))
        streaming.start()
        wait_for(lambda: conversation(client, "edit-race")["status"] == "running")
        during = post(
            client, "edit-race", [*history[:2], user("bravo EDITED", "u2")], messageId="u2", onNewMessage="reject"
        )
        active = conversation(client, "edit-race")["activeRunId"]
        client.post(f"/api/runs/{active}/abort")
        streaming.join(30)
        wait_for(lambda: conversation(client, "edit-race")["activeRunId"] is None)
        edits = [[*history[:2], user(f"bravo EDIT {n}", "u2")] for n in (1, 2)]

        def edit(messages: list[dict[str, Any]]) -> httpx.Response:
            return post(client, "edit-race", messages, messageId="u2", onNewMessage="reject")

        with ThreadPoolExecutor(2) as pool:
            raced = list(pool.map(edit, edits))
        wait_for(lambda: conversation(client, "edit-race")["activeRunId"] is None)
        shown = conversation(client, "edit-race")
    assert during.status_code == 409 and "abort" in during.text
    codes = sorted(r.status_code for r in raced)
    assert codes in ([200, 409], [200, 200]), [r.text for r in raced]
    (point,) = [p for p in shown["branches"] if p["parentId"] == history[1]["id"]]
    # both won only if one ended before the other began; never two runs at once, never a half-written branch
    assert len(point["siblingIds"]) == 1 + codes.count(200)
    assert shown["messages"][2]["parts"][0]["text"].startswith("bravo EDIT")


def wait_for(condition: Callable[[], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition did not come true"
        time.sleep(0.05)
