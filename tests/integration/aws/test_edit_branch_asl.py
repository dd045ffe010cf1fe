"""Edits while a run works, and edit/regenerate/switch through the real AI SDK client, on the real
ASL: moto's Step Functions interpreter runs each run, the same handlers run each state (FinalizeRun
and FailRun start a waiting edit's branch), DynamoDB is moto's.

The scenarios are `tests/control/test_edit_while_working.py`'s and
`tests/e2e/test_branches_ai_sdk.py`'s, collected here again with a server on the `moto` engine.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.control.test_edit_while_working import (
    test_a_queued_edit_whose_point_left_the_active_branch_is_dropped_and_its_stream_ends_aborted,
    test_an_edit_under_interrupt_stops_the_run_and_starts_the_edited_branch,
    test_an_edit_under_queue_waits_for_the_run_to_end,
    test_an_edit_under_reject_is_a_409_and_changes_nothing,
)
from tests.e2e.test_branches_ai_sdk import test_edit_regenerate_and_switch_through_the_sdks_own_calls
from tests.support.server import Running, config, running

__all__ = [
    "test_a_queued_edit_whose_point_left_the_active_branch_is_dropped_and_its_stream_ends_aborted",
    "test_an_edit_under_interrupt_stops_the_run_and_starts_the_edited_branch",
    "test_an_edit_under_queue_waits_for_the_run_to_end",
    "test_an_edit_under_reject_is_a_409_and_changes_nothing",
    "test_edit_regenerate_and_switch_through_the_sdks_own_calls",
]

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    with running(config(STEPLINE_AGENT="tests.support.control_agents:AGENT"), engine="moto") as live:
        yield live
