"""The agents of the unattended-run tests (`STEPLINE_AGENT=tests.unattended.worker_agents:AGENTS`).

`reports` answers from a script book (a scripted model, no provider): "refund" calls a tool that
waits for a person's approval, anything else is answered with one text step. It has a schedule
every `STEPLINE_TEST_RATE_SECONDS` seconds (when set) owned by `ops`, a nightly cron schedule, and
a `ticket` hook whose payload `{"id", "title"}` becomes the prompt (a payload with `"ignore": true`
starts nothing).
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import JsonValue

from stepline import Agent, tool
from stepline.agent.unattended import Hook, Schedule
from stepline.llm.script_book import ScriptBook

OWNER = "ops"
_FINISH: dict[str, Any] = {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": {}}
_TOOLS: dict[str, Any] = {"type": "finish", "finishReason": {"unified": "tool-calls", "raw": "tool_use"}, "usage": {}}


def _text(text: str) -> list[dict[str, Any]]:
    return [
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": text},
        {"type": "text-end", "id": "t"},
        _FINISH,
    ]


BOOK: dict[str, Any] = {
    "scripts": [
        {
            "name": "refund",
            "match": ["refund"],
            "steps": [
                [
                    {"type": "tool-call", "toolCallId": "call-refund", "toolName": "refund", "input": '{"cents": 500}'},
                    _TOOLS,
                ],
                _text("Refunded."),
            ],
        }
    ],
    "fallback": {"steps": [_text("Report written.")]},
}


@tool(approval="user-approval")
def refund(cents: int) -> int:
    """Refund an amount, in cents."""
    return cents


def ticket_prompt(payload: JsonValue) -> str | None:
    if not isinstance(payload, dict):
        raise ValueError("a ticket is a JSON object")
    if payload.get("ignore") is True:
        return None
    return f"Triage ticket {payload['id']}: {payload['title']}"


RATE = os.environ.get("STEPLINE_TEST_RATE_SECONDS", "")
"""Seconds between `tick` occurrences; unset: no `tick` schedule."""
AGENTS = {
    "reports": Agent(
        name="reports",
        description="Writes reports, refunds on request",
        model=ScriptBook.from_book(BOOK, model_id="reports-book"),
        tools=[refund],
        schedules=[
            *(
                [Schedule(name="tick", rate=f"{RATE} seconds", input="Write the tick report.", owner=OWNER)]
                if RATE
                else []
            ),
            Schedule(
                name="nightly",
                cron="0 2 * * *",
                timezone="Europe/Paris",
                input="Write the nightly report.",
                owner=OWNER,
            ),
        ],
        hooks=[Hook(name="ticket", prompt=ticket_prompt, owner=OWNER)],
    ),
}
