"""The HTTP API over the real local backend: chat SSE, resume, the webhook, abort, reads, limits."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepline.llm.registry import DEMO_BOOK
from stepline.protocol.reducer import reduce_ui_message_stream
from stepline.protocol.sse import SseDecoder, decode_ui_message_stream
from tests.support.server import Running, config, running, write_book

SLOW_TEXT = {
    "name": "slow",
    "match": ["slowly"],
    "steps": [
        {
            "delayMs": 40,
            "parts": [
                {"type": "stream-start", "warnings": []},
                {"type": "text-start", "id": "t1"},
                *[{"type": "text-delta", "id": "t1", "delta": f"word{i} "} for i in range(60)],
                {"type": "text-end", "id": "t1"},
                {
                    "type": "finish",
                    "finishReason": {"unified": "stop", "raw": "stop"},
                    "usage": {"inputTokens": {"total": 5}, "outputTokens": {"total": 60}},
                },
            ],
        }
    ],
}


def slow_demo_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The model spec of the demo book with `SLOW_TEXT` first (a message with "slowly" streams slowly)."""
    book = json.loads(DEMO_BOOK.read_text())
    book["scripts"].insert(0, SLOW_TEXT)
    path: Path = tmp_path_factory.mktemp("book") / "book.json"
    return write_book(path, book["scripts"], book["fallback"]["steps"])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    with running(config(slow_demo_model(tmp_path_factory), STEPLINE_APPROVAL_TIMEOUT_SECONDS="3600")) as live:
        yield live


def user_message(text: str, message_id: str = "u1") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def send(client: httpx.Client, chat_id: str, text: str) -> httpx.Response:
    body = {"id": chat_id, "messages": [user_message(text)], "trigger": "submit-message"}
    return client.post("/api/chat", json=body)


def frames(body: str) -> list[tuple[str | None, str]]:
    decoder = SseDecoder()
    return [(e.id, e.data) for e in decoder.feed(body)]


def stored(client: httpx.Client, chat_id: str) -> dict[str, Any]:
    response = client.get(f"/api/conversations/{chat_id}")
    assert response.status_code == 200, response.text
    return response.json()


def wait_status(client: httpx.Client, chat_id: str, status: str, timeout: float = 20) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while (conversation := stored(client, chat_id))["status"] != status:
        assert time.monotonic() < deadline, f"conversation stayed {conversation['status']}"
        time.sleep(0.05)
    return conversation


def wait_active(client: httpx.Client, chat_id: str, timeout: float = 20) -> str:
    """The chat's active run id, once it has one (its POST is still streaming)."""
    deadline = time.monotonic() + timeout
    while (run_id := client.get(f"/api/conversations/{chat_id}").json().get("activeRunId")) is None:
        assert time.monotonic() < deadline, f"{chat_id} has no active run"
        time.sleep(0.02)
    return str(run_id)


def test_chat_answers_the_runs_ui_message_stream(server: Running) -> None:
    with server.client() as client:
        response = send(client, "text-chat", "hello")
        conversation = stored(client, "text-chat")
    assert response.status_code == 200
    for name, value in {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        "x-vercel-ai-ui-message-stream": "v1",
        "x-accel-buffering": "no",
    }.items():
        assert response.headers[name].startswith(value)
    events = frames(response.text)
    assert events[-1] == (None, "[DONE]")
    ids = [event_id for event_id, _ in events[:-1]]
    assert all(ids) and len(set(ids)) == len(ids), "every chunk has its own id"
    assert [int(i.split(".")[0]) for i in ids] == sorted(int(i.split(".")[0]) for i in ids)
    chunks = decode_ui_message_stream(response.text)
    assert chunks[0].type == "start" and chunks[-1].type == "finish"
    assistant = conversation["messages"][-1]
    assert chunks[0].message_id == assistant["id"]
    assert chunks[0].message_metadata["runId"] == assistant["runId"]
    streamed = reduce_ui_message_stream(chunks).message
    assert streamed["parts"] == assistant["parts"]
    assert conversation["messages"][0]["parts"] == [{"type": "text", "text": "hello"}]
    assert conversation["status"] == "idle" and conversation["activeRunId"] is None


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"messages": [user_message("x")], "trigger": "submit-message"}, "id"),
        ({"id": "c", "messages": [user_message("x")], "trigger": "send"}, "trigger"),
        (
            {
                "id": "c",
                "messages": [{"id": "u", "role": "user", "parts": [{"type": "text"}]}],
                "trigger": "submit-message",
            },
            "messages[0].parts[0].text",
        ),
        ({"id": "bad#id", "messages": [user_message("x")], "trigger": "submit-message"}, "id"),
        ({"id": "c", "messages": [user_message("x")], "trigger": "submit-message", "messageId": "nope"}, "messageId"),
    ],
)
def test_a_bad_chat_request_is_a_400_naming_the_field(server: Running, body: dict[str, Any], named: str) -> None:
    with server.client() as client:
        response = client.post("/api/chat", json=body)
    assert response.status_code == 400
    assert named in response.json()["error"]["message"]


def test_a_body_that_is_not_json_or_too_large_is_refused(server: Running) -> None:
    with server.client() as client:
        not_json = client.post("/api/chat", content=b"{nope", headers={"content-type": "application/json"})
        huge = client.post(
            "/api/chat", content=b"x" * (6 * 1024 * 1024 + 1), headers={"content-type": "application/json"}
        )
    assert not_json.status_code == 400 and "not JSON" in not_json.json()["error"]["message"]
    assert huge.status_code == 413


def test_a_chunked_body_over_the_limit_is_refused_while_reading(server: Running) -> None:
    def body() -> Iterator[bytes]:
        for _ in range(7):
            yield b" " * (1024 * 1024)

    with server.client() as client:
        response = client.post("/api/chat", content=body(), headers={"content-type": "application/json"})
    assert response.status_code == 413


def test_resume_with_nothing_active_is_204(server: Running) -> None:
    with server.client() as client:
        send(client, "done-chat", "hello")
        assert client.get("/api/chat/done-chat/stream").status_code == 204
        assert client.get("/api/chat/never-existed/stream").status_code == 204


def test_resume_replays_from_start_or_sends_only_what_was_missed(server: Running) -> None:
    with server.client() as client:
        first: list[tuple[str | None, str]] = []

        def post() -> None:
            first.extend(frames(send(client, "resume-chat", "please answer slowly").text))

        poster = threading.Thread(target=post)
        poster.start()
        wait_active(client, "resume-chat")  # the run streams: the resume joins it on its way
        full = client.get("/api/chat/resume-chat/stream")
        poster.join()
        seen_id = first[5][0]
        assert seen_id is not None
        conversation = stored(client, "resume-chat")
    replay = frames(full.text)
    assert replay == first, "a replay is the same stream: same ids, same chunks, same start"
    assert json.loads(replay[0][1])["messageId"] == conversation["messages"][-1]["id"]


def test_resume_honours_last_event_id_and_last_event_seq(server: Running) -> None:
    results: dict[str, httpx.Response] = {}

    def get(name: str, **options: Any) -> threading.Thread:
        def call() -> None:
            with server.client() as client:
                results[name] = client.get("/api/chat/lei-chat/stream", **options)

        thread = threading.Thread(target=call)
        thread.start()
        return thread

    with server.client() as client:
        poster = threading.Thread(target=lambda: results.update(post=send(client, "lei-chat", "answer me slowly")))
        poster.start()
        wait_active(client, "lei-chat")
        readers = [
            get("header", headers={"last-event-id": "3.0"}),
            get("query", params={"lastEventSeq": "3"}),
            get("bad", headers={"last-event-id": "three"}),
        ]
        for thread in [poster, *readers]:
            thread.join(20)
        after_end = client.get("/api/chat/lei-chat/stream", headers={"last-event-id": "5.0"})
        nothing_left = client.get("/api/chat/lei-chat/stream", headers={"last-event-id": "9999"})
    everything = frames(results["post"].text)
    after_three = [f for f in everything if f[0] is None or int(f[0].split(".")[0]) > 3]
    assert results["header"].status_code == 200 and frames(results["header"].text) == after_three
    assert frames(results["query"].text) == after_three
    assert results["bad"].status_code == 400 and "Last-Event-ID" in results["bad"].json()["error"]["message"]
    # the run has ended: a client that names what it saw still gets the rest, ending with [DONE]
    assert frames(after_end.text) == [f for f in everything if f[0] is None or int(f[0].split(".")[0]) > 5]
    assert nothing_left.status_code == 204


def approval_request(response: httpx.Response) -> dict[str, Any]:
    (chunk,) = [c for c in decode_ui_message_stream(response.text) if c.type == "tool-approval-request"]
    return {"approvalId": chunk.approval_id, "toolCallId": chunk.tool_call_id}


def test_the_stream_ends_when_the_run_waits_for_an_approval(server: Running) -> None:
    with server.client() as client:
        response = send(client, "wait-chat", "write a note")
        conversation = wait_status(client, "wait-chat", "waiting_approval")
    chunks = decode_ui_message_stream(response.text)
    assert chunks[-1].type == "finish-step" and frames(response.text)[-1] == (None, "[DONE]")
    assert conversation["activeRunId"] is not None


def test_while_the_run_waits_for_an_answer_its_message_says_waiting(server: Running) -> None:
    """The conversation names the wait (`waiting_user`); the message is `waiting`, not `streaming`."""
    with server.client() as client:
        send(client, "question-chat", "ask me a question")
        conversation = wait_status(client, "question-chat", "waiting_user")
    assert [m["status"] for m in conversation["messages"]] == ["completed", "waiting"]


def test_approval_webhook_decides_once(server: Running) -> None:
    with server.client() as client:
        request = approval_request(send(client, "hook-chat", "write a note"))
        wait_status(client, "hook-chat", "waiting_approval")
        url = f"/api/approvals/{request['approvalId']}"
        first = client.post(url, json={"approved": True})
        again = client.post(url, json={"approved": True})
        other = client.post(url, json={"approved": False, "reason": "changed my mind"})
        unknown = client.post("/api/approvals/aitxt-unknown", json={"approved": True})
        malformed = client.post(url, json={"approved": "yes"})
        conversation = wait_status(client, "hook-chat", "idle")
    assert first.status_code == 200 and first.json()["status"] == "approved"
    assert again.status_code == 200 and again.content == first.content
    assert other.status_code == 409
    assert unknown.status_code == 404
    assert malformed.status_code == 400 and "approved" in malformed.json()["error"]["message"]
    tool = next(p for p in conversation["messages"][-1]["parts"] if p.get("toolCallId") == request["toolCallId"])
    assert tool["state"] == "output-available" and tool["output"]["path"] == "notes/hello.md"


def test_abort_stops_the_run_and_ends_the_stream(server: Running) -> None:
    with server.client() as client:
        result: dict[str, httpx.Response] = {}
        poster = threading.Thread(target=lambda: result.update(post=send(client, "abort-chat", "go slowly")))
        poster.start()
        deadline = time.monotonic() + 10
        while (run_id := client.get("/api/conversations/abort-chat").json().get("activeRunId")) is None:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.3)
        aborted = client.post(f"/api/runs/{run_id}/abort")
        poster.join(15)
        again = client.post(f"/api/runs/{run_id}/abort")
        conversation = stored(client, "abort-chat")
    assert aborted.status_code == 200 and aborted.json() == {"runId": run_id, "status": "aborted"}
    assert again.json()["status"] == "aborted"
    chunks = decode_ui_message_stream(result["post"].text)
    assert chunks[-1].type == "abort"
    assert not any(c.type == "finish" for c in chunks)
    assert conversation["messages"][-1]["status"] == "aborted" and conversation["activeRunId"] is None


def test_conversations_are_listed_read_and_deleted(server: Running) -> None:
    with server.client() as client:
        send(client, "list-a", "hello")
        send(client, "list-b", "hello again")
        listed = client.get("/api/conversations", params={"limit": 100}).json()["conversations"]
        ids = [c["id"] for c in listed]
        deleted = client.delete("/api/conversations/list-a")
        gone = client.get("/api/conversations/list-a")
        bad_limit = client.get("/api/conversations", params={"limit": 0})
    assert ids.index("list-b") < ids.index("list-a"), "most recent first"
    assert deleted.status_code == 204 and gone.status_code == 404
    assert bad_limit.status_code == 400 and "limit" in bad_limit.json()["error"]["message"]


def test_a_conversation_with_an_active_run_is_not_deleted(server: Running) -> None:
    with server.client() as client:
        send(client, "busy-chat", "write a note")
        refused = client.delete("/api/conversations/busy-chat")
    assert refused.status_code == 409


def test_a_retried_post_resumes_and_a_new_message_leaves_the_waiting_run_incomplete(server: Running) -> None:
    with server.client() as client:
        first = send(client, "retry-chat", "write a note")
        request = approval_request(first)
        retried = send(client, "retry-chat", "write a note")
        moved_on = client.post(
            "/api/chat",
            json={"id": "retry-chat", "messages": [user_message("hello", "u2")], "trigger": "submit-message"},
        )
        late = client.post(f"/api/approvals/{request['approvalId']}", json={"approved": True})
        conversation = stored(client, "retry-chat")
    assert retried.status_code == 200 and frames(retried.text) == frames(first.text)
    assert moved_on.status_code == 200 and decode_ui_message_stream(moved_on.text)[-1].type == "finish"
    old = conversation["messages"][1]
    assert old["status"] == "aborted" and old["metadata"]["abort"]["reason"] == "new_user_message"
    tool = next(p for p in old["parts"] if p.get("toolCallId") == request["toolCallId"])
    assert tool["state"] == "output-denied", "never decided, never run: closed as denied by the run's end"
    assert tool["approval"]["reason"] == "interrupted by a new message before a decision"
    assert late.status_code == 410
    assert [m["role"] for m in conversation["messages"]] == ["user", "assistant", "user", "assistant"]


def test_a_new_message_while_a_run_works_is_a_409_under_reject(server: Running) -> None:
    with server.client() as client:
        poster = threading.Thread(target=lambda: send(client, "busy-409", "go slowly"))
        poster.start()
        deadline = time.monotonic() + 10
        while client.get("/api/conversations/busy-409").json().get("status") != "running":
            assert time.monotonic() < deadline
            time.sleep(0.02)
        other = client.post(
            "/api/chat",
            json={
                "id": "busy-409",
                "messages": [user_message("hi", "u2")],
                "trigger": "submit-message",
                "onNewMessage": "reject",
            },
        )
        poster.join(20)
    assert other.status_code == 409  # the run is queued or running by now: either is named, with its message
    assert re.search(
        r"run \S+ is (queued|running) in this chat \(answering message u1\)", other.json()["error"]["message"]
    )


def test_completion_and_object_streams(server: Running) -> None:
    with server.client() as client:
        completion = client.post("/api/completion", json={"prompt": "say hello", "temperature": 0.2})
        as_data = client.post("/api/completion", params={"protocol": "data"}, json={"prompt": "say hello"})
        bad_protocol = client.post("/api/completion", params={"protocol": "xml"}, json={"prompt": "x"})
        empty = client.post("/api/completion", json={"prompt": ""})
        obj = client.post("/api/object", json={"input": "hello", "schema": {"type": "object"}})
        no_schema = client.post("/api/object", json={"input": "hello"})
    assert completion.status_code == 200 and completion.headers["content-type"].startswith("text/plain")
    assert "scripted demo" in completion.text
    assert as_data.headers["x-vercel-ai-ui-message-stream"] == "v1"
    deltas = "".join(c.delta for c in decode_ui_message_stream(as_data.text) if c.type == "text-delta")
    assert deltas == completion.text, "the same completion, as the stock useCompletion reads it"
    assert bad_protocol.status_code == 400 and "protocol" in bad_protocol.json()["error"]["message"]
    assert empty.status_code == 400 and "prompt" in empty.json()["error"]["message"]
    assert obj.status_code == 200
    assert no_schema.status_code == 400 and "schema" in no_schema.json()["error"]["message"]


def test_openapi_is_published(server: Running) -> None:
    with server.client() as client:
        spec = client.get("/api/openapi.json").json()
    for path in ("/api/chat", "/api/chat/{chat_id}/stream", "/api/approvals/{approval_id}", "/api/runs/{run_id}/abort"):
        assert path in spec["paths"]
    assert "ChatRequestBody" in spec["components"]["schemas"]


def test_regenerate_replaces_the_answer_as_the_real_client_asks(server: Running) -> None:
    with server.client() as client:
        first = send(client, "regen-chat", "hello")
        old_id = decode_ui_message_stream(first.text)[0].message_id
        regenerated = client.post(
            "/api/chat",
            json={"id": "regen-chat", "messages": [user_message("hello")], "trigger": "regenerate-message"},
        )
        not_a_question = client.post(
            "/api/chat",
            json={
                "id": "regen-chat",
                "messages": [user_message("hello"), {"id": "a", "role": "assistant", "parts": []}],
                "trigger": "regenerate-message",
            },
        )
        conversation = stored(client, "regen-chat")
        then = send(client, "regen-chat", "list my files")
    chunks = decode_ui_message_stream(regenerated.text)
    new_id = chunks[0].message_id
    assert regenerated.status_code == 200 and new_id != old_id and chunks[-1].type == "finish"
    assert [m["id"] for m in conversation["messages"]] == ["u1", new_id], "the old answer is superseded"
    assert not_a_question.status_code == 400 and "user message" in not_a_question.json()["error"]["message"]
    assert then.status_code == 409 and "already in this chat" in then.json()["error"]["message"]


def test_regenerate_after_a_new_user_id_is_a_plain_turn(server: Running) -> None:
    with server.client() as client:
        send(client, "regen-2", "hello")
        body = {"id": "regen-2", "messages": [user_message("hello"), user_message("list my files", "u2")]}
        second = client.post("/api/chat", json={**body, "trigger": "submit-message"})
        regenerated = client.post("/api/chat", json={**body, "trigger": "regenerate-message"})
        conversation = stored(client, "regen-2")
    assert second.status_code == 200 and regenerated.status_code == 200
    roles = [(m["id"], m["role"]) for m in conversation["messages"]]
    assert [r for _, r in roles] == ["user", "assistant", "user", "assistant"]
    assert roles[2][0] == "u2"
    final = conversation["messages"][-1]
    assert final["id"] == decode_ui_message_stream(regenerated.text)[0].message_id
    assert any(p.get("type") == "tool-list_files" for p in final["parts"]), "the regenerated answer answers u2"


def test_by_default_no_other_origin_is_admitted(server: Running) -> None:
    request = {"origin": "http://localhost:3000", "access-control-request-method": "POST"}
    with server.client() as http:
        preflight = http.options("/api/chat", headers=request)
        listed = http.get("/api/conversations", headers={"origin": "http://localhost:3000"})
    assert preflight.status_code == 405
    assert not [h for h in (*preflight.headers, *listed.headers) if h.startswith("access-control-")]
