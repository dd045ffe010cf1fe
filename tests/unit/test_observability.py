"""Powertools around a worker: structured logs and outcome metrics with ids only."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from stepline.aws.observability import instrument


@dataclass
class Context:
    function_name: str = "stepline-model-step"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:stepline-model-step"
    aws_request_id: str = "req-1"


def _lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


@pytest.fixture(autouse=True)
def powertools_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "Stepline")
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")  # no X-Ray daemon here


def test_an_outcome_is_logged_and_counted_with_ids_only(capsys: pytest.CaptureFixture[str]) -> None:
    def model_step(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"userId": event["userId"], "runId": event["runId"], "next": "continue", "steps": 1}

    # Names no other test uses: Powertools keeps one logger per service name, bound to the stdout
    # of the test that made it first.
    handler = instrument("stepline-observed-step", model_step)
    event = {"userId": "alice", "runId": "run-9", "note": "sk-secret-value"}
    assert handler(event, Context())["next"] == "continue"
    records = _lines(capsys.readouterr().out)
    log = next(r for r in records if r.get("message") == "worker done")
    assert (log["run_id"], log["function_request_id"], log["outcome"]) == ("run-9", "req-1", "continue")
    emf = next(r for r in records if "_aws" in r)
    (directive,) = emf["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "Stepline" and directive["Metrics"] == [{"Name": "ObservedStep", "Unit": "Count"}]
    assert emf["ObservedStep"] == [1.0] and emf["outcome"] == "continue"
    assert all("sk-secret-value" not in json.dumps(r) for r in records)  # the event is never logged


def test_a_failure_is_counted_and_reraised_without_its_message(capsys: pytest.CaptureFixture[str]) -> None:
    def fail_run(event: dict[str, Any], context: Any) -> dict[str, Any]:
        raise RuntimeError("the user's private text")

    handler = instrument("stepline-observed-failure", fail_run)
    with pytest.raises(RuntimeError):
        handler({"userId": "alice", "runId": "run-9"}, Context(function_name="stepline-observed-failure"))
    records = _lines(capsys.readouterr().out)
    warning = next(r for r in records if r.get("message") == "worker failed")
    assert warning["error_type"] == "RuntimeError" and warning["level"] == "WARNING"
    emf = next(r for r in records if "_aws" in r)
    assert emf["ObservedFailure"] == [1.0] and emf["outcome"] == "error"
    assert all("private text" not in json.dumps(r) for r in records)


def test_what_a_worker_logs_is_masked_on_the_way_out(capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    def model_step(event: dict[str, Any], context: Any) -> dict[str, Any]:
        # a slip a reviewer could miss: a key quoted in a message, a secret under a sensitive name
        logging.getLogger("stepline-observed-masking").info(
            "calling with sk-ant-api03-abcdefghijklmnop", extra={"api_key": "plain-value"}
        )
        return {"next": "continue"}

    handler = instrument("stepline-observed-masking", model_step)
    handler({"userId": "alice", "runId": "run-9"}, Context(function_name="stepline-observed-masking"))
    out = capsys.readouterr().out
    assert "calling with *****" in out
    assert "sk-ant-api03" not in out and "plain-value" not in out


def test_a_step_with_output_reports_its_time_to_first_token(capsys: pytest.CaptureFixture[str]) -> None:
    def model_step(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"userId": "alice", "runId": "run-9", "next": "finished", "steps": 1, "firstOutputMs": 420}

    handler = instrument("stepline-observed-ttft", model_step)
    handler({"userId": "alice", "runId": "run-9"}, Context(function_name="stepline-observed-ttft"))
    blobs = [r for r in _lines(capsys.readouterr().out) if "_aws" in r]
    (ttft,) = [b for b in blobs if "TimeToFirstToken" in b]
    (directive,) = ttft["_aws"]["CloudWatchMetrics"]
    assert directive["Metrics"] == [{"Name": "TimeToFirstToken", "Unit": "Milliseconds"}]
    assert directive["Dimensions"] == [["service"]] and ttft["service"] == "stepline-observed-ttft"
    assert ttft["TimeToFirstToken"] == [420.0]


def test_log_lines_carry_the_trace_and_span_of_the_invocation(capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    from stepline.tracing.log_context import bind_trace

    trace_id, span_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"

    def model_step(event: dict[str, Any], context: Any) -> dict[str, Any]:
        with bind_trace(trace_id, span_id, "run-9"):  # what the traced handler does around the worker
            logging.getLogger("stepline-observed-trace").warning("inside the span")
        return {"next": "continue"}

    handler = instrument("stepline-observed-trace", model_step)
    handler({"userId": "alice", "runId": "run-9"}, Context(function_name="stepline-observed-trace"))
    records = _lines(capsys.readouterr().out)
    inside = next(r for r in records if r.get("message") == "inside the span")
    done = next(r for r in records if r.get("message") == "worker done")
    for line in (inside, done):
        assert (line["trace_id"], line["span_id"], line["run_id"]) == (trace_id, span_id, "run-9")

    def untraced(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"next": "continue"}

    # An invocation outside any span (tracing off) logs no ids, and none of an earlier invocation's.
    instrument("stepline-observed-trace", untraced)({"userId": "alice", "runId": "run-10"}, Context())
    later = next(r for r in _lines(capsys.readouterr().out) if r.get("message") == "worker done")
    assert later["run_id"] == "run-10" and "trace_id" not in later
