"""Edit and branch over HTTP on the real ASL: moto's Step Functions interpreter runs each branch's
run, the same handlers run each state, DynamoDB is moto's.

The scenarios are `tests/api/test_branches_api.py`'s (the scripted demo with a slow answer),
collected here again with a server on the `moto` engine.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.api.test_branches_api import (
    test_a_regeneration_of_an_earlier_answer_branches_after_its_question,
    test_an_edit_of_an_earlier_message_branches_and_the_old_turns_leave_the_model_context,
    test_an_edit_while_the_run_works_is_a_409_under_reject_and_two_racing_edits_make_one_branch,
    test_bad_edits_are_refused_naming_the_field_and_write_nothing,
    test_switching_branches_restores_the_old_one_whole_and_back,
)
from tests.api.test_chat_api import slow_demo_model
from tests.support.server import Running, config, running

__all__ = [
    "test_a_regeneration_of_an_earlier_answer_branches_after_its_question",
    "test_an_edit_of_an_earlier_message_branches_and_the_old_turns_leave_the_model_context",
    "test_an_edit_while_the_run_works_is_a_409_under_reject_and_two_racing_edits_make_one_branch",
    "test_bad_edits_are_refused_naming_the_field_and_write_nothing",
    "test_switching_branches_restores_the_old_one_whole_and_back",
]

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    model = slow_demo_model(tmp_path_factory)
    with running(config(model, tokens={"tok-alice": "alice", "tok-bob": "bob"}), engine="moto") as live:
        yield live
