"""Why a run failed, as the FailRun handler reads it from the state machine's input."""

from __future__ import annotations

import json

import pytest

from stepline.runtime.handle_end import step_error

CAUSE = json.dumps(
    {"errorType": "KeyError", "errorMessage": "'sk-ant-api03-secretsecret' _ProviderStreamError", "stackTrace": ["x"]}
)


@pytest.mark.parametrize(
    ("state_input", "expected"),
    [
        # a Lambda error caught by the ASL: a fixed sentence by its name, never its Cause
        ({"error": {"Error": "Lambda.Unknown", "Cause": CAUSE}}, ("the step's function failed", "step_crashed")),
        ({"error": {"Error": "KeyError", "Cause": CAUSE}}, ("the step failed unexpectedly", "step_failed")),
        ({"error": {"Error": "States.TaskFailed", "Cause": "[1, 2]"}}, ("the step failed unexpectedly", "step_failed")),
        ({"error": {"Error": "States.Timeout", "Cause": "not json at all"}}, ("the step timed out", "step_timeout")),
        (
            {"error": {"Error": "TransientModelError", "Cause": CAUSE}},
            ("the model stayed unavailable after the step's retries", "model_unavailable"),
        ),
        ({"error": {"Error": "States.Runtime"}}, ("the step failed unexpectedly", "step_failed")),
        # the step's own failure (the worker has already ended the run with its message)
        ({"step": {"detail": {"error": {"code": "rate_limit"}}}}, ("the run failed", "rate_limit")),
        ({}, ("the run failed", None)),
    ],
)
def test_the_failure_reason_is_read_from_either_source(
    state_input: dict[str, object], expected: tuple[str, str | None]
) -> None:
    assert step_error(state_input) == expected  # type: ignore[arg-type]


def test_no_cause_text_or_class_name_reaches_the_run() -> None:
    for name in ("Lambda.Unknown", "KeyError", "States.TaskFailed", "TransientModelError", "ValidationError"):
        message, code = step_error({"error": {"Error": name, "Cause": CAUSE}})
        assert "sk-ant" not in message and "Error" not in message and "Error" not in (code or "")
