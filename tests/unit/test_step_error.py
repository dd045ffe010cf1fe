"""Why a run failed, as the FailRun handler reads it from the state machine's input."""

from __future__ import annotations

import json

import pytest

from stepline.runtime.handlers import _step_error  # pyright: ignore[reportPrivateUsage]


@pytest.mark.parametrize(
    ("state_input", "expected"),
    [
        # a Lambda error caught by the ASL: its message, never the stack trace
        (
            {"error": {"Error": "Lambda.Unknown", "Cause": json.dumps({"errorMessage": "boom", "stackTrace": ["x"]})}},
            ("boom", "Lambda.Unknown"),
        ),
        # a Cause that is JSON but not an object (was an AttributeError that stranded the run)
        ({"error": {"Error": "States.TaskFailed", "Cause": "[1, 2]"}}, ("States.TaskFailed", "States.TaskFailed")),
        ({"error": {"Error": "States.Timeout", "Cause": "not json at all"}}, ("not json at all", "States.Timeout")),
        ({"error": {"Error": "States.Runtime"}}, ("States.Runtime", "States.Runtime")),
        # the step's own permanent failure, routed by the Choice
        ({"step": {"detail": {"error": {"message": "quota", "code": "429"}}}}, ("quota", "429")),
        ({}, ("the run failed", None)),
    ],
)
def test_the_failure_reason_is_read_from_either_source(
    state_input: dict[str, object], expected: tuple[str, str | None]
) -> None:
    assert _step_error(state_input) == expected  # type: ignore[arg-type]
