"""The inspector says when a model call was retried and why: `GET /api/runs/{id}/steps` and the CLI.

The agent (this module's `AGENTS`, served by the dev server in process) has a scripted model whose
first call is refused with a 429 before any output, the second answers: one step, two attempts.
"""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from stepline import Agent
from stepline.cli import main
from stepline.llm.scripted import ScriptedModel
from tests.api.test_chat_api import send, wait_status
from tests.support.server import Running, config, running

_FINISH = {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": {}}
AGENTS = {
    "retrying": Agent(
        name="retrying",
        model=ScriptedModel.from_script(
            [
                {"raise": {"kind": "rate_limit", "retryAfter": 0.01, "status": 429}, "after": 0},
                [
                    {"type": "text-start", "id": "t"},
                    {"type": "text-delta", "id": "t", "delta": "Answered on the second try."},
                    {"type": "text-end", "id": "t"},
                    _FINISH,
                ],
            ]
        ),
    )
}


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    with running(config(tokens={"token-r": "user-r"}, STEPLINE_AGENT="tests.api.test_inspect_retries:AGENTS")) as live:
        yield live


def test_a_retried_model_call_reads_back_with_its_attempts_and_why(server: Running) -> None:
    with server.client("user-r") as client:
        send(client, "retry-chat", "hello")
        done = wait_status(client, "retry-chat", "idle")
        run_id = done["messages"][-1]["metadata"]["runId"]
        response = client.get(f"/api/runs/{run_id}/steps")
    assert response.status_code == 200, response.text
    (step,) = response.json()["steps"]
    assert step["retries"] == [{"attempt": 0, "reason": "rate limit (429)", "error": "rate_limit"}]
    failed, answered = step["attempts"]
    assert failed["endedAt"] <= answered["startedAt"] and answered.get("error") is None
    assert "Answered on the second try." in step["response"]["text"]
    out = io.StringIO()
    assert main(["runs", "show", run_id, "--url", server.url, "--token", "token-r"], out=out) == 0
    assert "rate limit (429)" in out.getvalue()
