"""An approval nobody decides in time expires: the run goes on with a denial, the webhook says 410."""

from __future__ import annotations

from stepline.llm.registry import DEMO_BOOK
from tests.api.test_chat_api import approval_request, send, wait_status
from tests.support.server import config, running


def test_an_expired_approval_is_410() -> None:
    with (
        running(config(f"scripted:{DEMO_BOOK}", STEPLINE_APPROVAL_TIMEOUT_SECONDS="1")) as live,
        live.client() as client,
    ):
        request = approval_request(send(client, "expire-chat", "write a note"))
        conversation = wait_status(client, "expire-chat", "idle")
        late = client.post(f"/api/approvals/{request['approvalId']}", json={"approved": True})
    assert late.status_code == 410
    tool = next(p for p in conversation["messages"][-1]["parts"] if p.get("toolCallId") == request["toolCallId"])
    assert tool["state"] == "output-denied"
