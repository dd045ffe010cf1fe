"""Forking a run from a step over HTTP on the local backend, with a scripted model that counts its calls.

The agent (`tests.support.fork_agents`) gathers (a tool with a counted side effect), asks to send
a report (approval), and answers after the decision. A fork that changes the denial into an
approval must call the model once (the step after the decision) and run `send_report` once, never
`gather` again: the two steps before the fork point are replayed from the source's checkpoint and
log. The source run and its message are read before and after: unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from stepline.protocol.chunks import ToolApprovalRequestChunk
from stepline.protocol.sse import decode_ui_message_stream
from tests.support import fork_agents as agents
from tests.support.server import Running, config, running

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    cfg = config(tokens={"tok-alice": "alice", "tok-bob": "bob"}, STEPLINE_AGENT="tests.support.fork_agents:AGENT")
    with running(cfg) as live:
        yield live


def wait_for(condition: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition did not come true"
        time.sleep(0.05)


def conversation(client: httpx.Client, chat: str) -> dict[str, Any]:
    response = client.get(f"/api/conversations/{chat}")
    assert response.status_code == 200, response.text
    return response.json()


def idle(client: httpx.Client, chat: str) -> dict[str, Any]:
    wait_for(lambda: conversation(client, chat)["activeRunId"] is None)
    return conversation(client, chat)


def denied_run(client: httpx.Client, chat: str) -> tuple[str, str]:
    """A run that gathered, was denied sending, and answered; returns its run id and the approval id."""
    message = {"id": f"{chat}-u1", "role": "user", "parts": [{"type": "text", "text": "send the report"}]}
    first = client.post("/api/chat", json={"id": chat, "messages": [message], "trigger": "submit-message"})
    assert first.status_code == 200, first.text
    (request,) = [c for c in decode_ui_message_stream(first.text) if isinstance(c, ToolApprovalRequestChunk)]
    wait_for(lambda: conversation(client, chat)["status"] == "waiting_approval")
    decided = client.post(f"/api/approvals/{request.approval_id}", json={"approved": False, "reason": "not yet"})
    assert decided.status_code == 200, decided.text
    shown = idle(client, chat)
    return shown["messages"][-1]["runId"], request.approval_id


def text_of(message: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in message["parts"] if p.get("type") == "text")


def test_a_fork_turns_a_denial_into_an_approval_with_no_model_or_tool_call_before_the_fork(server: Running) -> None:
    with server.client(user="alice") as client:
        run_id, approval_id = denied_run(client, "fork-1")
        before = conversation(client, "fork-1")
        source_run = client.get(f"/api/runs/{run_id}").json()
        calls, runs = len(agents.CALLS), agents.RUNS.copy()
        forked = client.post(
            f"/api/runs/{run_id}/fork", json={"approvals": [{"approvalId": approval_id, "approved": True}]}
        )
        assert forked.status_code == 201, forked.text
        fork = forked.json()
        # From before the first event: the fork's whole stream, also when the fork has already ended
        # (without a position, a chat with no active run has nothing to resume: 204).
        streamed = client.get("/api/chat/fork-1/stream", headers={"last-event-id": "0"})
        after = idle(client, "fork-1")
        fork_run = client.get(f"/api/runs/{fork['runId']}").json()
        source_after = client.get(f"/api/runs/{run_id}").json()
        steps = client.get(f"/api/runs/{fork['runId']}/steps").json()["steps"]
    assert fork["forkedFrom"] == {"runId": run_id, "step": 2}
    assert agents.CALLS[calls:] == ["2"], "one model call: the step after the decision (steps 0 and 1 replayed)"
    assert agents.RUNS["gather"] == runs["gather"], "the tool of step 0 did not run again"
    assert agents.RUNS["send_report"] == runs["send_report"] + 1, "the approved tool ran once, in the fork"
    assert fork_run["status"] == "completed"
    assert text_of(fork_run["message"]) == "Sent." and text_of(source_run["message"]) == "Not sent."
    assert source_after == source_run, "the source run is never changed"
    assert [s["stepNumber"] for s in steps] == [2], "the fork's own step records: only the live step"
    chunks = decode_ui_message_stream(streamed.text)
    assert streamed.status_code == 200 and chunks[0].type == "start" and chunks[-1].type == "finish"
    types = [c.type for c in chunks]
    assert "tool-output-available" in types and "tool-approval-request" in types, "replayed steps, then live"
    # the conversation: the fork's answer beside the old one, ‹2/2›
    ids = [m["id"] for m in after["messages"]]
    assert ids == [before["messages"][0]["id"], fork["messageId"]]
    (point,) = after["branches"]
    assert point["siblingIds"] == [before["messages"][1]["id"], fork["messageId"]]
    assert point["activeId"] == fork["messageId"]
    tools = [p for p in after["messages"][1]["parts"] if p.get("type") == "tool-send_report"]
    assert tools and tools[0]["state"] == "output-available" and tools[0]["approval"]["approved"] is True


def test_a_changed_answer_to_a_question_forks_after_the_question(server: Running) -> None:
    with server.client(user="alice") as client:
        message = {"id": "ask-u1", "role": "user", "parts": [{"type": "text", "text": "ask me a colour"}]}
        client.post("/api/chat", json={"id": "fork-ask", "messages": [message], "trigger": "submit-message"})
        wait_for(lambda: conversation(client, "fork-ask")["status"] == "waiting_user")
        shown = conversation(client, "fork-ask")
        asked = shown["messages"][-1]
        part = next(p for p in asked["parts"] if p.get("type") == "tool-pick_colour")
        answered = {
            **asked,
            "parts": [
                {**p, "state": "output-available", "output": {"colour": "red"}} if p is part else p
                for p in asked["parts"]
            ],
        }
        reply = client.post(
            "/api/chat", json={"id": "fork-ask", "messages": [message, answered], "trigger": "submit-message"}
        )
        assert reply.status_code == 200, reply.text
        first = idle(client, "fork-ask")
        calls = len(agents.CALLS)
        forked = client.post(
            f"/api/runs/{asked['runId']}/fork",
            json={"answers": [{"toolCallId": part["toolCallId"], "output": {"colour": "blue"}}]},
        )
        assert forked.status_code == 201, forked.text
        second = idle(client, "fork-ask")
    assert text_of(first["messages"][-1]) == "You picked red."
    assert text_of(second["messages"][-1]) == "You picked blue."
    assert agents.CALLS[calls:] == ["1"], "only the step after the answer called the model"


def test_bad_forks_are_refused_naming_what_is_wrong_and_write_nothing(server: Running) -> None:
    with server.client(user="alice") as client:
        run_id, approval_id = denied_run(client, "fork-bad")
        before = conversation(client, "fork-bad")
        no_step = client.post(f"/api/runs/{run_id}/fork", json={})
        too_far = client.post(f"/api/runs/{run_id}/fork", json={"step": 9})
        negative = client.post(f"/api/runs/{run_id}/fork", json={"step": -1})
        wrong_step = client.post(
            f"/api/runs/{run_id}/fork", json={"step": 1, "approvals": [{"approvalId": approval_id, "approved": True}]}
        )
        unknown = client.post(
            f"/api/runs/{run_id}/fork", json={"approvals": [{"approvalId": "aitxt-nope", "approved": True}]}
        )
        typo = client.post(f"/api/runs/{run_id}/fork", json={"stepp": 1})
        ended = client.post(f"/api/runs/{run_id}/fork", json={"step": 3})
        missing = client.post("/api/runs/run-nope/fork", json={"step": 0})
        unchanged = conversation(client, "fork-bad")
    with server.client(user="bob") as bob:
        theirs = bob.post(f"/api/runs/{run_id}/fork", json={"step": 0})
        their_approval = bob.post(
            f"/api/runs/{run_id}/fork", json={"approvals": [{"approvalId": approval_id, "approved": True}]}
        )
    assert no_step.status_code == 400 and "step" in no_step.text
    assert too_far.status_code == 400 and "step" in too_far.text and "no step 9" in too_far.text
    assert negative.status_code == 400 and "step" in negative.text
    assert wrong_step.status_code == 400 and "step" in wrong_step.text
    assert unknown.status_code == 404 and "approvals" in unknown.text
    assert typo.status_code == 400 and "stepp" in typo.text
    assert ended.status_code == 400 and "ended" in ended.text
    assert missing.status_code == 404 and theirs.status_code == 404 and their_approval.status_code == 404
    assert unchanged == before, "a refused fork wrote nothing"


def test_a_run_still_working_is_not_forked(server: Running) -> None:
    with server.client(user="alice") as client:
        message = {"id": "busy-u1", "role": "user", "parts": [{"type": "text", "text": "send the report"}]}
        client.post("/api/chat", json={"id": "fork-busy", "messages": [message], "trigger": "submit-message"})
        wait_for(lambda: conversation(client, "fork-busy")["status"] == "waiting_approval")
        run_id = conversation(client, "fork-busy")["activeRunId"]
        refused = client.post(f"/api/runs/{run_id}/fork", json={"step": 0})
        client.post(f"/api/runs/{run_id}/abort")
        idle(client, "fork-busy")
        calls, gathered = len(agents.CALLS), agents.RUNS["gather"]
        again = client.post(f"/api/runs/{run_id}/fork", json={"step": 1})
        wait_for(lambda: conversation(client, "fork-busy")["status"] == "waiting_approval")
        waiting = conversation(client, "fork-busy")
    assert refused.status_code == 409 and "waiting_approval" in refused.text and "runId" in refused.text
    assert again.status_code == 201, again.text
    assert waiting["activeRunId"] == again.json()["runId"], "step 1 ran live: it asks for the approval again"
    assert agents.CALLS[calls:] == ["1"] and agents.RUNS["gather"] == gathered
