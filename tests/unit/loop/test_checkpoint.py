"""LoopState: the checkpoint round-trips through JSON, and the frozen v1 fixture stays readable.

`tests/fixtures/checkpoints/v1.json` was produced once by `python -m tests.unit.loop.test_checkpoint`
from a real run (step 0 runs a tool, step 1 was retried once after a 429 and then asked for an
approval, signed). It is data now: do not regenerate it when the schema changes; add a v2 fixture
instead and keep this one passing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from stepline.loop.approval import ApprovalDecision, sign_approval
from stepline.loop.state import CHECKPOINT_SCHEMA_VERSION, SCHEMA_VERSION_SUMMARIES, LoopState
from stepline.loop.stop import is_step_count
from stepline.loop.stream_text import stream_text
from stepline.loop.tools import Tool
from stepline.protocol.model_messages import AssistantModelMessage, ToolModelMessage, ToolResultPart

from .support import FakeSleep, Ids, call, collect, fixed_clock, model, run, text_step, tool_step

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "checkpoints"
SECRET = b"fixture-secret"


def _tools(log: list[str]) -> list[Tool]:
    def weather(args: Any) -> dict[str, Any]:
        log.append("weather")
        return {"city": args["city"], "temperature": 18}

    def delete_file(args: Any) -> dict[str, Any]:
        log.append("deleteFile")
        return {"deleted": args["path"]}

    return [
        Tool(name="weather", input_schema={"type": "object", "required": ["city"]}, execute=weather),
        Tool(name="deleteFile", input_schema={"type": "object", "required": ["path"]}, execute=delete_file),
    ]


OPTIONS: dict[str, Any] = {
    "tool_approval": {"deleteFile": "user-approval"},
    "approval_secret": SECRET,
    "stop_when": is_step_count(5),
    "clock": fixed_clock,
    "sleep": FakeSleep(),
}


async def produce_v1_state() -> LoopState:
    """The run the fixture came from."""
    scripted = model(
        tool_step(call("call-1", "weather", '{"city":"Paris"}')),
        {"raise": {"kind": "rate_limit", "status": 429, "retryAfter": 1}},
        tool_step(call("call-2", "deleteFile", '{"path":"/tmp/report.txt"}')),
    )
    result = stream_text(
        model=scripted,
        prompt="Check the weather in Paris, then delete /tmp/report.txt",
        instructions="You are a careful assistant.",
        tools=_tools([]),
        new_id=Ids(),
        **OPTIONS,
    )
    await collect(result)
    assert result.outcome is not None and result.outcome.kind == "await-approval"
    return result.state


def _fixture() -> dict[str, Any]:
    return json.loads((FIXTURES / "v1.json").read_text(encoding="utf-8"))


def test_schema_versions_are_listed() -> None:
    assert CHECKPOINT_SCHEMA_VERSION == 1
    assert 1 in SCHEMA_VERSION_SUMMARIES
    assert set(SCHEMA_VERSION_SUMMARIES) == {int(p.stem[1:]) for p in FIXTURES.glob("v*.json")}


def test_the_v1_fixture_is_accepted() -> None:
    state = LoopState.model_validate(_fixture())
    assert state.schema_version == 1
    assert state.step_number == 2
    assert [s.finish_reason for s in state.steps] == ["tool-calls", "tool-calls"]
    assert state.steps[0].tool_results[0].output == {"city": "Paris", "temperature": 18}
    (pending,) = state.pending_approvals
    assert pending.tool_call.tool_name == "deleteFile"
    assert pending.tool_call.input == {"path": "/tmp/report.txt"}
    assert pending.signature == sign_approval(
        SECRET,
        approval_id=pending.approval_id,
        tool_call_id="call-2",
        tool_name="deleteFile",
        input={"path": "/tmp/report.txt"},
    )
    assert [(r.reason, r.attempt) for r in state.retries] == [("rate limit (429)", 1)]
    assert [type(m) for m in state.response_messages] == [
        AssistantModelMessage,
        ToolModelMessage,
        AssistantModelMessage,
    ]
    assert state.usage.input_tokens == 20
    # Nothing in the fixture is dropped on reading.
    assert state.to_wire() == _fixture()


def test_a_run_continues_from_the_v1_fixture() -> None:
    state = LoopState.model_validate(_fixture())
    log: list[str] = []
    (pending,) = state.pending_approvals
    scripted = model(text_step("Done: 18 degrees, file deleted."))

    async def scenario() -> Any:
        result = stream_text(
            model=scripted,
            state=state,
            approval_decisions=[
                ApprovalDecision(approval_id=pending.approval_id, approved=True, signature=pending.signature)
            ],
            tools=_tools(log),
            **OPTIONS,
        )
        await collect(result)
        return result

    result = run(scenario)
    assert result.error is None
    assert log == ["deleteFile"]  # step 0's weather tool is not run again
    prompt = scripted.calls[0].prompt
    results = [
        p.tool_call_id
        for m in prompt
        if isinstance(m, ToolModelMessage)
        for p in m.content
        if isinstance(p, ToolResultPart)
    ]
    assert results == ["call-1", "call-2"]
    assert result.state.steps[-1].text == "Done: 18 degrees, file deleted."


def test_a_fresh_state_round_trips_through_json() -> None:
    state = run(produce_v1_state)
    text = state.model_dump_json(by_alias=True)
    again = LoopState.model_validate_json(text)
    assert again == state
    assert LoopState.model_validate(json.loads(json.dumps(state.to_wire()))) == state


def test_an_unknown_schema_version_is_rejected() -> None:
    data = {**_fixture(), "schemaVersion": 99}
    with pytest.raises(ValidationError):
        LoopState.model_validate(data)


def test_the_schema_version_is_always_written() -> None:
    state = LoopState(run_id="r", message_id="m", started_at=0, messages=[])
    assert state.to_wire()["schemaVersion"] == 1


if __name__ == "__main__":
    import asyncio

    FIXTURES.mkdir(parents=True, exist_ok=True)
    produced = asyncio.run(produce_v1_state())
    (FIXTURES / "v1.json").write_text(
        json.dumps(produced.to_wire(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(f"wrote {FIXTURES / 'v1.json'}")
