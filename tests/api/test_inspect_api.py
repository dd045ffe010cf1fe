"""`GET /api/runs/{id}/steps` on a running `stepline dev` server: the request as sent, the answer, timings, tools."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest

from stepline.cli import main
from stepline.llm.registry import DEMO_BOOK
from tests.api.test_chat_api import approval_request, send, stored, wait_status
from tests.support.server import Running, config, running

KEY = "sk-abcdefghijklmnopqrstuvwxyz123456"


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    with running(config(f"scripted:{DEMO_BOOK}", tokens={"token-a": "user-a"})) as live:
        yield live


def test_a_finished_run_with_an_approval_reads_back_step_by_step(server: Running) -> None:
    with server.client("user-a") as a:
        waiting = approval_request(send(a, "inspect-chat", f"write a note, my key is {KEY}"))
        wait_status(a, "inspect-chat", "waiting_approval")
        assert a.post(f"/api/approvals/{waiting['approvalId']}", json={"approved": True}).status_code == 200
        done = wait_status(a, "inspect-chat", "idle")
        run_id = done["messages"][-1]["metadata"]["runId"]
        response = a.get(f"/api/runs/{run_id}/steps")
        assert stored(a, "inspect-chat")["status"] == "idle"
    assert response.status_code == 200, response.text
    run = response.json()
    assert (run["runId"], run["status"]) == (run_id, "completed")
    assert run["traceId"] is not None and len(run["traceId"]) == 32
    first, second = run["steps"]
    request = first["request"]
    assert request["provider"] == "scripted"
    assert any("write a note" in json.dumps(m) for m in request["messages"])  # the prompt as sent
    (write,) = [t for t in request["tools"] if t["name"] == "write_file"]
    assert write["inputSchema"]["type"] == "object" and "path" in write["inputSchema"]["properties"]
    # The second request is the first's messages plus the step's answer and the tool's result.
    assert second["request"]["messages"][: len(request["messages"])] == request["messages"]
    assert len(second["request"]["messages"]) > len(request["messages"])
    assert first["response"]["finishReason"] == "tool-calls"
    assert first["response"]["toolCalls"][0]["toolName"] == "write_file"
    assert second["response"]["text"]
    for step in (first, second):
        timings = step["timings"]
        assert timings["durationMs"] >= 0 and timings["queuedMs"] >= 0
        assert timings["timeToFirstTokenMs"] is not None and timings["timeToFirstTokenMs"] >= 0
        assert step["usage"]["inputTokens"] > 0
    # The approval is decided before the second step: it waited for it.
    (tool,) = first["tools"]
    assert (tool["toolName"], tool["status"]) == ("write_file", "success")
    assert tool["approval"]["decision"] == "approved" and tool["approval"]["decidedBy"] == "user-a"
    assert second["timings"]["queuedAt"] >= tool["approval"]["decidedAt"]
    assert KEY not in response.text  # masked when it was recorded
    # The CLI reads the same from the running server, as the run's owner.
    out = io.StringIO()
    assert main(["runs", "show", run_id, "--url", server.url, "--token", "token-a"], out=out) == 0
    assert out.getvalue().startswith(f"run {run_id}  completed") and "write_file" in out.getvalue()
    assert main(["runs", "show", run_id, "--url", server.url, "--token", "wrong"], out=io.StringIO()) == 2


def test_another_user_s_run_and_a_missing_one_are_the_same_404(server: Running) -> None:
    with server.client("user-a") as a:
        response = a.get("/api/runs/run-that-does-not-exist/steps")
        bad = a.get("/api/runs/has%20space/steps")
    assert response.status_code == 404
    assert bad.status_code in (400, 404, 422) and bad.status_code < 500
