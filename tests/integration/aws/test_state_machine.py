"""The real ASL on moto's Step Functions interpreter, handlers in process, DynamoDB on moto.

Each test asserts the persisted end state (run, message parts, tool calls, approvals, events) and
that no tool body ran twice.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest

from stepline.llm.scripted import ScriptedModel
from stepline.local.workflow import SimulatedCrash
from stepline.loop.tools import Tool
from stepline.protocol._json import loads_strict
from stepline.runtime.ending import abort_run
from stepline.runtime.retries import INTERRUPTED, STEP_RETRIES
from stepline.runtime.waits import answer, decide, run_state
from stepline.stack import ASL
from stepline.store.errors import ConcurrentUpdate
from stepline.store.replay import chunks_of
from tests.support.local_aws import LocalAws, local_aws
from tests.support.runs import (
    STOP,
    USER,
    Counted,
    begin,
    billed,
    call_step,
    final_message,
    replayed,
    text_step,
    wait_for_token,
)


def test_a_text_run_completes_with_its_message_events_and_usage() -> None:
    with local_aws(ScriptedModel.from_script([text_step("Hi there.")])) as aws:
        run_id = begin(aws)
        assert aws.wait_execution(run_id) == "SUCCEEDED"
        run = aws.services.store.get_run(USER, run_id)
        assert (run.status, run.finish_reason, run.usage) == (
            "completed",
            "stop",
            {"inputTokens": 5, "outputTokens": 2},
        )
        message = final_message(aws, run_id)
        assert message["status"] == "completed" and message["content"] == "Hi there."
        assert message["metadata"]["runId"] == run_id and message["metadata"]["finishReason"] == "stop"
        assert aws.services.store.get_conversation(USER, run.conversation_id).active_run_id is None
        stream = replayed(aws, run_id)
        assert stream is not None and stream["parts"] == message["parts"]


def test_a_tool_step_then_an_answer_runs_the_tool_once() -> None:
    weather = Counted("weather", {"temperature": 18})
    model = ScriptedModel.from_script([call_step("weather", '{"city":"Paris"}'), text_step("18 degrees.")])
    with local_aws(model, tools=[weather.tool]) as aws:
        run_id = begin(aws)
        assert aws.wait_execution(run_id) == "SUCCEEDED"
        assert weather.runs == 1
        (call,) = aws.services.store.list_tool_calls(USER, run_id)
        assert (call.status, call.output, call.started_at is not None) == ("success", {"temperature": 18}, True)
        parts = final_message(aws, run_id)["parts"]
        assert [p["type"] for p in parts] == ["step-start", "tool-weather", "step-start", "text"]
        assert parts[1]["state"] == "output-available"
        model.assert_consumed()


@pytest.mark.parametrize(("approved", "expected_state"), [(True, "output-available"), (False, "output-denied")])
def test_an_approval_decided_through_the_webhook_resumes_the_same_message(approved: bool, expected_state: str) -> None:
    delete = Counted("delete_file", {"deleted": True})
    model = ScriptedModel.from_script([call_step("delete_file", '{"path":"/tmp/x"}'), text_step("Done.")])
    with local_aws(model, tools=[delete.tool], tool_approval={"delete_file": "user-approval"}) as aws:
        run_id = begin(aws)
        aws.wait_run(USER, run_id, lambda r: r.status == "waiting_approval")
        approval = aws.services.store.get_approval(USER, wait_for_token(aws, "c1"))
        decided = decide(aws.services, USER, approval.approval_id, approved=approved, reason=None if approved else "no")
        assert decided.status == ("approved" if approved else "denied")
        again = decide(aws.services, USER, approval.approval_id, approved=approved, reason=None)
        assert again.status == decided.status  # the same decision again: the stored result
        assert aws.wait_execution(run_id) == "SUCCEEDED"
        assert delete.runs == (1 if approved else 0)
        message = final_message(aws, run_id)
        tool_part = next(p for p in message["parts"] if p["type"] == "tool-delete_file")
        assert tool_part["state"] == expected_state
        assert message["content"] == "Done." and message["status"] == "completed"
        assert [p["type"] for p in message["parts"]].count("tool-delete_file") == 1  # continued in place
        (call,) = aws.services.store.list_tool_calls(USER, run_id)
        assert call.status == ("success" if approved else "denied")
        model.assert_consumed()
        # the cost formula's decided-approval case (S = 2, A = 1, E = 0): 2S + A + 1, S + A + 1
        assert billed(aws, run_id) == (6, 4)


def test_an_expired_approval_reaches_the_model_as_a_denial() -> None:
    delete = Counted("delete_file", {"deleted": True})
    model = ScriptedModel.from_script([call_step("delete_file", '{"path":"/tmp/x"}'), text_step("It timed out.")])
    with local_aws(
        model, tools=[delete.tool], tool_approval={"delete_file": "user-approval"}, approval_timeout_seconds=1
    ) as aws:
        run_id = begin(aws)
        assert aws.wait_execution(run_id, timeout=60) == "SUCCEEDED"
        assert delete.runs == 0
        approval = aws.services.store.get_approval(USER, next(a for a in _approval_ids(aws, run_id)))
        assert approval.status == "expired"
        second_prompt = [m.to_wire() for m in model.calls[1].prompt]
        denial = second_prompt[-1]["content"][0]
        assert denial["output"] == {"type": "execution-denied", "reason": "approval expired"}


def _approval_ids(aws: LocalAws, run_id: str) -> list[str]:
    state = run_state(aws.services, USER, run_id)
    steps = state.steps
    return [
        p["approvalId"]
        for s in steps
        for m in s.response_messages
        for p in m.to_wire()["content"]
        if p.get("type") == "tool-approval-request"
    ]


def test_a_question_waits_for_the_client_and_continues_with_its_answer() -> None:
    ask = Tool(name="ask_user_question", input_schema={"type": "object"})  # client-side: no executor
    model = ScriptedModel.from_script(
        [call_step("ask_user_question", '{"question":"Which city?"}', "q1"), text_step("Paris it is.")]
    )
    with local_aws(model, tools=[ask]) as aws:
        run_id = begin(aws)
        aws.wait_run(USER, run_id, lambda r: r.status == "waiting_user" and r.task_token is not None)
        answer(aws.services, USER, run_id, "q1", output={"answer": "Paris"}, error_text=None)
        assert aws.wait_execution(run_id) == "SUCCEEDED"
        parts = final_message(aws, run_id)["parts"]
        question = next(p for p in parts if p["type"] == "tool-ask_user_question")
        assert (question["state"], question["output"]) == ("output-available", {"answer": "Paris"})
        assert [m.to_wire() for m in model.calls[1].prompt][-1]["content"][0]["output"] == {
            "type": "json",
            "value": {"answer": "Paris"},
        }


def test_a_model_error_before_any_output_is_retried_by_step_functions_and_recorded() -> None:
    flaky = ScriptedModel.from_script(
        [
            # the response's metadata (invisible) opens the step, then the call fails
            {"raise": {"kind": "server"}, "after": 1, "parts": [{"type": "response-metadata", "id": "r"}]},
            text_step("Recovered."),
        ]
    )
    with local_aws(flaky, max_retries=0) as aws:  # the loop does not retry: Step Functions does
        run_id = begin(aws)
        assert aws.wait_execution(run_id) == "SUCCEEDED"
        message = final_message(aws, run_id)
        assert message["content"] == "Recovered."
        assert [(r["reason"], r["attempt"]) for r in message["metadata"]["retries"]] == [("server; step retried", 1)]
        history = aws.workflow.history(run_id)
        retries = Counter(e["type"] for e in history)["TaskFailed"]
        assert retries == 1
        # the cost formula's R: a retry is one more invocation (S = 1: 2 + R) but enters no state,
        # and it adds three history events (scheduled, started, failed) to a text run's 14
        assert billed(aws, run_id) == (3, 2 + retries)
        assert len(history) == 14 + 3 * retries
        # the failed attempt's (invisible) step is reset, and its error is not streamed: the stock
        # client stops reading at an `error`, and this run went on
        kinds = [c["type"] for c in chunks_of(aws.services.store.events_after(USER, run_id, 0, now=0))]
        assert "error" not in kinds and "reset-step" in kinds and kinds[-1] == "finish"


def test_step_functions_retries_a_step_only_as_often_as_the_asl_allows_and_records_each() -> None:
    asl = loads_strict(ASL.read_text())
    (retrier,) = [r for r in asl["States"]["ModelStep"]["Retry"] if "TransientModelError" in r["ErrorEquals"]]
    assert retrier["ErrorEquals"] == ["TransientModelError"]  # its own budget, not shared with crashes
    assert retrier["MaxAttempts"] == STEP_RETRIES
    down = ScriptedModel.from_script([{"raise": {"kind": "overloaded"}, "parts": []}] * (STEP_RETRIES + 2))
    with local_aws(down, max_retries=0) as aws:
        run_id = begin(aws)
        assert aws.wait_execution(run_id, timeout=60) == "FAILED"
        assert len(down.calls) == STEP_RETRIES + 1  # every retry asked for happened, and no more
        message = final_message(aws, run_id)
        assert [r["attempt"] for r in message["metadata"]["retries"]] == list(range(1, STEP_RETRIES + 1))
        assert message["metadata"]["error"]["code"] == "overloaded"
        run = aws.services.store.get_run(USER, run_id)
        assert run.error is not None and run.error["code"] == "overloaded"


def test_a_model_error_after_visible_text_keeps_the_partial_text_and_is_not_retried() -> None:
    flaky = ScriptedModel.from_script(
        [
            {
                "raise": {"kind": "server", "status": 500},
                "after": 2,
                "parts": [{"type": "text-start", "id": "t"}, {"type": "text-delta", "id": "t", "delta": "Half"}],
            },
            text_step("never asked"),
        ]
    )
    with local_aws(flaky) as aws:
        run_id = begin(aws)
        assert aws.wait_execution(run_id) == "FAILED"
        assert len(flaky.calls) == 1  # neither the loop nor Step Functions asked again
        assert "TaskFailed" not in [e["type"] for e in aws.workflow.history(run_id)]
        message = final_message(aws, run_id)
        assert message["status"] == "failed" and message["content"] == "Half"
        assert message["metadata"]["error"]["code"] == "server" and "retries" not in message["metadata"]
        kinds = [c["type"] for c in chunks_of(aws.services.store.events_after(USER, run_id, 0, now=0))]
        assert "reset-step" not in kinds and kinds.count("text-delta") >= 1 and kinds[-1] == "error"


def test_a_permanent_model_error_fails_the_run_cleanly() -> None:
    broken = ScriptedModel.from_script([{"raise": {"kind": "auth", "status": 401}, "parts": []}])
    with local_aws(broken) as aws:
        run_id = begin(aws)
        assert aws.wait_execution(run_id) == "FAILED"
        run = aws.services.store.get_run(USER, run_id)
        assert run.status == "failed" and run.error is not None
        message = final_message(aws, run_id)
        assert message["status"] == "failed" and message["metadata"]["error"]["message"]
        stream = aws.services.store.events_after(USER, run_id, 0, now=aws.services.clock())
        assert stream[-1].chunks[-1] == {
            "type": "error",
            "errorText": "An error occurred.",
        }  # no detail leaks to clients
        assert [c["type"] for c in chunks_of(stream)].count("error") == 1, "one error: the run's, at its end"


def test_abort_stops_the_run_and_marks_it_aborted() -> None:
    slow = ScriptedModel.from_script(
        [
            {
                "delayMs": 200,
                "parts": [
                    {"type": "text-start", "id": "t"},
                    *({"type": "text-delta", "id": "t", "delta": "x"} for _ in range(50)),
                    {"type": "text-end", "id": "t"},
                    STOP,
                ],
            }
        ]
    )
    with local_aws(slow) as aws:
        run_id = begin(aws)
        aws.wait_run(USER, run_id, lambda r: r.status == "running")
        abort_run(aws.services, USER, run_id)
        assert aws.wait_execution(run_id) in ("ABORTED", "SUCCEEDED")
        run = aws.services.store.get_run(USER, run_id)
        assert run.status == "aborted" and run.cancel_reason == "user_cancelled"
        message = final_message(aws, run_id)
        assert message["status"] == "aborted" and "abort" in message["metadata"]


class LosingEnds:
    """The real store, where ending the run loses to the streaming step's appends for as long as the
    step streams (what a busy machine does to an abort racing a fast model): the first three ends
    lose whatever the timing (a loaded machine may leave the step half a second without an append),
    then every end attempted less than half a second after the step's last append."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.lost = 0
        self._appended = time.monotonic()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def append_events(self, *args: Any, **kwargs: Any) -> Any:
        self._appended = time.monotonic()
        return self._store.append_events(*args, **kwargs)

    def finish_run(self, user_id: str, run_id: str, finish: Any) -> Any:
        if finish.status == "aborted" and (self.lost < 3 or time.monotonic() - self._appended < 0.5):
            self.lost += 1
            raise ConcurrentUpdate("a step appended meanwhile")
        return self._store.finish_run(user_id, run_id, finish)


def test_abort_wins_even_when_every_end_loses_to_the_streaming_step() -> None:
    slow = ScriptedModel.from_script(
        [
            {
                "delayMs": 100,
                "parts": [
                    {"type": "text-start", "id": "t"},
                    *({"type": "text-delta", "id": "t", "delta": "x"} for _ in range(200)),
                    {"type": "text-end", "id": "t"},
                    STOP,
                ],
            }
        ]
    )
    with local_aws(slow) as aws:
        losing = LosingEnds(aws.services.store)
        aws.services.store = losing  # type: ignore[assignment]
        run_id = begin(aws)
        aws.wait_run(USER, run_id, lambda r: r.status == "running")
        result = abort_run(aws.services, USER, run_id)
        run = aws.wait_run(USER, run_id, lambda r: r.status in ("aborted", "completed"), timeout=30)
        assert (result["status"], run.status, run.cancel_reason) == ("aborted", "aborted", "user_cancelled")
        assert losing.lost >= 3  # the end was tried again past every loss (three forced, more while it streamed)
        message = final_message(aws, run_id)
        assert message["status"] == "aborted"
        assert len("".join(p.get("text", "") for p in message["parts"])) < 200  # stopped mid-answer


class Crash(SimulatedCrash):
    """Stands for the step's process dying: nothing in it catches this; Step Functions sees
    `Lambda.Unknown` and retries."""

    lambda_error_type = "Lambda.Unknown"


class FaultyStore:
    """The real store, with one crash injected right after (or before) a chosen write."""

    def __init__(self, store: Any, point: str) -> None:
        self._store = store
        self.point = point
        self.crashed = False

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._store, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            if not self.crashed and self.point == "model finished" and name == "claim_tool_call":
                self._crash()
            result = attribute(*args, **kwargs)
            crash_after = {
                "tool claimed": "claim_tool_call",
                "tool done": "record_tool_outcome",
                "step persisted": "save_step",
            }
            if not self.crashed and crash_after.get(self.point) == name:
                self._crash()
            return result

        return call

    def _crash(self) -> None:
        self.crashed = True
        raise Crash(f"process died at: {self.point}")


def run_with_fault(point: str | None) -> tuple[dict[str, Any], int, list[str]]:
    weather = Counted("weather", {"temperature": 18})
    model = ScriptedModel.from_script([call_step("weather", '{"city":"Paris"}'), text_step("18 degrees.")])
    if point in ("model finished", "tool claimed", "tool done"):
        # The step dies before it is saved, so its retry calls the model again: the script answers
        # that repeated call the same way. A step that died after being saved is not re-run, so the
        # plain script must be enough (a re-run would take the text answer as step one).
        model.steps = [model.steps[0], *model.steps]
    with local_aws(model, tools=[weather.tool]) as aws:
        if point is not None:
            aws.services.store = FaultyStore(aws.services.store, point)  # type: ignore[assignment]
        run_id = begin(aws)
        assert aws.wait_execution(run_id, timeout=60) == "SUCCEEDED"
        message = final_message(aws, run_id)
        stream = replayed(aws, run_id)
        assert stream is not None and stream["parts"] == message["parts"]  # the event log agrees with the snapshot
        history = [e["type"] for e in aws.workflow.history(run_id)]
        return message, weather.runs, history


@pytest.mark.parametrize("point", ["model finished", "tool claimed", "tool done", "step persisted"])
def test_a_step_killed_at_any_point_is_retried_to_the_same_message_without_rerunning_the_tool(point: str) -> None:
    clean, clean_runs, _ = run_with_fault(None)
    faulted, runs, history = run_with_fault(point)
    assert "TaskFailed" in history  # the crash really happened and Step Functions retried
    assert runs == clean_runs == 1
    assert faulted["parts"] == clean["parts"]
    # an interrupted step is redone from its checkpoint (the durable promise), and that is a retry
    redone = [r["reason"] for r in faulted["metadata"].get("retries", [])]
    assert redone == ([] if point == "step persisted" else [INTERRUPTED])
    assert "retries" not in clean["metadata"]
    assert faulted["content"] == clean["content"] == "18 degrees."


@pytest.mark.parametrize(
    ("steps", "approval", "timeout", "counts"),
    [
        ([text_step("Hi.")], False, 3600, (1, 0, 0)),
        ([call_step("delete_file", '{"path":"/x"}'), text_step("Done.")], False, 3600, (2, 0, 0)),
        ([call_step("delete_file", '{"path":"/x"}'), text_step("Done.")], True, 1, (2, 1, 1)),
    ],
    ids=["text", "tool step", "expired approval"],
)
def test_transitions_and_invocations_follow_the_cost_formula(
    steps: list[list[dict[str, Any]]], approval: bool, timeout: int, counts: tuple[int, int, int]
) -> None:
    """docs/architecture.md prices a run as T = 2S + A + E + 1 transitions, S + A + E + 1 invocations."""
    s, a, e = counts
    delete = Counted("delete_file", {"deleted": True})
    policy = {"delete_file": "user-approval"} if approval else None
    model = ScriptedModel.from_script(steps)
    with local_aws(model, tools=[delete.tool], tool_approval=policy, approval_timeout_seconds=timeout) as aws:
        run_id = begin(aws)
        assert aws.wait_execution(run_id, timeout=60) == "SUCCEEDED"
        assert len(model.calls) == s
        assert billed(aws, run_id) == (2 * s + a + e + 1, s + a + e + 1)
        # docs/architecture.md sizes continue-as-new on "under 40 history events per step"
        assert len(aws.workflow.history(run_id)) < 40 * s


def test_a_long_run_continues_as_new_executions_and_ends_as_one_message() -> None:
    weather = Counted("weather", {"temperature": 18})
    calls = [call_step("weather", f'{{"city":"C{i}"}}', call_id=f"c{i}") for i in range(4)]
    model = ScriptedModel.from_script([*calls, text_step("All four.")])
    with local_aws(model, tools=[weather.tool], steps_per_execution=2) as aws:
        run_id = begin(aws)
        # steps 1-2 in the first execution, 3-4 in the second, the answer in the third
        assert aws.wait_execution(run_id) == "SUCCEEDED"
        assert aws.wait_execution(run_id, generation=1) == "SUCCEEDED"
        assert aws.wait_execution(run_id, generation=2) == "SUCCEEDED"
        entered = [
            e["stateEnteredEventDetails"]["name"] for e in aws.workflow.history(run_id) if e["type"].endswith("Entered")
        ]
        assert entered[-2:] == ["ContinueAsNew", "ContinuedAsNew"] and "FinalizeRun" not in entered
        started = aws.workflow.history(run_id, generation=1)[0]["executionStartedEventDetails"]["input"]
        assert loads_strict(started) == {
            "userId": USER,
            "runId": run_id,
            "approvalTimeoutSeconds": 3600,
            "generation": 1,
            "firstStep": 2,
            "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID": aws.workflow.execution_arn(run_id),
        }
        assert weather.runs == 4
        message = final_message(aws, run_id)
        assert [p["type"] for p in message["parts"]].count("tool-weather") == 4
        assert message["content"] == "All four." and message["status"] == "completed"
        stream = replayed(aws, run_id)
        assert stream is not None and stream["parts"] == message["parts"]
        model.assert_consumed()


def test_abort_stops_whichever_generation_is_running() -> None:
    model = ScriptedModel.from_script(
        [call_step("delete_file", '{"path":"/a"}', call_id="a"), call_step("delete_file", '{"path":"/b"}')]
    )
    delete = Counted("delete_file", {"deleted": True})
    options: dict[str, Any] = {"tool_approval": {"delete_file": "user-approval"}, "steps_per_execution": 1}
    with local_aws(model, tools=[delete.tool], **options) as aws:
        run_id = begin(aws)
        # One step per execution: each step's approval wait happens in the next generation.
        assert aws.wait_execution(run_id) == "SUCCEEDED"
        first = wait_for_token(aws, "a")
        decide(aws.services, USER, first, approved=True, reason=None)
        assert aws.wait_execution(run_id, generation=1) == "SUCCEEDED"
        wait_for_token(aws, "c1")
        assert aws.workflow.status(run_id, generation=2) == "RUNNING"
        client = aws.services.orchestrator._client  # type: ignore[union-attr]  # pyright: ignore
        stopped: list[str] = []
        stop = client.stop_execution
        client.stop_execution = lambda **kw: (stopped.append(kw["executionArn"]), stop(**kw))[1]
        abort_run(aws.services, USER, run_id)
        # Only the running generation is stopped. (moto leaves an execution that waits on a task
        # token RUNNING after StopExecution; AWS aborts it at once.)
        assert stopped == [aws.workflow.execution_arn(run_id, generation=2)]
        run = aws.services.store.get_run(USER, run_id)
        assert run.status == "aborted" and run.cancel_reason == "user_cancelled" and delete.runs == 1
