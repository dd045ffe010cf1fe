"""A sub-agent's approval answered with the AI SDK's own continuation (ai@7's `Chat`, a real client).

The research desk's lead calls the researcher and the writer at once; the writer's save waits for an
approval. The approval reaches the lead's message as a part of its own (raised by
`stepline.runtime.child_approvals`), so `addToolApprovalResponse` + `sendAutomaticallyWhen:
lastAssistantMessageIsCompleteWithApprovalResponses` answers it: the continuation decides the
writer's approval (the child run's, by id, once), the writer saves once, the lead answers, and the
client ends with exactly the stored message, the raised part in it, settled.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stepline.api.identity import DEFAULT_LOCAL_USER
from stepline.runtime.child_results import child_run_id
from tests.support.node_script import run_node_script
from tests.support.server import Running, config, running


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    settings = config(None, STEPLINE_AGENT="tests.support.desk_agents:AGENTS", STEPLINE_APPROVAL_TIMEOUT_SECONDS="3600")
    with running(settings) as live:
        yield live


def test_a_childs_approval_is_answered_by_the_sdk_continuation_once(server: Running) -> None:
    scenario = {
        "base": server.url,
        "chatId": "desk-sdk",
        "sendAutomaticallyWhen": "approvals",
        "steps": [{"send": "a brief on otters"}, {"approve": True, "reason": "fine"}],
    }
    report = run_node_script("chat_e2e.mjs", scenario)
    assert [s.get("failed") for s in report["steps"]] == [None, None], report["steps"]
    posts = [r for r in report["requests"] if r["method"] == "POST"]
    assert [r["status"] for r in posts] == [200, 200]  # the message, then the automatic continuation
    with server.client() as client:
        stored = client.get("/api/conversations/desk-sdk").json()
    answer = report["messages"][-1]
    assert answer == {k: stored["messages"][-1][k] for k in answer}  # the client ends with the stored message
    writer_part = next(p for p in answer["parts"] if p["type"] == "tool-writer")
    assert writer_part["state"] == "output-available" and writer_part.get("preliminary") is not True
    assert answer["parts"][-1] == {"type": "text", "text": "Your brief is saved.", "state": "done"}
    raised = [p for p in answer["parts"] if p["type"] == "dynamic-tool" and p["toolCallId"].startswith("sub-approval-")]
    assert [(p["toolName"], p["state"]) for p in raised] == [("save_brief", "output-available")]
    assert "retries" not in stored["messages"][-1]["metadata"]  # the lead's next step redid nothing
    store = server.server.backend.services.store
    writer_run = child_run_id(stored["messages"][-1]["metadata"]["runId"], "w1")
    approvals = list(store.pending_approvals(DEFAULT_LOCAL_USER))
    assert approvals == []  # nothing left waiting
    calls = store.list_tool_calls(DEFAULT_LOCAL_USER, writer_run)
    saves = [c for c in calls if c.tool_name == "save_brief"]
    assert len(saves) == 1 and saves[0].status == "success"  # decided once, ran once
