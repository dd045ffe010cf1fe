"""A run nobody follows takes its later steps on the model step function with less memory.

The real ASL on moto's interpreter (a port of LocalStack's): the Route reads the step's
`watched`, guarded by `IsPresent`, so a reply without it (a function of before) goes on as it did.
"""

from __future__ import annotations

import copy
from typing import Any

from stepline.llm.scripted import ScriptedModel
from stepline.protocol._json import loads_strict
from stepline.runtime.handling import Handler
from stepline.runtime.watchers import MemoryWatchers
from stepline.stack import ASL
from tests.support.local_aws import LocalAws, local_aws
from tests.support.runs import USER, Counted, begin, billed, call_step, text_step

HEADLESS = {"trigger": "api"}


def _three_steps() -> tuple[ScriptedModel, Counted]:
    weather = Counted("weather", {"temperature": 18})
    steps = [call_step("weather", f'{{"city":"C{i}"}}', call_id=f"c{i}") for i in range(2)]
    return ScriptedModel.from_script([*steps, text_step("Done.")]), weather


def _entered(aws: LocalAws, run_id: str) -> list[str]:
    history = aws.workflow.history(run_id)
    return [e["stateEnteredEventDetails"]["name"] for e in history if e["type"].endswith("StateEntered")]


def _invoked(aws: LocalAws, run_id: str) -> list[str]:
    """The function each Lambda task of the execution invoked (its name without the workflow's tag)."""
    names: list[str] = []
    for event in aws.workflow.history(run_id):
        if event["type"] == "TaskScheduled":
            parameters = loads_strict(event["taskScheduledEventDetails"]["parameters"])
            names.append(str(parameters["FunctionName"]).split(":function:")[-1].split("--")[0])
    return names


def test_a_headless_runs_later_steps_run_on_the_unwatched_function_at_the_same_transitions() -> None:
    model, weather = _three_steps()
    with local_aws(model, tools=[weather.tool]) as aws:
        run_id = begin(aws, unattended=HEADLESS)
        assert aws.wait_execution(run_id, timeout=60) == "SUCCEEDED"
        assert _entered(aws, run_id) == [
            "ModelStep",
            "Route",
            "ModelStepUnwatched",
            "Route",
            "ModelStepUnwatched",
            "Route",
            "FinalizeRun",
        ]
        model_steps = ["stepline-model-step", "stepline-model-step-unwatched", "stepline-model-step-unwatched"]
        assert _invoked(aws, run_id) == [*model_steps, "stepline-finalize-run"]
        assert billed(aws, run_id) == (2 * 3 + 1, 3 + 1)  # the cost formula's, unchanged
        assert weather.runs == 2
        assert aws.services.store.get_run(USER, run_id).status == "completed"


def test_a_watched_run_stays_on_the_model_step_function() -> None:
    model, weather = _three_steps()
    with local_aws(model, tools=[weather.tool]) as aws:
        run_id = begin(aws)  # a chat's run, its stream not yet noted: the chat's window
        assert aws.wait_execution(run_id, timeout=60) == "SUCCEEDED"
        assert "ModelStepUnwatched" not in _entered(aws, run_id)
        assert set(_invoked(aws, run_id)) == {"stepline-model-step", "stepline-finalize-run"}


def test_a_step_reply_without_watched_goes_on_to_the_model_step_as_before() -> None:
    def without_watched(routes: dict[str, Handler]) -> dict[str, Handler]:
        step = routes["stepline-model-step"]

        def older(event: dict[str, Any], context: Any) -> dict[str, Any]:
            reply = step(event, context)
            assert "watched" in reply  # what the older function did not say
            return {k: v for k, v in reply.items() if k != "watched"}

        return {**routes, "stepline-model-step": older}

    model, weather = _three_steps()
    with local_aws(model, tools=[weather.tool], wrap=without_watched) as aws:
        run_id = begin(aws, unattended=HEADLESS)
        assert aws.wait_execution(run_id, timeout=60) == "SUCCEEDED"
        assert _entered(aws, run_id).count("ModelStep") == 3
        assert weather.runs == 2


def test_the_unwatched_state_is_the_model_step_but_for_its_function() -> None:
    states = loads_strict(ASL.read_text())["States"]
    unwatched, step = copy.deepcopy(states["ModelStepUnwatched"]), copy.deepcopy(states["ModelStep"])
    assert unwatched["Parameters"].pop("FunctionName") == "${ModelStepUnwatchedFunctionArn}"
    assert step["Parameters"].pop("FunctionName") == "${ModelStepFunctionArn}"
    assert unwatched == step  # the same payload, retries, catch and next: only the memory differs


def test_a_chats_run_follows_its_watchers_a_step_at_a_time() -> None:
    """A chat whose stream left goes on unwatched; one a stream follows stays on the model step."""
    watchers = MemoryWatchers()
    model, weather = _three_steps()
    with local_aws(model, tools=[weather.tool], watchers=watchers) as aws:
        watchers.note(USER, "run-left", until_ms=aws.services.clock() - 1)  # a stream followed it, then went
        begin(aws, run_id="run-left")
        assert aws.wait_execution("run-left", timeout=60) == "SUCCEEDED"
        assert _entered(aws, "run-left").count("ModelStepUnwatched") == 2
    model, weather = _three_steps()
    with local_aws(model, tools=[weather.tool], watchers=watchers) as aws:
        watchers.note(USER, "run-followed", until_ms=aws.services.clock() + 600_000)
        begin(aws, run_id="run-followed")
        assert aws.wait_execution("run-followed", timeout=60) == "SUCCEEDED"
        assert "ModelStepUnwatched" not in _entered(aws, "run-followed")
