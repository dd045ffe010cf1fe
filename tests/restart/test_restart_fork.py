"""A fork that changes a denial into an approval survives a kill -9 of `stepline dev`.

The agent (`tests.restart.fork_agents`) gathers, asks to send the report, is denied, answers. The fork
of that run at the decision is killed right after the fork was accepted (its tool held before it is
claimed), or in the middle of the approved tool. After the restart on the same data folder the fork
ends once; counted at the provider wire (`tests/support/fake_openai.py`, which outlives both server
processes) and in the tool journal: no model call and no tool run of the steps before the fork point,
the approved tool started exactly once across the kill, and the source run is untouched. A tab that
followed the fork's stream when it was cut resumes with `Last-Event-ID` (or, after the kill right after
the fork was accepted, a new tab follows it whole): replayed steps then live ones, each event once,
making the stored message.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepline.protocol.chunks import ToolApprovalRequestChunk
from stepline.protocol.sse import decode_ui_message_stream
from stepline.store.records import TERMINAL
from tests.restart.chat import body, conversation, text_of
from tests.restart.process import DevProcess, Follower, assert_resumed_whole, journal_lines, poll, resume, serving
from tests.support.fake_openai import API_KEY, CHAT_PATH, FakeOpenAI, chat_stream, chat_text_chunks

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]  # two starts of a real server each

STREAMING = httpx.Timeout(30, read=None)
BASE = {"id": "chatcmpl-fork", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": "gpt-4.1"}


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """The chunks of a Chat Completions answer that is one function call."""

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**BASE, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}], "usage": None}

    function = {"name": name, "arguments": json.dumps(arguments)}
    call = {"index": 0, "id": call_id, "type": "function", "function": function}
    return [chunk({"role": "assistant", "content": None, "tool_calls": [call]}), chunk({}, "tool_calls")]


def start(tmp_path: Path, fake: FakeOpenAI) -> AbstractContextManager[DevProcess]:
    env = {
        "STEPLINE_AGENT": "tests.restart.fork_agents:AGENT",
        "OPENAI_BASE_URL": fake.base_url,
        "OPENAI_API_KEY": API_KEY,
    }
    return serving(
        tmp_path / "data", tmp_path, journal=tmp_path / "tools.journal", model="openai:gpt-4.1", extra_env=env
    )


def denied_run(client: httpx.Client, chat: str) -> tuple[str, str]:
    """The source: gathered, denied sending, answered; its run id and the approval id."""
    asked = client.post("/api/chat", json=body(chat, "send the report", "u1"))
    assert asked.status_code == 200, asked.text
    (request,) = [c for c in decode_ui_message_stream(asked.text) if isinstance(c, ToolApprovalRequestChunk)]
    decided = client.post(f"/api/approvals/{request.approval_id}", json={"approved": False, "reason": "not yet"})
    assert decided.status_code == 200, decided.text
    shown = poll(lambda: (c := conversation(client, chat))["activeRunId"] is None and c, "the source ends")
    assert text_of(shown["messages"][-1]) == "Not sent."
    return shown["messages"][-1]["runId"], request.approval_id


def fork_then_kill(
    dev: DevProcess, client: httpx.Client, chat: str, source: tuple[str, str], *, mid_tool: Path | None
) -> tuple[str, Follower]:
    """Fork the `(run id, approval id)` source with the approval; kill -9 right after the fork was accepted,
    or (`mid_tool`: the journal) once a tab follows the fork's replayed stream and the approved tool started.
    Returns the fork's run id and that tab (no frames when killed right after the fork was accepted)."""
    run_id, approval_id = source
    tab = Follower()
    try:
        edit = {"approvals": [{"approvalId": approval_id, "approved": True}]}
        forked = client.post(f"/api/runs/{run_id}/fork", json=edit)
        assert forked.status_code == 201, forked.text
        if mid_tool is not None:
            tab.follow(client, "GET", f"/api/chat/{chat}/stream")
            poll(lambda: any(line.endswith(" send_report") for line in journal_lines(mid_tool)), "the tool starts")
            tab.wait_for('"tool-approval-request"')  # the replayed step 1
        dev.stop(signal.SIGKILL)
    finally:
        if dev.process.poll() is None:
            dev.process.kill()
    assert mid_tool is None or tab.ended.wait(10)
    return forked.json()["runId"], tab


def run(client: httpx.Client, run_id: str) -> dict[str, Any]:
    response = client.get(f"/api/runs/{run_id}")
    assert response.status_code == 200, response.text
    return response.json()


@dataclass(frozen=True)
class Forked:
    """What the test reads once the fork has ended after the restart."""

    source_before: dict[str, Any]
    source_after: dict[str, Any]
    fork: dict[str, Any]
    shown: dict[str, Any]
    """The conversation."""


def fork_across_a_kill(tmp_path: Path, fake: FakeOpenAI, chat: str, *, mid_tool: bool) -> Forked:
    """The source run, its fork, the kill -9, the restart; what the test reads once the fork has ended."""
    journal = tmp_path / "tools.journal"
    hold, gate = Path(f"{journal}.hold"), Path(f"{journal}.gate")
    gate.touch()  # the source's tools run freely
    with start(tmp_path, fake) as first, first.client(timeout=STREAMING) as client:
        source = denied_run(client, chat)
        before = run(client, source[0])
        assert len(fake.requests_to(CHAT_PATH)) == 3 and journal_lines(journal) == [f"{chat} gather"]
        if mid_tool:
            gate.unlink()  # the approved tool lasts until the kill
        else:
            hold.touch()  # the approved tool is held before it is claimed
        fork_id, cut = fork_then_kill(first, client, chat, source, mid_tool=journal if mid_tool else None)
    assert len(fake.requests_to(CHAT_PATH)) == 3, "no model call before the kill: the fork's step after the tool"
    started = [f"{chat} gather", f"{chat} send_report"] if mid_tool else [f"{chat} gather"]
    assert journal_lines(journal) == started, "killed before the approved tool was claimed, or while it ran"
    gate.touch()  # a tool run again would end now, and be seen in the journal
    with start(tmp_path, fake) as second, second.client(timeout=STREAMING) as client:
        if mid_tool:  # the cut tab resumes
            tab = resume(client, chat, cut)
        else:  # a new tab follows the whole fork (replayed steps, then live) while it is held, then it goes on
            tab = Follower().follow(client, "GET", f"/api/chat/{chat}/stream")
            tab.wait_for('"tool-approval-request"')
            hold.unlink()
        fork = poll(lambda: (r := run(client, fork_id))["status"] in TERMINAL["run"] and r, "the fork ends", timeout=90)
        shown = conversation(client, chat)
        assert_resumed_whole(cut, tab, shown["messages"][-1])
        return Forked(before, run(client, source[0]), fork, shown)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        server.chat(
            chat_stream(tool_call("call-gather", "gather", {"topic": "q3"})),
            chat_stream(tool_call("call-send", "send_report", {"to": "boss"})),
            chat_stream(chat_text_chunks("Not sent.")),
            chat_stream(chat_text_chunks("Done.")),
        )
        yield server
        server.assert_all_consumed()


def fork_request(fake: FakeOpenAI) -> str:
    """The one model request the fork made (the step after the fork point), as text."""
    requests = fake.requests_to(CHAT_PATH)
    assert len(requests) == 4, "the source's three calls, then one: steps 0 and 1 of the fork were replayed"
    return json.dumps(requests[3].body["messages"])


def send_report_part(forked: Forked) -> dict[str, Any]:
    """The fork's `send_report` part, once the fork is checked to be kept apart from its source."""
    fork, shown, source = forked.fork, forked.shown, forked.source_before
    assert forked.source_after == source, "the source run is untouched"
    assert fork["status"] == "completed" and text_of(fork["message"]) == "Done."
    assert shown["activeRunId"] is None and [m["id"] for m in shown["messages"]] == ["u1", fork["message"]["id"]]
    (point,) = shown["branches"]
    assert point["siblingIds"] == [source["message"]["id"], fork["message"]["id"]], "the source's answer is kept"
    (part,) = [p for p in fork["message"]["parts"] if p["type"] == "tool-send_report"]
    return part


def test_a_fork_killed_right_after_it_was_accepted_runs_the_tool_once(tmp_path: Path, fake: FakeOpenAI) -> None:
    chat = "kill-fork-accepted"
    tool = send_report_part(fork_across_a_kill(tmp_path, fake, chat, mid_tool=False))
    sent = fork_request(fake)
    assert "sent to boss" in sent and "figures for q3" in sent, "the live step saw the replayed and the new result"
    assert journal_lines(tmp_path / "tools.journal") == [
        f"{chat} gather",
        f"{chat} send_report",
        f"{chat} send_report ended",
    ], "gather never again; the approved tool once, after the restart"
    assert tool["state"] == "output-available" and tool["approval"]["approved"] is True


def test_a_fork_killed_mid_tool_never_runs_the_tool_again(tmp_path: Path, fake: FakeOpenAI) -> None:
    chat = "kill-fork-mid-tool"
    tool = send_report_part(fork_across_a_kill(tmp_path, fake, chat, mid_tool=True))
    sent = fork_request(fake)
    assert "figures for q3" in sent and "sent to boss" not in sent
    assert "send_report was interrupted after it started" in sent, "the model is told the tool was cut"
    assert journal_lines(tmp_path / "tools.journal") == [f"{chat} gather", f"{chat} send_report"], (
        "the tool started once, was cut by the kill, never run again"
    )
    assert tool["state"] == "output-error", "the cut tool is reported, not left running"
