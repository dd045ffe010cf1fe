"""Which events of a conversation's log are a sub-agent's raised approval requests, and which are the run's own."""

from __future__ import annotations

from typing import Any

import pytest

from stepline.protocol.raised import raised_call_id, raised_only

RAISED = raised_call_id("ap-1")
REQUEST: list[dict[str, Any]] = [
    {"type": "start-step"},
    {"type": "tool-input-available", "toolCallId": RAISED, "toolName": "save", "input": {}, "dynamic": True},
    {"type": "tool-approval-request", "approvalId": "ap-1", "toolCallId": RAISED},
]
SETTLED: list[dict[str, Any]] = [
    {"type": "tool-approval-response", "approvalId": "ap-1", "approved": True},
    {"type": "tool-output-available", "toolCallId": RAISED, "output": {"approved": True}},
]


CARD: dict[str, Any] = {"type": "data-budget", "id": "ap-2", "data": {"state": "requested", "subAgent": {"runId": "r"}}}


@pytest.mark.parametrize("chunks", [REQUEST, REQUEST[1:], SETTLED, [*REQUEST, *SETTLED], [CARD], [*REQUEST, CARD]])
def test_a_raised_request_and_its_settling_are_no_attempt_of_the_run(chunks: list[dict[str, Any]]) -> None:
    assert raised_only(chunks)


@pytest.mark.parametrize(
    "chunks",
    [
        [{"type": "start-step"}],  # a step the run opened itself
        [{"type": "start-step"}, {"type": "text-start", "id": "t"}],
        [*REQUEST, {"type": "text-delta", "id": "t", "delta": "x"}],  # the run's own output beside it
        [{"type": "tool-approval-response", "approvalId": "ap-2", "approved": False}],  # the run's own decision
        [{"type": "tool-input-available", "toolCallId": "call-1", "toolName": "save", "input": {}}],
        [{"type": "data-budget", "id": "ap-3", "data": {"state": "requested"}}],  # the run's own budget card
    ],
)
def test_anything_of_the_runs_own_is_an_attempt(chunks: list[dict[str, Any]]) -> None:
    assert not raised_only(chunks)
