"""A run that ends without completing leaves no tool part open, over the HTTP API of the dev server.

Stopped while a tool works (in a thread), while an approval or a question waits, interrupted while
a tool call's input streams, failed mid-input: every open tool part is closed in the write that
ends the run, and the real `ai@7` reducer builds exactly the stored message from the stream, from
the run's whole log and from a resume after the first event. The agent is
`tests.support.control_agents`; every wait is on a state (a gate the test opens), never on time.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stepline.api.identity import DEFAULT_LOCAL_USER
from stepline.protocol.chunks import ToolApprovalRequestChunk
from stepline.protocol.sse import decode_ui_message_stream
from stepline.store.errors import NotFound
from stepline.store.ports import FinishRun
from stepline.store.records import RunRecord
from tests.control.test_new_message import idle, in_background, post, stored, until
from tests.support import control_agents as agents
from tests.support.sdk_oracle import SdkOracle
from tests.support.server import Running, config, running

pytestmark = pytest.mark.timeout(120)

OPEN = ("input-streaming", "input-available", "approval-requested", "approval-responded")


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    with running(config(STEPLINE_AGENT="tests.support.control_agents:AGENT")) as live:
        yield live


def _now() -> int:
    return int(time.time() * 1000)


def _log(server: Running, run_id: str) -> list[list[dict[str, Any]]]:
    """The chunks of each event of the run's log, in order."""
    events = server.server.backend.services.store.events_after(DEFAULT_LOCAL_USER, run_id, 0, now=_now())
    return [list(e.chunks) for e in events]


def _tool_part(answer: dict[str, Any], tool: str) -> dict[str, Any]:
    return next(p for p in answer["parts"] if p["type"] == f"tool-{tool}")


def _mark(reason: str, *tools: dict[str, Any]) -> dict[str, Any]:
    """The `closedByEnd` metadata of an end that closed `tools`."""
    return {"reason": reason, "toolCallIds": [t["toolCallId"] for t in tools], "dataPartIds": []}


def _run_of(server: Running, chat: str) -> str | None:
    try:
        return server.server.backend.services.store.get_conversation(DEFAULT_LOCAL_USER, chat).active_run_id
    except NotFound:
        return None


def _logged(server: Running, chat: str, chunk_type: str) -> bool:
    run_id = _run_of(server, chat)
    return run_id is not None and any(c["type"] == chunk_type for e in _log(server, run_id) for c in e)


def _assert_closed_everywhere(
    server: Running,
    client: httpx.Client,
    sdk: SdkOracle,
    chat: str,
    answer: dict[str, Any],
    streamed: str | None,
    *,
    latest: bool = True,
) -> None:
    """No open tool part; the stream, the whole log and a resume reduce (ai@7) to the stored message.

    A resume follows the chat's latest run: only when the run checked is it (`latest`)."""
    assert not [p for p in answer["parts"] if p.get("state") in OPEN], answer["parts"]
    log = _log(server, answer["metadata"]["runId"])
    whole = [c for event in log for c in event]
    last = [c["type"] for c in log[-1]]
    assert last[-1] in ("abort", "error") and "finish" not in last, "closed before the end, in the end's event"
    reduced = sdk.call("reduce", chunks=whole)
    assert reduced["final"]["parts"] == answer["parts"], "the log builds the stored message"
    mark = answer["metadata"]["closedByEnd"]
    assert reduced["final"]["metadata"] == answer["metadata"], "the SDK merges the end's mark into the metadata"
    if latest:
        resumed = client.get(f"/api/chat/{chat}/stream", headers={"Last-Event-ID": "1"})
        assert resumed.status_code == 200, resumed.text
        rest = [c.to_wire() for c in decode_ui_message_stream(resumed.text)]
        final = sdk.call("reduce", chunks=[*log[0], *rest])["final"]
        assert final["parts"] == answer["parts"] and final["metadata"]["closedByEnd"] == mark, "a resume too"
    if streamed is not None:
        chunks = [c.to_wire() for c in decode_ui_message_stream(streamed)]
        final = sdk.call("reduce", chunks=chunks)["final"]
        assert final["parts"] == answer["parts"] and final["metadata"]["closedByEnd"] == mark, "and the chat's stream"


def test_stop_while_a_tool_works_in_a_thread_closes_its_part_and_drops_its_late_result(
    server: Running, sdk: SdkOracle
) -> None:
    store = server.server.backend.services.store
    runs, started = agents.RUNS["held_step"], agents.STARTED["held_step"]
    with server.client() as client, agents.tool_held() as release:
        first, one = in_background(server, lambda c: post(c, "stop-tool", "use the held tool", "u1"))
        until(lambda: agents.STARTED["held_step"] == started + 1, "the tool works")
        run_id = stored(client, "stop-tool")["activeRunId"]
        calls = len(agents.PROMPTS)
        stopped = client.post(f"/api/runs/{run_id}/abort")
        first.join(30)
        conversation = until(lambda: idle(client, "stop-tool"), "the chat is idle")
        release.set()  # the thread's work ends now, after the run did
        until(lambda: agents.RUNS["held_step"] == runs + 1, "the tool's thread ends its work")
        later = stored(client, "stop-tool")
        answer = conversation["messages"][1]
        assert stopped.status_code == 200 and stopped.json()["status"] == "aborted", stopped.text
        assert answer["status"] == "aborted" and answer["metadata"]["abort"]["reason"] == "user_cancelled"
        tool = _tool_part(answer, "held_step")
        assert tool["state"] == "output-error" and tool["errorText"] == "stopped before the tool reported a result"
        assert tool["input"] == {"label": "held"}
        assert answer["metadata"]["closedByEnd"] == _mark("stopped", tool)
        _assert_closed_everywhere(server, client, sdk, "stop-tool", answer, one["response"].text)
    (record,) = store.list_tool_calls(DEFAULT_LOCAL_USER, run_id)
    assert record.status == "error" and record.output is None, "the ledger has its end: the late result is dropped"
    assert later["messages"][1] == answer, "nothing of the late result reached the message"
    assert agents.STARTED["held_step"] == started + 1 and len(agents.PROMPTS) == calls, "run once, no model call"


def test_stop_while_an_approval_waits_denies_it_with_the_reason_and_a_late_decision_is_gone(
    server: Running, sdk: SdkOracle
) -> None:
    store = server.server.backend.services.store
    ran = agents.RUNS["remember"]
    with server.client() as client:
        first = post(client, "stop-approval", "remember milk", "u1")
        request = next(c for c in decode_ui_message_stream(first.text) if isinstance(c, ToolApprovalRequestChunk))
        run_id = stored(client, "stop-approval")["activeRunId"]
        stopped = client.post(f"/api/runs/{run_id}/abort")
        late = client.post(f"/api/approvals/{request.approval_id}", json={"approved": True})
        conversation = until(lambda: idle(client, "stop-approval"), "the chat is idle")
        answer = conversation["messages"][1]
        _assert_closed_everywhere(server, client, sdk, "stop-approval", answer, None)
    assert stopped.json()["status"] == "aborted" and late.status_code == 410, late.text
    tool = _tool_part(answer, "remember")
    assert tool["state"] == "output-denied"
    assert tool["approval"] == {"id": request.approval_id, "approved": False, "reason": "stopped before a decision"}
    assert answer["metadata"]["closedByEnd"] == _mark("stopped", tool)
    approval = store.get_approval(DEFAULT_LOCAL_USER, request.approval_id)
    assert approval.status == "expired" and approval.expired_reason == "user_cancelled"
    assert agents.RUNS["remember"] == ran


def test_an_approval_decided_while_the_stop_ends_the_run_keeps_its_decision(
    server: Running, sdk: SdkOracle, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The decision commits between the end's reads and its write: the write is refused, the end is
    built again with the decision (approved, the tool never ran), and the approval never expires."""
    store = server.server.backend.services.store
    ran = agents.RUNS["remember"]
    finish = store.finish_run
    attempts: list[str] = []

    def decided_first(user_id: str, run_id: str, end: FinishRun) -> RunRecord:
        if not attempts:
            store.decide_approval(user_id, end.expire_approvals[0], approved=True, reason=None, now=_now())
        attempts.append(run_id)
        return finish(user_id, run_id, end)

    with server.client() as client:
        first = post(client, "decided-stop", "remember milk", "u1")
        request = next(c for c in decode_ui_message_stream(first.text) if isinstance(c, ToolApprovalRequestChunk))
        run_id = stored(client, "decided-stop")["activeRunId"]
        monkeypatch.setattr(store, "finish_run", decided_first)
        stopped = client.post(f"/api/runs/{run_id}/abort")
        monkeypatch.undo()
        conversation = until(lambda: idle(client, "decided-stop"), "the chat is idle")
        answer = conversation["messages"][1]
        _assert_closed_everywhere(server, client, sdk, "decided-stop", answer, None)
    assert stopped.json()["status"] == "aborted" and attempts == [run_id, run_id], "refused once, then built again"
    tool = _tool_part(answer, "remember")
    assert tool["state"] == "output-error" and tool["errorText"] == "stopped before the approved tool ran"
    assert tool["approval"] == {"id": request.approval_id, "approved": True}
    assert answer["metadata"]["closedByEnd"] == _mark("stopped", tool), "approved, but never ran: closed by the end"
    approval = store.get_approval(DEFAULT_LOCAL_USER, request.approval_id)
    assert approval.status in ("processing", "approved") and approval.decision == "approved", "never expired"
    assert agents.RUNS["remember"] == ran, "the run ended before the tool ran"


def test_stop_while_a_question_waits_closes_it_as_unanswered(server: Running, sdk: SdkOracle) -> None:
    with server.client() as client:
        first = post(client, "stop-question", "ask me something", "u1")
        run_id = stored(client, "stop-question")["activeRunId"]
        stopped = client.post(f"/api/runs/{run_id}/abort")
        conversation = until(lambda: idle(client, "stop-question"), "the chat is idle")
        answer = conversation["messages"][1]
        _assert_closed_everywhere(server, client, sdk, "stop-question", answer, None)
    assert first.status_code == 200 and stopped.json()["status"] == "aborted"
    tool = _tool_part(answer, "ask_user")
    assert tool["state"] == "output-error" and tool["errorText"] == "stopped before the question was answered"
    assert answer["metadata"]["closedByEnd"] == _mark("stopped", tool)
    (record,) = server.server.backend.services.store.list_tool_calls(DEFAULT_LOCAL_USER, run_id)
    assert record.status == "error"


def test_interrupt_while_a_tool_input_streams_closes_the_cut_call(server: Running, sdk: SdkOracle) -> None:
    started = agents.STARTED["slow_step"]
    with server.client() as client:
        with agents.input_held():
            first, one = in_background(server, lambda c: post(c, "cut-input", "use held input", "u1"))
            until(lambda: _logged(server, "cut-input", "tool-input-start"), "the tool input streams")
            response = post(client, "cut-input", "something else", "u2", policy="interrupt")
            first.join(30)
        conversation = until(lambda: idle(client, "cut-input"), "the chat is idle")
        old = conversation["messages"][1]
        _assert_closed_everywhere(server, client, sdk, "cut-input", old, one["response"].text, latest=False)
    assert old["status"] == "aborted" and old["metadata"]["abort"]["reason"] == "new_user_message"
    tool = _tool_part(old, "slow_step")
    assert tool["state"] == "output-error"
    assert tool["errorText"] == "interrupted by a new message before the tool reported a result"
    assert old["metadata"]["closedByEnd"] == _mark("new_user_message", tool)
    assert agents.STARTED["slow_step"] == started, "the cut call never ran"
    assert decode_ui_message_stream(response.text)[-1].type == "finish"


def test_a_run_that_fails_mid_input_closes_the_cut_call(server: Running, sdk: SdkOracle) -> None:
    with server.client() as client:
        failed = post(client, "broken-input", "use broken input", "u1")
        conversation = until(lambda: idle(client, "broken-input"), "the chat is idle")
        answer = conversation["messages"][1]
        _assert_closed_everywhere(server, client, sdk, "broken-input", answer, failed.text)
    assert answer["status"] == "failed"
    tool = _tool_part(answer, "slow_step")
    assert tool["state"] == "output-error" and tool["errorText"] == "the run failed before the tool reported a result"
    assert answer["metadata"]["closedByEnd"] == _mark("failed", tool)
