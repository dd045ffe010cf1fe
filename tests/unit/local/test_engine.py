"""`LocalStepFunctions` runs the real ASL file: each path of it, with scripted handlers in place of the workers.

The handlers stand for the five worker functions (their names are the ASL's): a model step answers
each call with the next `next` of its script (or raises), the others record that they ran. The
end-to-end behaviour over the real workers is tested through the dev server (tests/api, which runs
on this engine) and `tests/api/test_many_waiting_runs.py`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import Any

import pytest

from stepline.local import asl
from stepline.local.engine import LocalStepFunctions
from stepline.local.workflow import SimulatedCrash
from stepline.protocol._json import loads_strict
from stepline.runtime.executions import Execution
from stepline.runtime.handling import TransientModelError
from stepline.stack import ASL

USER, RUN = "u1", "r1"


class Crash(SimulatedCrash):
    lambda_error_type = "Lambda.Unknown"


class Workers:
    """The five functions, scripted: `steps` is what each ModelStep call returns or raises."""

    def __init__(self, steps: list[dict[str, Any] | BaseException]) -> None:
        self.steps = steps
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.tokens: list[str] = []
        self.before_await: Callable[[str], None] | None = None
        self.lock = threading.Lock()

    def routes(self) -> dict[str, Callable[[dict[str, Any], Any], dict[str, Any]]]:
        def model_step(event: dict[str, Any], context: Any) -> dict[str, Any]:
            with self.lock:
                self.calls.append(("model", event))
                step = self.steps.pop(0)
            if isinstance(step, BaseException):
                raise step
            return step

        def await_input(event: dict[str, Any], context: Any) -> dict[str, Any]:
            if self.before_await is not None:
                self.before_await(event["taskToken"])
            with self.lock:
                self.calls.append(("await", event))
                self.tokens.append(event["taskToken"])
            return {}

        def recorder(name: str) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
            def record(event: dict[str, Any], context: Any) -> dict[str, Any]:
                with self.lock:
                    self.calls.append((name, event))
                return {}

            return record

        return {
            "stepline-model-step": model_step,
            "stepline-await-input": await_input,
            "stepline-expire-input": recorder("expire"),
            "stepline-finalize-run": recorder("finalize"),
            "stepline-fail-run": recorder("fail"),
        }

    def kinds(self) -> list[str]:
        with self.lock:
            return [kind for kind, _ in self.calls]


FINISHED: dict[str, Any] = {"next": "finished"}


@contextmanager
def engine(workers: Workers) -> Generator[LocalStepFunctions]:
    running = LocalStepFunctions(workers.routes(), approval_timeout_seconds=3600, workers=2)
    try:
        yield running
    finally:
        running.close()


def until(condition: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, "the condition never came"
        time.sleep(0.005)
    return value


def ended(machine: LocalStepFunctions, generation: int = 0) -> Execution:
    def done() -> Execution | None:
        found = machine.latest_execution(RUN)
        return found if found is not None and found.generation >= generation and found.status != "RUNNING" else None

    return until(done)


def test_a_run_steps_until_finished_then_finalizes() -> None:
    workers = Workers([{"next": "continue"}, {"next": "finished"}])
    with engine(workers) as machine:
        machine.start_run(USER, RUN)
        assert ended(machine) == Execution(0, "SUCCEEDED")
    assert workers.kinds() == ["model", "model", "finalize"]
    assert workers.calls[0][1] == {"userId": USER, "runId": RUN, "firstStep": 0}


def test_a_step_nobody_watched_sends_the_next_to_the_unwatched_function_which_runs_the_same_handler() -> None:
    # The engine's context names the function a call reached: the unwatched one shares the handler.
    workers = Workers([{"next": "continue", "watched": False}, {"next": "continue", "watched": True}, FINISHED])
    reached: list[str] = []
    routes = workers.routes()
    step = routes["stepline-model-step"]

    def noting(event: dict[str, Any], context: Any) -> dict[str, Any]:
        reached.append(context.function_name)
        return step(event, context)

    running = LocalStepFunctions({**routes, "stepline-model-step": noting}, approval_timeout_seconds=3600, workers=2)
    try:
        running.start_run(USER, RUN)
        assert ended(running) == Execution(0, "SUCCEEDED")
    finally:
        running.close()
    assert reached == ["stepline-model-step", "stepline-model-step-unwatched", "stepline-model-step"]
    assert workers.kinds() == ["model", "model", "model", "finalize"]


def test_a_parked_run_goes_on_when_resumed_and_a_token_works_once() -> None:
    waits = {"next": "await-approval", "waitSeconds": 3600}
    workers = Workers([waits, {"next": "finished"}])
    with engine(workers) as machine:
        machine.start_run(USER, RUN)
        (token,) = until(lambda: workers.tokens)
        assert machine.running() == 1 and machine.latest_execution(RUN) == Execution(0, "RUNNING")
        assert machine.resume(token) is True
        assert machine.resume(token) is False  # used
        assert machine.resume("never-given") is False
        assert ended(machine).status == "SUCCEEDED"
    assert workers.kinds() == ["model", "await", "model", "finalize"]


def test_a_token_used_before_its_lambda_returns_still_resumes_the_run() -> None:
    workers = Workers([{"next": "await-client", "waitSeconds": 3600}, {"next": "finished"}])
    with engine(workers) as machine:
        workers.before_await = lambda token: results.append(machine.resume(token))
        results: list[bool] = []
        machine.start_run(USER, RUN)
        assert ended(machine).status == "SUCCEEDED"
    assert results == [True]
    assert workers.kinds() == ["model", "await", "model", "finalize"]


def test_a_wait_that_times_out_expires_the_input_and_steps_again() -> None:
    workers = Workers([{"next": "await-approval", "waitSeconds": 0}, {"next": "finished"}])
    with engine(workers) as machine:
        machine.start_run(USER, RUN)
        assert ended(machine).status == "SUCCEEDED"
        assert machine.resume(workers.tokens[0]) is False  # expired
    assert workers.kinds() == ["model", "await", "expire", "model", "finalize"]


def test_a_transient_error_is_retried_and_a_crash_fails_the_run_after_its_retries() -> None:
    workers = Workers([TransientModelError("down"), {"next": "finished"}])
    with engine(workers) as machine:
        machine.start_run(USER, RUN)
        assert ended(machine).status == "SUCCEEDED"
    assert workers.kinds() == ["model", "model", "finalize"]


def test_an_error_no_rule_retries_is_caught_into_fail_run_with_its_name() -> None:
    workers = Workers([ValueError("boom")])
    with engine(workers) as machine:
        machine.start_run(USER, RUN)
        failed = ended(machine)
        assert (failed.status, failed.error) == ("FAILED", "RunFailed")
    kind, event = workers.calls[-1]
    assert kind == "fail" and event["input"]["error"]["Error"] == "ValueError"
    assert loads_strict(event["input"]["error"]["Cause"])["errorMessage"] == "boom"


def test_a_crash_reaches_the_asl_as_lambda_unknown() -> None:
    workers = Workers([Crash("killed"), {"next": "finished"}])
    with engine(workers) as machine:
        machine.start_run(USER, RUN)
        assert ended(machine).status == "SUCCEEDED"  # "Lambda.Unknown" is retried by ModelStep's rule
    assert workers.kinds() == ["model", "model", "finalize"]


def test_continue_as_new_starts_the_next_generation_with_the_step_cursor() -> None:
    workers = Workers([{"next": "continue-as-new", "steps": 7}, {"next": "finished"}])
    with engine(workers) as machine:
        machine.start_run(USER, RUN)
        assert ended(machine, generation=1) == Execution(1, "SUCCEEDED")
    assert workers.calls[1][1] == {"userId": USER, "runId": RUN, "firstStep": 7}
    assert workers.kinds() == ["model", "model", "finalize"]


def test_stop_ends_a_parked_run_at_once_and_a_second_start_is_ignored() -> None:
    workers = Workers([{"next": "await-approval", "waitSeconds": 3600}])
    with engine(workers) as machine:
        machine.start_run(USER, RUN)
        (token,) = until(lambda: workers.tokens)
        machine.stop_run(USER, RUN)
        assert machine.latest_execution(RUN) == Execution(0, "ABORTED", None, "aborted by the user")
        assert machine.resume(token) is False and machine.running() == 0
        machine.start_run(USER, RUN)  # the name is taken, as on Step Functions
        assert machine.latest_execution(RUN) == Execution(0, "ABORTED", None, "aborted by the user")
    assert workers.kinds() == ["model", "await"]


def test_the_real_asl_is_accepted_and_a_state_it_cannot_run_is_refused() -> None:
    definition = loads_strict(ASL.read_text())
    asl.check_definition(definition)
    definition["States"]["Pause"] = {"Type": "Wait", "Seconds": 1, "Next": "ModelStep"}
    with pytest.raises(ValueError, match="Pause: type Wait"):
        asl.check_definition(definition)
    definition["States"].pop("Pause")
    definition["States"]["ModelStep"]["OutputPath"] = "$.x"
    with pytest.raises(ValueError, match="OutputPath"):
        asl.check_definition(definition)


def test_the_route_choice_rules_and_their_guard() -> None:
    route = loads_strict(ASL.read_text())["States"]["Route"]

    def to(step: dict[str, Any]) -> str:
        return asl.next_choice(route, {"step": {"next": step["next"], "detail": step}}, {})

    assert to({"next": "continue", "watched": False}) == "ModelStepUnwatched"
    assert to({"next": "continue", "watched": True}) == "ModelStep"
    assert to({"next": "continue"}) == "ModelStep"  # IsPresent guards the test after it (And stops there)
    assert to({"next": "continue", "watched": "false"}) == "ModelStep"  # BooleanEquals: a boolean only
    assert to({"next": "await-approval", "watched": False}) == "AwaitInput"
    assert to({"next": "nonsense", "watched": False}) == "FailRun"
    unsupported = {"Type": "Choice", "Choices": [{"Variable": "$.a", "NumericEquals": 1, "Next": "ModelStep"}]}
    with pytest.raises(ValueError, match="choice rule"):
        asl.check_definition({"StartAt": "C", "States": {"C": unsupported}})


def test_the_intrinsics_of_continue_as_new() -> None:
    data = {"runId": "r1", "generation": 2}
    name = "States.Format('{}--g{}', $.runId, States.MathAdd($.generation, 1))"
    assert asl.expression(name, data, {}) == "r1--g3"
    assert asl.expression("States.MathAdd($.generation, 1)", data, {}) == 3
    with pytest.raises(asl.AslError, match="States.Runtime"):
        asl.expression("States.UUID()", data, {})


def test_a_runtime_error_is_neither_retried_nor_caught_by_states_all() -> None:
    rules = [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 2}]
    assert asl.retry_delay(rules, "States.Runtime", {}) is None
    assert asl.catcher_for([{"ErrorEquals": ["States.ALL"], "Next": "X"}], "States.Runtime") is None
    attempts: dict[int, int] = {}
    assert [asl.retry_delay(rules, "Boom", attempts) for _ in range(3)] == [1.0, 2.0, None]
