"""Forking a run on the real ASL: moto's Step Functions interpreter runs the state machine of the
fork (replayed steps, then the live ones), the same handlers run each state, DynamoDB is moto's.

The scenarios are `tests/api/test_fork_api.py`'s, collected here again with a server on the `moto`
engine.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.api.test_fork_api import (
    test_a_changed_answer_to_a_question_forks_after_the_question,
    test_a_fork_turns_a_denial_into_an_approval_with_no_model_or_tool_call_before_the_fork,
    test_a_run_still_working_is_not_forked,
    test_bad_forks_are_refused_naming_what_is_wrong_and_write_nothing,
)
from tests.support.server import Running, config, running

__all__ = [
    "test_a_changed_answer_to_a_question_forks_after_the_question",
    "test_a_fork_turns_a_denial_into_an_approval_with_no_model_or_tool_call_before_the_fork",
    "test_a_run_still_working_is_not_forked",
    "test_bad_forks_are_refused_naming_what_is_wrong_and_write_nothing",
]

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    cfg = config(tokens={"tok-alice": "alice", "tok-bob": "bob"}, STEPLINE_AGENT="tests.support.fork_agents:AGENT")
    with running(cfg, engine="moto") as live:
        yield live
