"""The new-message policies on the real ASL: moto's Step Functions interpreter runs the state
machine, the same handlers run each state (ModelStep reads the steering messages, FinalizeRun and
FailRun start the queued turn), DynamoDB is moto's.

The scenarios are `tests/control/test_new_message.py`'s, collected here again with a server on
the `moto` engine.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.control.test_new_message import (
    test_a_new_message_closes_a_waiting_approval_with_the_reason_recorded,
    test_a_queued_message_can_be_cancelled_and_its_stream_ends_aborted,
    test_a_steer_the_run_never_reached_becomes_the_next_turn,
    test_interrupt_mid_stream_cuts_the_model_call_keeps_the_text_and_answers_the_new_message,
    test_interrupt_mid_tool_lets_the_tool_finish_once_then_answers,
    test_queue_answers_two_messages_in_order_each_stream_starting_with_its_run,
    test_reject_is_a_409_that_says_what_runs,
    test_steer_reaches_the_model_at_the_next_step_in_the_same_assistant_message,
)
from tests.support.server import Running, config, running

__all__ = [
    "test_a_new_message_closes_a_waiting_approval_with_the_reason_recorded",
    "test_a_queued_message_can_be_cancelled_and_its_stream_ends_aborted",
    "test_a_steer_the_run_never_reached_becomes_the_next_turn",
    "test_interrupt_mid_stream_cuts_the_model_call_keeps_the_text_and_answers_the_new_message",
    "test_interrupt_mid_tool_lets_the_tool_finish_once_then_answers",
    "test_queue_answers_two_messages_in_order_each_stream_starting_with_its_run",
    "test_reject_is_a_409_that_says_what_runs",
    "test_steer_reaches_the_model_at_the_next_step_in_the_same_assistant_message",
]

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    with running(config(STEPLINE_AGENT="tests.support.control_agents:AGENT"), engine="moto") as live:
        yield live
