"""Stop while a tool runs: the tool is cancelled, its part ends as an error, its record too, nothing runs it again.

The agent is `tests.support.control_agents` (a scripted model); its `endless_step` never ends by
itself and notes the asyncio cancellation that stops it. Every wait is on a state, never on time.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stepline.api.identity import DEFAULT_LOCAL_USER
from stepline.protocol.chunks import ToolOutputErrorChunk
from stepline.protocol.sse import decode_ui_message_stream
from tests.control.test_new_message import in_background, post, stored, until
from tests.support import control_agents as agents
from tests.support.server import Running, config, running

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    with running(config(STEPLINE_AGENT="tests.support.control_agents:AGENT")) as live:
        yield live


def test_stop_cancels_the_running_tool_and_its_part_and_record_end_as_aborted(server: Running) -> None:
    started, cancelled, ran = (c["endless_step"] for c in (agents.STARTED, agents.CANCELLED, agents.RUNS))
    with server.client() as client:
        first, one = in_background(server, lambda c: post(c, "stop-tool", "use the endless tool", "u1"))
        until(lambda: agents.STARTED["endless_step"] == started + 1, "the tool runs")
        run_id = stored(client, "stop-tool")["activeRunId"]
        calls = len(agents.PROMPTS)
        stopped = client.post(f"/api/runs/{run_id}/abort")
        until(lambda: agents.CANCELLED["endless_step"] == cancelled + 1, "the tool is cancelled")
        first.join(30)
        conversation = until(
            lambda: (c := stored(client, "stop-tool"))["activeRunId"] is None and c, "the chat is idle"
        )
    assert stopped.status_code == 200 and stopped.json()["status"] == "aborted", stopped.text
    assert agents.RUNS["endless_step"] == ran, "the body never reached its end"
    answer = conversation["messages"][1]
    assert answer["status"] == "aborted" and answer["metadata"]["abort"]["reason"] == "user_cancelled"
    tool = next(p for p in answer["parts"] if p["type"] == "tool-endless_step")
    assert tool["state"] == "output-error" and tool["errorText"].startswith("aborted (user_cancelled)")
    assert not [p for p in answer["parts"] if p.get("state") in ("input-streaming", "input-available")]
    chunks = decode_ui_message_stream(one["response"].text)
    errors = [c for c in chunks if isinstance(c, ToolOutputErrorChunk)]
    assert [e.tool_call_id for e in errors] == [tool["toolCallId"]] and chunks[-1].type == "abort", "streamed too"
    (record,) = server.server.backend.services.store.list_tool_calls(DEFAULT_LOCAL_USER, run_id)
    assert record.status == "error" and record.error is not None, "the ledger has its end: nothing re-runs it"
    assert len(agents.PROMPTS) == calls, "no model call after the Stop"
